//! Is Baton's model of a library right? `sim compare --conform-dir` against the committed
//! conformance runs of real libraries.
//!
//! For each `reports/compare-libraries/<case>/compare.json` (made by `bash
//! nightly/compare-libraries.sh` from `reports/conformance/<library>/`), this runs the
//! command it names again over simulator seeds 0..200 (0..10 for the 10-minute churn),
//! two at a time, instead of 0..1000, where the committed failover median's regression
//! judgement holds, and requires it to hold still: the model set to behave as the library does stays
//! inside the live median's 90% interval or 10% band. A model change that moves it out
//! fails here.
//!
//! Methodology: the judgement itself is unit-tested in `sim/src/cmd/compare.rs`. The
//! canaries set the model wrong on purpose, one setting at a time, and must be judged
//! outside against the same live trials: the go-etcd node's leader with Baton's own
//! local deadline (`before-each-act`) stops before etcd lets its key go, a long gap
//! before the next leader where the live node's was a millisecond (partition); and
//! with Baton's own keepalive cadence (TTL / 3, not the Go lessor's 500 ms send loop)
//! its lease outlives the live one (gc-pause). Bad input (not a conformance run, an
//! unknown experiment, an experiment with no failover) exits 2 with one line.

mod common;

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

const GO_ETCD: &str = "reports/conformance/go-etcd";

/// Runs `sim compare` with `args` plus `--out` (a fresh directory) and `--quiet`, and
/// returns its exit code, stderr and compare.json (when written).
fn compare(tag: &str, args: &[&str]) -> (Option<i32>, String, Option<serde_json::Value>) {
    let out = common::temp_dir(tag);
    let out_s = out.to_string_lossy().into_owned();
    let mut all: Vec<&str> = vec!["compare"];
    all.extend(args);
    all.extend(["--out", &out_s, "--force", "--quiet"]);
    let o = common::sim(&all, &repo());
    let json = std::fs::read_to_string(out.join("compare.json"))
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap());
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        json,
    )
}

/// The failover median row's regression judgement.
fn failover_holds(c: &serde_json::Value) -> bool {
    let row = &c["rows"][0];
    assert_eq!(row["metric"], "failover median (ms)");
    row["regression_holds"]
        .as_bool()
        .expect("the failover median is judged")
}

/// The committed comparisons: (case, its compare.json), in name order.
fn committed() -> Vec<(String, serde_json::Value)> {
    let root = repo().join("reports/compare-libraries");
    let mut v: Vec<(String, serde_json::Value)> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("compare.json").is_file())
        .map(|e| {
            let text = std::fs::read_to_string(e.path().join("compare.json")).unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                serde_json::from_str(&text).unwrap(),
            )
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn every_committed_library_comparison_judges_its_failover_as_committed() {
    let cases = committed();
    assert!(
        cases.len() >= 25,
        "expected five experiments of five libraries, found {}",
        cases.len()
    );
    // Two at a time (CI has 2 cores), each worker taking the next case.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let mut failed = vec![];
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        let Some((name, c)) = cases.get(i) else {
                            return failed;
                        };
                        if let Err(e) = rejudge(name, c) {
                            failed.push(e);
                        }
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    assert!(failed.is_empty(), "{failed:#?}");
}

/// Runs a committed comparison whose failover judgement holds again with fewer seeds, and
/// says whether it still holds. One that differs is a named difference (the docs say
/// why): a model change that brings it in is not a regression, so it is not re-run.
fn rejudge(name: &str, c: &serde_json::Value) -> Result<(), String> {
    if !failover_holds(c) {
        return Ok(());
    }
    // The command as run, with fewer seeds; every word is plain (no quoting). The
    // spec's churn is 120 failovers a seed over 10 simulated minutes (about 0.25 s of
    // wall time a seed): 10 seeds give 1,200 failovers; the others 200 each.
    let command = c["command"].as_str().unwrap();
    let words: Vec<&str> = command.split_whitespace().skip(2).collect();
    assert!(words.iter().all(|w| !w.contains(['\'', '"'])), "{command}");
    let seeds = if name.ends_with("-churn") {
        "0..10"
    } else {
        "0..200"
    };
    let words: Vec<&str> = words
        .iter()
        .map(|w| if w.starts_with("0..") { seeds } else { w })
        .collect();
    let (code, stderr, json) = compare(&format!("libs-{name}"), &words);
    if !matches!(code, Some(0 | 1)) {
        return Err(format!("{name}: {stderr}"));
    }
    let json = json.expect("compare.json written");
    if !failover_holds(&json) {
        return Err(format!(
            "{name}: the failover median no longer holds with {seeds}: {command}"
        ));
    }
    Ok(())
}

#[test]
fn a_wrong_model_setting_is_judged_outside() {
    let go = [
        "--set",
        "etcd-lease.local_deadline=session-done",
        "--set",
        "etcd-lease.keepalive_interval_ms=1000",
    ];
    let judge = |tag: &str, experiment: &str, set: &[&str]| {
        let mut args = vec!["--conform-dir", GO_ETCD, "--experiment", experiment];
        args.extend(["--sim-seeds", "0..200"]);
        args.extend(set);
        let (code, stderr, json) = compare(tag, &args);
        assert!(matches!(code, Some(0 | 1)), "{stderr}");
        failover_holds(&json.unwrap())
    };
    assert!(judge("libs-gc", "gc-pause", &go), "the go-etcd model holds");
    let own_cadence = &go[..2];
    assert!(
        !judge("libs-gc-canary", "gc-pause", own_cadence),
        "TTL / 3 keepalives"
    );
    let own_deadline = &go[2..];
    assert!(
        !judge("libs-part-canary", "partition", own_deadline),
        "before-each-act"
    );
}

/// A conformance run's copy with one experiment's trials made to see no failover.
fn without_failovers(dir: &Path) {
    let from = repo().join(GO_ETCD);
    std::fs::copy(from.join("conformance.json"), dir.join("conformance.json")).unwrap();
    let trial = dir.join("clean-kill/trial-1");
    std::fs::create_dir_all(&trial).unwrap();
    let src = from.join("clean-kill/trial-1");
    std::fs::copy(src.join("scenario.toml"), trial.join("scenario.toml")).unwrap();
    let mut r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("report.json")).unwrap()).unwrap();
    r["failover_ms"] = serde_json::json!([]);
    std::fs::write(trial.join("report.json"), r.to_string()).unwrap();
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let empty = common::temp_dir("libs-not-a-run");
    let empty_s = empty.to_string_lossy().into_owned();
    let no_fo = common::temp_dir("libs-no-failover");
    without_failovers(&no_fo);
    let no_fo_s = no_fo.to_string_lossy().into_owned();
    let cases: [(&[&str], &str); 3] = [
        (
            &["--conform-dir", &empty_s, "--experiment", "clean-kill"],
            "not a conformance run",
        ),
        (
            &["--conform-dir", GO_ETCD, "--experiment", "nope"],
            "ran no such experiment; it ran: clean-kill",
        ),
        (
            &["--conform-dir", &no_fo_s, "--experiment", "clean-kill"],
            "saw no failover",
        ),
    ];
    for (args, says) in cases {
        let (code, stderr, json) = compare("libs-bad", args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(says) && stderr.trim().lines().count() == 1,
            "{stderr}"
        );
        assert!(json.is_none(), "nothing written");
    }
}

