//! Fidelity as a regression test: the simulator against every committed live case.
//!
//! For each `reports/fidelity/<case>/real/` (live trials committed by `bash
//! nightly/fidelity.sh live`), this runs `sim compare` on the scenario file and
//! overrides the trials were made from (their `[origin]`) over simulator seeds 0..200,
//! and fails when a simulated median (failover; lease overrun and election latency by
//! kind of start, where the live side measured them) leaves the live median's 90%
//! bootstrap interval or its target band, whichever is wider: `compare.json`'s
//! `regression_holds`. A model change that breaks fidelity fails here, not at the next
//! live measurement. 200 seeds pin a simulated median to about 2%, well inside every
//! band; the committed compare.md files use 1,000.
//!
//! Methodology: the judgement itself is unit-tested in `compare.rs` (an interval wider
//! than the band holds a median the band alone would fail, and a median beyond both
//! fails); this test applies it to the committed data, and its canary breaks the model
//! on purpose (every etcd fsync 20-40 ms instead of 0-1 ms, by `--set`) and must see the
//! campaign's election latency fail against the same clean-kill trials.

mod common;

use std::path::{Path, PathBuf};

const SEEDS: &str = "0..200";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The committed live cases: (name, its trials directory), in name order.
fn cases() -> Vec<(String, PathBuf)> {
    let root = repo().join("reports/fidelity");
    let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.path().join("real"),
            )
        })
        .filter(|(_, real)| real.join("trial-1/scenario.toml").is_file())
        .collect();
    v.sort();
    v
}

/// The scenario file and overrides the live trials were made from.
fn origin(real: &Path) -> (String, Vec<String>) {
    let path = real.join("trial-1/scenario.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let v: toml::Value =
        toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let o = &v["origin"];
    let file = o["file"].as_str().expect("origin.file").to_string();
    let overrides = o["overrides"]
        .as_array()
        .expect("origin.overrides")
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    (file, overrides)
}

#[test]
fn every_live_case_holds_its_medians() {
    let cases = cases();
    assert!(
        cases.len() >= 17,
        "expected the 17 committed live cases (etcd 5; redis-fenced, zk-sequential, db-row \
         and raft 3 each), found {:?}",
        cases.iter().map(|c| &c.0).collect::<Vec<_>>()
    );
    let out = common::temp_dir("fidelity");
    let mut failed = vec![];
    for (name, real) in &cases {
        let (file, overrides) = origin(real);
        let dir = out.join(name);
        let real_s = real.to_string_lossy().into_owned();
        let dir_s = dir.to_string_lossy().into_owned();
        let mut args = vec![
            "compare",
            &file,
            "--sim-seeds",
            SEEDS,
            "--real-dir",
            &real_s,
            "--out",
            &dir_s,
            "--quiet",
        ];
        for o in &overrides {
            args.extend(["--set", o.as_str()]);
        }
        let o = common::sim(&args, &repo());
        assert!(
            o.status.code() == Some(0) || o.status.code() == Some(1),
            "{name}: sim compare failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let c: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("compare.json")).unwrap())
                .unwrap();
        for r in c["rows"].as_array().unwrap() {
            if r["regression_holds"] == false {
                failed.push(format!(
                    "{name}: {} simulated {} against live {} (90% interval {}, target {})",
                    r["metric"], r["sim"], r["real"], r["live_interval_90"], r["target"]
                ));
            }
        }
        assert!(
            c["rows"][0]["regression_holds"].is_boolean(),
            "{name}: the failover median is judged"
        );
    }
    assert!(
        failed.is_empty(),
        "fidelity regressed:\n{}",
        failed.join("\n")
    );
}

#[test]
fn a_broken_model_fails_the_regression() {
    let real = repo().join("reports/fidelity/clean-kill/real");
    let out = common::temp_dir("fidelity-canary");
    let (real_s, out_s) = (
        real.to_string_lossy().into_owned(),
        out.to_string_lossy().into_owned(),
    );
    let o = common::sim(
        &[
            "compare",
            "scenarios/clean-kill.toml",
            "--sim-seeds",
            "0..50",
            "--real-dir",
            &real_s,
            "--out",
            &out_s,
            "--quiet",
            "--set",
            "etcd.fsync_ms=[20,40]",
        ],
        &repo(),
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("compare.json")).unwrap()).unwrap();
    assert_eq!(c["regression_holds"], false);
    let campaign = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "election latency median, from a campaign (ms)")
        .unwrap();
    assert_eq!(campaign["regression_holds"], false, "{campaign}");
}
