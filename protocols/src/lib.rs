//! Baton's leader-election protocols behind one [`Elector`] trait.
//!
//! Protocol code reads time only through a [`Clock`] and reaches its backend only
//! through a client trait (for etcd: [`EtcdApi`]), so the same code runs against the
//! simulated services and, later, against real ones.
#![deny(missing_docs)]

// The vocabulary every protocol shares, private modules with their items at the root.
mod clock;
mod elector;
mod etcd_api;
mod leadership;
mod mailbox;
mod node_id;
mod raft_config;
mod requeue;
mod safety;

// One module per protocol (and `peer`, the machinery bully and ring share): each holds
// its elector, its `Config` and the client trait it reaches its backend through.
pub mod bully;
pub mod consul_session;
pub mod db_row;
pub mod etcd_lease;
pub mod k8s_lease;
pub mod peer;
pub mod raft;
pub mod redis_lock;
pub mod ring;
pub mod zk_sequential;

pub use clock::{sleep_drawn, sleep_local, sleep_until_local, Clock, Timer};
pub use elector::{Elector, ElectorError, LeaderInfo, ReplicatedLog, TransferReadiness};
pub use etcd_api::{
    Compare, CompareOp, CompareTarget, EtcdApi, EtcdError, KeyValue, LeaseGrant, RangeRequest,
    RangeResponse, Txn, TxnOp, TxnResponse, WatchEvent, WatchEventKind,
};
pub use leadership::{Leadership, LeaseHandle, LossReason};
pub use node_id::NodeId;
pub use safety::SafetyBounds;