/// Runs `python3 nightly/library_gallery.py --check --root ROOT` from the repository.
fn gallery_check(root: &Path) -> (Option<i32>, String) {
    let o = std::process::Command::new("python3")
        .arg(repo().join("nightly/library_gallery.py"))
        .args(["--check", "--root"])
        .arg(root)
        .output()
        .expect("python3 runs");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The gallery's tables in docs/src/libraries.md are what the committed conformance runs
/// and model comparisons give (issue 37, parts 3 and 4). Canaries: the same page beside one run whose partition
/// verdict was changed, and beside no runs at all, must be told apart.
#[test]
fn the_library_gallery_is_what_the_committed_runs_give() {
    let (code, err) = gallery_check(&repo());
    assert_eq!(code, Some(0), "{err}");

    let root = common::temp_dir("gallery-canary");
    std::fs::create_dir_all(root.join("docs/src")).unwrap();
    std::fs::copy(
        repo().join("docs/src/libraries.md"),
        root.join("docs/src/libraries.md"),
    )
    .unwrap();
    let (code, err) = gallery_check(&root);
    assert_eq!(code, Some(1), "no runs at all must differ: {err}");

    for (reports, file) in [
        ("reports/conformance", "conformance.json"),
        ("reports/compare-libraries", "compare.json"),
    ] {
        for entry in std::fs::read_dir(repo().join(reports)).unwrap() {
            let dir = entry.unwrap().path();
            let json = dir.join(file);
            if json.is_file() {
                let to = root.join(reports).join(dir.file_name().unwrap());
                std::fs::create_dir_all(&to).unwrap();
                std::fs::copy(&json, to.join(file)).unwrap();
            }
        }
    }
    assert_eq!(
        gallery_check(&root).0,
        Some(0),
        "the copy gives the same table"
    );
    let go = root.join("reports/conformance/go-etcd/conformance.json");
    let text = std::fs::read_to_string(&go).unwrap();
    let changed = text.replacen("\"verdict\": \"fail\"", "\"verdict\": \"pass\"", 1);
    assert_ne!(
        text, changed,
        "go-etcd's run has a failed experiment to change"
    );
    std::fs::write(&go, changed).unwrap();
    let (code, err) = gallery_check(&root);
    assert_eq!(code, Some(1), "a changed verdict must differ: {err}");
    assert!(err.contains("docs/src/libraries.md"), "{err}");
}
