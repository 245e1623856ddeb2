//! The protocols a scenario can name, and what the simulator needs from each.
//!
//! A protocol is three pieces. The elector lives in the `baton-protocols` crate and knows
//! nothing of the simulator. Its backend (etcd, Redis, ...) is a simulated service node
//! in `crate::world::service`, which declares the requests it answers. The glue here implements
//! [`Protocol`]: it starts the backend, builds each node's elector over a client that
//! reaches the backend through madsim's network (sending the service's requests), checks
//! the protocol's scenario table, and names its failover bound.
//!
//! Adding a protocol: a variant of [`ProtocolName`] and of [`ProtocolConfig`], an
//! `Option<Config>` field in [`baton_model::scenario::Scenario`] named after it, a module here,
//! and an arm in [`baton_model::build_protocol!`].

pub mod bully;
pub mod consul_session;
pub mod db_row;
pub mod desk;
pub mod etcd_cluster_client;
pub mod etcd_lease;
pub mod k8s_lease;
pub mod peer;
pub mod raft;
pub mod redis_lock;
pub mod ring;
pub mod user_node;
pub mod zk_sequential;

use crate::world::clock::NodeClock;
use crate::world::net::Endpoint;
use crate::world::timeline::Timeline;
use baton_model::scenario::Scenario;
use baton_protocols::{Clock, Elector};
use madsim::runtime::Handle;
use std::any::Any;
use std::sync::{Arc, Mutex};

pub use baton_model::protocol::{
    require_positive, Bound, Fleet, ProtocolConfig, ProtocolModel, ProtocolName,
};

/// What a backend gets from the world when it starts.
pub struct BackendCtx<'a> {
    /// The runtime, to create the backend's node.
    pub handle: &'a Handle,
    /// The run's timeline.
    pub timeline: Timeline,
    /// The backend's own clock (skewable as `backend`).
    pub clock: NodeClock,
    /// Counts every request the backend serves.
    pub requests: Arc<crate::world::requests::RequestCounter>,
    /// The run's root seed.
    pub seed: u64,
}

/// What a node's elector gets when the node starts (again, after a restart).
pub struct ElectorCtx<'a> {
    /// The node (`n3`).
    pub node: &'a baton_model::NodeId,
    /// Its 1-based index.
    pub index: usize,
    /// The fleet size.
    pub nodes: usize,
    /// The node's endpoint: calls to the backend go out here, and peer-to-peer
    /// protocols add their RPC handlers to it.
    pub ep: Arc<Endpoint>,
    /// The node's own clock.
    pub clock: Arc<dyn Clock>,
    /// The run's root seed.
    pub seed: u64,
    /// How many times this node has started (1 on first start).
    pub incarnation: u64,
    /// The run's timeline, for protocol events worth recording.
    pub timeline: Timeline,
    /// The node's "disk": state that survives kill and restart (see [`DiskSlot`]).
    pub disk: &'a DiskSlot,
    /// The world's count of requests the backend served (`backend_requests`). A
    /// peer-to-peer protocol whose peers are its backend may count the election requests
    /// they serve here (raft does; bully and ring count nothing).
    pub requests: Arc<crate::world::requests::RequestCounter>,
    /// The lease service's cluster, when it has more than one member.
    pub etcd_cluster: Option<&'a baton_model::scenario::etcd_cluster::EtcdCluster>,
    /// Where the node's cluster client keeps the member it talks to
    /// ([`crate::world::node::control::NodeControl::etcd_member`]).
    pub etcd_member: Arc<std::sync::atomic::AtomicUsize>,
    /// Where the node loop puts the term's desk when the protocol's nodes do their own
    /// protected work ([`Protocol::own_work`]: a user's node).
    pub desk: Arc<desk::DeskSlot>,
}

/// A node's durable storage, owned by the world's [`crate::world::node::NodeControl`] so that
/// it outlives the node's tasks: a kill loses nothing stored here and a restart finds it,
/// as a real node finds its fsynced files. Empty until a protocol that persists state
/// (raft: its log and vote) fills it on first start; the protocol picks the type.
#[derive(Default)]
pub struct DiskSlot(Mutex<Option<Arc<dyn Any + Send + Sync>>>);

impl DiskSlot {
    /// The stored state, created with `T::default()` on first use.
    ///
    /// Panics if the slot holds another type: one run has one protocol.
    pub fn get_or_default<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut slot = self.0.lock().unwrap();
        let any = slot.get_or_insert_with(|| Arc::new(T::default()));
        any.clone()
            .downcast::<T>()
            .expect("one protocol per run: the disk holds its type")
    }
}

/// What the simulator needs from a protocol beyond its model: starting its backend
/// as a madsim node and building each node's elector over the simulated network.
pub trait Protocol: ProtocolModel {
    /// Starts the backend as a madsim node at [`crate::world::rpc::BACKEND_ADDR`], if the
    /// protocol has one; peer-to-peer protocols return `None`.
    fn start_backend(&self, ctx: BackendCtx) -> Option<madsim::task::NodeId>;

    /// Builds the elector of one node.
    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector>;

    /// For a sharded fleet (`partitions = P`): one node's membership registry client and
    /// one elector per partition, each over its own election. `None`: the protocol does
    /// not run sharded (the scenario's checks refuse it first).
    fn sharded(&self, ctx: ElectorCtx, partitions: u32) -> Option<ShardKit> {
        let _ = (ctx, partitions);
        None
    }

    /// Whether the elector's own code does the leader's protected work through the
    /// term's desk (`crate::world::node::desk`) rather than Baton's node
    /// (`crate::world::node::work`): a user's node that asked for it.
    fn own_work(&self) -> bool {
        false
    }
}

/// What a protocol gives a node of a sharded fleet (see `crate::world::node::shard`).
pub struct ShardKit {
    /// The node's client of the lease service, for the membership registry.
    pub registry: Arc<dyn baton_protocols::EtcdApi>,
    /// The registry lease's TTL.
    pub ttl_ms: u64,
    /// One elector per partition, in partition order.
    pub electors: Vec<Arc<dyn Elector>>,
}

/// The protocol a scenario names, built from its table (the real system's defaults when
/// the table is absent) and the fleet, as the simulator runs it.
pub fn build(scenario: &Scenario) -> Arc<dyn Protocol> {
    baton_model::build_protocol!(scenario.protocol_config(), scenario.fleet())
}
