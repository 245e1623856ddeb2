//! The protocols a scenario can name, as the model sees them: each one's scenario table
//! (its checks and the defaults filled in), the failover bound it promises, and what the
//! checkers need to know of its token. Both worlds share this; starting a protocol's
//! backend and building its electors belong to a world (`baton_sim::world::protocol` for the
//! simulator).
//!
//! A protocol is built from its own table (a [`ProtocolConfig`]) and the [`Fleet`] it
//! runs on, never from the whole scenario: the scenario knows its protocols, not the
//! reverse.
//!
//! Adding a protocol: a variant of [`ProtocolName`] and of [`ProtocolConfig`], an
//! `Option<Config>` field in the scenario named after it (and its arms in the scenario's
//! `protocol_config` and `set_protocol_config`), a module here, an arm in
//! `build_protocol!`, and its world side in each world.

pub mod bully;
pub mod consul_session;
pub mod db_row;
pub mod etcd_lease;
pub mod k8s_lease;
pub mod raft;
pub mod redis_lock;
pub mod ring;
pub mod ttl;
pub mod zk_sequential;

use crate::scenario::key_error::KeyError;
use baton_protocols::bully::BullyConfig;
use baton_protocols::consul_session::ConsulSessionConfig;
use baton_protocols::db_row::DbRowConfig;
use baton_protocols::etcd_lease::EtcdLeaseConfig;
use baton_protocols::k8s_lease::K8sLeaseConfig;
use baton_protocols::raft::RaftConfig;
use baton_protocols::redis_lock::RedisLockConfig;
use baton_protocols::ring::RingConfig;
use baton_protocols::zk_sequential::ZkSequentialConfig;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The protocols a scenario may name in its `protocol` key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProtocolName {
    /// etcd lease + the `concurrency` election recipe.
    #[default]
    EtcdLease,
    /// A Redis `SET NX PX` lock with no fencing token (the instructive wrong default).
    RedisNaive,
    /// The Redis lock plus a fencing token from `INCR` on acquisition.
    RedisFenced,
    /// A lease on one database row, `generation` as token.
    DbRow,
    /// Consul session + KV lock, as the Go client's `api.Lock`.
    ConsulSession,
    /// Kubernetes Lease + client-go's leader election.
    K8sLease,
    /// ZooKeeper ephemeral sequential znodes under a session (the recipe's election).
    ZkSequential,
    /// Garcia-Molina's bully election among peers, no backend.
    Bully,
    /// The Chang-Roberts ring election among peers, no backend.
    Ring,
    /// Raft consensus among the nodes (openraft), term as token, with a leader lease.
    Raft,
}

impl ProtocolName {
    /// Every protocol, in the order reports list them.
    pub const ALL: [ProtocolName; 10] = [
        ProtocolName::EtcdLease,
        ProtocolName::RedisNaive,
        ProtocolName::RedisFenced,
        ProtocolName::ConsulSession,
        ProtocolName::K8sLease,
        ProtocolName::ZkSequential,
        ProtocolName::DbRow,
        ProtocolName::Bully,
        ProtocolName::Ring,
        ProtocolName::Raft,
    ];

    /// The name used in files and reports (and the name of its scenario table).
    pub fn name(self) -> &'static str {
        match self {
            ProtocolName::EtcdLease => "etcd-lease",
            ProtocolName::RedisNaive => "redis-naive",
            ProtocolName::RedisFenced => "redis-fenced",
            ProtocolName::DbRow => "db-row",
            ProtocolName::ConsulSession => "consul-session",
            ProtocolName::K8sLease => "k8s-lease",
            ProtocolName::ZkSequential => "zk-sequential",
            ProtocolName::Bully => "bully",
            ProtocolName::Ring => "ring",
            ProtocolName::Raft => "raft",
        }
    }

    /// The server the protocol leans on, as reports name it (`etcd`, `Redis`); `none`
    /// for elections among the nodes themselves.
    pub fn backend_name(self) -> &'static str {
        match self {
            ProtocolName::EtcdLease => "etcd",
            ProtocolName::RedisNaive | ProtocolName::RedisFenced => "Redis",
            ProtocolName::DbRow => "PostgreSQL",
            ProtocolName::ConsulSession => "Consul",
            ProtocolName::K8sLease => "Kubernetes API server",
            ProtocolName::ZkSequential => "ZooKeeper",
            ProtocolName::Bully | ProtocolName::Ring | ProtocolName::Raft => "none",
        }
    }

    /// What a live run of the protocol runs against, for a report: `live etcd`, `live
    /// Redis`; for raft, its own node processes.
    pub fn live_side(self) -> String {
        match self.backend_name() {
            "none" => "live nodes".to_string(),
            b => format!("live {b}"),
        }
    }

    /// Whether faults may name its backend server as `backend` (kill, pause, and
    /// restart where the simulated server models what a restart keeps): one server, not
    /// an etcd cluster (`etcd_cluster`), whose members are named instead, nor an
    /// election among the nodes.
    pub fn server_faults(self, etcd_cluster: bool) -> Option<ServerFaults> {
        match self {
            ProtocolName::Bully | ProtocolName::Ring | ProtocolName::Raft => None,
            ProtocolName::EtcdLease if etcd_cluster => None,
            // Redis without persistence keeps nothing across a restart, which is what a
            // restarted simulated service keeps; the database keeps its row on disk, and
            // the simulated one keeps it across a restart too.
            ProtocolName::RedisNaive | ProtocolName::RedisFenced => Some(ServerFaults {
                restart_modelled: true,
                keeps_data: false,
            }),
            ProtocolName::DbRow => Some(ServerFaults {
                restart_modelled: true,
                keeps_data: true,
            }),
            _ => Some(ServerFaults {
                restart_modelled: false,
                keeps_data: true,
            }),
        }
    }

    /// Parses a name as written in files.
    pub fn parse(name: &str) -> Option<ProtocolName> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// What faults may do to a protocol's one backend server (`target = "backend"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerFaults {
    /// A restart (or a kill with `restart_after_ms`) is modelled: the simulated server
    /// keeps across it what the real one keeps. When not, only kill and pause are.
    pub restart_modelled: bool,
    /// The server keeps its data across a restart (a database, a coordination service);
    /// Redis without persistence keeps nothing, its locks and counters included.
    pub keeps_data: bool,
}

