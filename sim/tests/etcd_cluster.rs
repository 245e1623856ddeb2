//! The lease service as an etcd cluster (`[etcd] members = 3`, the default): the scenarios under
//! `scenarios/etcd/` show what the cluster model is for, and the model's own rules hold.
//!
//! Methodology: run the committed scenarios on fixed seeds and read report.json: an etcd
//! leader killed while a Baton leader holds its lease must give a lease-service leader
//! change and a lease that outlives its last renewal + TTL by more than a second (the
//! new lessor's promotion); churning etcd leaders must keep an unrenewed lease alive far
//! longer; a slow disk must not make two leaders. Member faults on a one-member service
//! are refused as bad input.

mod common;
use common::*;

fn overrun_max(r: &serde_json::Value) -> f64 {
    r["lease_service"]["lease_overrun_ms"]["max"]
        .as_f64()
        .expect("a cluster run reports lease overrun")
}

#[test]
fn leader_kill_extends_the_lease_past_its_ttl() {
    for seed in [1, 2, 3] {
        let a = run("etcd/leader-kill", seed, &[]);
        let r = report(&a);
        assert_eq!(r["verdict"], "pass", "seed {seed}");
        assert!(r["lease_service"]["leader_changes"].as_u64().unwrap() >= 1);
        let o = overrun_max(&r);
        assert!(o > 1000.0, "seed {seed}: overrun {o} ms");
    }
}

#[test]
fn leader_churn_keeps_an_unrenewed_lease_alive() {
    let a = run("etcd/leader-churn", 1, &[]);
    let r = report(&a);
    assert_eq!(r["verdict"], "pass");
    assert!(r["lease_service"]["leader_changes"].as_u64().unwrap() >= 4);
    // The Baton leader died at 10.5 s; the churn lasts until 20 s.
    assert!(overrun_max(&r) > 5000.0, "overrun {}", overrun_max(&r));
}

#[test]
fn slow_fsync_passes_fenced() {
    for seed in [1, 2] {
        let r = report(&run("etcd/slow-fsync", seed, &[]));
        assert_eq!(r["verdict"], "pass", "seed {seed}");
        assert_eq!(r["leaders_acting"]["by_effect_max"], 1);
    }
}

#[test]
fn one_member_has_no_cluster_figures() {
    // The default is a cluster; one member is the single service of before.
    let r = report(&run("clean-kill", 1, &[]));
    assert!(r["lease_service"]["leader_changes"].as_u64().is_some());
    let r = report(&run("clean-kill", 1, &["etcd.members=1"]));
    assert!(r.get("lease_service").is_none());
}

#[test]
fn member_faults_need_a_cluster() {
    let path = scenarios_dir().join("etcd/leader-kill.toml");
    let e = baton_model::scenario::load(&path, &["etcd.members=1".to_string()])
        .expect_err("no members to kill");
    let text = e.to_string();
    assert!(text.contains("faults.0.target"), "{text}");
    assert!(text.contains("etcd-leader"), "{text}");
}

#[test]
fn a_silent_member_costs_its_clients_a_ttl() {
    // The member the leader's client talks to is cut off silently: the leader stops at
    // its own deadline, its lease expires on the etcd leader, another node (on another
    // member) takes over, and no two lead.
    for seed in [1, 2] {
        let r = report(&run("etcd/member-partition", seed, &[]));
        assert_eq!(r["verdict"], "pass", "seed {seed}");
        assert_eq!(r["leaders_acting"]["by_effect_max"], 1);
        assert!(
            r["failover_ms"][0].as_f64().is_some(),
            "seed {seed}: a failover"
        );
        let expired = r["lease_service"]["lease_overrun_ms"]["count"]
            .as_u64()
            .unwrap();
        assert!(
            expired >= 1,
            "seed {seed}: the cut-off leader's lease expired"
        );
    }
}

#[test]
fn a_new_etcd_leader_whose_first_entry_timed_out_is_still_promoted() {
    // Found by `sim search scenarios/etcd/swarm.toml` (seed 64): etcd-2 won term 3 while
    // member faults kept its first entry from committing in time; its lessor was never
    // promoted, so it refused every keepalive for the rest of its term and no Baton
    // leader held a lease for the last 37 s. The lessor is now promoted when the first
    // entry of the term commits, however late.
    let a = run("etcd/swarm", 64, &[]);
    let r = report(&a);
    assert_eq!(r["verdict"], "pass", "{}", a.summary_txt);
    assert!(
        a.timeline_jsonl()
            .contains("\"member\":\"etcd-2\",\"leases\""),
        "etcd-2 promoted"
    );
}
