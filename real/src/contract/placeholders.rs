//! The placeholders of a `--node-cmd` template ([`PLACEHOLDERS`], the table
//! `docs/src/node-contract.md` lists and a test checks against it) and their values for
//! one start of one node ([`NodeParams`]): those of every backend, and those of the run's
//! backend only ([`BackendParams`]; node contract version 2).

use crate::contract::backends::ContractBackend;
use crate::node::NodeConfig;
use baton_model::NodeId;
use std::path::PathBuf;

/// One placeholder: its name in the template, its environment variable, the backend it
/// belongs to, and what it holds (for `docs/src/node-contract.md` and messages).
pub struct Placeholder {
    /// `id`, written `{id}` in a template.
    pub name: &'static str,
    /// `BATON_ID`.
    pub env: &'static str,
    /// The one backend whose runs give it a value, or `None` for every backend.
    pub backend: Option<ContractBackend>,
    /// What it holds.
    pub holds: &'static str,
}

impl Placeholder {
    /// Whether a run on `b` gives it a value.
    pub fn applies(&self, b: ContractBackend) -> bool {
        self.backend.is_none_or(|own| own == b)
    }
}

/// Every placeholder, in the order the contract lists them: version 1's (etcd's and those
/// of every backend), then `{backend}` and each other backend's (version 2).
pub const PLACEHOLDERS: &[Placeholder] = &[
    Placeholder { name: "id", env: "BATON_ID", backend: None, holds: "the node's name: n1, n2, ... (its /status node_id)" },
    Placeholder { name: "http_port", env: "BATON_HTTP_PORT", backend: None, holds: "the port to serve HTTP on, on 127.0.0.1 (a fresh one at every start)" },
    Placeholder { name: "etcd_endpoints", env: "BATON_ETCD_ENDPOINTS", backend: Some(ContractBackend::Etcd), holds: "every etcd member's client URL, comma-separated, each through this node's own proxy" },
    Placeholder { name: "election_prefix", env: "BATON_ELECTION_PREFIX", backend: Some(ContractBackend::Etcd), holds: "the etcd key prefix to campaign under (Baton watches it)" },
    Placeholder { name: "lease_ttl_ms", env: "BATON_LEASE_TTL_MS", backend: None, holds: "the TTL to ask for, in ms: etcd's lease TTL, Redis's PX, ZooKeeper's session timeout, the database row's lease" },
    Placeholder { name: "resource_url", env: "BATON_RESOURCE_URL", backend: None, holds: "the fenced resource's write URL, through this node's own proxy" },
    Placeholder { name: "peers", env: "BATON_PEERS", backend: None, holds: "every node as name=url, comma-separated: the address a client reaches it at (for 409 hints)" },
    Placeholder { name: "tick_ms", env: "BATON_TICK_MS", backend: None, holds: "the interval of the leader's tick writes, in ms" },
    Placeholder { name: "write_timeout_ms", env: "BATON_WRITE_TIMEOUT_MS", backend: None, holds: "the timeout of each write to the resource, in ms" },
    Placeholder { name: "dir", env: "BATON_NODE_DIR", backend: None, holds: "a directory of the run the node may write into (kept with the run's files)" },
    Placeholder { name: "backend", env: "BATON_BACKEND", backend: None, holds: "the backend to elect on: etcd, redis, zookeeper, postgres, or none (the nodes elect among themselves)" },
    Placeholder { name: "redis_url", env: "BATON_REDIS_URL", backend: Some(ContractBackend::Redis), holds: "the Redis server's URL (redis://127.0.0.1:P/), through this node's own proxy" },
    Placeholder { name: "redis_key", env: "BATON_REDIS_KEY", backend: Some(ContractBackend::Redis), holds: "the lock's key (Baton watches it); its token counter is <key>:token" },
    Placeholder { name: "zk_connect", env: "BATON_ZK_CONNECT", backend: Some(ContractBackend::Zookeeper), holds: "the ZooKeeper connect string (127.0.0.1:P), through this node's own proxy" },
    Placeholder { name: "zk_election_path", env: "BATON_ZK_ELECTION_PATH", backend: Some(ContractBackend::Zookeeper), holds: "the election's parent znode, made by Baton (Baton watches its children)" },
    Placeholder { name: "pg_conninfo", env: "BATON_PG_CONNINFO", backend: Some(ContractBackend::Postgres), holds: "the database's libpq connection string (host=127.0.0.1 port=P user=U dbname=D), through this node's own proxy" },
    Placeholder { name: "pg_url", env: "BATON_PG_URL", backend: Some(ContractBackend::Postgres), holds: "the same database as a URL (postgresql://U@127.0.0.1:P/D)" },
    Placeholder { name: "pg_table", env: "BATON_PG_TABLE", backend: Some(ContractBackend::Postgres), holds: "the lease table, made by Baton with its one row (Baton reads it)" },
    Placeholder { name: "raft_port", env: "BATON_RAFT_PORT", backend: Some(ContractBackend::None), holds: "the port to listen on for the peers' traffic, on 127.0.0.1 (the same at every start of the node)" },
    Placeholder { name: "raft_peers", env: "BATON_RAFT_PEERS", backend: Some(ContractBackend::None), holds: "every node as name=127.0.0.1:port, comma-separated: itself at its {raft_port}, each other through this node's own proxy to it" },
    Placeholder { name: "election_timeout_ms", env: "BATON_ELECTION_TIMEOUT_MS", backend: Some(ContractBackend::None), holds: "the least election timeout, ms: a follower that hears no leader for a random time between it and twice it campaigns" },
    Placeholder { name: "leader_lease_ms", env: "BATON_LEADER_LEASE_MS", backend: Some(ContractBackend::None), holds: "the leader lease, ms: a leader that has not heard from a majority for this long steps down" },
];

