//! `raft`: openraft 0.9 among the nodes, the term as fencing token, a leader lease.
//!
//! Methodology: each committed scenario runs with `--set protocol=raft` under a few
//! seeds; the assertions read report.json's stable keys and the summary. The issue's
//! claims (gc-pause and partition: 0 by-effect incidents, by-effect max 1, no two
//! leaders in one term) were measured over seeds 0..100 with `sim run`; this file keeps
//! a handful of seeds so CI stays cheap. The canary drops the leader-lease check: the
//! leader then acts for as long as openraft believes it leads.

use crate::common;
use common::*;

const RAFT: &str = "protocol=raft";

#[test]
fn every_scenario_runs_with_the_verdicts_the_semantics_predict() {
    for (name, want) in [
        ("clean-kill", "pass"),
        ("gc-pause", "pass"),
        ("graceful-stepdown", "pass"),
        ("partition", "pass"),
        // Fails by design for every protocol: the pause strikes after the lease check,
        // so the woken leader's write lands without fencing.
        ("gc-pause-unfenced", "fail"),
        // raft's leader lease (100 ms against the followers' 300 ms) absorbs a clock 40%
        // slow: the cut-off leader stops before anyone else can be elected, so there is
        // no belief overlap and no stale write to reject, and the scenario's trap
        // expectations are never met (k8s-lease, with its RenewDeadline margin, mostly
        // fails it the same way).
        ("slow-clock-partition", "fail"),
    ] {
        for seed in [0, 42] {
            let a = run(name, seed, &[RAFT]);
            assert_eq!(
                report(&a)["verdict"],
                want,
                "{name} seed {seed}:\n{}",
                a.summary_txt
            );
        }
    }
}

#[test]
fn clean_kill_fails_over_within_one_and_a_half_seconds_and_names_the_bound() {
    let a = run("clean-kill", 1, &[RAFT]);
    let r = report(&a);
    assert_eq!(r["verdict"], "pass", "{}", a.summary_txt);
    let failovers = r["failover_ms"].as_array().unwrap();
    assert!(!failovers.is_empty());
    for f in failovers {
        assert!(f.as_f64().unwrap() < 1500.0, "{}", a.summary_txt);
    }
    assert!(
        a.summary_txt
            .contains("followers' lease 300 ms + election timeout 300 ms"),
        "{}",
        a.summary_txt
    );
}

#[test]
fn pause_and_partition_never_let_two_leaders_act() {
    for name in ["gc-pause", "partition"] {
        for seed in [1, 2, 3] {
            let a = run(name, seed, &[RAFT]);
            let r = report(&a);
            assert_eq!(r["verdict"], "pass", "{name} {seed}:\n{}", a.summary_txt);
            assert_eq!(r["double_leader_acting_incidents"], 0);
            assert_eq!(r["leaders_acting"]["by_effect_max"], 1);
            assert!(!properties(&a).contains(&"election_safety".to_string()));
        }
    }
    // The lease alone keeps the cut-off leader from acting once another can be elected:
    // the partition passes without fencing too.
    let a = run("partition", 4, &[RAFT, "fencing=false"]);
    assert_eq!(report(&a)["verdict"], "pass", "{}", a.summary_txt);
}

#[test]
fn no_lease_check_canary_is_caught_on_partition() {
    // Without the lease check the cut-off leader keeps acting on its old term. With
    // fencing its writes are rejected, but it never stops by its own deadline (caught on
    // every one of seeds 0..100)...
    let a = run("partition", 0, &[RAFT, "raft.canary=no-lease-check"]);
    assert_eq!(report(&a)["verdict"], "fail");
    assert!(properties(&a).contains(&"expectation_never_met".to_string()));
    assert!(a.summary_txt.contains("deadline-stop: NEVER MET"));
    // ...and without fencing its writes interleave with the new leader's.
    let a = run(
        "partition",
        0,
        &[RAFT, "raft.canary=no-lease-check", "fencing=false"],
    );
    let props = properties(&a);
    assert!(
        props.contains(&"double_leader_acting".to_string()),
        "{props:?}"
    );
    assert_eq!(report(&a)["leaders_acting"]["by_effect_max"], 2);
}

