//! A node whose etcd cannot be reached stays idle and says so.
//!
//! Methodology. A node process is started with nothing behind its etcd endpoint: first a
//! port where nothing listens from the start (every campaign fails at its lease grant),
//! then a live single-member etcd that is killed while the node waits behind another
//! candidate's key (the recipe's `waitDeletes`, which retries failed calls without a
//! pause of its own: before the etcd client paced its failures, this spun a core for as
//! long as the node's lease lived). Each time the node runs for a 3 s window and its CPU
//! time over the window (utime + stime from `/proc/<pid>/stat`, every thread) must stay
//! under [`CPU_SHARE_MAX`] of one core, and its stderr must name, on one line, the
//! endpoint it cannot reach. The node is killed after and must be gone.
//!
//! The bound. A loop that retries at once keeps a thread runnable all the time: it takes
//! a whole core on an idle machine, and measured 48% of one (143 ticks in 3 s) on this
//! 2-core machine shared with other builds, before the fix. A node that paces its calls
//! wakes a few times a second and measures 0 to 1%. 20% sits far from both: a spin
//! breaks it even on a loaded machine, and a paced node on a loaded machine does not
//! come near it (load only delays its wake-ups; it does not make them cost more).
//!
//! Real build only:
//! `CARGO_ENCODED_RUSTFLAGS= cargo test --release -p baton-real --target-dir target/real`
#![cfg(not(madsim))]
#![allow(clippy::await_holding_lock)]

use baton_protocols::etcd_lease::EtcdLeaseConfig;
use baton_real::backend::etcd::cluster::{EtcdCluster, EtcdClusterConfig};
use baton_real::node::NodeConfig;
use baton_real::process::{process_alive, ManagedChild};
use baton_real::RealProtocol;
use baton_real::RunClock;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most of one core a node may use while its etcd cannot be reached.
const CPU_SHARE_MAX: f64 = 0.20;

/// How long the node's CPU time is measured.
const WINDOW: Duration = Duration::from_secs(3);

/// Held for a whole test, across awaits on purpose: one etcd (or one idle node being
/// measured) at a time keeps the measurement away from the other test's load.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A node config with `endpoints` as its etcd and a lease long enough (10 s) that the
/// window falls inside it.
fn node_config(dir: &Path, endpoints: Vec<String>) -> NodeConfig {
    NodeConfig {
        name: "n1".into(),
        epoch_us: RunClock::start().epoch_us(),
        log_path: dir.join("n1.jsonl"),
        backend_endpoints: endpoints,
        // Nothing listens there either; the node never leads in these tests.
        resource_url: "http://127.0.0.1:9/write".into(),
        protocol: RealProtocol::EtcdLease(EtcdLeaseConfig {
            lease_ttl_ms: 10_000,
            ..EtcdLeaseConfig::default()
        }),
        tick_interval_ms: 1000,
        resource_timeout_ms: 500,
        write_margin_ms: 0,
        peers: vec![],
        clock_offset_us: 0,
        clock_drift_ppm: 0,
        seed: 1,
        incarnation: 1,
        start_delay_ms_max: 0,
        raft_peers: vec![],
        raft_disk: None,
    }
}

/// Starts `baton-real node` with `cfg`, its stderr in `<dir>/n1.stderr`; returns once it
/// listens.
fn start_node(dir: &Path, cfg: &NodeConfig) -> ManagedChild {
    let path = dir.join("n1.json");
    std::fs::write(&path, serde_json::to_vec_pretty(cfg).unwrap()).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_baton-real"));
    cmd.arg("node")
        .arg("--config")
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("n1.stderr")).unwrap());
    let mut child = ManagedChild::spawn("n1", cmd).unwrap();
    child.wait_listening(Duration::from_secs(10)).unwrap();
    child
}

/// CPU time process `pid` has used so far (all its threads, user and system).
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The command name is in parentheses and may hold spaces: count fields after it.
    // Field 3 (state) is the first after ')'; utime and stime are fields 14 and 15.
    let rest: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .collect();
    let ticks: u64 = rest[11].parse::<u64>().unwrap() + rest[12].parse::<u64>().unwrap();
    // SAFETY: sysconf reads a constant of the system.
    let per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Duration::from_secs_f64(ticks as f64 / per_s)
}