/// Where a node of a run with no backend reaches its peers: `{raft_port}` and
/// `{raft_peers}`, made by the supervisor from the node's proxies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerWires {
    /// `{raft_port}`: where the node listens for its peers (each peer's proxy to it
    /// forwards there).
    pub raft_port: u16,
    /// `{raft_peers}`, as `name=127.0.0.1:port`, in fleet order.
    pub raft_peers: Vec<String>,
}

/// What one start of one node is given: the placeholders' values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeParams {
    /// `{id}`.
    pub id: NodeId,
    /// `{http_port}`.
    pub http_port: u16,
    /// `{lease_ttl_ms}`.
    pub lease_ttl_ms: u64,
    /// `{resource_url}`.
    pub resource_url: String,
    /// `{peers}`, as `name=url`.
    pub peers: Vec<String>,
    /// `{tick_ms}`.
    pub tick_ms: u64,
    /// `{write_timeout_ms}`.
    pub write_timeout_ms: u64,
    /// `{dir}`.
    pub dir: PathBuf,
    /// `{backend}` and the run's backend's own placeholders.
    pub backend: BackendParams,
}

/// The values of the placeholders of one backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendParams {
    /// etcd.
    Etcd {
        /// `{etcd_endpoints}`, one per member.
        endpoints: Vec<String>,
        /// `{election_prefix}`.
        election_prefix: String,
    },
    /// Redis.
    Redis {
        /// `{redis_url}`.
        url: String,
        /// `{redis_key}`.
        key: String,
    },
    /// ZooKeeper.
    Zookeeper {
        /// `{zk_connect}`.
        connect: String,
        /// `{zk_election_path}`.
        election_path: String,
    },
    /// PostgreSQL.
    Postgres {
        /// `{pg_conninfo}` (and `{pg_url}`, its URL form).
        conninfo: String,
        /// `{pg_table}`.
        table: String,
    },
    /// No backend: the nodes elect among themselves.
    None {
        /// `{raft_port}` and `{raft_peers}`.
        wires: PeerWires,
        /// `{election_timeout_ms}`.
        election_timeout_ms: u64,
        /// `{leader_lease_ms}`.
        leader_lease_ms: u64,
    },
}

impl BackendParams {
    /// Which backend these are of.
    pub fn kind(&self) -> ContractBackend {
        match self {
            BackendParams::Etcd { .. } => ContractBackend::Etcd,
            BackendParams::Redis { .. } => ContractBackend::Redis,
            BackendParams::Zookeeper { .. } => ContractBackend::Zookeeper,
            BackendParams::Postgres { .. } => ContractBackend::Postgres,
            BackendParams::None { .. } => ContractBackend::None,
        }
    }

