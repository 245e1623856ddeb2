//! Where each command writes by default, and what it never overwrites (issue 19): a
//! counterfactual (`--set`) gets its own directory for every command, a committed report
//! (a directory holding `.baton-committed`) is never replaced without `--force`, no
//! default directory is a committed one, and seeds beyond TOML's largest integer are
//! refused with exit 2 instead of a panic.
//!
//! Methodology: the real `sim` binary in a fresh temporary directory that holds copies of
//! the scenarios it needs and a fake committed matrix and fidelity case; each case is
//! checked by exit code, the directories written, and the committed bytes afterwards.

mod common;
use common::{sim, temp_dir};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A temporary working directory with `scenarios/<name>.toml` for each name, and a
/// committed matrix in `reports/matrix/`.
fn workdir(tag: &str, names: &[&str]) -> PathBuf {
    let d = temp_dir(tag);
    std::fs::create_dir_all(d.join("scenarios")).unwrap();
    for n in names {
        std::fs::copy(
            repo().join(format!("scenarios/{n}.toml")),
            d.join(format!("scenarios/{n}.toml")),
        )
        .unwrap();
    }
    let m = d.join("reports/matrix");
    std::fs::create_dir_all(&m).unwrap();
    std::fs::write(m.join("matrix.md"), "the committed matrix\n").unwrap();
    std::fs::write(m.join(".baton-report"), "Written by `sim`.\n").unwrap();
    std::fs::write(
        m.join(".baton-committed"),
        "made by bash nightly/matrix.sh\n",
    )
    .unwrap();
    d
}

fn code(o: &std::process::Output) -> Option<i32> {
    o.status.code()
}

