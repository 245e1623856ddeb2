//! Is Baton's model of a library right? `sim compare --conform-dir` against the committed
//! conformance runs of real libraries.
//!
//! For each `reports/compare-libraries/<case>/compare.json` (made by `bash
//! nightly/compare-libraries.sh` from `reports/conformance/<library>/`), this runs the
//! command it names again over simulator seeds 0..200 (0..20 for the 10-minute churn)
//! instead of 0..1000 and requires the failover median's regression judgement to hold
//! where the committed one holds: the model set to behave as the library does stays
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
        cases.len() >= 3,
        "expected go-etcd's comparisons, found {}",
        cases.len()
    );
    for (name, c) in &cases {
        // The command as run, with fewer seeds; every word is plain (no quoting). The
        // spec's churn is 120 failovers a seed over 10 simulated minutes (about 1 s of
        // wall time a seed): 20 seeds give 2,400 failovers.
        let command = c["command"].as_str().unwrap();
        let words: Vec<&str> = command.split_whitespace().skip(2).collect();
        assert!(words.iter().all(|w| !w.contains(['\'', '"'])), "{command}");
        let seeds = if name.ends_with("-churn") {
            "0..20"
        } else {
            "0..200"
        };
        let words: Vec<&str> = words
            .iter()
            .map(|w| if w.starts_with("0..") { seeds } else { w })
            .collect();
        let (code, stderr, json) = compare(&format!("libs-{name}"), &words);
        assert!(matches!(code, Some(0 | 1)), "{name}: {stderr}");
        let json = json.expect("compare.json written");
        assert_eq!(
            failover_holds(&json),
            failover_holds(c),
            "{name}: {command}"
        );
    }
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
