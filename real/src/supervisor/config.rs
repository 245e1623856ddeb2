//! What a real run needs to start: [`RealConfig`].

use crate::backend::etcd::cluster::EtcdClusterConfig;
use crate::protocol::RealProtocol;
use std::path::PathBuf;

/// Everything a real run needs to start.
#[derive(Clone, Debug)]
pub struct RealConfig {
    /// Fleet size.
    pub nodes: usize,
    /// The protocol the nodes run, with its table: it decides the backend.
    pub protocol: RealProtocol,
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
    /// How to start an etcd cluster, when the protocol runs on etcd (its `log_dir` is
    /// set to `run_dir`).
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
    /// The command that runs each node instead of Baton's own (`--node-cmd`; see
    /// [`crate::contract::node_cmd`]); `None`: Baton's node.
    pub node_cmd: Option<crate::contract::node_cmd::NodeCmd>,
}

impl RealConfig {
    /// The defaults of a scenario's `[work]` table and etcd-lease's, 3 nodes, fencing on,
    /// with files in `run_dir` and children run from `binary`.
    pub fn new(run_dir: PathBuf, binary: PathBuf) -> Self {
        RealConfig {
            nodes: 3,
            protocol: RealProtocol::default(),
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
            node_cmd: None,
        }
    }
}
