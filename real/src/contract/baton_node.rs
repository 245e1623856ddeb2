//! `baton-real contract-node`: Baton's own node started the way the node contract starts
//! any node (flags, or the `BATON_*` environment variables a `--node-cmd` node is
//! given), so that `sim conform` can test it exactly as it tests a node of your own:
//! from outside, through the contract alone. It runs on every backend of the contract
//! (`--backend`, else `BATON_BACKEND`, else etcd) as the protocol whose grant Baton
//! observes there: etcd-lease, redis-fenced, zk-sequential or db-row, each built from the
//! backend's placeholders and `{lease_ttl_ms}`, everything else at the protocol's
//! defaults (but db-row's retry, see [`ContractNodeArgs::protocol`]), so it is the
//! reference node of each backend.
//!
//! It is the node `baton-real node` runs (the same elector, leader work and HTTP
//! interface); only its start differs. Its event log goes to `<dir>/events.jsonl`,
//! stamped on its own clock: Baton does not read it in a `--node-cmd` run (kept for a
//! person comparing what the node believed with what the polls saw). With
//! `--node-cmd 'target/real/release/baton-real contract-node'` every value comes from
//! the environment.

use crate::contract::backends::ContractBackend;
use crate::node::{NodeConfig, Peer};
use crate::protocol::RealProtocol;
use baton_protocols::db_row::DbRowConfig;
use baton_protocols::etcd_lease::EtcdLeaseConfig;
use baton_protocols::redis_lock::RedisLockConfig;
use baton_protocols::zk_sequential::ZkSequentialConfig;
use clap::Args;
use std::path::PathBuf;

/// The margin the node contract asks of a node before its deadline
/// (docs/src/node-contract.md, "What a deadline counts from, and its margin"): Baton sees
/// a `--node-cmd` node's write when it arrives, so a write sent just before the
/// deadline can land after the grant ended; the reference node keeps the margin it
/// recommends.
pub const WRITE_MARGIN_MS: u64 = 50;

/// The contract's parameters; each flag falls back to its `BATON_*` variable.
#[derive(Clone, Debug, Default, Args)]
pub struct ContractNodeArgs {
    /// The node's name (BATON_ID).
    #[arg(long)]
    pub id: Option<String>,
    /// The port to serve HTTP on, on 127.0.0.1 (BATON_HTTP_PORT).
    #[arg(long)]
    pub http_port: Option<String>,
    /// The backend to elect on: etcd, redis, zookeeper or postgres; none is refused
    /// (BATON_BACKEND;
    /// etcd when neither is given, as for a node of contract version 1).
    #[arg(long)]
    pub backend: Option<String>,
    /// etcd client URLs, comma-separated (BATON_ETCD_ENDPOINTS).
    #[arg(long)]
    pub etcd_endpoints: Option<String>,
    /// The election's key prefix (BATON_ELECTION_PREFIX).
    #[arg(long)]
    pub election_prefix: Option<String>,
    /// Redis's URL (BATON_REDIS_URL).
    #[arg(long)]
    pub redis_url: Option<String>,
    /// The lock's key (BATON_REDIS_KEY).
    #[arg(long)]
    pub redis_key: Option<String>,
    /// ZooKeeper's connect string (BATON_ZK_CONNECT).
    #[arg(long)]
    pub zk_connect: Option<String>,
    /// The election's parent znode (BATON_ZK_ELECTION_PATH).
    #[arg(long)]
    pub zk_election_path: Option<String>,
    /// The database's libpq connection string (BATON_PG_CONNINFO).
    #[arg(long)]
    pub pg_conninfo: Option<String>,
    /// The lease table (BATON_PG_TABLE); Baton's node knows only its own, `leader`.
    #[arg(long)]
    pub pg_table: Option<String>,
    /// The TTL to ask for, ms (BATON_LEASE_TTL_MS).
    #[arg(long)]
    pub lease_ttl_ms: Option<String>,
    /// The fenced resource's write URL (BATON_RESOURCE_URL).
    #[arg(long)]
    pub resource_url: Option<String>,
    /// name=url of every node, comma-separated (BATON_PEERS).
    #[arg(long)]
    pub peers: Option<String>,
    /// The leader's tick interval, ms (BATON_TICK_MS).
    #[arg(long)]
    pub tick_ms: Option<String>,
    /// Each write's timeout, ms (BATON_WRITE_TIMEOUT_MS).
    #[arg(long)]
    pub write_timeout_ms: Option<String>,
    /// A directory for its event log (BATON_NODE_DIR).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// A flag (or its variable) that is missing or unreadable: one line naming both.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    /// Neither the flag nor its variable.
    #[error("--{name} (or {env}) is required")]
    Required {
        /// The flag, without `--`.
        name: &'static str,
        /// Its variable.
        env: &'static str,
    },
    /// A value that is not a number.
    #[error("--{name} ({env}): {value:?} is not a number")]
    NotANumber {
        /// The flag, without `--`.
        name: &'static str,
        /// Its variable.
        env: &'static str,
        /// The value given.
        value: String,
    },
    /// A peer that is not `name=url`.
    #[error("--peers (BATON_PEERS): {0:?} is not name=url")]
    NotAPeer(String),
    /// A backend that is not one of the contract's.
    #[error(
        "--backend (BATON_BACKEND): {0:?} is not a backend of the node contract (allowed: {})",
        ContractBackend::allowed()
    )]
    NotABackend(String),
    /// No backend: Baton's raft node takes its peers' messages on its HTTP port, and the
    /// contract's peers speak to `{raft_port}`.
    #[error("--backend none: Baton's own node does not run on it through the contract (its raft messages go to its HTTP port, the contract's peers to {{raft_port}}); run it as Baton's: sim real --set protocol=raft")]
    NoPeerWires,
    /// A table that is not the one Baton's statements name.
    #[error(
        "--pg-table (BATON_PG_TABLE): {0:?}: Baton's node uses only its own table (allowed: {})",
        crate::backend::pg::client::TABLE
    )]
    NotTheTable(String),
}

