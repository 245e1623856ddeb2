//! The fault verbs against live processes: a `before-write` pause (fenced, and the
//! unfenced counterfactual), a partition from etcd, and clock skew across a restart.
//!
//! Methodology: as `smoke.rs`, real processes on 127.0.0.1 and the machine's clock; each
//! test asserts the effect the fault must have on any machine (who wrote what, what the
//! SQLite ledger accepted or rejected), not timings. One run at a time. Real build only:
//!
//! `CARGO_ENCODED_RUSTFLAGS= cargo test --release -p baton-real --target-dir target/real`
#![cfg(not(madsim))]
#![allow(clippy::await_holding_lock)]

use baton_model::timeline::{Entry, Event};
use baton_protocols::etcd_lease::EtcdLeaseConfig;
use baton_real::node::ClockChange;
use baton_real::supervisor::{Direction, Link, RealConfig, StoppedRun, Supervisor};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

/// Held for a whole test, across awaits on purpose: each test has its own runtime, and
/// the lock only keeps two etcd clusters from running at once.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn config(dir: &tempfile::TempDir, fencing: bool) -> RealConfig {
    let mut cfg = RealConfig::new(
        dir.path().join("run"),
        PathBuf::from(env!("CARGO_BIN_EXE_baton-real")),
    );
    cfg.protocol = baton_real::RealProtocol::EtcdLease(EtcdLeaseConfig {
        lease_ttl_ms: 2000,
        ..Default::default()
    });
    cfg.fencing = fencing;
    cfg.rate_per_s = 500;
    cfg
}

async fn sleep_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// The spec's experiment 4 in real mode: the leader stops the world just before a write,
/// for longer than its lease; etcd elects another node; the woken leader sends its write
/// with its old token.
async fn gc_pause(fencing: bool) -> (tempfile::TempDir, baton_model::NodeId, StoppedRun) {
    let dir = tempfile::tempdir().unwrap();
    let mut sup = Supervisor::start(config(&dir, fencing)).await.unwrap();
    let old = sup
        .wait_for_leader(&[], Duration::from_secs(20))
        .await
        .unwrap();
    sleep_ms(500).await;
    sup.arm_pause_before_write(&old, 0, 3500).await.unwrap();
    sup.wait_for_leader(&[old.as_str()], Duration::from_secs(15))
        .await
        .expect("another node leads while the old one is stopped");
    // The pause ends 3.5 s after it struck; give the woken leader time to write.
    sleep_ms(3500).await;
    let out = sup.stop().await.unwrap();
    (dir, old, out)
}

fn stale_writes<'a>(t: &'a [Entry], node: &'a str) -> impl Iterator<Item = &'a Entry> + 'a {
    t.iter().filter(move |e| {
        matches!(&e.event, Event::WriteAccepted { node: n, token, max_token, .. }
            if n == node && token < max_token)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_before_write_pause_is_fenced_out_with_both_tokens_logged() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let (_dir, old, out) = gc_pause(true).await;
    let t = &out.timeline;
    let paused = t
        .iter()
        .position(|e| matches!(&e.event, Event::NodePaused { node } if *node == old))
        .expect("the node logged its pause");
    assert!(matches!(&t[paused - 1].event,
        Event::FaultApplied { index: 0, kind, target } if *kind == baton_model::fault::FaultKind::Pause && *target == old));
    assert!(t[paused..]
        .iter()
        .any(|e| matches!(&e.event, Event::NodeResumed { node } if *node == old)));
    assert!(t[paused..]
        .iter()
        .any(|e| matches!(&e.event, Event::FaultHealed { index: 0, .. })));
    let rejected = t[paused..]
        .iter()
        .find_map(|e| match &e.event {
            Event::WriteRejected {
                node,
                token,
                max_token,
                ..
            } if *node == old => Some((*token, *max_token)),
            _ => None,
        })
        .expect("the woken leader's write was rejected");
    assert!(rejected.0 < rejected.1, "{rejected:?}");
    assert_eq!(stale_writes(t, &old).count(), 0);
    assert!(out.ledger.rejections >= 1);
    assert_eq!(out.ledger.non_increasing_steps, 0);
    assert_eq!(out.load.reused, 0);
}

/// The counterfactual (experiment 5): without the fence the same stale write is
/// accepted, under a token below one already accepted: a double-leader-acting incident.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfenced_the_woken_leaders_stale_write_is_accepted() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let (_dir, old, out) = gc_pause(false).await;
    assert!(
        stale_writes(&out.timeline, &old).count() >= 1,
        "no stale write accepted"
    );
    assert_eq!(out.ledger.rejections, 0);
}

/// Experiment 3: the leader cut off from etcd (both ways) while the resource stays
/// reachable. Its calls hang (no error comes back), its own lease deadline passes and it
/// stops acting; etcd expires its lease and another node leads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_from_etcd_stops_at_its_own_deadline() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let sup = Supervisor::start(config(&dir, true)).await.unwrap();
    let old = sup
        .wait_for_leader(&[], Duration::from_secs(20))
        .await
        .unwrap();
    sleep_ms(500).await;
    sup.cut(&old, Link::Backend, Direction::Both).unwrap();
    let new = sup
        .wait_for_leader(&[old.as_str()], Duration::from_secs(15))
        .await
        .expect("another node leads");
    sleep_ms(500).await;
    sup.mend(&old, Link::Backend, Direction::Both).unwrap();
    sleep_ms(1500).await;
    let out = sup.stop().await.unwrap();
    let t = &out.timeline;
    let stopped = t
        .iter()
        .position(|e| matches!(&e.event,
            Event::StoppedActing { node, reason, .. } if *node == old && reason == "deadline_passed"))
        .expect("the cut-off leader stopped by its own deadline");
    let new_won = t
        .iter()
        .position(
            |e| matches!(&e.event, Event::RoleChanged { node, token: Some(_), .. } if *node == new),
        )
        .unwrap();
    assert!(
        stopped < new_won,
        "the old leader stopped before the new one won"
    );
    assert_eq!(stale_writes(t, &old).count(), 0);
    assert_eq!(out.ledger.non_increasing_steps, 0);
}

/// Clock faults go through the node's clock, and a restart keeps a skewed clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skewed_clock_survives_a_restart() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&dir, true);
    cfg.rate_per_s = 0;
    let mut sup = Supervisor::start(cfg).await.unwrap();
    let change = |offset_ms, drift_ppm| ClockChange {
        offset_ms,
        drift_ppm,
        step_ms: None,
    };
    let s = sup
        .skew_clock("n2", change(Some(200), Some(-50_000)))
        .await
        .unwrap();
    assert!((s.offset_us - 200_000).abs() < 5_000, "{s:?}");
    assert_eq!(s.drift_ppm, -50_000);
    sup.restart("n2").await.unwrap();
    let s = sup.skew_clock("n2", change(None, None)).await.unwrap();
    assert_eq!(s.drift_ppm, -50_000);
    // Running 5% slow since the skew, so its offset has shrunk a little below 200 ms.
    assert!((100_000..=205_000).contains(&s.offset_us), "{s:?}");
    sup.stop().await.unwrap();
}