/// The failover bound a protocol promises, with the terms that make it up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Bound {
    /// The bound.
    pub ms: u64,
    /// How it is made up, in words and numbers.
    pub formula: String,
}

/// Checks a protocol table's durations and counts that must not be 0: the first one that
/// is comes back as `(key, "must be at least 1")`, for [`ProtocolModel::validate`].
pub fn require_positive(fields: &[(&str, u64)]) -> Result<(), KeyError> {
    match fields.iter().find(|(_, v)| *v == 0) {
        Some((key, _)) => Err(KeyError::new(key.to_string(), "must be at least 1")),
        None => Ok(()),
    }
}

/// What every world (and the checkers and report) needs from a protocol: its name,
/// the checks of its table, and the bounds it promises. Starting its backend and
/// building its electors belong to a world (the simulator's `Protocol`).
pub trait ProtocolModel: Send + Sync + std::fmt::Debug {
    /// The protocol's name.
    fn name(&self) -> ProtocolName;

    /// Checks the protocol's table; `Err(KeyError::new(key, message))` names a key inside it.
    fn validate(&self) -> Result<(), KeyError>;

    /// The failover bound the protocol promises under a clean kill on its [`Fleet`], with
    /// its formula.
    fn failover_bound(&self) -> Bound;

    /// What the protocol promises about its own safety without the fence, declared next
    /// to its code (see [`baton_protocols::SafetyBounds`]); the `protocol_safety` checker
    /// judges by it.
    fn safety_bounds(&self) -> baton_protocols::SafetyBounds;

    /// The default liveness bound: after the last fault ends, a leader must write within
    /// this long.
    fn default_liveness_bound_ms(&self) -> u64;

    /// True when the token is an election term, which at most one node may win (Raft's
    /// election safety, checked by [`crate::checker::election_safety`]). Lease tokens
    /// (revisions, counters) are not: for them the checker stays silent.
    fn token_is_term(&self) -> bool {
        false
    }

    /// True when the scenario has the protocol keep the sequencer in its own replicated
    /// log (see [`baton_protocols::ReplicatedLog`]): batches commit there instead of at
    /// the resource, and leaders answer reads. Only then may a scenario send reads.
    fn has_replicated_log(&self) -> bool {
        false
    }

    /// For protocols that answer leased reads: the clock assumption that keeps them
    /// linearizable, in words with its numbers, for the summary.
    fn read_lease_bound(&self) -> Option<String> {
        None
    }

    /// How a graceful step-down hands leadership on, where that is not simply "the
    /// holder releases, the next candidate takes it" (for the summary of a run with a
    /// `resign` fault).
    fn stepdown_method(&self) -> Option<&'static str> {
        None
    }

    /// How a `transfer` hands leadership to a designated successor on this backend, for
    /// the summary. The default is what a backend with no primitive for it gets: the
    /// leader releases and tells the successor to try now, and any other candidate that
    /// tries first may take the seat instead.
    fn transfer_method(&self) -> &'static str {
        "no transfer primitive: the leader releases and tells its successor to try at once; another candidate trying first may take the seat"
    }
}

/// What a protocol's bounds need from outside its own table, passed to it when it is
/// built: the fleet's size and the network's slowest one-way latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fleet {
    /// How many nodes run the protocol.
    pub nodes: u32,
    /// The network's highest one-way latency of a message (`network.latency_ms_max`).
    pub latency_ms_max: u64,
}

