//! `raft` with the sequencer in its own log (`[raft] sequencer = "log"`), and leader
//! lease reads.
//!
//! Methodology: committed scenarios under a few seeds; assertions read report.json's
//! stable keys and the summary. The claims in the issue were measured over seeds 0..100
//! with `sim run` (read-lease-inside: 100/100 pass, 0 stale reads; read-lease-beyond:
//! stale reads on 92/100); this file keeps a handful so CI stays cheap. Canaries: the
//! beyond-the-bound scenario itself, and the `no-lease-check` raft, which answers reads
//! for as long as openraft believes it leads and must serve stale reads even inside the
//! bound.

use crate::common;
use common::*;

const LOG: [&str; 2] = ["protocol=raft", "raft.sequencer=log"];

#[test]
fn log_sequencer_fails_over_in_time_and_never_reuses_a_number() {
    let a = run("clean-kill", 1, &LOG);
    let r = report(&a);
    assert_eq!(r["verdict"], "pass", "{}", a.summary_txt);
    assert!(
        r["client"]["ok"].as_u64().unwrap() > 10_000,
        "{}",
        a.summary_txt
    );
    assert_eq!(r["sequence"]["client_reused"], 0);
    assert_eq!(r["sequence"]["non_increasing_steps"], 0);
    // Batches count as the leader's acts, so failover is timed from the old leader's
    // last committed batch, not from a batch the new leader committed for it.
    for f in r["failover_ms"].as_array().unwrap() {
        let f = f.as_f64().unwrap();
        assert!(
            (100.0..1500.0).contains(&f),
            "failover {f}:\n{}",
            a.summary_txt
        );
    }
    // A paused leader's batch cannot commit once another term began: the log fences it.
    for seed in [1, 2] {
        let a = run("gc-pause-unfenced", seed, &LOG);
        let r = report(&a);
        assert_eq!(r["sequence"]["client_reused"], 0, "{}", a.summary_txt);
        assert_eq!(
            r["sequence"]["non_increasing_steps"], 0,
            "{}",
            a.summary_txt
        );
    }
}

#[test]
fn read_lease_inside_the_drift_bound_serves_no_stale_read() {
    for seed in [0, 1, 2] {
        let a = run("raft/read-lease-inside", seed, &[]);
        let r = report(&a);
        assert_eq!(r["verdict"], "pass", "seed {seed}:\n{}", a.summary_txt);
        assert!(
            r["reads"]["served"].as_u64().unwrap() > 1000,
            "{}",
            a.summary_txt
        );
        assert_eq!(r["reads"]["stale"], 0);
        assert!(
            a.summary_txt.contains("drift no slower than -666667 ppm"),
            "the summary names the bound:\n{}",
            a.summary_txt
        );
    }
}

#[test]
fn read_lease_beyond_the_drift_bound_serves_stale_reads() {
    let a = run("raft/read-lease-beyond", 0, &[]);
    let r = report(&a);
    assert_eq!(r["verdict"], "fail", "{}", a.summary_txt);
    assert!(
        properties(&a).contains(&"stale_read".to_string()),
        "{}",
        a.summary_txt
    );
    assert!(r["reads"]["stale"].as_u64().unwrap() > 0);
    // The cut-off leader's writes are still fenced: only the read path is split.
    assert_eq!(r["double_leader_acting_incidents"], 0, "{}", a.summary_txt);
}

#[test]
fn no_lease_check_canary_serves_stale_reads_inside_the_bound() {
    let a = run("raft/read-lease-inside", 0, &["raft.canary=no-lease-check"]);
    assert!(
        properties(&a).contains(&"stale_read".to_string()),
        "{}",
        a.summary_txt
    );
}

#[test]
fn read_lease_runs_are_deterministic() {
    let a = run("raft/read-lease-beyond", 3, &[]);
    let b = run("raft/read-lease-beyond", 3, &[]);
    for ((file, x), (_, y)) in a.files().iter().zip(b.files().iter()) {
        assert!(x == y, "{file} differs between two runs of seed 3");
    }
}
