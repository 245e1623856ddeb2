//! The protocols a scenario can name, as the model sees them: each one's scenario table
//! (its checks and the defaults filled in), the failover bound it promises, and what the
//! checkers need to know of its token. Both worlds share this; starting a protocol's
//! backend and building its electors belong to a world (`baton_sim::protocol` for the
//! simulator).
//!
//! Adding a protocol: a variant of [`ProtocolName`], an `Option<Config>` field in
//! [`crate::scenario::Scenario`] named after it, a module here, an arm in [`build`], and
//! its world side in each world.

pub mod bully;
pub mod consul_session;
pub mod db_row;
pub mod etcd_lease;
pub mod k8s_lease;
pub mod raft;
pub mod redis_lock;
pub mod ring;
pub mod zk_sequential;

use crate::scenario::Scenario;
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

    /// Parses a name as written in files.
    pub fn parse(name: &str) -> Option<ProtocolName> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
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
pub fn require_positive(fields: &[(&str, u64)]) -> Result<(), (String, String)> {
    match fields.iter().find(|(_, v)| *v == 0) {
        Some((key, _)) => Err((key.to_string(), "must be at least 1".into())),
        None => Ok(()),
    }
}

/// What every world (and the checkers and report) needs from a protocol: its name,
/// the checks of its table, and the bounds it promises. Starting its backend and
/// building its electors belong to a world (the simulator's `Protocol`).
pub trait ProtocolModel: Send + Sync + std::fmt::Debug {
    /// The protocol's name.
    fn name(&self) -> ProtocolName;

    /// Checks the protocol's table; `Err((key, message))` names a key inside it.
    fn validate(&self) -> Result<(), (String, String)>;

    /// The failover bound the protocol promises under a clean kill, with its formula.
    fn failover_bound(&self, scenario: &Scenario) -> Bound;

    /// The default liveness bound: after the last fault ends, a leader must write within
    /// this long.
    fn default_liveness_bound_ms(&self, scenario: &Scenario) -> u64;

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
}

/// Fills the selected protocol's table with the real system's defaults where the
/// scenario is silent, and with values derived from others (so the resolved
/// `scenario.toml` shows every value in force).
pub fn fill_table(scenario: &mut Scenario) {
    match scenario.protocol {
        ProtocolName::EtcdLease => {
            let mut c = scenario.etcd_lease.clone().unwrap_or_default();
            c.keepalive_interval_ms = c.effective_keepalive_interval_ms();
            scenario.etcd_lease = Some(c);
        }
        ProtocolName::RedisNaive => {
            let mut c = scenario.redis_naive.clone().unwrap_or_default();
            c.renew_interval_ms = c.effective_renew_interval_ms();
            scenario.redis_naive = Some(c);
        }
        ProtocolName::RedisFenced => {
            let mut c = scenario.redis_fenced.clone().unwrap_or_default();
            c.renew_interval_ms = c.effective_renew_interval_ms();
            scenario.redis_fenced = Some(c);
        }
        ProtocolName::DbRow => {
            let mut c = scenario.db_row.clone().unwrap_or_default();
            c.renew_interval_ms = c.effective_renew_interval_ms();
            scenario.db_row = Some(c);
        }
        ProtocolName::ConsulSession => {
            scenario.consul_session = Some(scenario.consul_session.clone().unwrap_or_default());
        }
        ProtocolName::K8sLease => {
            scenario.k8s_lease = Some(scenario.k8s_lease.clone().unwrap_or_default());
        }
        ProtocolName::ZkSequential => {
            let mut c = scenario.zk_sequential.clone().unwrap_or_default();
            c.min_session_timeout_ms = c.effective_min_session_timeout_ms();
            c.max_session_timeout_ms = c.effective_max_session_timeout_ms();
            c.ping_interval_ms = c.ping_interval_for(c.negotiated_timeout_ms());
            scenario.zk_sequential = Some(c);
        }
        ProtocolName::Bully => {
            scenario.bully = Some(scenario.bully.clone().unwrap_or_default());
        }
        ProtocolName::Ring => {
            scenario.ring = Some(scenario.ring.clone().unwrap_or_default());
        }
        ProtocolName::Raft => {
            scenario.raft = Some(scenario.raft.clone().unwrap_or_default());
        }
    }
}

/// The protocol a scenario names, with its table (the real system's defaults when the
/// table is absent).
pub fn build(scenario: &Scenario) -> Arc<dyn ProtocolModel> {
    crate::build_protocol!(scenario)
}

/// The one match from a scenario's protocol name to its protocol value (the table, or the
/// real system's defaults when absent), as an `Arc` of whatever trait object the caller
/// returns: [`build`] returns the model, the simulator its `Protocol` (a trait this crate
/// cannot name, so a function could not return it). A new protocol is added here once.
#[macro_export]
macro_rules! build_protocol {
    ($scenario:expr) => {{
        let s: &$crate::scenario::Scenario = $scenario;
        use ::std::sync::Arc;
        use $crate::protocol::ProtocolName as P;
        use $crate::protocol::*;
        match s.protocol {
            P::EtcdLease => Arc::new(etcd_lease::EtcdLease(
                s.etcd_lease.clone().unwrap_or_default(),
            )),
            P::RedisNaive => Arc::new(redis_lock::RedisNaive(
                s.redis_naive.clone().unwrap_or_default(),
            )),
            P::RedisFenced => Arc::new(redis_lock::RedisFenced(
                s.redis_fenced.clone().unwrap_or_default(),
            )),
            P::DbRow => Arc::new(db_row::DbRow(s.db_row.clone().unwrap_or_default())),
            P::ConsulSession => Arc::new(consul_session::ConsulSession(
                s.consul_session.clone().unwrap_or_default(),
            )),
            P::K8sLease => Arc::new(k8s_lease::K8sLease(s.k8s_lease.clone().unwrap_or_default())),
            P::ZkSequential => Arc::new(zk_sequential::ZkSequential(
                s.zk_sequential.clone().unwrap_or_default(),
            )),
            P::Bully => Arc::new(bully::Bully(s.bully.clone().unwrap_or_default())),
            P::Ring => Arc::new(ring::Ring(s.ring.clone().unwrap_or_default())),
            P::Raft => Arc::new(raft::RaftProtocol(s.raft.clone().unwrap_or_default())),
        }
    }};
}