    /// The value of this backend's placeholder `name`, `None` for any other.
    fn value(&self, name: &str) -> Option<String> {
        Some(match (self, name) {
            (BackendParams::Etcd { endpoints, .. }, "etcd_endpoints") => endpoints.join(","),
            (
                BackendParams::Etcd {
                    election_prefix, ..
                },
                "election_prefix",
            ) => election_prefix.clone(),
            (BackendParams::Redis { url, .. }, "redis_url") => url.clone(),
            (BackendParams::Redis { key, .. }, "redis_key") => key.clone(),
            (BackendParams::Zookeeper { connect, .. }, "zk_connect") => connect.clone(),
            (BackendParams::Zookeeper { election_path, .. }, "zk_election_path") => {
                election_path.clone()
            }
            (BackendParams::Postgres { conninfo, .. }, "pg_conninfo") => conninfo.clone(),
            (BackendParams::Postgres { conninfo, .. }, "pg_url") => {
                crate::contract::backends::pg_url(conninfo)
            }
            (BackendParams::Postgres { table, .. }, "pg_table") => table.clone(),
            (BackendParams::None { wires, .. }, "raft_port") => wires.raft_port.to_string(),
            (BackendParams::None { wires, .. }, "raft_peers") => wires.raft_peers.join(","),
            (
                BackendParams::None {
                    election_timeout_ms,
                    ..
                },
                "election_timeout_ms",
            ) => election_timeout_ms.to_string(),
            (
                BackendParams::None {
                    leader_lease_ms, ..
                },
                "leader_lease_ms",
            ) => leader_lease_ms.to_string(),
            _ => return None,
        })
    }
}

impl NodeParams {
    /// The values for the node whose Baton config is `cfg` (a run on a backend of the
    /// contract: checked before the run), serving on `http_port`, writing into `dir`.
    /// The backend's endpoints are the ones the supervisor gives Baton's own nodes:
    /// each through this node's own proxy. With no backend (raft), `wires` says where
    /// the node reaches its peers (the supervisor always gives them then).
    ///
    /// With no backend, `{lease_ttl_ms}` is the TTL a sweep moves (see
    /// `baton_model::protocol::ttl`): raft's election timeout max.
    pub fn of(
        cfg: &NodeConfig,
        http_port: u16,
        dir: PathBuf,
        wires: Option<&PeerWires>,
    ) -> NodeParams {
        use crate::protocol::RealProtocol;
        let first = || cfg.backend_endpoints.first().cloned().unwrap_or_default();
        let (lease_ttl_ms, backend) = match &cfg.protocol {
            RealProtocol::EtcdLease(c) => (
                c.lease_ttl_ms,
                BackendParams::Etcd {
                    endpoints: cfg.backend_endpoints.clone(),
                    election_prefix: c.prefix.clone(),
                },
            ),
            RealProtocol::RedisFenced(c) => (
                c.lock_ttl_ms,
                BackendParams::Redis {
                    url: first(),
                    key: c.key.clone(),
                },
            ),
            RealProtocol::ZkSequential(c) => (
                c.session_timeout_ms,
                BackendParams::Zookeeper {
                    connect: first(),
                    election_path: c.election_path.clone(),
                },
            ),
            RealProtocol::DbRow(c) => (
                c.lease_ttl_ms,
                BackendParams::Postgres {
                    conninfo: first(),
                    table: crate::backend::pg::client::TABLE.to_string(),
                },
            ),
            RealProtocol::Raft(c) => (
                c.election_timeout_max_ms,
                BackendParams::None {
                    wires: wires
                        .expect("the supervisor gives a raft node its peers")
                        .clone(),
                    election_timeout_ms: c.election_timeout_min_ms,
                    leader_lease_ms: c.leader_lease_ms,
                },
            ),
            other => unreachable!(
                "--node-cmd does not run {} (refused before the run)",
                other.name().name()
            ),
        };
        NodeParams {
            id: cfg.name.clone(),
            http_port,
            lease_ttl_ms,
            resource_url: cfg.resource_url.clone(),
            peers: cfg
                .peers
                .iter()
                .map(|p| format!("{}={}", p.name, p.url))
                .collect(),
            tick_ms: cfg.tick_interval_ms,
            write_timeout_ms: cfg.resource_timeout_ms,
            dir,
            backend,
        }
    }