#[test]
fn election_storm_keeps_one_leader_per_term_and_fails_over_in_time() {
    // scenarios/raft/election-storm.toml: 120 leader kills among 9 nodes. Seeds 0..100
    // all pass; one seed here (about 3 s of CPU).
    let a = run("raft/election-storm", 1, &[]);
    let r = report(&a);
    assert_eq!(r["verdict"], "pass", "{}", a.summary_txt);
    assert_eq!(r["double_leader_acting_incidents"], 0);
    assert!(r["election_latency_ms"]["count"].as_u64().unwrap() > 100);
}

#[test]
fn no_node_starves_in_the_election_storm_with_or_without_pre_vote() {
    // Seed 2 starved n1 and n8 (0 wins in about 110 elections each) while openraft's
    // own timer, one draw per Raft instance, chose the candidates: only killed leaders
    // restarted and drew again. The elector's timer draws afresh at every reset.
    for set in [&[][..], &["raft.pre_vote=false"][..]] {
        let a = run("raft/election-storm", 2, set);
        let r = report(&a);
        assert_eq!(r["verdict"], "pass", "{set:?}\n{}", a.summary_txt);
        assert_eq!(r["elections"]["starved"], serde_json::json!([]), "{set:?}");
        let wins = r["elections"]["wins_by_node"].as_object().unwrap();
        assert_eq!(wins.len(), 9);
        for (node, w) in wins {
            assert!(w["wins"].as_u64().unwrap() >= 3, "{set:?} {node}: {w}");
        }
    }
}

#[test]
fn a_flapping_follower_deposes_the_leader_only_without_pre_vote() {
    // scenarios/raft/flapping-follower.toml: one follower cut off for 1 s, 30 times.
    // With pre-vote (the default) its term stays put and the first leader leads to the
    // end; without, its raised term deposes the leader at every rejoin (seeds 0..20:
    // 0 leader changes with pre-vote, 30 to 32 without; `bash nightly/storm.sh`).
    for seed in [0, 1] {
        let on = run("raft/flapping-follower", seed, &[]);
        let r = report(&on);
        assert_eq!(r["verdict"], "pass", "{}", on.summary_txt);
        assert_eq!(r["elections"]["leader_changes"], 0, "{}", on.summary_txt);

        let off = run("raft/flapping-follower", seed, &["raft.pre_vote=false"]);
        let r_off = report(&off);
        assert_eq!(r_off["verdict"], "pass", "{}", off.summary_txt);
        let changes = r_off["elections"]["leader_changes"].as_u64().unwrap();
        assert!(changes >= 20, "seed {seed}: {changes}\n{}", off.summary_txt);
        // The needless elections are the peers' election load (votes and pre-votes).
        let rps = |r: &serde_json::Value| r["backend_requests_per_s"].as_f64().unwrap();
        assert!(
            rps(&r_off) > 4.0 * rps(&r),
            "{} vs {}",
            rps(&r_off),
            rps(&r)
        );
    }
}

#[test]
fn raft_runs_are_deterministic() {
    let a = run("gc-pause", 3, &[RAFT]);
    let b = run("gc-pause", 3, &[RAFT]);
    for ((file, x), (_, y)) in a.files().iter().zip(b.files().iter()) {
        assert!(x == y, "{file} differs between two runs of seed 3");
    }
}

#[test]
fn graceful_stepdown_says_how_it_hands_over_and_measures_the_dark_time() {
    let a = run("graceful-stepdown", 1, &[RAFT]);
    let r = report(&a);
    assert_eq!(r["verdict"], "pass", "{}", a.summary_txt);
    assert!(
        a.summary_txt
            .contains("step-down: a resign names no successor"),
        "{}",
        a.summary_txt
    );
    let gap = r["handoff_gaps"][0]["gap_ms"].as_f64().unwrap();
    assert!((150.0..1500.0).contains(&gap), "dark time {gap}");
}
