//! The scenario as a whole: the file's top-level keys and its tables ([`Scenario`]),
//! where a resolved file came from ([`Origin`]), and a checked scenario ([`Resolved`]).

use super::sections::{Expect, NetworkConfig, Noise, Slo, WorkConfig};
use crate::fault::{FaultSpec, Firing};
use crate::protocol::{Fleet, ProtocolConfig, ProtocolModel, ProtocolName};
use crate::swarm::table::Swarm;
use crate::NodeId;
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

/// How many nodes a fleet may have.
pub const NODES: std::ops::RangeInclusive<u32> = 1..=64;
/// [`NODES`] in words, for every error about `nodes`.
pub(super) const NODES_ALLOWED: &str = "a whole number of nodes from 1 to 64";

/// A scenario file as written (with defaults for what it leaves out).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Scenario {
    /// The scenario's name (default: the file name without `.toml`).
    pub name: String,
    /// The seed `sim run` uses when no `--seed` is given. A report's resolved
    /// `scenario.toml` records its run's seed here, so that running the file repeats the
    /// run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The protocol under test.
    pub protocol: ProtocolName,
    /// Simulated run length.
    pub duration_ms: u64,
    /// Fleet size; nodes are named `n1`, `n2`, ...
    pub nodes: u32,
    /// Each node boots (on first start and on every restart) after a seeded delay drawn
    /// uniformly from 0 to this many ms, so that its keepalive, renewal and poll timers
    /// run at a different phase under each seed, as real processes' do.
    pub start_delay_ms_max: u64,
    /// `false` makes the resource accept every token: the counterfactual run.
    pub fencing: bool,
    /// Sharded leadership: one leader per partition of the work, `0..partitions`, each
    /// elected and fenced on its own, the partitions spread over the live nodes by
    /// rendezvous hashing (see `sim/src/world/node/shard.rs`). 0: one global leader.
    #[serde(skip_serializing_if = "is_zero")]
    pub partitions: u32,
    /// Where a resolved scenario came from (`[origin]`, written by `sim` into a report's
    /// `scenario.toml`): it names the report directory of a rerun, so that rerunning a
    /// counterfactual's resolved file lands beside the counterfactual, not on the plain
    /// run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// The network.
    pub network: NetworkConfig,
    /// The leader's work and the load on it.
    pub work: WorkConfig,
    /// Background noise drawn from the seed (`[noise.gc]`).
    #[serde(skip_serializing_if = "Noise::is_empty")]
    pub noise: Noise,
    /// A swarm: faults the seed draws (`[swarm]`, see [`crate::swarm`]); a run writes
    /// them into its resolved scenario as ordinary faults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swarm: Option<Swarm>,
    /// A SWIM failure detector among the nodes (`[swim]`, see [`crate::scenario::swim`]); none
    /// when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swim: Option<crate::scenario::swim::SwimConfig>,
    /// The availability objective a sweep's findings judge TTLs by (`sim sweep`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo: Option<Slo>,
    /// The lease service's members and timing, for the protocols that run on etcd
    /// (`[etcd]`; one member when absent).
    #[serde(rename = "etcd", skip_serializing_if = "Option::is_none")]
    pub etcd: Option<crate::scenario::etcd_cluster::EtcdCluster>,
    /// Parameters of `etcd-lease` (etcd's defaults when absent).
    #[serde(rename = "etcd-lease", skip_serializing_if = "Option::is_none")]
    pub etcd_lease: Option<EtcdLeaseConfig>,
    /// Parameters of `redis-naive` (the Redis lock's defaults when absent).
    #[serde(rename = "redis-naive", skip_serializing_if = "Option::is_none")]
    pub redis_naive: Option<RedisLockConfig>,
    /// Parameters of `redis-fenced` (the Redis lock's defaults when absent).
    #[serde(rename = "redis-fenced", skip_serializing_if = "Option::is_none")]
    pub redis_fenced: Option<RedisLockConfig>,
    /// Parameters of `db-row` (the row lease's defaults when absent).
    #[serde(rename = "db-row", skip_serializing_if = "Option::is_none")]
    pub db_row: Option<DbRowConfig>,
    /// Parameters of `consul-session` (Consul's and its Go client's defaults when
    /// absent).
    #[serde(rename = "consul-session", skip_serializing_if = "Option::is_none")]
    pub consul_session: Option<ConsulSessionConfig>,
    /// Parameters of `k8s-lease` (client-go's core-component defaults when absent).
    #[serde(rename = "k8s-lease", skip_serializing_if = "Option::is_none")]
    pub k8s_lease: Option<K8sLeaseConfig>,
    /// Parameters of `zk-sequential` (ZooKeeper's and Curator's defaults when absent).
    #[serde(rename = "zk-sequential", skip_serializing_if = "Option::is_none")]
    pub zk_sequential: Option<ZkSequentialConfig>,
    /// Parameters of `bully` (Baton's defaults when absent).
    #[serde(rename = "bully", skip_serializing_if = "Option::is_none")]
    pub bully: Option<BullyConfig>,
    /// Parameters of `ring` (Baton's defaults when absent).
    #[serde(rename = "ring", skip_serializing_if = "Option::is_none")]
    pub ring: Option<RingConfig>,
    /// Parameters of `raft` (openraft's defaults when absent).
    #[serde(rename = "raft", skip_serializing_if = "Option::is_none")]
    pub raft: Option<RaftConfig>,
    /// What must hold at least once, and bounds.
    pub expect: Expect,
    /// What to inject, in order.
    pub faults: Vec<FaultSpec>,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            name: String::new(),
            seed: None,
            origin: None,
            protocol: ProtocolName::default(),
            duration_ms: 60_000,
            nodes: 3,
            start_delay_ms_max: 1000,
            fencing: true,
            partitions: 0,
            network: NetworkConfig::default(),
            work: WorkConfig::default(),
            noise: Noise::default(),
            slo: None,
            swarm: None,
            swim: None,
            etcd: None,
            etcd_lease: None,
            redis_naive: None,
            redis_fenced: None,
            db_row: None,
            consul_session: None,
            k8s_lease: None,
            zk_sequential: None,
            bully: None,
            ring: None,
            raft: None,
            expect: Expect::default(),
            faults: vec![],
        }
    }
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// The most partitions a sharded fleet may have.
pub const PARTITIONS_MAX: u32 = 1024;

