//! The real world: every process of a run, and the fault verbs that act on them.
//!
//! [`Supervisor::start`] starts, on 127.0.0.1 only: a 3-member etcd cluster, the fenced
//! resource (SQLite ledger), the nodes, each behind its own proxies (to every etcd
//! member, to the resource, and from the load client), and the load client. It is the
//! real counterpart of the simulator's `World`: mechanism only. A driver (the scenario
//! runner, or [`crate::smoke`]) decides when to call the verbs:
//!
//! | verb | what it does | events it logs |
//! |---|---|---|
//! | [`kill`](Supervisor::kill) | SIGKILL to the node's process group | `node_killed` |
//! | [`restart`](Supervisor::restart) | kills it if alive, starts a new process | (`node_killed`), `node_restarted` |
//! | [`pause`](Supervisor::pause) / [`resume`](Supervisor::resume) | SIGSTOP / SIGCONT | `node_paused` / `node_resumed` |
//! | [`arm_pause_before_write`](Supervisor::arm_pause_before_write) | the node stops itself just before its next protected write; the supervisor resumes it `duration_ms` after it stopped | the node: `fault_applied`, `node_paused`; then `node_resumed`, `fault_healed` |
//! | [`cut`](Supervisor::cut) / [`mend`](Supervisor::mend) | stops / restarts forwarding on a node's link, one way or both | none (the driver logs the fault) |
//! | [`set_latency_ms`](Supervisor::set_latency_ms), [`set_latency_ms_all`](Supervisor::set_latency_ms_all) | delays a node's link, or every link | none |
//! | [`skew_clock`](Supervisor::skew_clock) | offsets, drifts or steps a node's clock | none |
//! | [`resign`](Supervisor::resign) | asks a leader to step down | the node: `released` ... |
//!
//! The driver logs `fault_applied` / `fault_healed` itself ([`Supervisor::record`]), as
//! the simulator's driver does. The supervisor also watches the election prefix on etcd
//! (directly, not through any proxy) and logs each key deletion (`key_deleted`, and
//! `lease_expired` when the key's lease is gone: see [`watch_keys`]), from which election
//! latency is timed.
//!
//! [`Supervisor::stop`] stops everything and merges the per-process logs into
//! `timeline.jsonl`. Dropping a supervisor without `stop` (an error, a panic) kills
//! everything too; a supervisor killed outright leaves nothing running either (see
//! [`crate::process`]).
//!
//! Files in the run directory: `supervisor.jsonl`, `resource.jsonl`, `n<i>.jsonl` (the
//! event logs), `timeline.jsonl` (merged), `ledger.db` (the SQLite ledger),
//! `load-stats.json`, the processes' configs (`*.json`) and stderr (`*.stderr`), and
//! the etcd members' logs (`etcd-m<i>.log`).

use crate::etcd_cluster::{EtcdCluster, EtcdClusterConfig, EtcdStartError};
use crate::events::{merge, write_timeline, Entry, Event, EventLog, Role};
use crate::ledger::{summarize, LedgerSummary};
use crate::load::{LoadConfig, LoadStats};
use crate::node::{ArmPause, ClockChange, ClockState, NodeConfig, Peer, StatusBody};
use crate::process::ManagedChild;
use crate::proxy::{Flow, Proxy};
use crate::resource::ResourceConfig;
use crate::run_clock::RunClock;
use baton_protocols::etcd_lease::EtcdLeaseConfig;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

/// Everything a real run needs to start.
#[derive(Clone, Debug)]
pub struct RealConfig {
    /// Fleet size.
    pub nodes: usize,
    /// The election's parameters.
    pub etcd_lease: EtcdLeaseConfig,
    /// Whether the resource's fence is on.
    pub fencing: bool,
    /// Scheduler tick interval.
    pub tick_interval_ms: u64,
    /// `next` requests per second (0: no load client).
    pub rate_per_s: u64,
    /// The load client sends each quantum's requests as one `POST /next?count=N`.
    pub client_quantum_ms: u64,
    /// The load client's request timeout.
    pub client_timeout_ms: u64,
    /// Timeout of a node's writes to the resource.
    pub resource_timeout_ms: u64,
    /// Where every file of the run goes (created; must not hold an earlier run).
    pub run_dir: PathBuf,
    /// The `baton-real` binary that runs nodes, the resource and the load client.
    pub binary: PathBuf,
    /// The etcd cluster (its `log_dir` is set to `run_dir`).
    pub etcd: EtcdClusterConfig,
    /// How long a child may take to start listening.
    pub process_start_timeout_ms: u64,
    /// The run's seed (each node's boot delay is drawn from it).
    pub seed: u64,
    /// Each node boots for a delay drawn from 0 to this many ms, at every start, before
    /// it campaigns (a scenario's `start_delay_ms_max`; 0: none).
    pub start_delay_ms_max: u64,
    /// The latency every proxied link adds, each way, drawn per chunk from this range
    /// (a scenario's `[network]`; `(0, 0)`: none, loopback as it is).
    pub network_latency_ms: (u64, u64),
}

