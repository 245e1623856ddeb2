//! etcd's lock API (`LockClient`) on Baton's simulated 3-member etcd, through
//! etcd-client 0.21's API only.
//!
//! Methodology: two nodes, each with its own 2 s lease kept alive every 500 ms, take the
//! lock `/l` three times each, hold it 700 ms and unlock. Then, at 10 s, the first takes
//! it and stops its keep-alives without unlocking (a holder that died); at 10.5 s the
//! second asks for it. Each critical section is recorded with its simulated times; the
//! abandoned one lasts until its lease could first have expired (its last keep-alive,
//! at most 500 ms before it stopped, plus the TTL). The check: no two sections overlap,
//! every lock was granted, and the second node got the abandoned lock within 2.5 s of
//! that expiry. The same seed must give the same bytes twice. Canary: lockers that do
//! not wait (a create-if-absent put of their own key, then "holding") must be caught.
#![cfg(madsim)]

mod common;

use baton_etcd_client::{Client, Compare, CompareOp, LockOptions, PutOptions, Txn, TxnOp};
use baton_sim::world::clock::global_now_us;
use common::{in_world, patient_client, sleep_ms};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

const LOCK: &str = "/l";
const TTL_S: i64 = 2;
const KEEPALIVE_MS: i64 = 500;

/// One critical section: the node, when it entered and when it left (ms).
type Section = (String, i64, i64);
type Sections = Arc<Mutex<Vec<Section>>>;

fn now_ms() -> i64 {
    (global_now_us() / 1000) as i64
}

async fn sleep_until_ms(at_ms: i64) {
    sleep_ms((at_ms - now_ms()).max(0) as u64).await;
}

async fn keep_alive(mut c: Client, lease: i64, on: Arc<AtomicBool>) {
    let Ok((mut keeper, mut stream)) = c.lease_keep_alive(lease).await else {
        return;
    };
    while on.load(Ordering::SeqCst) {
        if keeper.keep_alive().await.is_err() || stream.message().await.is_err() {
            return;
        }
        sleep_ms(KEEPALIVE_MS as u64).await;
    }
}

/// Takes the lock, or (the canary) only puts one's own key if it is absent.
async fn take(c: &mut Client, lease: i64, wait: bool) -> Vec<u8> {
    if wait {
        let opts = LockOptions::new().with_lease(lease);
        let r = c.lock(LOCK, Some(opts)).await.expect("lock");
        return r.key().to_vec();
    }
    let key = format!("{LOCK}/{lease:x}");
    let put = TxnOp::put(key.clone(), "", Some(PutOptions::new().with_lease(lease)));
    let txn = Txn::new()
        .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
        .and_then([put]);
    c.txn(txn).await.expect("txn");
    key.into_bytes()
}

/// One locker: three rounds, then its part of the abandoned lock.
async fn locker(me: String, first: bool, sections: Sections, wait: bool) {
    let mut c = patient_client().await;
    let lease = c.lease_grant(TTL_S, None).await.expect("grant").id();
    let on = Arc::new(AtomicBool::new(true));
    madsim::task::spawn(keep_alive(c.clone(), lease, on.clone()));
    for _ in 0..3 {
        let key = take(&mut c, lease, wait).await;
        let enter = now_ms();
        sleep_ms(700).await;
        sections.lock().unwrap().push((me.clone(), enter, now_ms()));
        c.unlock(key).await.expect("unlock");
        sleep_ms(100).await;
    }
    sleep_until_ms(if first { 10_000 } else { 10_500 }).await;
    take(&mut c, lease, wait).await;
    let enter = now_ms();
    if first {
        // Dies holding it: its lease is renewed no more.
        on.store(false, Ordering::SeqCst);
        let expiry = now_ms() - KEEPALIVE_MS + TTL_S * 1000;
        sections.lock().unwrap().push((me, enter, expiry));
    } else {
        sections.lock().unwrap().push((me, enter, now_ms()));
    }
}

fn locking(seed: u64, wait: bool) -> (Vec<Section>, String) {
    let sections: Sections = Arc::default();
    let s = sections.clone();
    let timeline = in_world(seed, move |_| async move {
        let handle = madsim::runtime::Handle::current();
        for (i, first) in [(1, true), (2, false)] {
            let (me, s) = (format!("n{i}"), s.clone());
            let node = handle.create_node().name(me.as_str()).build();
            node.spawn(locker(me, first, s, wait));
        }
        sleep_ms(16_000).await;
    });
    let out = sections.lock().unwrap().clone();
    (out, timeline)
}

/// Every way the sections break the lock's promises (see the methodology).
fn violations(sections: &[Section]) -> Vec<String> {
    let mut out = vec![];
    for (i, a) in sections.iter().enumerate() {
        for b in &sections[i + 1..] {
            if a.1 < b.2 && b.1 < a.2 {
                out.push(format!("{a:?} and {b:?} overlap"));
            }
        }
    }
    let count = |n: &str| sections.iter().filter(|s| s.0 == n).count();
    if count("n1") != 4 || count("n2") != 4 {
        out.push(format!("not every lock was granted: {sections:?}"));
    }
    let abandoned = sections.iter().find(|s| s.0 == "n1" && s.1 >= 10_000);
    let after = sections.iter().find(|s| s.0 == "n2" && s.1 >= 10_000);
    if let (Some(a), Some(b)) = (abandoned, after) {
        if b.1 > a.2 + 2_500 {
            out.push(format!(
                "the lease's expiry freed the lock late: {a:?} then {b:?}"
            ));
        }
    }
    out
}

#[test]
fn lockers_exclude_each_other_and_an_expiry_frees_the_lock() {
    let (sections, timeline) = locking(9, true);
    let v = violations(&sections);
    assert!(v.is_empty(), "{v:#?}\n{sections:#?}");
    let again = locking(9, true);
    assert_eq!(again.0, sections, "the same seed gives the same sections");
    assert_eq!(again.1, timeline, "the same seed gives the same timeline");
}

#[test]
fn canary_a_lock_that_does_not_wait_is_caught() {
    let (sections, _) = locking(9, false);
    let v = violations(&sections);
    assert!(
        v.iter().any(|v| v.contains("overlap")),
        "the broken lock is caught: {v:#?}\n{sections:#?}"
    );
}