/// The file and overrides a resolved scenario was made from (`[origin]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Origin {
    /// The scenario file the run was given, as [`super::display_path`] writes it.
    pub file: String,
    /// The `--set` overrides of the run, as given. They are already applied to the
    /// values in this file: they are recorded for the report directory's name, not
    /// applied again.
    pub overrides: Vec<String>,
}

/// A checked scenario with every default filled in.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The scenario, defaults filled (this is what `scenario.toml` in a report shows).
    pub scenario: Scenario,
    /// The faults' firings, typed, in firing order (file order, or time order when a
    /// fault repeats).
    pub faults: Vec<Firing>,
    /// The scenario file it came from.
    pub path: String,
    /// The `--set` overrides applied, as given.
    pub overrides: Vec<String>,
    /// The command that repeats this run when it is not `sim run` on `path` (a library
    /// run of a user's node: its test's command). `None` for every run of `sim`.
    pub command: Option<String>,
    /// The protocol under test, built from its table.
    pub protocol: Arc<dyn ProtocolModel>,
}

impl Resolved {
    /// The fleet's nodes, `n1..nN`.
    pub fn node_names(&self) -> Vec<NodeId> {
        NodeId::fleet(self.scenario.nodes as usize)
    }

    /// The resolved scenario as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(&self.scenario).expect("a resolved scenario always serializes")
    }

    /// Where this run descends from: the scenario's own `[origin]` (a resolved file run
    /// again) with this run's overrides after its own, or else this file and its
    /// overrides. It names the default report directory.
    pub fn origin(&self) -> Origin {
        match &self.scenario.origin {
            Some(o) => Origin {
                file: o.file.clone(),
                overrides: o.overrides.iter().chain(&self.overrides).cloned().collect(),
            },
            None => Origin {
                file: self.path.clone(),
                overrides: self.overrides.clone(),
            },
        }
    }

    /// The resolved scenario of a run under `seed`, as a report's `scenario.toml` holds
    /// it: the seed and the origin recorded, so that running the file repeats the run.
    pub fn to_toml_for_run(&self, seed: u64) -> String {
        let mut s = self.scenario.clone();
        s.seed = Some(seed);
        s.origin = Some(self.origin());
        toml::to_string(&s).expect("a resolved scenario always serializes")
    }

    /// The seed of `sim run` without `--seed`: the file's `seed`, or 0.
    pub fn default_seed(&self) -> u64 {
        self.scenario.seed.unwrap_or(0)
    }
}