impl RealConfig {
    /// The defaults of a scenario's `[work]` table and etcd-lease's, 3 nodes, fencing on,
    /// with files in `run_dir` and children run from `binary`.
    pub fn new(run_dir: PathBuf, binary: PathBuf) -> Self {
        RealConfig {
            nodes: 3,
            etcd_lease: EtcdLeaseConfig::default(),
            fencing: true,
            tick_interval_ms: 1000,
            rate_per_s: 1000,
            // The simulator's client sends every 1 ms; over HTTP that would be 1,000
            // requests a second per 1,000 `next`. 10 ms keeps the client cheap while a
            // leader's batches (one per round trip to the resource) still take several
            // quanta each.
            client_quantum_ms: 10,
            client_timeout_ms: 500,
            resource_timeout_ms: 500,
            run_dir,
            binary,
            etcd: EtcdClusterConfig::default(),
            process_start_timeout_ms: 10_000,
            seed: 0,
            start_delay_ms_max: 0,
            network_latency_ms: (0, 0),
        }
    }
}

/// Why a run could not start (the CLI's exit 2) or a verb failed.
#[derive(Debug, thiserror::Error)]
pub enum RealError {
    /// etcd did not start.
    #[error(transparent)]
    Etcd(#[from] EtcdStartError),
    /// The run directory holds an earlier run.
    #[error("{0} already holds a run (supervisor.jsonl exists): choose another directory")]
    RunDirUsed(PathBuf),
    /// A child did not start.
    #[error("{what} did not start: {why} (stderr: {stderr})")]
    Child {
        /// Which child.
        what: String,
        /// Why.
        why: String,
        /// Its stderr file.
        stderr: String,
    },
    /// No node by that name.
    #[error("no node named {0:?}")]
    UnknownNode(String),
    /// The node is not running.
    #[error("node {0} is not running")]
    NotRunning(String),
    /// A node's control endpoint did not answer.
    #[error("node {node}: {why}")]
    Control {
        /// The node.
        node: String,
        /// What went wrong.
        why: String,
    },
    /// File or OS error.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A node's link that a proxy carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// The node and etcd (all members).
    Backend,
    /// The node and the fenced resource.
    Resource,
    /// The load client and the node.
    Client,
}

/// Which way, seen from the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// What the node sends.
    FromNode,
    /// What the node receives.
    ToNode,
    /// Both.
    Both,
}

impl Direction {
    /// The proxy flow: the node connects out to the backend and the resource (so what it
    /// sends flows forward), and the client connects in to it (what it sends flows back).
    fn flow(self, link: Link) -> Flow {
        let node_is_client = link != Link::Client;
        match (self, node_is_client) {
            (Direction::Both, _) => Flow::Both,
            (Direction::FromNode, true) | (Direction::ToNode, false) => Flow::Forward,
            (Direction::FromNode, false) | (Direction::ToNode, true) => Flow::Backward,
        }
    }
}

type SharedChild = Arc<Mutex<Option<ManagedChild>>>;

/// Background tasks that end with their owner: a run that fails half-way through its
/// start, or is dropped, leaves no watcher behind.
#[derive(Default)]
struct Tasks(Vec<JoinHandle<()>>);

