//! A small election written against etcd-client 0.21's API only, run on Baton's simulated
//! 3-member etcd in a seeded world.
//!
//! Methodology: three simulated nodes each run `campaign` (a lease, a txn that puts the
//! election key with it if its create revision is 0, the put's revision as the fencing
//! token, keep-alives while it leads). The world kills the etcd leader at 4 s and the
//! elected node at 10 s; every node logs what it saw on simulated time. The same seed
//! must give the same bytes (the log and the service's timeline) twice, another seed
//! other bytes, the kill a second winner with a higher token. A second test stops a
//! lease's keep-alives and checks it expires, with a canary: a lessor that never looks
//! (its expiry check a day apart) must be caught by the same check.
#![cfg(madsim)]

use baton_etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, Error, GetOptions, LeaseTimeToLiveOptions,
    PutOptions, Txn, TxnOp, TxnOpResponse,
};
mod common;
use baton_sim::world::clock::global_now_us;
use common::{endpoints, in_world_with, kill_member, say, sleep_ms, Log, LESSOR};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const KEY: &str = "/election/leader";

/// A node boots for 1 ms before it talks, as in Baton's world: the members bind at 0.
async fn boot() {
    sleep_ms(1).await;
}

/// One node's election: campaign, lead while the keep-alives answer, start over.
async fn campaign(me: String, log: Log) {
    boot().await;
    let opts = ConnectOptions::new().with_timeout(Duration::from_millis(1000));
    let mut client = match Client::connect(endpoints(), Some(opts)).await {
        Ok(c) => c,
        Err(e) => return say(&log, &me, format!("connect failed: {e}")),
    };
    loop {
        match try_once(&me, &mut client, &log).await {
            Ok(()) => {}
            Err(e) => say(&log, &me, format!("error: {e}")),
        }
        sleep_ms(300).await;
    }
}

async fn try_once(me: &str, client: &mut Client, log: &Log) -> Result<(), Error> {
    let lease = client.lease_grant(3, None).await?.id();
    let txn = Txn::new()
        .when([Compare::create_revision(KEY, CompareOp::Equal, 0)])
        .and_then([TxnOp::put(
            KEY,
            me,
            Some(PutOptions::new().with_lease(lease)),
        )])
        .or_else([TxnOp::get(KEY, None)]);
    let r = client.txn(txn).await?;
    if !r.succeeded() {
        let holder = match r.op_responses().first() {
            Some(TxnOpResponse::Get(g)) => g.kvs().first().map(|kv| kv.value().to_vec()),
            _ => None,
        };
        let holder = String::from_utf8_lossy(&holder.unwrap_or_default()).into_owned();
        let _ = client.lease_revoke(lease).await;
        say(log, me, format!("follows {holder}"));
        sleep_ms(700).await;
        return Ok(());
    }
    let token = r.header().map_or(0, |h| h.revision());
    say(log, me, format!("leads, token {token}"));
    let (mut keeper, mut stream) = client.lease_keep_alive(lease).await?;
    loop {
        sleep_ms(1000).await;
        keeper.keep_alive().await?;
        match stream.message().await {
            Ok(Some(k)) if k.ttl() > 0 => {}
            other => {
                say(log, me, format!("lost its lease: {other:?}"));
                return Ok(());
            }
        }
        // The key must still be ours, at our token.
        let g = client.get(KEY, None).await?;
        if g.kvs().first().map(|kv| kv.create_revision()) != Some(token) {
            say(log, me, "lost the key".into());
            return Ok(());
        }
    }
}

/// The election under one seed: the log and the service's timeline.
fn election(seed: u64) -> (Vec<String>, String) {
    let log: Log = Arc::default();
    let l = log.clone();
    let timeline = in_world_with(seed, LESSOR, move |cluster| async move {
        let handle = madsim::runtime::Handle::current();
        let nodes: Vec<_> = (1..=3)
            .map(|i| {
                let (name, log) = (format!("n{i}"), l.clone());
                handle
                    .create_node()
                    .name(name.clone())
                    .init(move || campaign(name.clone(), log.clone()))
                    .build()
            })
            .collect();
        sleep_ms(4_000).await;
        let leader = cluster.leader().expect("the cluster has a leader");
        say(&l, "world", format!("kills {leader}"));
        kill_member(&cluster, &leader);
        sleep_ms(6_000).await;
        let winner = wins(&l.lock().unwrap())
            .last()
            .expect("someone won")
            .0
            .clone();
        say(&l, "world", format!("kills {winner}"));
        let n: usize = winner[1..].parse().expect("n<i>");
        handle.kill(nodes[n - 1].id());
        sleep_ms(20_000).await;
    });
    let out = log.lock().unwrap().clone();
    (out, timeline)
}

