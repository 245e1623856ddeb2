//! What the supervisor tells a node process ([`NodeConfig`], written as JSON and passed
//! by path), and how a node reaches its peers ([`Peer`]).

use crate::protocol::RealProtocol;
use baton_model::NodeId;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A peer's name and the address clients reach it at (for `409` hints).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peer {
    /// `n1`, `n2`, ...
    pub name: NodeId,
    /// `http://127.0.0.1:<port>`, its client-facing (proxied) address.
    pub url: String,
}

/// What the supervisor tells a node process (written as JSON, passed by path).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NodeConfig {
    /// The node's name.
    pub name: NodeId,
    /// The run's epoch ([`crate::RunClock::epoch_us`]).
    pub epoch_us: i64,
    /// Where its events go.
    pub log_path: PathBuf,
    /// The backend's addresses, through this node's proxies: every etcd member's client
    /// URL, or the one server's.
    pub backend_endpoints: Vec<String>,
    /// The resource's `/write` URL, through this node's proxy.
    pub resource_url: String,
    /// The protocol and its parameters (the scenario's table for it).
    pub protocol: RealProtocol,
    /// Scheduler tick interval.
    pub tick_interval_ms: u64,
    /// Timeout of each write to the resource.
    pub resource_timeout_ms: u64,
    /// No protected write starts with less than this left before the lease deadline
    /// (0 for Baton's own nodes, which log each write's send; `contract-node` keeps the
    /// node contract's 50 ms, since a foreign node's write counts at its arrival).
    #[serde(default)]
    pub write_margin_ms: u64,
    /// The fleet, for hints.
    pub peers: Vec<Peer>,
    /// The clock's offset from the run's clock at start, in µs (a restart does not fix
    /// a skewed clock: the supervisor passes on what the last incarnation had).
    #[serde(default)]
    pub clock_offset_us: i64,
    /// The clock's drift at start.
    #[serde(default)]
    pub clock_drift_ppm: i64,
    /// The run's seed: the boot delay is drawn from it, as the simulator's node draws it.
    #[serde(default)]
    pub seed: u64,
    /// Which start of this node this is (1 for the first, 2 after one restart, ...).
    #[serde(default)]
    pub incarnation: u64,
    /// The node boots for a delay drawn uniformly from 0 to this many ms before it
    /// campaigns (a scenario's `start_delay_ms_max`; 0: none).
    #[serde(default)]
    pub start_delay_ms_max: u64,
    /// For protocols whose nodes talk to each other (raft): each node's `/raft` URL,
    /// through this node's proxy to it, in fleet order (its own is empty).
    #[serde(default)]
    pub raft_peers: Vec<String>,
    /// Where a raft node keeps its log and vote (they survive a kill).
    #[serde(default)]
    pub raft_disk: Option<PathBuf>,
}

impl NodeConfig {
    /// The boot delay of this start: drawn from `seed::fork(seed, "start/<node>/<incarnation>")`,
    /// the simulator's label, so that a seed boots each node after the same delay in both
    /// worlds.
    pub fn start_delay_ms(&self) -> u64 {
        if self.start_delay_ms_max == 0 {
            return 0;
        }
        baton_model::seed::fork(
            self.seed,
            &format!("start/{}/{}", self.name, self.incarnation),
        )
        .gen_range(0..=self.start_delay_ms_max)
    }
}

impl NodeConfig {
    /// The generator for `what` in this start of this node:
    /// `seed::fork(seed, "<what>/<node>/<incarnation>")`.
    pub fn rng(&self, what: &str) -> rand_chacha::ChaCha8Rng {
        baton_model::seed::fork(
            self.seed,
            &format!("{what}/{}/{}", self.name, self.incarnation),
        )
    }
}