impl Tasks {
    fn push(&mut self, t: JoinHandle<()>) {
        self.0.retain(|t| !t.is_finished());
        self.0.push(t);
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

struct NodeSlot {
    cfg: NodeConfig,
    config_path: PathBuf,
    child: SharedChild,
    /// Where the current process listens (the supervisor's direct line).
    addr: Option<SocketAddr>,
    etcd_proxies: Vec<Proxy>,
    resource_proxy: Proxy,
    client_proxy: Proxy,
    /// Incremented at every start, so a pause watcher knows its process is gone.
    incarnation: Arc<std::sync::atomic::AtomicU64>,
}

/// What a finished run leaves.
#[derive(Debug)]
pub struct RunOutput {
    /// The run directory.
    pub run_dir: PathBuf,
    /// The merged timeline (also written to `timeline.jsonl`).
    pub timeline: Vec<Entry>,
    /// Log lines that could not be read (`file:line: error`).
    pub unreadable: Vec<String>,
    /// What the SQLite ledger holds, with the `lag()` check's count.
    pub ledger: LedgerSummary,
    /// The load client's counts (default when it never ran).
    pub load: LoadStats,
    /// Every port the run bound, for leak checks.
    pub ports: Vec<u16>,
    /// Every process the run started, for leak checks.
    pub pids: Vec<u32>,
    /// Where etcd kept its data (removed by now), for leak checks.
    pub etcd_data_dir: PathBuf,
}

/// A running real world. See the module doc.
///
/// Dropped (an error, a panic), it stops everything: fields drop in declaration order,
/// so the watchers go first, then the load client, the nodes and their proxies, the
/// resource, and etcd (with its data) last.
pub struct Supervisor {
    tasks: Tasks,
    load: Option<ManagedChild>,
    nodes: Vec<NodeSlot>,
    resource: Option<ManagedChild>,
    etcd: Option<EtcdCluster>,
    cfg: RealConfig,
    clock: RunClock,
    log: EventLog,
    http: reqwest::Client,
    ports: Vec<u16>,
    pids: Arc<Mutex<Vec<u32>>>,
}

fn spawn_child(
    cfg: &RealConfig,
    what: &str,
    sub: &str,
    config_path: &Path,
) -> Result<(ManagedChild, SocketAddr), RealError> {
    let stderr_path = cfg.run_dir.join(format!("{what}.stderr"));
    let err_of = |why: String| RealError::Child {
        what: what.to_string(),
        why,
        stderr: stderr_path.display().to_string(),
    };
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&stderr_path)?;
    let mut cmd = Command::new(&cfg.binary);
    cmd.arg(sub)
        .arg("--config")
        .arg(config_path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr);
    let mut child = ManagedChild::spawn(what, cmd)
        .map_err(|e| err_of(format!("{}: {e}", cfg.binary.display())))?;
    let addr = child
        .wait_listening(Duration::from_millis(cfg.process_start_timeout_ms))
        .map_err(|e| err_of(e.to_string()))?;
    Ok((child, addr))
}

fn write_json<T: serde::Serialize>(path: &Path, v: &T) -> Result<(), RealError> {
    std::fs::write(
        path,
        serde_json::to_vec_pretty(v).expect("configs serialize"),
    )?;
    Ok(())
}

impl Supervisor {
    /// Starts every process of a run (see the module doc) and returns once all listen.
    /// The run's clock starts once etcd is healthy, just before the resource and the
    /// fleet start: time 0 of the timeline is when the fleet began to boot.
    pub async fn start(cfg: RealConfig) -> Result<Supervisor, RealError> {
        std::fs::create_dir_all(&cfg.run_dir)?;
        let log_path = cfg.run_dir.join("supervisor.jsonl");
        if log_path.exists() {
            return Err(RealError::RunDirUsed(cfg.run_dir.clone()));
        }
        let mut etcd_cfg = cfg.etcd.clone();
        etcd_cfg.log_dir = Some(cfg.run_dir.clone());
        let etcd = EtcdCluster::start(&etcd_cfg).await?;
        let clock = RunClock::start();
        let log = EventLog::open(&log_path, clock)?;
        let mut ports = etcd.ports();
        let pids = Arc::new(Mutex::new(etcd.pids()));
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(1000))
            .build()
            .expect("a plain HTTP client builds");
        let mut tasks = Tasks::default();
        tasks.push(tokio::spawn(watch_keys(
            etcd.client_urls(),
            format!("{}/", cfg.etcd_lease.prefix),
            log.clone(),
        )));

        let rcfg = ResourceConfig {
            db_path: cfg.run_dir.join("ledger.db"),
            fencing: cfg.fencing,
            log_path: cfg.run_dir.join("resource.jsonl"),
            epoch_us: clock.epoch_us(),
        };
        let rpath = cfg.run_dir.join("resource.json");
        write_json(&rpath, &rcfg)?;
        let (resource, resource_addr) = spawn_child(&cfg, "resource", "resource", &rpath)?;
        pids.lock().unwrap().push(resource.pid());
        ports.push(resource_addr.port());

