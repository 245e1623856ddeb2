//! Baton as a library: a user's elector, written against `baton_etcd_client`'s API only,
//! on every node of a scenario's world, judged by Baton's checkers.
//!
//! Methodology: the elector below is what a Rust team would write with `etcd-client`:
//! a lease of the scenario's TTL, a txn that puts the election key with it if the key's
//! create revision is 0, keep-alives every TTL/3, a local deadline of TTL from the
//! moment the last answered keep-alive was sent, and the key's create revision as the
//! fencing token. It reports its beliefs to the world (`NodeCtx::lead`,
//! `Term::step_down`); while it believes it leads, the node does Baton's protected work
//! under its token. It runs through `baton_sim::library::World` on the spec's clean kill
//! and GC pause at a fixed seed: both must pass, and the same seed must give the same
//! report, summary and timeline bytes twice. The canary proves the harness sees the
//! user's elector and not Baton's: the same elector without its local deadline, on the GC
//! pause with the fence off, must fail with two leaders acting by effect.
#![cfg(madsim)]

use baton_etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, PutOptions, Txn, TxnOp, TxnOpResponse,
};
use baton_sim::library::{Artifacts, LossReason, NodeCtx, Term, World};
use std::path::Path;
use std::time::Duration;

const KEY: &str = "/library/leader";

/// The elector's variants: honest, or the canary's bug (no local deadline).
#[derive(Clone, Copy)]
struct Variant {
    local_deadline: bool,
}

/// One node's process: campaign, lead while the lease is believed held, start over.
async fn elector(node: NodeCtx, v: Variant) {
    let opts = ConnectOptions::new().with_timeout(Duration::from_millis(1000));
    let Ok(mut client) = Client::connect(node.endpoints(), Some(opts)).await else {
        return;
    };
    loop {
        if let Some((lease, token, deadline_us)) = campaign(&node, &client).await {
            lead(&node, &client, v, lease, node.lead(token), deadline_us).await;
            let _ = client.lease_revoke(lease).await;
        }
        node.sleep(Duration::from_millis(500)).await;
    }
}

/// One campaign: a lease, then the txn until it wins. `Some((lease, token, deadline))`
/// once it leads; `None` on an error (start again).
async fn campaign(node: &NodeCtx, client: &Client) -> Option<(i64, u64, i64)> {
    let mut client = client.clone();
    let ttl_us = node.lease_ttl_ms() as i64 * 1000;
    let sent_us = node.now_us();
    let lease = client
        .lease_grant((node.lease_ttl_ms() / 1000) as i64, None)
        .await
        .ok()?
        .id();
    let mut deadline_us = sent_us + ttl_us;
    let (mut keeper, mut stream) = client.lease_keep_alive(lease).await.ok()?;
    loop {
        let put = TxnOp::put(KEY, node.name(), Some(PutOptions::new().with_lease(lease)));
        let txn = Txn::new()
            .when([Compare::create_revision(KEY, CompareOp::Equal, 0)])
            .and_then([put])
            .or_else([TxnOp::get(KEY, None)]);
        let r = client.txn(txn).await.ok()?;
        if r.succeeded() {
            // The put is the txn's one write: the key's create revision is its revision.
            let token = r.header().map_or(0, |h| h.revision()) as u64;
            node.sees_leader(Some((node.name(), token)));
            return Some((lease, token, deadline_us));
        }
        // Whom it follows: the key's holder, for the followers' `NotLeader` hints.
        let holder = match r.op_responses().first() {
            Some(TxnOpResponse::Get(g)) => g.kvs().first().cloned(),
            _ => None,
        };
        match &holder {
            Some(kv) => node.sees_leader(Some((
                kv.value_str().unwrap_or(""),
                kv.create_revision() as u64,
            ))),
            None => node.sees_leader(None),
        }
        node.sleep(Duration::from_millis(ttl_us as u64 / 3000))
            .await;
        let sent_us = node.now_us();
        keeper.keep_alive().await.ok()?;
        match stream.message().await {
            Ok(Some(k)) if k.ttl() > 0 => deadline_us = sent_us + k.ttl() * 1_000_000,
            _ => return None,
        }
    }
}

/// Leads until the term ends: the local deadline passes (honest variant), a keep-alive
/// says the lease is gone, or the node's work ends it (a fencing rejection).
async fn lead(
    node: &NodeCtx,
    client: &Client,
    v: Variant,
    lease: i64,
    term: Term,
    mut deadline_us: i64,
) {
    let mut client = client.clone();
    let Ok((mut keeper, mut stream)) = client.lease_keep_alive(lease).await else {
        return term.step_down(LossReason::Revoked);
    };
    let interval = Duration::from_millis(node.lease_ttl_ms() / 3);
    loop {
        let sent_us = node.now_us();
        let renew = async {
            keeper.keep_alive().await.ok()?;
            stream.message().await.ok()?
        };
        tokio::select! {
            biased;
            _ = term.ended() => return,
            _ = node.sleep_until(deadline_us), if v.local_deadline => {
                return term.step_down(LossReason::DeadlinePassed);
            }
            r = renew => match r {
                Some(k) if k.ttl() > 0 => deadline_us = deadline_us.max(sent_us + k.ttl() * 1_000_000),
                _ => return term.step_down(LossReason::Revoked),
            },
        }
        tokio::select! {
            biased;
            _ = term.ended() => return,
            _ = node.sleep_until(deadline_us), if v.local_deadline => {
                return term.step_down(LossReason::DeadlinePassed);
            }
            _ = node.sleep(interval) => {}
        }
    }
}