/// (node, token) of every win, in order.
fn wins(log: &[String]) -> Vec<(String, i64)> {
    log.iter()
        .filter_map(|l| {
            let mut w = l.split_whitespace().skip(1);
            let node = w.next()?.to_string();
            let token = l.split(" leads, token ").nth(1)?.parse().ok()?;
            Some((node, token))
        })
        .collect()
}

#[test]
fn an_election_on_the_client_api_is_deterministic_and_fails_over() {
    let (log, timeline) = election(7);
    let text = log.join("\n");
    let w = wins(&log);
    let killed = log
        .iter()
        .position(|l| l.contains("world kills n"))
        .expect("the world killed the leader");
    let victim = log[killed].rsplit(' ').next().unwrap();
    let after = wins(&log[killed..]);
    assert!(
        after.iter().any(|(n, _)| n != victim),
        "another node won after {victim} was killed:\n{text}"
    );
    assert!(
        w.windows(2).all(|p| p[0].1 < p[1].1),
        "tokens rise:\n{text}"
    );
    // The kill of etcd-1 made the cluster elect another leader.
    assert_eq!(
        timeline
            .matches("\"event\":\"etcd_leader_elected\"")
            .count(),
        2,
        "one etcd leader change:\n{timeline}"
    );
    // Same seed, same bytes; another seed, other bytes (so the comparison can fail).
    let again = election(7);
    assert_eq!(again.0, log, "the same seed gives the same log");
    assert_eq!(again.1, timeline, "the same seed gives the same timeline");
    assert_ne!(
        election(8),
        (log, timeline),
        "another seed gives other bytes"
    );
}

/// A lease kept alive for 4 s past its 2 s TTL, then left: how long after its last
/// keep-alive its key stayed readable, and what `time_to_live` said at the end; `None`
/// if the key was gone while the keep-alives still ran.
fn expiry_after_keepalives_stop(seed: u64, lessor: (u64, u64)) -> Option<(i64, i64)> {
    let out = Arc::new(Mutex::new(None));
    let o = out.clone();
    in_world_with(seed, lessor, move |_cluster| async move {
        let handle = madsim::runtime::Handle::current();
        let node = handle.create_node().name("n1").build().spawn(async move {
            boot().await;
            let opts = ConnectOptions::new().with_timeout(Duration::from_secs(1));
            let mut c = Client::connect(endpoints(), Some(opts)).await.unwrap();
            let lease = c.lease_grant(2, None).await.unwrap().id();
            let put = PutOptions::new().with_lease(lease);
            c.put("/k", "v", Some(put)).await.unwrap();
            let (mut keeper, mut stream) = c.lease_keep_alive(lease).await.unwrap();
            let start = global_now_us();
            while global_now_us() - start < 6_000_000 {
                sleep_ms(500).await;
                keeper.keep_alive().await.unwrap();
                stream.message().await.unwrap();
                if c.get("/k", None).await.unwrap().kvs().is_empty() {
                    return None;
                }
            }
            let last = global_now_us();
            loop {
                sleep_ms(100).await;
                let gone = c.get("/k", Some(GetOptions::new())).await.unwrap();
                let waited_ms = (global_now_us() - last) / 1000;
                if gone.kvs().is_empty() || waited_ms > 20_000 {
                    let ttl = c.lease_time_to_live(lease, Some(LeaseTimeToLiveOptions::new()));
                    return Some((waited_ms, ttl.await.unwrap().ttl()));
                }
            }
        });
        *o.lock().unwrap() = node.await.unwrap();
    });
    let r = *out.lock().unwrap();
    r
}

/// The lease must go within its TTL plus one expiry check plus a round trip of slack.
fn expiry_violation(seed: u64, lessor: (u64, u64)) -> Option<String> {
    match expiry_after_keepalives_stop(seed, lessor) {
        None => Some("the key went while its lease was kept alive".into()),
        Some((waited_ms, ttl)) if waited_ms > 2_000 + 500 + 200 || ttl != -1 => Some(format!(
            "the key lived {waited_ms} ms past its last keep-alive; time_to_live said {ttl}"
        )),
        Some(_) => None,
    }
}

#[test]
fn a_lease_expires_when_its_keepalives_stop() {
    for seed in [1, 2, 3] {
        assert_eq!(expiry_violation(seed, LESSOR), None, "seed {seed}");
    }
}

#[test]
fn canary_a_lessor_that_never_expires_is_caught() {
    // The expiry check a day apart: the lease outlives its TTL for the whole run.
    let broken = (LESSOR.0, 86_400_000);
    let v = expiry_violation(1, broken).expect("the broken lessor is caught");
    assert!(v.contains("past its last keep-alive"), "{v}");
}