/// The share of one core `pid` used over [`WINDOW`], from now.
async fn cpu_share_over_window(pid: u32) -> f64 {
    let (cpu0, wall0) = (cpu_time(pid), Instant::now());
    tokio::time::sleep(WINDOW).await;
    let (cpu1, wall) = (cpu_time(pid), wall0.elapsed());
    (cpu1 - cpu0).as_secs_f64() / wall.as_secs_f64()
}

/// Checks the node's stderr names `endpoint` as unreachable on one line, kills the
/// node and checks it is gone.
fn says_so_and_goes(dir: &Path, mut node: ManagedChild, endpoint: &str) {
    let pid = node.pid();
    node.kill();
    assert!(!process_alive(pid), "the node survived its kill");
    let stderr = std::fs::read_to_string(dir.join("n1.stderr")).unwrap();
    let says: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("cannot reach etcd") && l.contains(endpoint))
        .collect();
    assert_eq!(says.len(), 1, "stderr:\n{stderr}");
}

/// Nothing listens at the node's etcd endpoint from the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_etcd_refuses_from_the_start_stays_idle_and_names_it() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let port = baton_real::ports::free_ports(1).unwrap()[0];
    let endpoint = format!("http://127.0.0.1:{port}");
    let node = start_node(dir.path(), &node_config(dir.path(), vec![endpoint.clone()]));
    let share = cpu_share_over_window(node.pid()).await;
    assert!(
        share < CPU_SHARE_MAX,
        "the node used {:.0}% of a core with nothing at {endpoint}",
        share * 100.0
    );
    says_so_and_goes(dir.path(), node, &endpoint);
}

/// etcd goes away while the node waits behind another candidate's key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_candidate_stays_idle_when_etcd_goes_away() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let etcd = EtcdCluster::start(&EtcdClusterConfig {
        members: 1,
        log_dir: Some(dir.path().to_path_buf()),
        ..EtcdClusterConfig::default()
    })
    .await
    .expect("etcd starts (Debian's etcd-server)");
    let endpoints = etcd.client_urls();
    hold_the_election(&endpoints).await;
    let node = start_node(dir.path(), &node_config(dir.path(), endpoints.clone()));
    wait_for_event(&dir.path().join("n1.jsonl"), "lease_granted").await;
    // Past its grant, the campaign's put and into the wait on the other key.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let data_dir: PathBuf = etcd.data_dir().to_path_buf();
    etcd.stop();
    assert!(!data_dir.exists());
    let share = cpu_share_over_window(node.pid()).await;
    assert!(
        share < CPU_SHARE_MAX,
        "the node used {:.0}% of a core once etcd was gone",
        share * 100.0
    );
    // Still waiting, or failed its campaign once its lease lapsed: never led.
    let log = std::fs::read_to_string(dir.path().join("n1.jsonl")).unwrap();
    assert!(!log.contains("\"role\":\"leader\""), "{log}");
    says_so_and_goes(dir.path(), node, &endpoints[0]);
}

/// Puts another candidate's key under the election prefix, on a lease that outlives the
/// test, so the node queues behind it.
async fn hold_the_election(endpoints: &[String]) {
    let mut c = etcd_client::Client::connect(endpoints, None).await.unwrap();
    let lease = c.lease_grant(60, None).await.unwrap().id();
    let key = format!("{}/0", EtcdLeaseConfig::default().prefix);
    let opts = etcd_client::PutOptions::new().with_lease(lease);
    c.put(key, "other", Some(opts)).await.unwrap();
}

/// Waits up to 10 s for an event of `kind` in the event log at `path`.
async fn wait_for_event(path: &Path, kind: &str) {
    let needle = format!("\"event\":\"{kind}\"");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if std::fs::read_to_string(path).is_ok_and(|t| t.contains(&needle)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no {kind} in {} within 10 s", path.display());
}
