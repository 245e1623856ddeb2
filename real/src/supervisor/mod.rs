//! The real world: every process of a run, and the fault verbs that act on them.
//!
//! [`Supervisor::start`] starts, on 127.0.0.1 only: the protocol's backend (a 3-member
//! etcd cluster, or a Redis: see [`crate::backend`]), the fenced resource (SQLite
//! ledger), the nodes, each behind its own proxies (to every etcd member or to the
//! server, to the resource, and from the load client), and the load client. It is the
//! real counterpart of the simulator's `World`: mechanism only. A driver (the scenario
//! runner, or [`crate::trial::smoke`]) decides when to call the verbs:
//!
//! | verb | what it does | events it logs |
//! |---|---|---|
//! | [`kill`](Supervisor::kill) | SIGKILL to the node's process group | `node_killed` |
//! | [`restart`](Supervisor::restart) | kills it if alive, starts a new process | (`node_killed`), `node_restarted` |
//! | [`pause`](Supervisor::pause) / [`resume`](Supervisor::resume) | SIGSTOP / SIGCONT | `node_paused` / `node_resumed` |
//! | [`gc_pause`](Supervisor::gc_pause) / [`gc_resume`](Supervisor::gc_resume) | SIGSTOP / SIGCONT for a pause of the GC noise | `gc_paused` / `gc_resumed` |
//! | [`arm_pause_before_write`](Supervisor::arm_pause_before_write) | the node stops itself just before its next protected write; the supervisor resumes it `duration_ms` after it stopped | the node: `fault_applied`, `node_paused`; then `node_resumed`, `fault_healed` |
//! | [`cut`](Supervisor::cut) / [`mend`](Supervisor::mend) | stops / restarts forwarding on a node's link, one way or both | none (the driver logs the fault) |
//! | [`set_latency_ms`](Supervisor::set_latency_ms), [`set_latency_ms_all`](Supervisor::set_latency_ms_all) | delays a node's link, or every link | none |
//! | [`skew_clock`](Supervisor::skew_clock) | offsets, drifts or steps a node's clock | none |
//! | [`resign`](Supervisor::resign) | asks a leader to step down | the node: `released` ... |
//!
//! The driver logs `fault_applied` / `fault_healed` itself ([`Supervisor::record`]), as
//! the simulator's driver does. The supervisor also observes the backend (directly, not
//! through any proxy) and logs each end of a grant: on etcd each key deletion under the
//! election prefix (`key_deleted`, and `lease_expired` when the key's lease is gone: see
//! [`crate::backend::etcd::watch::watch_keys`]), on Redis each deletion of the lock key (see
//! [`crate::backend::redis::watch`]). Election latency is timed from them.
//!
//! [`Supervisor::stop`] stops everything and merges the per-process logs into
//! `timeline.jsonl`. Dropping a supervisor without `stop` (an error, a panic) kills
//! everything too; a supervisor killed outright leaves nothing running either (see
//! [`crate::process`]).
//!
//! Files in the run directory: `nodes.txt` (each node's name and the URL of its HTTP
//! interface, `/status` and `/metrics`, through its client proxy), `supervisor.jsonl`, `resource.jsonl`, `n<i>.jsonl` (the
//! event logs), `timeline.jsonl` (merged), `ledger.db` (the SQLite ledger),
//! `load-stats.json`, the processes' configs (`*.json`) and stderr (`*.stderr`), and
//! the backend's logs (`etcd-m<i>.log`, `redis.log`).
//!
//! One concept per file under `supervisor/`: `config` ([`RealConfig`]), `error`
//! ([`RealError`]), `link` ([`Link`], [`Direction`]), `spawn` (a child process, its config
//! and stderr files), `fleet` (the resource, the nodes behind their proxies, the load
//! client), `verbs` (the table above), `status` (`/status`, who leads or follows, who
//! died), and `stop` (the end of the run and the merge, [`StoppedRun`]). This file holds the [`Supervisor`] itself and its start.

mod config;
mod error;
mod fine_timer;
mod fleet;
mod foreign;
mod link;
mod members;
pub mod proxy;
mod spawn;
mod status;
mod stop;
mod verbs;

pub use config::RealConfig;
pub use error::RealError;
pub use link::{Direction, Link};
pub use stop::StoppedRun;

use crate::backend::Backend;
use crate::events::{Entry, Event, EventLog};
use crate::process::ManagedChild;
use crate::run_clock::RunClock;
use baton_model::NodeId;
use fleet::NodeSlot;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

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

/// A running real world. See the module doc.
///
/// Dropped (an error, a panic), it stops everything: fields drop in declaration order,
/// so the watchers go first, then the load client, the nodes and their proxies, the
/// resource, and the backend (with its data) last.
pub struct Supervisor {
    tasks: Tasks,
    load: Option<ManagedChild>,
    nodes: Vec<NodeSlot>,
    resource: Option<ManagedChild>,
    backend: Option<Backend>,
    cfg: RealConfig,
    clock: RunClock,
    log: EventLog,
    http: reqwest::Client,
    ports: Vec<u16>,
    pids: Arc<Mutex<Vec<u32>>>,
    /// Where each `--node-cmd` node's current process serves, for its poller.
    foreign: Vec<crate::contract::status_poll::Current>,
    /// Until when each `--node-cmd` node is polled faster (see [`Supervisor::hurry_poll`]).
    hurry: Vec<crate::contract::status_poll::Hurry>,
}

