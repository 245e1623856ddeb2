//! Real mode end to end: one clean-kill trial against a live etcd, and the guarantee that
//! a run leaves nothing behind however it ends.
//!
//! Methodology. These tests start real processes (etcd 3.4 from Debian's `etcd-server`,
//! nodes, the resource, the load client) on 127.0.0.1 and use the machine's clock: they
//! are the real build's smoke tests, not the simulator's timed tests, and they assert
//! what must hold on any machine (a failover happened and stayed within a generous
//! bound, the sequence never went back, nothing survived) rather than figures. Runs are
//! serialized (one etcd cluster at a time) to keep the load on a 2-core machine sane.
//! They are built only without `--cfg madsim`:
//!
//! `CARGO_ENCODED_RUSTFLAGS= cargo test --release -p baton-real --target-dir target/real`
#![cfg(not(madsim))]

use baton_model::timeline::{Event, Role};
use baton_real::backend::etcd::cluster::{EtcdCluster, EtcdClusterConfig, EtcdStartError};
use baton_real::ports::port_is_free;
use baton_real::process::{process_alive, processes_mentioning};
use baton_real::supervisor::{RealConfig, Supervisor};
use baton_real::trial::smoke::{clean_kill, CleanKillOptions};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Held for a whole test, across awaits on purpose: each test has its own runtime, and
/// the lock only keeps two etcd clusters from running at once.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_baton-real"))
}

fn assert_nothing_left(pids: &[u32], ports: &[u16], data_dir: &Path) {
    let alive: Vec<u32> = pids.iter().copied().filter(|p| process_alive(*p)).collect();
    assert!(alive.is_empty(), "processes survived the run: {alive:?}");
    let bound: Vec<u16> = ports
        .iter()
        .copied()
        .filter(|p| !port_is_free(*p))
        .collect();
    assert!(
        bound.is_empty(),
        "ports still bound after the run: {bound:?}"
    );
    assert!(
        !data_dir.exists(),
        "etcd data left in {}",
        data_dir.display()
    );
}

/// The CI smoke test: one clean kill at TTL 2 s, well under a minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::await_holding_lock)]
async fn a_clean_kill_fails_over_and_leaves_nothing_behind() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let opts = CleanKillOptions::new(dir.path().join("trial"), binary(), 2000);
    let r = clean_kill(opts).await.expect("the trial runs");
    assert!(r.wall_ms < 60_000, "took {} ms", r.wall_ms);
    let o = &r.output;
    // One change of leadership, the kill's: TTL (2 s granted) plus at most one expiry
    // check and a campaign round, with room for a loaded machine.
    assert_eq!(r.failovers_ms.len(), 1, "{:?}", r.failovers_ms);
    let f = r.failovers_ms[0];
    assert!((500.0..6_000.0).contains(&f), "failover {f} ms");
    let new = r.new_leader.as_deref().expect("someone led after the kill");
    assert_ne!(new, r.killed);
    let t = &o.timeline;
    let killed_at = t
        .iter()
        .position(|e| matches!(&e.event, Event::NodeKilled { node } if *node == r.killed))
        .expect("the kill is in the timeline");
    assert!(t[killed_at..].iter().any(|e| matches!(&e.event,
        Event::RoleChanged { node, role: Role::Leader, .. } if node == new)));
    assert!(t[killed_at..].iter().any(|e| matches!(&e.event,
        Event::KeyDeleted { create_revision, cause, .. }
            if Some(*create_revision as u64) == r.killed_token && cause == "expired")));
    assert!(t
        .iter()
        .any(|e| matches!(&e.event, Event::NodeRestarted { .. })));
    assert!(o.unreadable.is_empty(), "{:?}", o.unreadable);
    // The work stayed correct: the lag() check over the SQLite ledger finds no step
    // back, the client got no number twice, and nobody wrote with a stale token.
    assert!(o.ledger.seq_batches > 0 && o.ledger.ticks > 0);
    assert_eq!(o.ledger.non_increasing_steps, 0);
    assert_eq!(o.ledger.rejections, 0);
    assert!(o.load.ok > 0);
    assert_eq!(o.load.reused, 0);
    // The timeline is in time order.
    assert!(t.windows(2).all(|w| w[0].at_us <= w[1].at_us));
    assert_nothing_left(&o.pids, &o.ports, &o.backend_data_dir);
}

