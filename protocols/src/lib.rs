//! Baton's leader-election protocols behind one [`Elector`] trait.
//!
//! Each protocol declares, next to its code, the faults inside which its leader stops
//! acting before its backend's grant ends ([`SafetyBounds`]); beyond them only a fencing
//! token checked at the resource keeps the work right:
//!
//! ```
//! use baton_protocols::{etcd_lease::EtcdLeaseConfig, k8s_lease::K8sLeaseConfig};
//!
//! // etcd's election recipe counts its deadline from before each keepalive left, with
//! // no margin: any pause of the leader may outlast it.
//! assert_eq!(EtcdLeaseConfig::default().safety_bounds().pause_ms, 0);
//! // client-go stops `RenewDeadline` after its last renewal began, and the Lease stays
//! // held for `LeaseDuration`: it tolerates the difference (15 s - 10 s).
//! let k8s = K8sLeaseConfig::default().safety_bounds();
//! assert!(k8s.self_safe);
//! assert_eq!(k8s.pause_ms, 5_000);
//! ```
//!
//! Protocol code reads time only through a [`Clock`] and reaches its backend only
//! through a client trait (for etcd: [`EtcdApi`]), so the same code runs against the
//! simulated services and against real ones. The crate root holds the vocabulary every
//! protocol shares; each protocol is a module of its own with its elector, its `Config`
//! and its client trait.
#![deny(missing_docs)]

// The vocabulary every protocol shares, private modules with their items at the root.
mod clock;
mod elector;
mod etcd_api;
pub mod jitter;
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
