//! The protocol-safety checker (issue 22): the protocol judged by itself, not by what
//! the fence let through.
//!
//! Methodology: the canary is etcd-lease's `late-deadline` variant on
//! scenarios/late-deadline.toml (slow answers, then a cut): with the fence on, every
//! check of what the resource saw passes, and only `acted_past_grant` fails, on every
//! seed tried; the honest protocol on the same file is protocol-safe. A GC pause beyond
//! etcd-lease's declared bounds (0 ms) is the fence's to stop: gc-pause.toml passes as
//! fence-saved, with the count. An election with no lease (bully) declares no safety of
//! its own: its acts past the grant are never the protocol checker's violation.

use crate::common;

use common::{report, run};

fn properties(r: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> = r["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["property"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn a_late_deadline_fails_with_the_fence_on_and_the_honest_protocol_passes() {
    for seed in 0..5 {
        let canary = report(&run(
            "late-deadline",
            seed,
            &["etcd-lease.canary=late-deadline"],
        ));
        assert_eq!(canary["verdict"], "fail", "seed {seed}");
        assert_eq!(
            properties(&canary),
            vec!["acted_past_grant"],
            "seed {seed}: the fence hid it from every other check"
        );
        // The fence kept the resource right; the protocol broke its promise: the run
        // fails, and the protocol-level verdict says who saved the work.
        assert_eq!(canary["protocol_safety"]["outcome"], "fence-saved");
        assert_eq!(canary["fencing"]["enabled"], true);
        let honest = report(&run("late-deadline", seed, &[]));
        assert_eq!(
            honest["verdict"], "pass",
            "seed {seed}: {}",
            honest["violations"]
        );
        assert_eq!(
            honest["protocol_safety"]["outcome"], "protocol-safe",
            "seed {seed}"
        );
    }
}

#[test]
fn a_pause_beyond_the_bounds_is_the_fence_s_to_stop() {
    let r = report(&run("gc-pause", 1, &[]));
    assert_eq!(r["verdict"], "pass");
    let p = &r["protocol_safety"];
    assert_eq!(p["outcome"], "fence-saved");
    assert!(p["past_grant_fence_saved"].as_u64().unwrap() >= 1, "{p}");
    assert_eq!(p["past_grant_in_bounds"], 0);
    assert!(
        p["fence_saved"][0].as_str().unwrap().contains("paused"),
        "{p}"
    );
}

#[test]
fn a_protocol_that_declares_no_safety_never_fails_this_check() {
    let r = report(&run("partition", 1, &["protocol=bully"]));
    assert_eq!(r["protocol_safety"]["bounds"]["self_safe"], false);
    assert_eq!(r["protocol_safety"]["past_grant_in_bounds"], 0);
    assert!(!properties(&r).contains(&"acted_past_grant".to_string()));
}