/// `scenarios/<name>.toml` with `set`, run under `seed` with the elector `v`.
fn run(name: &str, set: &[&str], seed: u64, v: Variant) -> Artifacts {
    world(name, set, seed, v).run().expect("the run reports")
}

/// The world of `scenarios/<name>.toml` with `set` under `seed`, the elector `v` on
/// every node.
fn world(name: &str, set: &[&str], seed: u64, v: Variant) -> World {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../scenarios/{name}.toml"));
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let scenario = baton_model::load(&path, &set).expect("the scenario loads");
    World::new(&scenario, seed)
        .expect("an etcd-lease scenario on a cluster")
        .reproduce(format!(
            "cargo test --release -p baton-etcd-client --test library -- {name} (seed {{seed}})"
        ))
        .nodes(move |node| elector(node, v))
}

const HONEST: Variant = Variant {
    local_deadline: true,
};

/// Runs `name` twice under `seed`: it must pass, with the same bytes each time.
fn passes_twice(name: &str, seed: u64) -> Artifacts {
    let a = run(name, &[], seed, HONEST);
    assert!(a.passed, "{name}: {}", a.summary_txt);
    let b = run(name, &[], seed, HONEST);
    assert_eq!(a.report_json, b.report_json, "{name}: report.json differs");
    assert_eq!(a.summary_txt, b.summary_txt, "{name}: summary.txt differs");
    assert_eq!(
        a.timeline_jsonl(),
        b.timeline_jsonl(),
        "{name}: timeline differs"
    );
    assert!(a
        .summary_txt
        .contains("cargo test --release -p baton-etcd-client"));
    a
}

#[test]
fn clean_kill_fails_over_deterministically() {
    let a = passes_twice("clean-kill", 7);
    // One leader acted at a time, by effect, through the kill.
    assert_eq!(a.findings.effect.max, 1, "{}", a.summary_txt);
}

#[test]
fn gc_pause_is_fenced_deterministically() {
    let a = passes_twice("gc-pause", 7);
    assert_eq!(a.findings.effect.max, 1, "{}", a.summary_txt);
}

/// The canary: no local deadline and no fence. The paused leader wakes still believing
/// and writes beside its successor, which the checkers must catch.
#[test]
fn canary_no_local_deadline_without_fence_is_caught() {
    let broken = Variant {
        local_deadline: false,
    };
    let a = run("gc-pause", &["fencing=false"], 7, broken);
    assert!(!a.passed, "the canary passed: {}", a.summary_txt);
    assert!(a.findings.effect.max >= 2, "{}", a.summary_txt);
    assert!(
        a.findings.double_leader_acting_incidents >= 1,
        "{}",
        a.summary_txt
    );
}

/// A seed search over the closure, as `sim search` runs Baton's own protocols: the
/// canary fails at the first seed it tries and its reproduce line names that seed; the
/// honest elector passes every seed of a small range on the clean kill.
#[test]
fn a_seed_search_finds_the_canary_and_not_the_honest_elector() {
    let broken = Variant {
        local_deadline: false,
    };
    let found = world("gc-pause", &["fencing=false"], 0, broken)
        .search(3..13)
        .expect("the runs report")
        .expect("the canary fails at some seed");
    assert_eq!(found.seed, 3);
    assert!(
        found.run.summary_txt.contains("-- gc-pause (seed 3)"),
        "{}",
        found.run.summary_txt
    );
    let none = world("clean-kill", &[], 0, HONEST)
        .search(1..6)
        .expect("the runs report");
    assert!(
        none.is_none(),
        "{}",
        none.map(|f| f.run.summary_txt).unwrap_or_default()
    );
}

/// Bad input is a typed error, not a panic: a scenario whose protocol has no etcd, a
/// sharded fleet, a world run without a node function.
#[test]
fn bad_input_is_a_typed_error() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/clean-kill.toml");
    let bully = baton_model::load(&path, &["protocol=bully".to_string()]).expect("loads");
    assert!(matches!(
        World::new(&bully, 1),
        Err(baton_sim::library::Error::NotEtcd { .. })
    ));
    let sharded_path = path.with_file_name("sharded.toml");
    let sharded = baton_model::load(&sharded_path, &[]).expect("loads");
    assert!(matches!(
        World::new(&sharded, 1),
        Err(baton_sim::library::Error::Sharded { .. })
    ));
    let scenario = baton_model::load(&path, &[]).expect("loads");
    let world = World::new(&scenario, 1).expect("etcd-lease on a cluster");
    assert!(matches!(
        world.run(),
        Err(baton_sim::library::Error::NoNodes)
    ));
}