        // Proxies first: every node's client-facing address must be known before any
        // node starts, for its peers' 409 hints.
        let member_addrs: Vec<SocketAddr> = etcd
            .members()
            .iter()
            .map(|m| SocketAddr::from((crate::ports::LOOPBACK, m.client_port)))
            .collect();
        let mut slots = vec![];
        for i in 1..=cfg.nodes {
            let mut etcd_proxies = vec![];
            for a in &member_addrs {
                etcd_proxies.push(Proxy::start(*a).await?);
            }
            let resource_proxy = Proxy::start(resource_addr).await?;
            // The node is not up yet: its proxy points at the resource's port until it is
            // set to the node's own (nothing connects before then).
            let client_proxy = Proxy::start(resource_addr).await?;
            for p in etcd_proxies.iter().chain([&resource_proxy, &client_proxy]) {
                ports.push(p.addr().port());
            }
            let name = format!("n{i}");
            let ncfg = NodeConfig {
                name: name.clone(),
                epoch_us: clock.epoch_us(),
                log_path: cfg.run_dir.join(format!("{name}.jsonl")),
                etcd_endpoints: etcd_proxies
                    .iter()
                    .map(|p| format!("http://{}", p.addr()))
                    .collect(),
                resource_url: format!("http://{}/write", resource_proxy.addr()),
                etcd_lease: cfg.etcd_lease.clone(),
                tick_interval_ms: cfg.tick_interval_ms,
                resource_timeout_ms: cfg.resource_timeout_ms,
                peers: vec![],
                clock_offset_us: 0,
                clock_drift_ppm: 0,
                seed: cfg.seed,
                incarnation: 0,
                start_delay_ms_max: cfg.start_delay_ms_max,
            };
            slots.push(NodeSlot {
                config_path: cfg.run_dir.join(format!("{name}.json")),
                cfg: ncfg,
                child: Arc::new(Mutex::new(None)),
                addr: None,
                etcd_proxies,
                resource_proxy,
                client_proxy,
                incarnation: Arc::new(std::sync::atomic::AtomicU64::new(0)),
            });
        }
        let peers: Vec<Peer> = slots
            .iter()
            .map(|s| Peer {
                name: s.cfg.name.clone(),
                url: format!("http://{}", s.client_proxy.addr()),
            })
            .collect();
        for s in &mut slots {
            s.cfg.peers = peers.clone();
        }
        let (lo, hi) = cfg.network_latency_ms;
        if hi > 0 {
            for s in &slots {
                for p in s
                    .etcd_proxies
                    .iter()
                    .chain([&s.resource_proxy, &s.client_proxy])
                {
                    p.set_latency_ms(Flow::Both, lo, hi);
                }
            }
        }
        let mut sup = Supervisor {
            cfg,
            clock,
            log,
            etcd: Some(etcd),
            resource: Some(resource),
            nodes: slots,
            load: None,
            tasks,
            http,
            ports,
            pids,
        };
        for i in 0..sup.nodes.len() {
            sup.start_node(i)?;
        }
        if sup.cfg.rate_per_s > 0 {
            let lcfg = LoadConfig {
                nodes: peers,
                rate_per_s: sup.cfg.rate_per_s,
                quantum_ms: sup.cfg.client_quantum_ms,
                client_timeout_ms: sup.cfg.client_timeout_ms,
                stats_path: sup.cfg.run_dir.join("load-stats.json"),
                epoch_us: sup.clock.epoch_us(),
            };
            let lpath = sup.cfg.run_dir.join("load.json");
            write_json(&lpath, &lcfg)?;
            let stderr = std::fs::File::create(sup.cfg.run_dir.join("load.stderr"))?;
            let mut cmd = Command::new(&sup.cfg.binary);
            cmd.arg("load")
                .arg("--config")
                .arg(&lpath)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(stderr);
            let child = ManagedChild::spawn("load", cmd)?;
            sup.pids.lock().unwrap().push(child.pid());
            sup.load = Some(child);
        }
        Ok(sup)
    }

    /// Starts node `i`'s process (a fresh one) and points its client proxy at it.
    fn start_node(&mut self, i: usize) -> Result<(), RealError> {
        let s = &mut self.nodes[i];
        s.cfg.incarnation = s.incarnation.load(std::sync::atomic::Ordering::SeqCst) + 1;
        write_json(&s.config_path, &s.cfg)?;
        let (child, addr) = spawn_child(&self.cfg, &s.cfg.name, "node", &s.config_path)?;
        self.pids.lock().unwrap().push(child.pid());
        self.ports.push(addr.port());
        s.client_proxy.set_upstream(addr);
        s.addr = Some(addr);
        s.incarnation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        *s.child.lock().unwrap() = Some(child);
        Ok(())
    }

