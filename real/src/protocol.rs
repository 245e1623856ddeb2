//! Which protocols real mode runs, and how a node builds its elector for one: the same
//! elector code as the simulator's, on a live server's client.
//!
//! | protocol | live backend ([`crate::backend`]) | client |
//! |---|---|---|
//! | `etcd-lease` | Debian's etcd 3.4, a cluster of `[etcd] members` | [`crate::backend::etcd::client`] (`etcd-client`) |
//! | `redis-naive`, `redis-fenced` | Debian's `redis-server`, one instance, no persistence | [`crate::backend::redis::client`] (`redis`) |
//! | `zk-sequential` | Debian's `zookeeper`, one standalone server | [`crate::backend::zk::client`] (`zookeeper-client`) |
//! | `db-row` | Debian's `postgresql`, one cluster | [`crate::backend::pg::client`] (`tokio-postgres`) |
//! | `raft` | none: the nodes are the service, openraft over HTTP between them | [`crate::backend::raft`] |
//!
//! The others have no live server on this machine kind (Consul, a Kubernetes API server)
//! or none yet: [`RealProtocol::from_config`] says so, and real mode refuses them before
//! anything starts (see [`crate::trial::refusals`]).

use baton_model::protocol::{ProtocolConfig, ProtocolName};
use baton_protocols::db_row::DbRowConfig;
use baton_protocols::etcd_lease::EtcdLeaseConfig;
use baton_protocols::raft::RaftConfig;
use baton_protocols::redis_lock::RedisLockConfig;
use baton_protocols::zk_sequential::ZkSequentialConfig;
use serde::{Deserialize, Serialize};

/// A protocol real mode runs, with its scenario table: what the supervisor tells each
/// node (in its config file) and what decides the backend it starts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "protocol", content = "config", rename_all = "kebab-case")]
pub enum RealProtocol {
    /// etcd's election recipe on a live etcd.
    EtcdLease(EtcdLeaseConfig),
    /// The Redis lock without a token, on a live Redis.
    RedisNaive(RedisLockConfig),
    /// The Redis lock with an `INCR` token, on a live Redis.
    RedisFenced(RedisLockConfig),
    /// The recipe's ephemeral sequential znodes, on a live ZooKeeper.
    ZkSequential(ZkSequentialConfig),
    /// The lease on a database row, on a live PostgreSQL.
    DbRow(DbRowConfig),
    /// Raft among the node processes.
    Raft(RaftConfig),
}

/// The protocols real mode runs, for messages (`allowed: ...`).
pub const REAL_PROTOCOLS: &[ProtocolName] = &[
    ProtocolName::EtcdLease,
    ProtocolName::RedisNaive,
    ProtocolName::RedisFenced,
    ProtocolName::ZkSequential,
    ProtocolName::DbRow,
    ProtocolName::Raft,
];

/// A protocol real mode does not run, and why (one sentence, for a refusal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoBackend {
    /// A server Debian does not package.
    #[error("`{}` has no real server on this machine kind (Debian has no package for it): it stays simulation-only", .0.name())]
    NoPackage(ProtocolName),
    /// A protocol whose real backend Baton does not have yet.
    #[error("`{}` has no real backend in Baton yet", .0.name())]
    NotYet(ProtocolName),
}

impl RealProtocol {
    /// The protocol of a scenario's table, if real mode runs it; otherwise why not.
    pub fn from_config(c: ProtocolConfig) -> Result<RealProtocol, NoBackend> {
        Ok(match c {
            ProtocolConfig::EtcdLease(c) => RealProtocol::EtcdLease(c),
            ProtocolConfig::RedisNaive(c) => RealProtocol::RedisNaive(c),
            ProtocolConfig::RedisFenced(c) => RealProtocol::RedisFenced(c),
            ProtocolConfig::ZkSequential(c) => RealProtocol::ZkSequential(c),
            ProtocolConfig::DbRow(c) => RealProtocol::DbRow(c),
            ProtocolConfig::Raft(c) => RealProtocol::Raft(c),
            ProtocolConfig::ConsulSession(_) | ProtocolConfig::K8sLease(_) => {
                return Err(NoBackend::NoPackage(c.name()))
            }
            other => return Err(NoBackend::NotYet(other.name())),
        })
    }

    /// Its name.
    pub fn name(&self) -> ProtocolName {
        match self {
            RealProtocol::EtcdLease(_) => ProtocolName::EtcdLease,
            RealProtocol::RedisNaive(_) => ProtocolName::RedisNaive,
            RealProtocol::RedisFenced(_) => ProtocolName::RedisFenced,
            RealProtocol::ZkSequential(_) => ProtocolName::ZkSequential,
            RealProtocol::DbRow(_) => ProtocolName::DbRow,
            RealProtocol::Raft(_) => ProtocolName::Raft,
        }
    }

    /// The etcd recipe's table, when the protocol runs on etcd.
    pub fn etcd_lease(&self) -> Option<&EtcdLeaseConfig> {
        match self {
            RealProtocol::EtcdLease(c) => Some(c),
            _ => None,
        }
    }

    /// True when the nodes talk to each other (raft): each gets a proxy to each peer.
    pub fn nodes_talk(&self) -> bool {
        matches!(self, RealProtocol::Raft(_))
    }

    /// How long a fresh fleet's first election may take beyond starting up, in ms: a
    /// lease is free at the start, so nothing; raft's followers wait out an election
    /// timeout (up to its max) before the first vote, and a split vote costs another.
    pub fn first_election_ms(&self) -> u64 {
        match self {
            RealProtocol::Raft(c) => 2 * c.election_timeout_max_ms,
            _ => 0,
        }
    }
}

impl Default for RealProtocol {
    fn default() -> Self {
        RealProtocol::EtcdLease(EtcdLeaseConfig::default())
    }
}
