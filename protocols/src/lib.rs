//! Baton's leader-election protocols behind one [`Elector`] trait.
//!
//! Protocol code reads time only through a [`Clock`] and reaches its backend only
//! through a client trait (for etcd: [`EtcdApi`]), so the same code runs against the
//! simulated services and, later, against real ones.
#![deny(missing_docs)]

pub mod bully;
pub mod clock;
pub mod consul_session;
pub mod db_row;
pub mod elector;
pub mod etcd_api;
pub mod etcd_lease;
pub mod k8s_lease;
pub mod leadership;
pub mod mailbox;
pub mod node_id;
pub mod peer;
pub mod raft;
pub mod raft_config;
pub mod redis_lock;
pub mod requeue;
pub mod ring;
pub mod safety;
pub mod zk_sequential;

pub use clock::Clock;
pub use elector::{Elector, ElectorError, LeaderInfo, ReplicatedLog, TransferReadiness};
pub use etcd_api::EtcdApi;
pub use leadership::{Leadership, LossReason};
pub use node_id::NodeId;