/// A run that ends in an error or a panic drops its supervisor without `stop`: every
/// child dies with it and etcd's data goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::await_holding_lock)]
async fn a_dropped_supervisor_leaves_nothing_behind() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = RealConfig::new(dir.path().join("run"), binary());
    cfg.rate_per_s = 100;
    let sup = Supervisor::start(cfg).await.expect("the run starts");
    sup.wait_for_leader(&[], Duration::from_secs(20))
        .await
        .expect("a leader");
    // /metrics shows the gauge the spec asks for.
    let leader = sup.leader().await.unwrap();
    let addr = sup.node_addr(&leader).unwrap();
    let text = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains(&format!("leaders_acting{{node=\"{leader}\"}} 1")),
        "{text}"
    );
    let (pids, ports, data) = (sup.pids(), sup.ports(), sup.backend_data_dir().unwrap());
    drop(sup);
    assert_nothing_left(&pids, &ports, &data);
}

/// Ctrl-C (SIGINT) and SIGKILL of the supervisor process: its children die with it (a
/// death signal armed at each spawn, process groups of their own) and, on Ctrl-C, etcd's
/// data is removed too.
#[test]
fn a_killed_or_interrupted_supervisor_takes_its_children_with_it() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    for sig in [libc::SIGINT, libc::SIGKILL] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut child = std::process::Command::new(binary())
            .args(["smoke", "--out"])
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let marker = out.to_string_lossy().into_owned();
        // Wait until the fleet runs (the nodes' command lines name the run directory).
        let t0 = std::time::Instant::now();
        while processes_mentioning(&marker).len() < 3 && t0.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(100));
        }
        let etcd_marker = format!("baton-{}-", child.id());
        assert!(!processes_mentioning(&etcd_marker).is_empty(), "etcd runs");
        assert!(processes_mentioning(&marker).len() >= 3, "the fleet runs");
        // SAFETY: plain syscall on our own child.
        unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        let status = child.wait().unwrap();
        assert!(!status.success());
        let t1 = std::time::Instant::now();
        while t1.elapsed() < Duration::from_secs(5)
            && !(processes_mentioning(&marker).is_empty()
                && processes_mentioning(&etcd_marker).is_empty())
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            processes_mentioning(&marker),
            Vec::<u32>::new(),
            "signal {sig}"
        );
        assert_eq!(
            processes_mentioning(&etcd_marker),
            Vec::<u32>::new(),
            "signal {sig}"
        );
        // Ctrl-C removes etcd's data on the way out; after SIGKILL nothing could, and the
        // next run's sweep removes what a dead supervisor left.
        let stale = |p: &str| {
            std::fs::read_dir(std::env::temp_dir())
                .unwrap()
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with(p))
        };
        let prefix = format!("baton-etcd-{}-", child.id());
        if sig == libc::SIGINT {
            assert!(!stale(&prefix), "Ctrl-C left etcd data behind");
        } else {
            assert!(
                stale(&prefix),
                "SIGKILL leaves etcd's data (nothing ran to remove it)"
            );
            baton_real::process::sweep_stale_dirs("baton-etcd-");
            assert!(!stale(&prefix), "the sweep removed it");
        }
    }
}

/// Without etcd installed, the error is one line naming the apt command.
#[tokio::test]
async fn a_missing_etcd_says_how_to_install_it() {
    let cfg = EtcdClusterConfig {
        binary: PathBuf::from("/nonexistent/etcd"),
        ..EtcdClusterConfig::default()
    };
    let e = EtcdCluster::start(&cfg).await.unwrap_err();
    assert!(matches!(e, EtcdStartError::MissingBinary(_)));
    let msg = e.to_string();
    assert!(msg.contains("apt-get install etcd-server"), "{msg}");
    assert!(!msg.contains('\n'));
}