fn err(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_trial_matrix_never_replaces_the_committed_one() {
    let d = workdir("out-matrix", &["gc-pause"]);
    let committed = || std::fs::read_to_string(d.join("reports/matrix/matrix.md")).unwrap();
    let args = [
        "matrix",
        "scenarios/gc-pause.toml",
        "--protocols",
        "etcd-lease",
        "--seeds",
        "0..2",
    ];
    let o = sim(&args, &d);
    assert_eq!(code(&o), Some(0), "{}", err(&o));
    assert!(d.join("reports/matrix-latest/matrix.md").is_file());
    assert_eq!(committed(), "the committed matrix\n");
    // Aimed at the committed one: refused, unless told.
    let o = sim(&[&args[..], &["--out", "reports/matrix"]].concat(), &d);
    assert_eq!(code(&o), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("holds a committed report (made by bash nightly/matrix.sh)"),
        "{}",
        err(&o)
    );
    assert_eq!(committed(), "the committed matrix\n");
    let o = sim(
        &[&args[..], &["--out", "reports/matrix", "--force"]].concat(),
        &d,
    );
    assert_eq!(code(&o), Some(0), "{}", err(&o));
    assert!(committed().starts_with("# Baton protocol matrix"));
    assert!(
        d.join("reports/matrix/.baton-committed").is_file(),
        "the marker stays"
    );
}

#[test]
fn every_command_gives_a_counterfactual_its_own_directory() {
    let d = workdir("out-sets", &["gc-pause", "gc-pause-unfenced"]);
    let set = "etcd-lease.lease_ttl_ms=3000";
    let ok = |o: std::process::Output, want: &[i32]| {
        assert!(want.contains(&code(&o).unwrap_or(-1)), "{}", err(&o));
    };
    ok(
        sim(
            &["search", "scenarios/gc-pause.toml", "--seeds", "0..2"],
            &d,
        ),
        &[0],
    );
    ok(
        sim(
            &[
                "search",
                "scenarios/gc-pause.toml",
                "--seeds",
                "0..2",
                "--set",
                set,
            ],
            &d,
        ),
        &[0],
    );
    assert!(d.join("reports/gc-pause/search/search.md").is_file());
    assert!(d
        .join(format!("reports/gc-pause+{set}/search/search.md"))
        .is_file());

    let sweep = [
        "sweep",
        "scenarios/gc-pause.toml",
        "--grid",
        "ttl_ms=3000",
        "--seeds",
        "0..1",
        "-q",
    ];
    ok(sim(&sweep, &d), &[0]);
    ok(sim(&[&sweep[..], &["--set", set]].concat(), &d), &[0]);
    assert!(d.join("reports/gc-pause/sweep/sweep.md").is_file());
    assert!(d
        .join(format!("reports/gc-pause+{set}/sweep/sweep.md"))
        .is_file());

    let shrink = [
        "shrink",
        "scenarios/gc-pause-unfenced.toml",
        "--seed",
        "42",
        "-q",
    ];
    ok(sim(&shrink, &d), &[0]);
    ok(sim(&[&shrink[..], &["--set", set]].concat(), &d), &[0]);
    assert!(d
        .join("reports/gc-pause-unfenced/shrink/gc-pause-unfenced.min.toml")
        .is_file());
    assert!(d
        .join(format!(
            "reports/gc-pause-unfenced+{set}/shrink/gc-pause-unfenced.min.toml"
        ))
        .is_file());
}

#[test]
fn compare_as_documented_runs_on_a_fresh_clone_beside_the_committed_case() {
    // The `sim compare` of docs/src/fidelity.md, over the committed live trials of
    // clean-kill, from a copy of the committed case (with its marker): it writes to
    // reports/clean-kill/compare/ and leaves the committed comparison alone.
    let d = workdir("out-compare", &["clean-kill"]);
    let case = d.join("reports/fidelity/clean-kill");
    std::fs::create_dir_all(case.join("real")).unwrap();
    let src = repo().join("reports/fidelity/clean-kill");
    for f in ["compare.md", "compare.json", ".baton-committed"] {
        std::fs::copy(src.join(f), case.join(f)).unwrap();
    }
    for t in ["trial-1", "trial-2", "trial-3"] {
        std::fs::create_dir_all(case.join("real").join(t)).unwrap();
        std::fs::copy(
            src.join("real").join(t).join("report.json"),
            case.join("real").join(t).join("report.json"),
        )
        .unwrap();
    }
    let before = std::fs::read(case.join("compare.md")).unwrap();
    let o = sim(
        &[
            "compare",
            "scenarios/clean-kill.toml",
            "--sim-seeds",
            "0..4",
            "--real-dir",
            "reports/fidelity/clean-kill/real",
            "-q",
        ],
        &d,
    );
    assert!(matches!(code(&o), Some(0 | 1)), "{}", err(&o));
    assert!(d.join("reports/clean-kill/compare/compare.md").is_file());
    assert_eq!(std::fs::read(case.join("compare.md")).unwrap(), before);
    let o = sim(
        &[
            "compare",
            "scenarios/clean-kill.toml",
            "--sim-seeds",
            "0..4",
            "--real-dir",
            "reports/fidelity/clean-kill/real",
            "--out",
            "reports/fidelity/clean-kill",
        ],
        &d,
    );
    assert_eq!(code(&o), Some(2), "{}", err(&o));
    assert_eq!(std::fs::read(case.join("compare.md")).unwrap(), before);
}

#[test]
fn seeds_up_to_tomls_largest_integer_run_and_beyond_it_exit_2() {
    let d = workdir("out-seeds", &["gc-pause"]);
    let max = "9223372036854775807";
    let o = sim(&["run", "scenarios/gc-pause.toml", "--seed", max, "-q"], &d);
    assert!(matches!(code(&o), Some(0 | 1)), "{}", err(&o));
    let toml =
        std::fs::read_to_string(d.join(format!("reports/gc-pause/{max}/scenario.toml"))).unwrap();
    assert!(toml.contains(&format!("seed = {max}")), "{toml}");
    for args in [
        vec![
            "run",
            "scenarios/gc-pause.toml",
            "--seed",
            "9223372036854775808",
        ],
        vec![
            "run",
            "scenarios/gc-pause.toml",
            "--seed",
            "18446744073709551615",
        ],
        vec![
            "check-determinism",
            "scenarios/gc-pause.toml",
            "--seed",
            "18446744073709551615",
        ],
        vec![
            "matrix",
            "scenarios/gc-pause.toml",
            "--seeds",
            "0..18446744073709551615",
        ],
        vec![
            "search",
            "scenarios/gc-pause.toml",
            "--seeds",
            "9223372036854775808..9223372036854775809",
        ],
        vec![
            "shrink",
            "scenarios/gc-pause.toml",
            "--seed",
            "18446744073709551615",
        ],
    ] {
        let o = sim(&args, &d);
        assert_eq!(code(&o), Some(2), "{args:?}: {}", err(&o));
        assert!(
            err(&o).contains("9223372036854775807"),
            "{args:?}: {}",
            err(&o)
        );
    }
    std::fs::write(
        d.join("scenarios/big.toml"),
        "name = \"big\"\nseed = 9223372036854775808\n",
    )
    .unwrap();
    let o = sim(&["run", "scenarios/big.toml"], &d);
    assert_eq!(code(&o), Some(2), "{}", err(&o));
}

#[test]
fn a_negative_seed_gets_the_seed_range_not_clap_tip() {
    // clap reads `-1` after a flag as another flag and suggests `-- -1`; every seed flag
    // must instead hand it to Baton's parser, which says what a seed may be (exit 2,
    // before anything runs or builds).
    let d = workdir("out-negative-seeds", &["gc-pause"]);
    let s = "scenarios/gc-pause.toml";
    for args in [
        vec!["run", s, "--seed", "-1"],
        vec!["check-determinism", s, "--seed", "-1"],
        vec!["shrink", s, "--seed", "-1"],
        vec![
            "bisect", s, "--good", "HEAD", "--bad", "HEAD", "--seed", "-1",
        ],
        vec!["real", s, "--seed", "-1"],
        vec!["conform", "--node-cmd", "true", "--seed", "-1"],
        vec!["matrix", s, "--seeds", "-1..3"],
        vec!["sweep", s, "--grid", "ttl_ms=1000", "--seeds", "-5..-1"],
        vec!["search", s, "--seeds", "-3..2"],
        vec!["compare", s, "--sim-seeds", "-1..3"],
    ] {
        let o = sim(&args, &d);
        let e = err(&o);
        assert_eq!(code(&o), Some(2), "{args:?}: {e}");
        assert!(
            e.contains("is not a seed") && e.contains("0 to 9223372036854775807"),
            "{args:?}: {e}"
        );
        assert!(!e.contains("-- -1") && !e.contains("tip:"), "{args:?}: {e}");
    }
}
