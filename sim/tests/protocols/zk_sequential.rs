//! `zk-sequential` runs every committed scenario, and keeps one leader acting by effect.
//!
//! Methodology: each committed scenario runs with `--set protocol=zk-sequential` under a
//! few seeds; the assertions read report.json's stable keys. The scenarios carry a
//! `[zk-sequential]` table with a 3 s session timeout (tickTime 1 s; gc-pause's 0.5 s),
//! so gc-pause's 3.5 s pause outlives the session as it outlives etcd's 3 s lease. The claim
//! (0 by-effect incidents on gc-pause and partition) was measured over seeds 0..100 with
//! `sim run`; this test keeps a handful so CI stays cheap.

use crate::common;
use common::*;

const PROTO: &str = "protocol=zk-sequential";

#[test]
fn every_scenario_runs_and_only_the_unfenced_one_fails() {
    for name in [
        "clean-kill",
        "partition",
        "gc-pause",
        "gc-pause-unfenced",
        "graceful-stepdown",
        "slow-clock-partition",
    ] {
        for seed in [0, 42] {
            let a = run(name, seed, &[PROTO]);
            let r = report(&a);
            // gc-pause-unfenced is meant to fail: without fencing the woken leader's
            // write lands after its successor's, whatever the protocol.
            let want = if name == "gc-pause-unfenced" {
                "fail"
            } else {
                "pass"
            };
            assert_eq!(r["verdict"], want, "{name} seed {seed}:\n{}", a.summary_txt);
            assert_eq!(r["protocol"], "zk-sequential");
        }
    }
}

#[test]
fn gc_pause_and_partition_keep_one_leader_acting_by_effect() {
    for name in ["gc-pause", "partition"] {
        for seed in [1, 2, 3, 4, 5] {
            let a = run(name, seed, &[PROTO]);
            let r = report(&a);
            assert_eq!(r["double_leader_acting_incidents"], 0, "{name} seed {seed}");
            assert_eq!(
                r["leaders_acting"]["by_effect_max"], 1,
                "{name} seed {seed}"
            );
            assert_eq!(r["sequence"]["reused"], 0, "{name} seed {seed}");
        }
    }
    // The woken leader's stale czxid is what the resource turns away.
    let a = run("gc-pause", 7, &[PROTO]);
    let r = report(&a);
    let rejections = r["fencing"]["rejections"].as_array().unwrap();
    assert!(!rejections.is_empty(), "{}", a.summary_txt);
}

#[test]
fn clean_kill_fails_over_within_session_timeout_plus_a_tick() {
    let a = run("clean-kill", 42, &[PROTO]);
    let r = report(&a);
    let bound = r["failover_bound"]["ms"].as_f64().unwrap();
    // 3000 ms session + 1000 ms tick + three round trips at <= 5 ms.
    assert_eq!(bound, 4030.0);
    let failovers = r["failover_ms"].as_array().unwrap();
    assert!(!failovers.is_empty());
    for f in failovers {
        assert!(f.as_f64().unwrap() <= bound, "{}", a.summary_txt);
    }
    assert!(a.summary_txt.contains("bound: session timeout + tick"));
}

#[test]
fn the_real_defaults_are_curators_negotiated_down() {
    // At the real defaults, Curator's 60 s ask is above ZooKeeper's 20 x 2000 ms ceiling.
    let set = [
        PROTO,
        "zk-sequential.session_timeout_ms=60000",
        "zk-sequential.tick_time_ms=2000",
    ];
    let r = load("clean-kill", &set);
    let toml = r.to_toml();
    assert!(toml.contains("max_session_timeout_ms = 40000"), "{toml}");
    assert!(toml.contains("ping_interval_ms = 13333"), "{toml}");
    assert_eq!(r.protocol.failover_bound().ms, 40_000 + 2000 + 30);
}

