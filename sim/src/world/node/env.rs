//! What every node of the fleet shares: the run's timeline, parameters and protocol.
//!
//! It lives apart from the node's life ([`crate::world::node`]) and from the leader's work
//! ([`crate::world::node::work`]), since both read it.

use crate::world::protocol::Protocol;
use crate::world::timeline::Timeline;
use madsim::task::NodeId;
use std::sync::{Arc, OnceLock};

/// What every node shares: the timeline, the parameters, where the chaos node is.
pub struct NodeEnv {
    /// The run's timeline.
    pub timeline: Timeline,
    /// The world's count of requests the protocol's backend served.
    pub backend_requests: Arc<crate::world::requests::RequestCounter>,
    /// The run's root seed.
    pub seed: u64,
    /// The protocol under test.
    pub protocol: Arc<dyn Protocol>,
    /// The fleet size.
    pub nodes: usize,
    /// Scheduler tick interval.
    pub tick_interval_ms: u64,
    /// Timeout of calls to the fenced resource.
    pub resource_timeout_ms: u64,
    /// The most a node waits before it boots (see [`crate::world::node::run`]).
    pub start_delay_ms_max: u64,
    /// The lease service's cluster, when it has more than one member (the protocol's
    /// clients then talk to its members, not to `backend`).
    pub etcd_cluster: Option<baton_model::scenario::etcd_cluster::EtcdCluster>,
    /// How many partitions a sharded fleet leads (0: one global leader).
    pub partitions: u32,
    /// The SWIM failure detector's table, if the scenario has one (`[swim]`).
    pub swim: Option<baton_model::scenario::swim::SwimConfig>,
    /// The leader's long-running job, if the scenario has one.
    pub job: Option<baton_model::scenario::JobConfig>,
    /// The node that runs the world's own timers (pause ends), never paused or killed.
    pub chaos_node: OnceLock<NodeId>,
}
