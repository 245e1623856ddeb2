//! Sharded leadership (`partitions = P`, scenarios/sharded.toml).
//!
//! Methodology: the committed scenario (9 nodes, 64 partitions, three kills and
//! restarts) must pass with every partition checked on its own, and rendezvous hashing
//! must move exactly the partitions a membership change forces. The canary: a fleet whose
//! leaders ignore their own deadline, one of them cut off from the lease service, with
//! the fence off: the partitions it led get a second leader while it still writes, and
//! the per-partition checkers must say which.

mod common;
use common::*;

#[test]
fn sharded_passes_per_partition_and_moves_only_what_it_must() {
    let a = run("sharded", 1, &[]);
    assert!(a.passed, "{:?}", properties(&a));
    let r = report(&a);
    let p = &r["partitions"];
    assert_eq!(p["count"], 64);
    assert_eq!(p["each"].as_array().unwrap().len(), 64);
    assert!(p["each"].as_array().unwrap().iter().all(|e| e["failed"]
        .as_array()
        .unwrap()
        .is_empty()
        && e["by_effect_max"] == 1));
    assert_eq!(p["changes"].as_array().unwrap().len(), 6, "{p}");
    assert_eq!(p["moved"], p["minimum"], "{p}");
    assert!(p["moved"].as_u64().unwrap() > 0);
    assert!(a.leaders_acting_svg.contains("partitions led"));
}

#[test]
fn a_second_leader_in_one_partition_is_caught_and_named() {
    let text = "nodes = 5\npartitions = 16\nduration_ms = 40000\nfencing = false\n\
        [etcd-lease]\nlease_ttl_ms = 3000\ncanary = \"ignore-deadline\"\n\
        [work]\nrate_per_s = 0\ntick_interval_ms = 500\n\
        [[faults]]\nkind = \"partition\"\nat_ms = 10000\nfrom = \"n2\"\nto = \"backend\"\nduration_ms = 10000\n";
    let resolved = baton_model::scenario::load_str("split.toml", "split", text, &[]).unwrap();
    let a = baton_sim::run(&resolved, 1).unwrap();
    assert!(!a.passed);
    let r = report(&a);
    let v = r["violations"].as_array().unwrap();
    assert!(
        v.iter().any(|v| v["property"] == "double_leader_acting"
            && v["detail"].as_str().unwrap().starts_with("partition ")),
        "{v:?}"
    );
}

#[test]
fn partitions_refuse_what_a_sharded_fleet_does_not_run() {
    let d = temp_dir("sharded-bad");
    std::fs::write(d.join("bad.toml"), "protocol = \"raft\"\npartitions = 8\n").unwrap();
    let o = sim(&["run", "bad.toml"], &d);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bad.toml:2"), "{err}");
    assert!(err.contains("key `partitions`"), "{err}");
    assert!(err.contains("allowed with partitions: etcd-lease"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}