/// `flag`'s value, else variable `env`'s; `Err` names both.
fn given(
    flag: &Option<String>,
    name: &'static str,
    env: &'static str,
) -> Result<String, FlagError> {
    flag.clone()
        .or_else(|| std::env::var(env).ok().filter(|v| !v.is_empty()))
        .ok_or(FlagError::Required { name, env })
}

fn number<T: std::str::FromStr>(
    flag: &Option<String>,
    name: &'static str,
    env: &'static str,
) -> Result<T, FlagError> {
    let value = given(flag, name, env)?;
    value
        .parse()
        .map_err(|_| FlagError::NotANumber { name, env, value })
}

impl ContractNodeArgs {
    /// The node's config and its port; `Err` is one line naming the flag.
    pub fn config(&self) -> Result<(NodeConfig, u16), FlagError> {
        let id = given(&self.id, "id", "BATON_ID")?;
        let port: u16 = number(&self.http_port, "http-port", "BATON_HTTP_PORT")?;
        let dir = match &self.dir {
            Some(d) => d.clone(),
            None => PathBuf::from(given(&None, "dir", "BATON_NODE_DIR")?),
        };
        let peers = given(&self.peers, "peers", "BATON_PEERS").unwrap_or_default();
        let peers = peers
            .split(',')
            .filter(|p| !p.is_empty())
            .map(|p| match p.split_once('=') {
                Some((name, url)) => Ok(Peer {
                    name: name.into(),
                    url: url.into(),
                }),
                None => Err(FlagError::NotAPeer(p.to_string())),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (protocol, backend_endpoints) = self.protocol()?;
        let cfg = NodeConfig {
            log_path: dir.join("events.jsonl"),
            epoch_us: crate::run_clock::RunClock::start().epoch_us(),
            backend_endpoints,
            resource_url: given(&self.resource_url, "resource-url", "BATON_RESOURCE_URL")?,
            protocol,
            tick_interval_ms: number(&self.tick_ms, "tick-ms", "BATON_TICK_MS")?,
            resource_timeout_ms: number(
                &self.write_timeout_ms,
                "write-timeout-ms",
                "BATON_WRITE_TIMEOUT_MS",
            )?,
            write_margin_ms: WRITE_MARGIN_MS,
            peers,
            clock_offset_us: 0,
            clock_drift_ppm: 0,
            seed: 0,
            incarnation: 1,
            start_delay_ms_max: 0,
            name: id.into(),
            raft_peers: vec![],
            raft_disk: None,
        };
        Ok((cfg, port))
    }

    /// The backend named by `--backend` or BATON_BACKEND, etcd when neither is given.
    fn backend(&self) -> Result<ContractBackend, FlagError> {
        match given(&self.backend, "backend", "BATON_BACKEND") {
            Ok(name) => ContractBackend::parse(&name).ok_or(FlagError::NotABackend(name)),
            Err(_) => Ok(ContractBackend::Etcd),
        }
    }

    /// The protocol Baton's node runs on the backend, from its placeholders, and the
    /// endpoints its client is given.
    ///
    /// db-row is the one protocol whose default does not suit a short TTL: its
    /// candidates retry every 2 s (client-go's `RetryPeriod`), which on a 2 s lease adds
    /// up to a whole TTL to every failover. The node retries at a fifth of the TTL
    /// instead, as `sim conform --backend postgres` sets the scenario for a reproduce
    /// without `--node-cmd`.
    fn protocol(&self) -> Result<(RealProtocol, Vec<String>), FlagError> {
        let ttl_ms: u64 = number(&self.lease_ttl_ms, "lease-ttl-ms", "BATON_LEASE_TTL_MS")?;
        Ok(match self.backend()? {
            ContractBackend::Etcd => {
                let etcd = EtcdLeaseConfig {
                    lease_ttl_ms: ttl_ms,
                    prefix: given(
                        &self.election_prefix,
                        "election-prefix",
                        "BATON_ELECTION_PREFIX",
                    )?,
                    ..EtcdLeaseConfig::default()
                };
                let endpoints = given(
                    &self.etcd_endpoints,
                    "etcd-endpoints",
                    "BATON_ETCD_ENDPOINTS",
                )?;
                (
                    RealProtocol::EtcdLease(etcd),
                    endpoints.split(',').map(String::from).collect(),
                )
            }
            ContractBackend::Redis => {
                let lock = RedisLockConfig {
                    key: given(&self.redis_key, "redis-key", "BATON_REDIS_KEY")?,
                    lock_ttl_ms: ttl_ms,
                    ..RedisLockConfig::default()
                };
                let url = given(&self.redis_url, "redis-url", "BATON_REDIS_URL")?;
                (RealProtocol::RedisFenced(lock), vec![url])
            }
            ContractBackend::Zookeeper => {
                let zk = ZkSequentialConfig {
                    session_timeout_ms: ttl_ms,
                    election_path: given(
                        &self.zk_election_path,
                        "zk-election-path",
                        "BATON_ZK_ELECTION_PATH",
                    )?,
                    ..ZkSequentialConfig::default()
                };
                let connect = given(&self.zk_connect, "zk-connect", "BATON_ZK_CONNECT")?;
                (RealProtocol::ZkSequential(zk), vec![connect])
            }
            ContractBackend::Postgres => {
                let table = given(&self.pg_table, "pg-table", "BATON_PG_TABLE")?;
                if table != crate::backend::pg::client::TABLE {
                    return Err(FlagError::NotTheTable(table));
                }
                let db = DbRowConfig {
                    lease_ttl_ms: ttl_ms,
                    poll_interval_ms: (ttl_ms / 5).max(1),
                    ..DbRowConfig::default()
                };
                let conninfo = given(&self.pg_conninfo, "pg-conninfo", "BATON_PG_CONNINFO")?;
                (RealProtocol::DbRow(db), vec![conninfo])
            }
            ContractBackend::None => return Err(FlagError::NoPeerWires),
        })
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: the flags a `--node-cmd` template gives; a missing one is named with
    //! its variable.
    use super::*;

    #[test]
    fn flags_make_a_node_config_and_a_missing_one_is_named() {
        let args = ContractNodeArgs {
            id: Some("n2".into()),
            http_port: Some("4100".into()),
            etcd_endpoints: Some("http://127.0.0.1:1,http://127.0.0.1:2".into()),
            election_prefix: Some("/e".into()),
            lease_ttl_ms: Some("2000".into()),
            resource_url: Some("http://127.0.0.1:9/write".into()),
            peers: Some("n1=http://127.0.0.1:7,n2=http://127.0.0.1:8".into()),
            tick_ms: Some("1000".into()),
            write_timeout_ms: Some("500".into()),
            dir: Some(PathBuf::from("/tmp/x")),
            ..ContractNodeArgs::default()
        };
        let (cfg, port) = args.config().unwrap();
        assert_eq!((cfg.name.as_str(), port), ("n2", 4100));
        assert_eq!(cfg.backend_endpoints.len(), 2);
        assert_eq!(cfg.peers[1].url, "http://127.0.0.1:8");
        assert_eq!(cfg.protocol.etcd_lease().unwrap().lease_ttl_ms, 2000);
        let mut bad = args.clone();
        bad.tick_ms = Some("soon".into());
        assert!(bad
            .config()
            .unwrap_err()
            .to_string()
            .contains("--tick-ms (BATON_TICK_MS)"));
    }

    /// The flags of a run on `backend`, with its placeholders as the supervisor fills
    /// them in.
    fn on(backend: &str) -> ContractNodeArgs {
        ContractNodeArgs {
            id: Some("n1".into()),
            http_port: Some("4100".into()),
            backend: Some(backend.into()),
            redis_url: Some("redis://127.0.0.1:1/".into()),
            redis_key: Some("baton:leader".into()),
            zk_connect: Some("127.0.0.1:2".into()),
            zk_election_path: Some("/election".into()),
            pg_conninfo: Some("host=127.0.0.1 port=3 user=baton dbname=baton".into()),
            pg_table: Some("leader".into()),
            lease_ttl_ms: Some("2000".into()),
            resource_url: Some("http://127.0.0.1:9/write".into()),
            tick_ms: Some("200".into()),
            write_timeout_ms: Some("500".into()),
            dir: Some(PathBuf::from("/tmp/x")),
            ..ContractNodeArgs::default()
        }
    }

    #[test]
    fn every_backend_builds_the_protocol_baton_observes_there() {
        let protocol = |b: &str| on(b).config().unwrap().0.protocol;
        match protocol("redis") {
            RealProtocol::RedisFenced(c) => {
                assert_eq!((c.key.as_str(), c.lock_ttl_ms), ("baton:leader", 2000))
            }
            other => panic!("{other:?}"),
        }
        match protocol("zookeeper") {
            RealProtocol::ZkSequential(c) => assert_eq!(
                (c.election_path.as_str(), c.session_timeout_ms),
                ("/election", 2000)
            ),
            other => panic!("{other:?}"),
        }
        match protocol("postgres") {
            RealProtocol::DbRow(c) => assert_eq!((c.lease_ttl_ms, c.poll_interval_ms), (2000, 400)),
            other => panic!("{other:?}"),
        }
        let (cfg, _) = on("zookeeper").config().unwrap();
        assert_eq!(cfg.backend_endpoints, ["127.0.0.1:2"]);
        for (backend, change, says) in [
            ("consul", None, "--backend (BATON_BACKEND): \"consul\" is not a backend of the node contract (allowed: etcd, redis, zookeeper, postgres, none)"),
            ("none", None, "--backend none: Baton's own node does not run on it through the contract"),
            ("postgres", Some("other"), "--pg-table (BATON_PG_TABLE): \"other\""),
            ("redis", None, ""),
        ] {
            let mut a = on(backend);
            a.pg_table = change.map(String::from).or(a.pg_table);
            match a.config() {
                Ok(_) => assert_eq!(says, "", "{backend}"),
                Err(e) => assert!(!says.is_empty() && e.to_string().contains(says), "{backend}: {e}"),
            }
        }
    }
}