    /// The value of placeholder `name`, `None` for an unknown one or one of another
    /// backend.
    pub fn value(&self, name: &str) -> Option<String> {
        Some(match name {
            "id" => self.id.to_string(),
            "http_port" => self.http_port.to_string(),
            "lease_ttl_ms" => self.lease_ttl_ms.to_string(),
            "resource_url" => self.resource_url.clone(),
            "peers" => self.peers.join(","),
            "tick_ms" => self.tick_ms.to_string(),
            "write_timeout_ms" => self.write_timeout_ms.to_string(),
            "dir" => self.dir.display().to_string(),
            "backend" => self.backend.kind().name().to_string(),
            _ => return self.backend.value(name),
        })
    }
}

/// Sample values on each backend, for tests.
#[cfg(test)]
pub(crate) mod samples {
    use super::*;

    pub(crate) fn params() -> NodeParams {
        with(BackendParams::Etcd {
            endpoints: vec!["http://127.0.0.1:1".into(), "http://127.0.0.1:2".into()],
            election_prefix: "/election/leader".into(),
        })
    }

    /// Every backend's values, in the contract's order.
    pub(crate) fn every_backend() -> [BackendParams; 5] {
        [
            params().backend,
            BackendParams::Redis {
                url: "redis://127.0.0.1:3/".into(),
                key: "baton:leader".into(),
            },
            BackendParams::Zookeeper {
                connect: "127.0.0.1:4".into(),
                election_path: "/election".into(),
            },
            BackendParams::Postgres {
                conninfo: "host=127.0.0.1 port=5 user=baton dbname=baton".into(),
                table: "leader".into(),
            },
            BackendParams::None {
                wires: PeerWires {
                    raft_port: 6,
                    raft_peers: vec!["n1=127.0.0.1:7".into(), "n2=127.0.0.1:6".into()],
                },
                election_timeout_ms: 1000,
                leader_lease_ms: 666,
            },
        ]
    }

    pub(crate) fn with(backend: BackendParams) -> NodeParams {
        NodeParams {
            id: "n2".into(),
            http_port: 4100,
            backend,
            lease_ttl_ms: 2000,
            resource_url: "http://127.0.0.1:9/write".into(),
            peers: vec!["n1=http://127.0.0.1:7".into()],
            tick_ms: 1000,
            write_timeout_ms: 500,
            dir: PathBuf::from("/tmp/run/n2"),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: every placeholder has a value on the backends it belongs to and on
    //! no other, version 1's keep their names and variables, and the contract lists each
    //! with its variable.
    use super::samples::*;
    use super::*;

    #[test]
    fn every_placeholder_has_a_value_on_its_backends_only() {
        for b in every_backend() {
            let p = with(b.clone());
            for ph in PLACEHOLDERS {
                assert_eq!(
                    p.value(ph.name).is_some(),
                    ph.applies(b.kind()),
                    "{} on {}",
                    ph.name,
                    b.kind().name()
                );
                assert!(ph.env.starts_with("BATON_"), "{}", ph.env);
            }
            assert_eq!(p.value("backend").unwrap(), b.kind().name());
            assert_eq!(p.value("nope"), None);
        }
        let pg = with(every_backend()[3].clone());
        assert_eq!(
            pg.value("pg_url").unwrap(),
            "postgresql://baton@127.0.0.1:5/baton"
        );
        // Version 1's placeholders all stay, with their variables.
        for (name, env) in [
            ("id", "BATON_ID"),
            ("http_port", "BATON_HTTP_PORT"),
            ("etcd_endpoints", "BATON_ETCD_ENDPOINTS"),
            ("election_prefix", "BATON_ELECTION_PREFIX"),
            ("lease_ttl_ms", "BATON_LEASE_TTL_MS"),
            ("resource_url", "BATON_RESOURCE_URL"),
            ("peers", "BATON_PEERS"),
            ("tick_ms", "BATON_TICK_MS"),
            ("write_timeout_ms", "BATON_WRITE_TIMEOUT_MS"),
            ("dir", "BATON_NODE_DIR"),
        ] {
            let ph = PLACEHOLDERS.iter().find(|p| p.name == name).unwrap();
            assert_eq!(ph.env, env);
            assert!(ph.applies(ContractBackend::Etcd), "{name}");
        }
    }

    #[test]
    fn every_placeholder_is_in_the_contract_with_its_variable() {
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/node-contract.md"),
        )
        .unwrap();
        for ph in PLACEHOLDERS {
            let row = format!("| `{{{}}}` | `{}` |", ph.name, ph.env);
            assert!(
                doc.contains(&row),
                "docs/src/node-contract.md has no row {row}"
            );
        }
    }
}