/// The marker file the supervisor writes first into a run directory (`run/`), so that
/// Baton knows its own leftovers from a directory someone else wrote.
pub const RUN_MARKER: &str = ".baton-run";

impl Supervisor {
    /// Starts every process of a run (see the module doc) and returns once all listen.
    /// The run's clock starts once the backend answers, just before the resource and the
    /// fleet start: time 0 of the timeline is when the fleet began to boot.
    pub async fn start(cfg: RealConfig) -> Result<Supervisor, RealError> {
        std::fs::create_dir_all(&cfg.run_dir)?;
        let log_path = cfg.run_dir.join("supervisor.jsonl");
        if log_path.exists() {
            return Err(RealError::RunDirUsed(cfg.run_dir.clone()));
        }
        // Marked first: a run that cannot start (the backend fails before
        // supervisor.jsonl exists) still leaves a directory the next run knows is Baton's.
        std::fs::write(
            cfg.run_dir.join(RUN_MARKER),
            "Written by the Baton supervisor: a real run's process logs.\n",
        )?;
        let backend = Backend::start(&cfg.protocol, &cfg.etcd, &cfg.run_dir).await?;
        let clock = RunClock::start();
        let log = EventLog::open(&log_path, clock)?;
        let mut ports = backend.ports();
        let pids = Arc::new(Mutex::new(backend.pids()));
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(1000))
            .build()
            .expect("a plain HTTP client builds");
        let mut tasks = Tasks::default();
        for t in backend.observers(&cfg.protocol, &log, cfg.seed) {
            tasks.push(t);
        }
        let (resource, resource_addr) = fleet::start_resource(&cfg, clock)?;
        pids.lock().unwrap().push(resource.pid());
        ports.push(resource_addr.port());
        let nodes = fleet::node_slots(&cfg, clock, &backend, resource_addr, &mut ports).await?;
        let mut sup = Supervisor {
            cfg,
            clock,
            log,
            backend: Some(backend),
            resource: Some(resource),
            nodes,
            load: None,
            tasks,
            http,
            ports,
            pids,
            foreign: vec![],
            hurry: vec![],
        };
        for i in 0..sup.nodes.len() {
            sup.start_node(i).await?;
        }
        sup.poll_foreign_nodes();
        let peers = fleet::peers(&sup.nodes);
        // Where a person points curl: each node's HTTP address through its client proxy,
        // which outlives its processes (a restarted node is behind the same one).
        let urls: String = peers
            .iter()
            .map(|p| format!("{} {}\n", p.name, p.url))
            .collect();
        std::fs::write(sup.cfg.run_dir.join("nodes.txt"), urls)?;
        sup.load = fleet::start_load(&sup.cfg, sup.clock, peers)?;
        if let Some(l) = &sup.load {
            sup.pids.lock().unwrap().push(l.pid());
        }
        Ok(sup)
    }

    /// Starts node `i`'s process (a fresh one) and points its client proxy at it.
    async fn start_node(&mut self, i: usize) -> Result<(), RealError> {
        if self.cfg.node_cmd.is_some() {
            return self.start_foreign_node(i).await;
        }
        fleet::start_node(&self.cfg, &mut self.nodes, i, &self.pids, &mut self.ports)
    }

    fn slot(&self, node: &str) -> Result<usize, RealError> {
        self.nodes
            .iter()
            .position(|s| s.cfg.name == node)
            .ok_or_else(|| RealError::UnknownNode(node.to_string()))
    }

    /// True when the nodes talk to each other (raft): a link between two nodes has
    /// proxies, and `backend` stands for every other node.
    pub fn nodes_talk(&self) -> bool {
        self.cfg.protocol.nodes_talk()
    }

    /// How long the fleet's first election may take beyond starting up, in ms (see
    /// [`crate::protocol::RealProtocol::first_election_ms`]).
    pub fn first_election_ms(&self) -> u64 {
        self.cfg.protocol.first_election_ms()
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

    /// The nodes, in fleet order.
    pub fn node_names(&self) -> Vec<NodeId> {
        self.nodes.iter().map(|s| s.cfg.name.clone()).collect()
    }

    /// Where the backend keeps its data (removed when the run stops).
    pub fn backend_data_dir(&self) -> Option<PathBuf> {
        self.backend.as_ref().and_then(Backend::data_dir)
    }

    /// The etcd cluster's client URLs (direct, not proxied); none when the backend is
    /// not etcd.
    pub fn etcd_urls(&self) -> Vec<String> {
        self.backend
            .as_ref()
            .and_then(Backend::etcd)
            .map(|e| e.client_urls())
            .unwrap_or_default()
    }

    /// Every port the run has bound so far.
    pub fn ports(&self) -> Vec<u16> {
        self.ports.clone()
    }

    /// Every process the run has started so far.
    pub fn pids(&self) -> Vec<u32> {
        self.pids.lock().unwrap().clone()
    }
}