/// A protocol with its own table: what each world builds the protocol from
/// (`build_protocol!`). The scenario keeps each protocol's table apart (so that a file
/// may hold several) and hands over the one it selects.
#[derive(Clone, Debug, PartialEq)]
pub enum ProtocolConfig {
    /// `etcd-lease` and its `[etcd-lease]` table.
    EtcdLease(EtcdLeaseConfig),
    /// `redis-naive` and its `[redis-naive]` table.
    RedisNaive(RedisLockConfig),
    /// `redis-fenced` and its `[redis-fenced]` table.
    RedisFenced(RedisLockConfig),
    /// `db-row` and its `[db-row]` table.
    DbRow(DbRowConfig),
    /// `consul-session` and its `[consul-session]` table.
    ConsulSession(ConsulSessionConfig),
    /// `k8s-lease` and its `[k8s-lease]` table.
    K8sLease(K8sLeaseConfig),
    /// `zk-sequential` and its `[zk-sequential]` table.
    ZkSequential(ZkSequentialConfig),
    /// `bully` and its `[bully]` table.
    Bully(BullyConfig),
    /// `ring` and its `[ring]` table.
    Ring(RingConfig),
    /// `raft` and its `[raft]` table.
    Raft(RaftConfig),
}

impl ProtocolConfig {
    /// The protocol this table belongs to.
    pub fn name(&self) -> ProtocolName {
        match self {
            ProtocolConfig::EtcdLease(_) => ProtocolName::EtcdLease,
            ProtocolConfig::RedisNaive(_) => ProtocolName::RedisNaive,
            ProtocolConfig::RedisFenced(_) => ProtocolName::RedisFenced,
            ProtocolConfig::DbRow(_) => ProtocolName::DbRow,
            ProtocolConfig::ConsulSession(_) => ProtocolName::ConsulSession,
            ProtocolConfig::K8sLease(_) => ProtocolName::K8sLease,
            ProtocolConfig::ZkSequential(_) => ProtocolName::ZkSequential,
            ProtocolConfig::Bully(_) => ProtocolName::Bully,
            ProtocolConfig::Ring(_) => ProtocolName::Ring,
            ProtocolConfig::Raft(_) => ProtocolName::Raft,
        }
    }

    /// The table with the values derived from others written in (so the resolved
    /// `scenario.toml` shows every value in force).
    pub fn filled(self) -> ProtocolConfig {
        match self {
            ProtocolConfig::EtcdLease(mut c) => {
                c.keepalive_interval_ms = c.effective_keepalive_interval_ms();
                ProtocolConfig::EtcdLease(c)
            }
            ProtocolConfig::RedisNaive(mut c) => {
                c.renew_interval_ms = c.effective_renew_interval_ms();
                ProtocolConfig::RedisNaive(c)
            }
            ProtocolConfig::RedisFenced(mut c) => {
                c.renew_interval_ms = c.effective_renew_interval_ms();
                ProtocolConfig::RedisFenced(c)
            }
            ProtocolConfig::DbRow(mut c) => {
                c.renew_interval_ms = c.effective_renew_interval_ms();
                ProtocolConfig::DbRow(c)
            }
            ProtocolConfig::ZkSequential(mut c) => {
                c.min_session_timeout_ms = c.effective_min_session_timeout_ms();
                c.max_session_timeout_ms = c.effective_max_session_timeout_ms();
                c.ping_interval_ms = c.ping_interval_for(c.negotiated_timeout_ms());
                ProtocolConfig::ZkSequential(c)
            }
            other => other,
        }
    }
}

/// The protocol of `config`, built from its table for `fleet`.
pub fn build(config: ProtocolConfig, fleet: Fleet) -> Arc<dyn ProtocolModel> {
    crate::build_protocol!(config, fleet)
}

/// The one match from a protocol's table to its protocol value, as an `Arc` of whatever
/// trait object the caller returns: [`build`] returns the model, the simulator its
/// `Protocol` (a trait this crate cannot name, so a function could not return it). A new
/// protocol is added here once.
#[macro_export]
macro_rules! build_protocol {
    ($config:expr, $fleet:expr) => {{
        let config: $crate::protocol::ProtocolConfig = $config;
        let fleet: $crate::protocol::Fleet = $fleet;
        use ::std::sync::Arc;
        use $crate::protocol::ProtocolConfig as C;
        use $crate::protocol::*;
        match config {
            C::EtcdLease(c) => Arc::new(etcd_lease::EtcdLease(c, fleet)),
            C::RedisNaive(c) => Arc::new(redis_lock::RedisNaive(c, fleet)),
            C::RedisFenced(c) => Arc::new(redis_lock::RedisFenced(c, fleet)),
            C::DbRow(c) => Arc::new(db_row::DbRow(c, fleet)),
            C::ConsulSession(c) => Arc::new(consul_session::ConsulSession(c, fleet)),
            C::K8sLease(c) => Arc::new(k8s_lease::K8sLease(c, fleet)),
            C::ZkSequential(c) => Arc::new(zk_sequential::ZkSequential(c, fleet)),
            C::Bully(c) => Arc::new(bully::Bully(c, fleet)),
            C::Ring(c) => Arc::new(ring::Ring(c, fleet)),
            C::Raft(c) => Arc::new(raft::RaftProtocol(c, fleet)),
        }
    }};
}
