//! Canaries: deliberately broken protocols and scenarios that each checker must catch.
//! A checker that never fires on a real run proves nothing; these runs prove it can.
//!
//! Methodology: each test takes a committed scenario, breaks one thing with `--set`
//! (as a user would), runs it, and asserts that the named property fails.

mod common;
use common::*;

#[test]
fn constant_token_canary_is_caught_even_with_fencing() {
    // Every leadership carries token 1: the fence cannot tell the stale leader apart.
    let a = run("gc-pause", 42, &["etcd-lease.canary=constant-token"]);
    let props = properties(&a);
    assert!(!a.passed);
    assert!(
        props.contains(&"double_leader_acting".to_string()),
        "{props:?}"
    );
}

#[test]
fn ignore_deadline_canary_is_caught() {
    // The cut-off leader ignores its own lease deadline and keeps acting. With fencing
    // its writes are rejected (safety holds) but it never stops by itself...
    let a = run("partition", 42, &["etcd-lease.canary=ignore-deadline"]);
    assert!(!a.passed);
    assert!(properties(&a).contains(&"expectation_never_met".to_string()));
    assert!(!report(&a)["fencing"]["rejections"]
        .as_array()
        .unwrap()
        .is_empty());
    // ...and without fencing its writes interleave with the new leader's.
    let a = run(
        "partition",
        42,
        &["etcd-lease.canary=ignore-deadline", "fencing=false"],
    );
    let props = properties(&a);
    assert!(
        props.contains(&"double_leader_acting".to_string()),
        "{props:?}"
    );
    assert!(
        props.contains(&"stale_token_accepted".to_string()),
        "{props:?}"
    );
    assert!(
        props.contains(&"sequence_not_increasing".to_string()),
        "{props:?}"
    );
}

#[test]
fn liveness_checker_fires_when_the_network_never_recovers() {
    // From 5 s on every message is lost, for good: no leader can write again.
    let text =
        "duration_ms = 20000\n[[faults]]\nkind = \"network\"\nat_ms = 5000\nloss_ppm = 1000000\n";
    let resolved =
        baton_model::scenario::load_str("black-hole.toml", "black-hole", text, &[]).unwrap();
    let a = baton_sim::run(&resolved, 42).unwrap();
    assert!(!a.passed);
    assert_eq!(properties(&a), vec!["no_progress".to_string()]);
}

#[test]
fn sometimes_checker_fails_a_run_that_never_reached_the_trap() {
    // A pause shorter than the lease: nobody takes over, nothing stale is written.
    let a = run("gc-pause", 42, &["faults.0.duration_ms=500"]);
    assert!(!a.passed);
    let r = report(&a);
    assert_eq!(r["double_leader_acting_incidents"], 0);
    assert!(
        properties(&a).iter().all(|p| p == "expectation_never_met"),
        "{:?}",
        properties(&a)
    );
}

#[test]
fn failover_bound_checker_fires_when_the_bound_is_too_tight() {
    let a = run("clean-kill", 42, &["expect.failover_ms_max=1000"]);
    assert!(!a.passed);
    assert!(properties(&a).contains(&"failover_too_slow".to_string()));
}

#[test]
fn a_leader_that_releases_before_stopping_its_step_is_caught() {
    // With a long job step, a leader that gives leadership up first and finishes its step
    // after is still acting when the next leader starts. With the real discipline (stop,
    // then release) the same step-down passes.
    for seed in [42, 0, 1] {
        let a = run(
            "graceful-stepdown",
            seed,
            &["work.job.canary=release-before-stop"],
        );
        assert!(!a.passed, "seed {seed}");
        assert!(
            properties(&a).contains(&"acted_after_release".to_string()),
            "seed {seed}: {:?}",
            properties(&a)
        );
        assert!(run("graceful-stepdown", seed, &[]).passed, "seed {seed}");
    }
}