#[test]
fn same_seed_gives_identical_artifacts() {
    let a = run("gc-pause", 3, &[PROTO]);
    let b = run("gc-pause", 3, &[PROTO]);
    for ((file, x), (_, y)) in a.files().iter().zip(b.files().iter()) {
        assert!(x == y, "{file} differs between two runs of seed 3");
    }
}

/// When the server expires a killed node's session: its last touch, a tick's rounding.
///
/// The client library (real mode's `zookeeper-client`) pings whenever the session has
/// been silent for 3/20 of its timeout (450 ms at 3 s), checking every 1/20 (150 ms), so
/// the last touch before a kill is at most about 600 ms old, and the server expires the
/// session 3 s after it, rounded up to its next tick (1 s; the tracker's phase drawn
/// from the seed): 2.4 to 4 s after the kill. With only the recipe's pings (every 1 s)
/// it could come 2 s after the kill; with the tracker's ticks on whole seconds it always
/// came at one, whatever the seed.
#[test]
fn a_killed_sessions_expiry_follows_the_librarys_pings_and_the_trackers_own_ticks() {
    let mut after_kill_ms = vec![];
    let mut phases_us = std::collections::BTreeSet::new();
    for seed in 0..30 {
        let a = run("clean-kill", seed, &[PROTO]);
        let text = a.timeline_jsonl();
        let events: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let kill = events
            .iter()
            .find(|e| e["event"] == "node_killed")
            .expect("the kill struck")["at_us"]
            .as_i64()
            .unwrap();
        let expired = events
            .iter()
            .find(|e| e["event"] == "lease_expired" && e["at_us"].as_i64().unwrap() > kill)
            .expect("the session expired")["at_us"]
            .as_i64()
            .unwrap();
        after_kill_ms.push((expired - kill) as f64 / 1000.0);
        phases_us.insert(expired % 1_000_000);
    }
    let (lo, hi) = after_kill_ms
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), x| (l.min(*x), h.max(*x)));
    assert!(lo > 2_350.0 && hi <= 4_000.0, "{after_kill_ms:?}");
    assert!(
        phases_us.len() > 20,
        "expiries on few phases: {phases_us:?}"
    );
}

/// When (µs) the leader cut off by conform/partition (at 5 s) stopped acting on its own
/// clock, and its first token.
fn cut_off_leader_stop_us(a: &baton_sim::Artifacts) -> i64 {
    a.timeline_jsonl()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| {
            e["event"] == "stopped_acting"
                && e["reason"] == "deadline_passed"
                && e["at_us"].as_i64().unwrap() > 5_000_000
        })
        .map(|e| e["at_us"].as_i64().unwrap())
        .expect("the cut-off leader stops at its deadline")
}

/// `local_deadline = "suspended"` (Curator's `LeaderLatch`, kazoo's `SUSPENDED`) stops a
/// cut-off leader at its client's read timeout, 2/3 of the session timeout after the last
/// answer: a third of the timeout (minus a round trip) earlier than Baton's node, which
/// waits for the last answered ping's send plus the whole timeout. Same seed, same pings
/// until the cut, so the two runs differ by that much and nothing else.
#[test]
fn suspended_stops_a_cut_off_leader_a_third_of_the_timeout_earlier() {
    let zk = [
        PROTO,
        "zk-sequential.session_timeout_ms=3000",
        "zk-sequential.tick_time_ms=300",
    ];
    for seed in 0..4 {
        let own = run("conform/partition", seed, &zk);
        let mut set = zk.to_vec();
        set.push("zk-sequential.local_deadline=suspended");
        let suspended = run("conform/partition", seed, &set);
        let (a, b) = (
            cut_off_leader_stop_us(&own),
            cut_off_leader_stop_us(&suspended),
        );
        let earlier_ms = (a - b) / 1000;
        assert!(
            (960..=1000).contains(&earlier_ms),
            "seed {seed}: session-timeout stopped at {a} us, suspended at {b} us"
        );
        assert!(
            suspended.passed,
            "seed {seed}: {:?}",
            properties(&suspended)
        );
    }
}