impl Scenario {
    /// The selected protocol's table (the real system's defaults when the file has none),
    /// which the protocol is built from.
    pub fn protocol_config(&self) -> ProtocolConfig {
        type C = ProtocolConfig;
        match self.protocol {
            ProtocolName::EtcdLease => C::EtcdLease(self.etcd_lease.clone().unwrap_or_default()),
            ProtocolName::RedisNaive => C::RedisNaive(self.redis_naive.clone().unwrap_or_default()),
            ProtocolName::RedisFenced => {
                C::RedisFenced(self.redis_fenced.clone().unwrap_or_default())
            }
            ProtocolName::DbRow => C::DbRow(self.db_row.clone().unwrap_or_default()),
            ProtocolName::ConsulSession => {
                C::ConsulSession(self.consul_session.clone().unwrap_or_default())
            }
            ProtocolName::K8sLease => C::K8sLease(self.k8s_lease.clone().unwrap_or_default()),
            ProtocolName::ZkSequential => {
                C::ZkSequential(self.zk_sequential.clone().unwrap_or_default())
            }
            ProtocolName::Bully => C::Bully(self.bully.clone().unwrap_or_default()),
            ProtocolName::Ring => C::Ring(self.ring.clone().unwrap_or_default()),
            ProtocolName::Raft => C::Raft(self.raft.clone().unwrap_or_default()),
        }
    }

    /// Writes `config` into its protocol's table (the resolved `scenario.toml` then shows
    /// every value in force).
    pub fn set_protocol_config(&mut self, config: ProtocolConfig) {
        match config {
            ProtocolConfig::EtcdLease(c) => self.etcd_lease = Some(c),
            ProtocolConfig::RedisNaive(c) => self.redis_naive = Some(c),
            ProtocolConfig::RedisFenced(c) => self.redis_fenced = Some(c),
            ProtocolConfig::DbRow(c) => self.db_row = Some(c),
            ProtocolConfig::ConsulSession(c) => self.consul_session = Some(c),
            ProtocolConfig::K8sLease(c) => self.k8s_lease = Some(c),
            ProtocolConfig::ZkSequential(c) => self.zk_sequential = Some(c),
            ProtocolConfig::Bully(c) => self.bully = Some(c),
            ProtocolConfig::Ring(c) => self.ring = Some(c),
            ProtocolConfig::Raft(c) => self.raft = Some(c),
        }
    }

    /// The lease service's cluster (`[etcd]`, defaults when absent).
    pub fn etcd_cluster(&self) -> crate::scenario::etcd_cluster::EtcdCluster {
        self.etcd.clone().unwrap_or_default()
    }

    /// The etcd members that faults may address: those of a cluster, when the protocol
    /// runs on etcd (none otherwise).
    pub fn etcd_members(&self) -> Vec<String> {
        let c = self.etcd_cluster();
        if self.protocol == ProtocolName::EtcdLease && c.is_cluster() {
            c.member_names()
        } else {
            vec![]
        }
    }

    /// Whether any `[[faults]]` table is of `kind`.
    pub fn has_fault(&self, kind: crate::fault::FaultKind) -> bool {
        self.faults.iter().any(|f| f.kind == kind)
    }

    /// What a protocol's bounds need from outside its table.
    pub fn fleet(&self) -> Fleet {
        Fleet {
            nodes: self.nodes,
            latency_ms_max: self.network.latency_ms_max,
        }
    }
}