    fn slot(&self, node: &str) -> Result<usize, RealError> {
        self.nodes
            .iter()
            .position(|s| s.cfg.name == node)
            .ok_or_else(|| RealError::UnknownNode(node.to_string()))
    }

    /// The run's clock (every process's timeline time).
    pub fn clock(&self) -> RunClock {
        self.clock
    }

    /// The run directory.
    pub fn run_dir(&self) -> &Path {
        &self.cfg.run_dir
    }

    /// Logs `event` in the supervisor's log (a driver's `fault_applied`, ...).
    pub fn record(&self, event: Event) -> Entry {
        self.log.record(event)
    }

    /// The nodes' names, in fleet order.
    pub fn node_names(&self) -> Vec<String> {
        self.nodes.iter().map(|s| s.cfg.name.clone()).collect()
    }

    /// Where etcd keeps its data (removed when the run stops).
    pub fn etcd_data_dir(&self) -> Option<PathBuf> {
        self.etcd.as_ref().map(|e| e.data_dir().to_path_buf())
    }

    /// The etcd cluster's client URLs (direct, not proxied).
    pub fn etcd_urls(&self) -> Vec<String> {
        self.etcd
            .as_ref()
            .map(|e| e.client_urls())
            .unwrap_or_default()
    }

    /// Where node `node` serves HTTP directly (`/status`, `/metrics`), while it runs.
    pub fn node_addr(&self, node: &str) -> Result<SocketAddr, RealError> {
        let i = self.slot(node)?;
        let running = self.nodes[i].child.lock().unwrap().is_some();
        match (running, self.nodes[i].addr) {
            (true, Some(a)) => Ok(a),
            _ => Err(RealError::NotRunning(node.to_string())),
        }
    }

    /// Node `node`'s `/status`, or `None` if it does not answer within 300 ms (dead,
    /// paused).
    pub async fn status(&self, node: &str) -> Option<StatusBody> {
        let addr = self.node_addr(node).ok()?;
        let resp = self
            .http
            .get(format!("http://{addr}/status"))
            .timeout(Duration::from_millis(300))
            .send()
            .await
            .ok()?;
        resp.json().await.ok()
    }

    /// The node that leads by its own belief, asking every running node's `/status`;
    /// with several, the one with the highest token.
    pub async fn leader(&self) -> Option<String> {
        let names = self.node_names();
        let answers = futures::future::join_all(names.iter().map(|n| self.status(n))).await;
        answers
            .into_iter()
            .flatten()
            .filter(|s| s.role == Role::Leader)
            .max_by_key(|s| s.fence_token)
            .map(|s| s.node_id)
    }

