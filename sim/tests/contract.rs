//! The promises README and docs/ make a user, each pinned where a new user found one
//! broken (issue 13): bad input exits 2 with one line in the user's words and writes
//! nothing; a reproduce line pastes into a shell and repeats the run; artefacts do not
//! depend on how the scenario path was typed; a resolved scenario.toml repeats its run,
//! seed included; report directories never collide; `matrix` names its failing seeds.
//!
//! Methodology: the real `sim` binary, each case in a fresh temporary directory holding
//! a copy of the scenarios it needs, checked by exit code, stderr and the bytes written.

mod common;
use common::{sim, temp_dir};
use std::path::{Path, PathBuf};

fn scenario(name: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}/../scenarios/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
}

/// A temporary directory holding `scenarios/<name>.toml` for each name.
fn with_scenarios(tag: &str, names: &[&str]) -> PathBuf {
    let d = temp_dir(tag);
    std::fs::create_dir_all(d.join("scenarios")).unwrap();
    for n in names {
        std::fs::copy(scenario(n), d.join("scenarios").join(format!("{n}.toml"))).unwrap();
    }
    d
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Exit 2, one line on stderr containing `needle`, nothing on stdout.
fn assert_bad(o: &std::process::Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    assert!(err.contains(needle), "wanted {needle:?} in {err:?}");
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

fn files_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().to_string(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_bad_set_names_the_override_in_the_users_words() {
    let d = with_scenarios("set", &["gc-pause"]);
    let g = "scenarios/gc-pause.toml";
    // A misspelt key used to point at a blank line of the file.
    let o = sim(
        &[
            "run",
            g,
            "--set",
            "etcd-lease.lease_tll_ms=1000",
            "--out",
            "r",
        ],
        &d,
    );
    assert_bad(
        &o,
        "scenarios/gc-pause.toml: --set etcd-lease.lease_tll_ms=1000: key `etcd-lease.lease_tll_ms`: unknown key `lease_tll_ms`; allowed: `lease_ttl_ms`",
    );
    let err = stderr(&o);
    assert!(
        !err.split("toml:")
            .skip(1)
            .any(|rest| rest.starts_with(|c: char| c.is_ascii_digit())),
        "no file line: {err}"
    );
    // Out of range, found by the checks after parsing: still the override, not the
    // file's `nodes = 3` line.
    let o = sim(&["run", g, "--set", "nodes=100", "--out", "r"], &d);
    assert_bad(
        &o,
        "--set nodes=100: key `nodes`: 100 is out of range: a whole number of nodes from 1 to 64",
    );
    // Types in the user's words, not Rust's.
    for (set, needle) in [
        (
            "nodes=three",
            "--set nodes=three: key `nodes`: got the text \"three\"; allowed: a whole number of nodes from 1 to 64",
        ),
        (
            "work=5",
            "key `work`: got the number 5; allowed: a table with the keys tick_interval_ms, rate_per_s, read_rate_per_s, client_timeout_ms, client_quantum_ms, resource_timeout_ms, job",
        ),
        (
            "faults.0.duration_ms=-5",
            "-5 is out of range; allowed: a whole number of milliseconds, 0 or more",
        ),
        (
            "duration_ms=1.5",
            "got the number 1.5; allowed: a whole number of milliseconds, 0 or more",
        ),
        ("fencing=maybe", "got the text \"maybe\"; allowed: true or false"),
    ] {
        let o = sim(&["run", g, "--set", set, "--out", "r"], &d);
        assert_bad(&o, needle);
        for rust in ["u64", "u32", "struct", "invalid type", "expected"] {
            assert!(!stderr(&o).contains(rust), "{set}: Rust's words: {}", stderr(&o));
        }
    }
    // A line of the file is still named when the file is at fault, whatever --set does.
    std::fs::write(d.join("t.toml"), "name = \"t\"\nnodes = \"three\"\n").unwrap();
    let o = sim(
        &[
            "run",
            "t.toml",
            "--set",
            "etcd-lease.lease_ttl_ms=1000",
            "--out",
            "r",
        ],
        &d,
    );
    assert_bad(&o, "t.toml:2: key `nodes`: got the text \"three\"");
    assert!(!d.join("r").exists(), "nothing written");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn arguments_are_checked_before_anything_runs_or_is_written() {
    let d = with_scenarios("args", &["gc-pause"]);
    let g = "scenarios/gc-pause.toml";
    // --jobs 0 used to be accepted by matrix.
    for cmd in [
        vec!["matrix", g, "--seeds", "0..1"],
        vec!["sweep", g, "--grid", "ttl_ms=3000", "--seeds", "0..1"],
        vec!["search", g, "--seeds", "0..1"],
    ] {
        let mut args = cmd.clone();
        args.extend(["--jobs", "0", "--out", "out"]);
        let o = sim(&args, &d);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("--jobs"), "{}", stderr(&o));
        assert!(!d.join("out").exists());
    }
    // --protocols with --set protocol= used to run raft once per protocol named.
    for cmd in [
        vec!["matrix", g, "--protocols", "etcd-lease,bully"],
        vec!["matrix", g],
        vec![
            "sweep",
            g,
            "--grid",
            "ttl_ms=3000",
            "--protocols",
            "etcd-lease,bully",
        ],
    ] {
        let mut args = cmd.clone();
        args.extend(["--set", "protocol=raft", "--seeds", "0..1", "--out", "out"]);
        let o = sim(&args, &d);
        assert_bad(&o, "--set protocol=raft");
        assert!(stderr(&o).contains("--protocols"), "{}", stderr(&o));
        assert!(!d.join("out").exists());
    }
    // An output directory that cannot be written is bad input (2), found before the
    // simulation runs, not an internal error (3) after it.
    std::fs::write(d.join("a-file"), "mine").unwrap();
    for cmd in [
        vec!["run", g],
        vec!["matrix", g, "--seeds", "0..1"],
        vec!["sweep", g, "--grid", "ttl_ms=3000", "--seeds", "0..1"],
        vec!["search", g, "--seeds", "0..1"],
        vec!["shrink", g, "--seed", "1"],
    ] {
        let mut args = cmd.clone();
        args.extend(["--out", "a-file/out"]);
        let o = sim(&args, &d);
        assert_bad(&o, "not a directory");
        assert!(stderr(&o).contains("a-file"), "{}", stderr(&o));
    }
    assert_eq!(std::fs::read_to_string(d.join("a-file")).unwrap(), "mine");
    // bench takes no scenario list: refused before any workload runs or prints.
    let o = sim(&["bench", g, "missing.toml"], &d);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let o = sim(&["bench", "--only", "etcd-1k,missing", "--repeat", "1"], &d);
    assert_bad(&o, "unknown workload `missing`");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_reproduce_line_is_quoted_and_repeats_the_run_when_pasted() {
    let d = temp_dir("paste");
    // A path with a space, and an override whose value has one.
    std::fs::create_dir_all(d.join("my scenarios")).unwrap();
    std::fs::copy(scenario("gc-pause"), d.join("my scenarios/gc-pause.toml")).unwrap();
    let o = sim(
        &[
            "run",
            "my scenarios/gc-pause.toml",
            "--seed",
            "3",
            "--set",
            "etcd-lease.prefix=/my election",
            "--quiet",
        ],
        &d,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let dir = d.join("reports/gc-pause+etcd-lease.prefix=_my_election/3");
    let summary = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
    let line = summary.lines().last().unwrap();
    assert_eq!(
        line,
        "reproduce: sim run 'my scenarios/gc-pause.toml' --seed 3 --set 'etcd-lease.prefix=/my election'"
    );
    let first = std::fs::read(dir.join("report.json")).unwrap();
    std::fs::remove_dir_all(d.join("reports")).unwrap();
    // Pasted into a shell with `sim` on PATH, as README's install puts it.
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_sim"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(line.trim_start_matches("reproduce: "))
        .env("PATH", path)
        .current_dir(&d)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read(dir.join("report.json")).unwrap(), first);
    // Where `sim` is not on PATH, `sim run` says how to get it.
    let o = std::process::Command::new(&bin)
        .args(["run", "my scenarios/gc-pause.toml", "--out", "hint"])
        .env("PATH", "/usr/bin:/bin")
        .current_dir(&d)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("cargo install --locked --path sim"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn artefacts_do_not_depend_on_how_the_path_was_typed() {
    let d = with_scenarios("typed", &["gc-pause-unfenced"]);
    let abs = d.join("scenarios/gc-pause-unfenced.toml");
    let typed = [
        "scenarios/gc-pause-unfenced.toml".to_string(),
        "./scenarios/gc-pause-unfenced.toml".to_string(),
        "scenarios/../scenarios/gc-pause-unfenced.toml".to_string(),
        abs.display().to_string(),
    ];
    let mut all = vec![];
    for (i, t) in typed.iter().enumerate() {
        let out = format!("r{i}");
        let o = sim(&["run", t, "--seed", "5", "--out", &out, "--quiet"], &d);
        assert_eq!(o.status.code(), Some(1), "{t}: {}", stderr(&o));
        all.push(files_of(&d.join(&out)));
    }
    for (t, files) in typed.iter().zip(&all).skip(1) {
        for ((name, a), (_, b)) in all[0].iter().zip(files) {
            assert!(a == b, "{name} differs when the path is typed {t}");
        }
    }
    let summary = std::fs::read_to_string(d.join("r0/summary.txt")).unwrap();
    assert!(summary.ends_with("reproduce: sim run scenarios/gc-pause-unfenced.toml --seed 5\n"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_resolved_scenario_repeats_its_run_and_report_directories_never_collide() {
    let d = with_scenarios("resolved", &["gc-pause"]);
    let g = "scenarios/gc-pause.toml";
    let run = |args: &[&str]| {
        let o = sim(args, &d);
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{args:?}: {}",
            stderr(&o)
        );
    };
    run(&["run", g, "--seed", "7", "--quiet"]);
    run(&["run", g, "--seed", "7", "--set", "fencing=false", "--quiet"]);
    let plain = d.join("reports/gc-pause/7");
    let counterfactual = d.join("reports/gc-pause+fencing=false/7");
    let plain_files = files_of(&plain);
    let cf_files = files_of(&counterfactual);
    // The resolved file records its seed: run as it is, without --seed, it repeats the
    // run, and lands in its own run's directory, not on the plain run.
    let text = std::fs::read_to_string(counterfactual.join("scenario.toml")).unwrap();
    assert!(text.contains("\nseed = 7\n"), "{text}");
    assert!(text.contains("overrides = [\"fencing=false\"]"), "{text}");
    run(&[
        "run",
        "reports/gc-pause+fencing=false/7/scenario.toml",
        "--quiet",
    ]);
    assert_eq!(files_of(&plain), plain_files, "the plain run is untouched");
    let again = files_of(&counterfactual);
    for name in ["timeline.jsonl", "leaders_acting.svg"] {
        let a = &cf_files.iter().find(|(n, _)| n == name).unwrap().1;
        let b = &again.iter().find(|(n, _)| n == name).unwrap().1;
        assert!(a == b, "{name}: the rerun of the resolved file differs");
    }
    let report: serde_json::Value =
        serde_json::from_slice(&again.iter().find(|(n, _)| n == "report.json").unwrap().1).unwrap();
    assert_eq!(report["seed"], 7);
    assert_eq!(report["verdict"], "fail");
    assert_eq!(std::fs::read_dir(d.join("reports")).unwrap().count(), 2);
    // Another file with the same name may not write into this scenario's directory.
    std::fs::create_dir_all(d.join("copy")).unwrap();
    std::fs::copy(scenario("gc-pause"), d.join("copy/gc-pause.toml")).unwrap();
    let o = sim(&["run", "copy/gc-pause.toml", "--seed", "7", "--quiet"], &d);
    assert_bad(
        &o,
        "reports/gc-pause/7 holds the report of scenarios/gc-pause.toml, another scenario with the same name; give copy/gc-pause.toml its own `name`, or choose --out DIR",
    );
    assert_eq!(files_of(&plain), plain_files);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_matrix_names_its_failing_seeds_and_keeps_every_seed() {
    let d = with_scenarios("seeds", &["gc-pause"]);
    let o = sim(
        &[
            "matrix",
            "scenarios/gc-pause.toml",
            "--protocols",
            "etcd-lease,redis-naive",
            "--seeds",
            "0..3",
            "--out",
            "m",
        ],
        &d,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Piped, no progress bar or anything else on stderr.
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
    let md = std::fs::read_to_string(d.join("m/matrix.md")).unwrap();
    let row = md
        .lines()
        .find(|l| l.starts_with("| gc-pause | redis-naive |"))
        .unwrap();
    assert!(row.starts_with("| gc-pause | redis-naive | 0/3 |"), "{row}");
    assert!(row.ends_with("| 0, 1, 2 |"), "the failing seeds: {row}");
    assert!(md
        .lines()
        .any(|l| l == "- `sim run scenarios/gc-pause.toml --seed 0 --set protocol=redis-naive`"));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("m/matrix.json")).unwrap()).unwrap();
    assert_eq!(json["interrupted"], false);
    assert_eq!(json["runs_done"], 6);
    let cells = json["cells"].as_array().unwrap();
    assert_eq!(cells[0]["runs"].as_array().unwrap().len(), 3);
    assert!(cells[0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["verdict"] == "pass" && r["failed"].as_array().unwrap().is_empty()));
    let naive = &cells[1]["runs"][2];
    assert_eq!(naive["seed"], 2);
    assert_eq!(naive["verdict"], "fail");
    assert!(naive["failed"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p == "double_leader_acting"));
    // The rerun command is the cell's, and repeats that seed's verdict.
    let rerun = cells[1]["rerun"].as_str().unwrap();
    let words: Vec<&str> = rerun.split(' ').skip(1).collect();
    let o = sim(&[&words[..], &["--out", "rerun", "--quiet"]].concat(), &d);
    assert_eq!(o.status.code(), Some(1), "{rerun}: {}", stderr(&o));
    std::fs::remove_dir_all(&d).unwrap();
}