    /// Waits up to `timeout` for a leader other than any in `not`; polls every 50 ms.
    pub async fn wait_for_leader(&self, not: &[&str], timeout: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(l) = self.leader().await {
                if !not.contains(&l.as_str()) {
                    return Some(l);
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Kills node `node` with SIGKILL (its whole process group) and reaps it.
    pub fn kill(&mut self, node: &str) -> Result<(), RealError> {
        let i = self.slot(node)?;
        let child = self.nodes[i].child.lock().unwrap().take();
        let Some(mut child) = child else {
            return Err(RealError::NotRunning(node.to_string()));
        };
        child.kill();
        self.nodes[i].addr = None;
        self.log.record(Event::NodeKilled {
            node: node.to_string(),
        });
        Ok(())
    }

    /// Starts node `node` again as a new process (killing it first if it still runs),
    /// with the clock its last incarnation had. Returns once it listens.
    pub async fn restart(&mut self, node: &str) -> Result<(), RealError> {
        let i = self.slot(node)?;
        if self.nodes[i].child.lock().unwrap().is_some() {
            self.kill(node)?;
        }
        // The config carries the clock the last incarnation had ([`Supervisor::skew_clock`]
        // keeps it up to date): a restart does not fix a skewed clock.
        self.log.record(Event::NodeRestarted {
            node: node.to_string(),
        });
        self.start_node(i)
    }

    fn signal(&self, node: &str, sig: libc::c_int) -> Result<(), RealError> {
        let i = self.slot(node)?;
        let guard = self.nodes[i].child.lock().unwrap();
        let child = guard
            .as_ref()
            .ok_or_else(|| RealError::NotRunning(node.to_string()))?;
        child.signal(sig)?;
        Ok(())
    }

    /// Stops the world on node `node` (SIGSTOP) until [`Supervisor::resume`]. Its clock
    /// keeps running, its sockets stay open.
    pub fn pause(&self, node: &str) -> Result<(), RealError> {
        self.signal(node, libc::SIGSTOP)?;
        self.log.record(Event::NodePaused {
            node: node.to_string(),
        });
        Ok(())
    }

    /// Lets a paused node run again (SIGCONT).
    pub fn resume(&self, node: &str) -> Result<(), RealError> {
        self.signal(node, libc::SIGCONT)?;
        self.log.record(Event::NodeResumed {
            node: node.to_string(),
        });
        Ok(())
    }

    /// Arms a `point = "before-write"` pause of fault `index` on node `node`: the node
    /// logs the fault and stops itself (SIGSTOP) just before its next protected write;
    /// the supervisor, which polls the process state every 2 ms, resumes it
    /// `duration_ms` after it saw it stop, logging `node_resumed` and `fault_healed`. A
    /// node killed in the meantime is not resumed (its pause ends with it), but the
    /// pause's end is logged all the same, as the simulator does.
    pub async fn arm_pause_before_write(
        &mut self,
        node: &str,
        index: usize,
        duration_ms: u64,
    ) -> Result<(), RealError> {
        let addr = self.node_addr(node)?;
        let resp = self
            .http
            .post(format!("http://{addr}/control/pause"))
            .json(&ArmPause { index })
            .send()
            .await
            .and_then(|r| r.error_for_status());
        if let Err(e) = resp {
            return Err(RealError::Control {
                node: node.to_string(),
                why: e.to_string(),
            });
        }
        let i = self.slot(node)?;
        let (child, incarnation) = (
            self.nodes[i].child.clone(),
            self.nodes[i].incarnation.clone(),
        );
        let armed_in = incarnation.load(std::sync::atomic::Ordering::SeqCst);
        let (log, name) = (self.log.clone(), node.to_string());
        self.tasks.push(tokio::spawn(async move {
            let same = || incarnation.load(std::sync::atomic::Ordering::SeqCst) == armed_in;
            loop {
                let stopped = {
                    let g = child.lock().unwrap();
                    match g.as_ref() {
                        Some(c) if same() => c.is_stopped(),
                        _ => return, // killed before it struck: nothing to resume
                    }
                };
                if stopped {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            tokio::time::sleep(Duration::from_millis(duration_ms)).await;
            if same() {
                if let Some(c) = child.lock().unwrap().as_ref() {
                    let _ = c.signal(libc::SIGCONT);
                }
            }
            log.record(Event::NodeResumed { node: name.clone() });
            log.record(Event::FaultHealed {
                index,
                kind: "pause".into(),
                target: name,
            });
        }));
        Ok(())
    }

    fn proxies(&self, node: &str, link: Link) -> Result<Vec<&Proxy>, RealError> {
        let s = &self.nodes[self.slot(node)?];
        Ok(match link {
            Link::Backend => s.etcd_proxies.iter().collect(),
            Link::Resource => vec![&s.resource_proxy],
            Link::Client => vec![&s.client_proxy],
        })
    }

    /// Cuts node `node`'s `link` in `dir`: bytes stop flowing, connections stay open,
    /// calls hang.
    pub fn cut(&self, node: &str, link: Link, dir: Direction) -> Result<(), RealError> {
        for p in self.proxies(node, link)? {
            p.cut(dir.flow(link));
        }
        Ok(())
    }

    /// Mends what [`Supervisor::cut`] cut; what was held is delivered.
    pub fn mend(&self, node: &str, link: Link, dir: Direction) -> Result<(), RealError> {
        for p in self.proxies(node, link)? {
            p.mend(dir.flow(link));
        }
        Ok(())
    }

    /// Mends every cut of every node (a scenario's `heal`).
    pub fn mend_all(&self) {
        for s in &self.nodes {
            for p in s
                .etcd_proxies
                .iter()
                .chain([&s.resource_proxy, &s.client_proxy])
            {
                p.mend(Flow::Both);
            }
        }
    }

    /// Delays node `node`'s `link` in `dir` by a latency drawn per chunk from
    /// `latency_ms_min..=latency_ms_max` (0, 0: none; a scenario's `slow-link`).
    pub fn set_latency_ms(
        &self,
        node: &str,
        link: Link,
        dir: Direction,
        latency_ms_min: u64,
        latency_ms_max: u64,
    ) -> Result<(), RealError> {
        for p in self.proxies(node, link)? {
            p.set_latency_ms(dir.flow(link), latency_ms_min, latency_ms_max);
        }
        Ok(())
    }

    /// Delays every link of every node, both ways (a scenario's `network` latency; loss
    /// has no counterpart over TCP proxies). Loopback's own latency stays under it.
    pub fn set_latency_ms_all(&self, latency_ms_min: u64, latency_ms_max: u64) {
        for s in &self.nodes {
            for p in s
                .etcd_proxies
                .iter()
                .chain([&s.resource_proxy, &s.client_proxy])
            {
                p.set_latency_ms(Flow::Both, latency_ms_min, latency_ms_max);
            }
        }
    }

    /// Changes node `node`'s clock (offset, drift, step); returns its state after.
    /// A restart keeps it.
    pub async fn skew_clock(
        &mut self,
        node: &str,
        change: ClockChange,
    ) -> Result<ClockState, RealError> {
        if !self.is_running(node)? {
            // A dead node's clock is what its next incarnation starts with (the
            // simulator's clock object outlives a kill too): change that. With no
            // process, no time passes on it between now and the restart but the run's.
            let i = self.slot(node)?;
            let c = &mut self.nodes[i].cfg;
            if let Some(o) = change.offset_ms {
                c.clock_offset_us = o * 1000;
            }
            if let Some(d) = change.drift_ppm {
                c.clock_drift_ppm = d;
            }
            if let Some(st) = change.step_ms {
                c.clock_offset_us += st * 1000;
            }
            return Ok(ClockState {
                offset_us: c.clock_offset_us,
                drift_ppm: c.clock_drift_ppm,
            });
        }
        let addr = self.node_addr(node)?;
        let err = |why: String| RealError::Control {
            node: node.to_string(),
            why,
        };
        let state: ClockState = self
            .http
            .post(format!("http://{addr}/control/clock"))
            .json(&change)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| err(e.to_string()))?
            .json()
            .await
            .map_err(|e| err(e.to_string()))?;
        let i = self.slot(node)?;
        self.nodes[i].cfg.clock_offset_us = state.offset_us;
        self.nodes[i].cfg.clock_drift_ppm = state.drift_ppm;
        Ok(state)
    }

    /// Asks node `node` to step down if it leads.
    pub async fn resign(&self, node: &str) -> Result<(), RealError> {
        let addr = self.node_addr(node)?;
        self.http
            .post(format!("http://{addr}/control/resign"))
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| RealError::Control {
                node: node.to_string(),
                why: e.to_string(),
            })?;
        Ok(())
    }

    /// Whether node `node` has a process (started and not killed by a verb).
    pub fn is_running(&self, node: &str) -> Result<bool, RealError> {
        let i = self.slot(node)?;
        let running = self.nodes[i].child.lock().unwrap().is_some();
        Ok(running)
    }

    /// The first running node, in fleet order, that answers `/status` and does not
    /// believe it leads (a paused node does not answer and is passed over).
    pub async fn follower(&self) -> Option<String> {
        for n in self.node_names() {
            if let Some(s) = self.status(&n).await {
                if s.role != Role::Leader {
                    return Some(n);
                }
            }
        }
        None
    }

    /// The processes of the run that exited by themselves (not killed by a verb or by
    /// [`Supervisor::stop`]), each with its stderr file: a run with any is broken.
    pub fn exited(&mut self) -> Vec<(String, PathBuf)> {
        let mut out = vec![];
        let err = |what: &str| self.cfg.run_dir.join(format!("{what}.stderr"));
        for s in &self.nodes {
            if let Some(c) = s.child.lock().unwrap().as_mut() {
                if !c.is_running() {
                    out.push((s.cfg.name.clone(), err(&s.cfg.name)));
                }
            }
        }
        if let Some(r) = self.resource.as_mut() {
            if !r.is_running() {
                out.push(("resource".into(), err("resource")));
            }
        }
        if let Some(l) = self.load.as_mut() {
            if !l.is_running() {
                out.push(("load".into(), err("load")));
            }
        }
        if let Some(e) = &self.etcd {
            for (m, pid) in e.members().iter().map(|m| (m, m.pid())) {
                if !crate::process::process_alive(pid) {
                    out.push((format!("etcd member {}", m.name), m.log.clone()));
                }
            }
        }
        out
    }

    /// Every port the run has bound so far.
    pub fn ports(&self) -> Vec<u16> {
        self.ports.clone()
    }

    /// Every process the run has started so far.
    pub fn pids(&self) -> Vec<u32> {
        self.pids.lock().unwrap().clone()
    }

    /// The per-process logs, in the order the merge breaks ties.
    pub fn log_paths(&self) -> Vec<PathBuf> {
        let mut v = vec![
            self.cfg.run_dir.join("supervisor.jsonl"),
            self.cfg.run_dir.join("resource.jsonl"),
        ];
        v.extend(self.nodes.iter().map(|s| s.cfg.log_path.clone()));
        v
    }

    /// Stops everything (the load client with SIGTERM so it saves its counts, the rest
    /// with SIGKILL, etcd last), removes etcd's data, merges the logs into
    /// `timeline.jsonl` and reads the ledger.
    pub async fn stop(mut self) -> Result<RunOutput, RealError> {
        if let Some(mut l) = self.load.take() {
            // Blocks this thread for at most the grace period; nothing else needs to
            // run meanwhile.
            l.terminate(libc::SIGTERM, Duration::from_secs(2));
        }
        self.tasks = Tasks::default(); // aborts the watchers
        for s in &self.nodes {
            if let Some(mut c) = s.child.lock().unwrap().take() {
                c.kill();
            }
        }
        if let Some(mut r) = self.resource.take() {
            r.kill();
        }
        let log_paths = self.log_paths();
        self.nodes.clear(); // closes the proxies
        let mut etcd_data_dir = PathBuf::new();
        if let Some(e) = self.etcd.take() {
            etcd_data_dir = e.data_dir().to_path_buf();
            e.stop();
        }
        let merged = merge(&log_paths)?;
        write_timeline(&self.cfg.run_dir.join("timeline.jsonl"), &merged.entries)?;
        let ledger = summarize(&self.cfg.run_dir.join("ledger.db"))
            .map_err(|e| std::io::Error::other(format!("ledger.db: {e}")))?;
        let load = LoadStats::read(&self.cfg.run_dir.join("load-stats.json")).unwrap_or_default();
        Ok(RunOutput {
            run_dir: self.cfg.run_dir.clone(),
            timeline: merged.entries,
            unreadable: merged.unreadable,
            ledger,
            load,
            ports: self.ports.clone(),
            pids: self.pids(),
            etcd_data_dir,
        })
    }
}

/// Logs every deletion under the election prefix, as etcd reports it to a watch opened
/// directly on the cluster (no proxy: the observer is not part of the system under
/// test). A deleted key whose lease no longer exists was deleted by its lease ending:
/// `lease_expired` then `key_deleted` with cause `expired`. A key deleted while its
/// lease lives was deleted on purpose (a resign deletes the key, then revokes the
/// lease): cause `deleted`. (A lease revoked with its key still attached also reads as
/// `expired`; the recipe deletes before it revokes, so that happens only when the delete
/// itself failed. A resign's revoke follows its delete within a round trip and may beat
/// this watcher's lease lookup: a resign can then read as `expired` too.) Each is
/// stamped when the watch delivered it.
pub async fn watch_keys(endpoints: Vec<String>, prefix: String, log: EventLog) {
    use etcd_client as ec;
    loop {
        let Ok(mut client) = ec::Client::connect(&endpoints, None).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let opts = ec::WatchOptions::new().with_prefix().with_prev_key();
        let Ok(mut stream) = client.watch(prefix.as_bytes(), Some(opts)).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        while let Ok(Some(resp)) = stream.message().await {
            let at_us = log.clock().now_us();
            for ev in resp.events() {
                if ev.event_type() != ec::EventType::Delete {
                    continue;
                }
                let Some(prev) = ev.prev_kv() else { continue };
                let key = String::from_utf8_lossy(prev.key()).into_owned();
                let lease = prev.lease();
                let gone = match client.lease_time_to_live(lease, None).await {
                    Ok(r) => r.ttl() < 0,
                    Err(_) => true,
                };
                if gone && lease != 0 {
                    log.record_at(at_us, Event::LeaseExpired { lease_id: lease });
                }
                log.record_at(
                    at_us,
                    Event::KeyDeleted {
                        key,
                        create_revision: prev.create_revision(),
                        cause: if gone { "expired" } else { "deleted" }.into(),
                    },
                );
            }
        }
    }
}
