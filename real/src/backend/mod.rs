//! The live backend a run's protocol leans on, started before the fleet and stopped
//! after it: an etcd cluster ([`EtcdCluster`]), or one server ([`Server`]: Redis,
//! ZooKeeper or PostgreSQL).
//!
//! The supervisor treats every backend alike through this type: where each node's
//! backend proxies point ([`Backend::addrs`]), the address a node's client is given for
//! one of them ([`Backend::endpoint`]), what must exist before the fleet starts (the
//! database's table, the election's parent znode: `Backend::prepare`), its processes,
//! ports, logs and data (for leak checks and reports), the fault verbs on it, and the
//! observers that log, from outside the system under test, when the backend granted or
//! ended a grant: etcd's watch on the election prefix, Redis's keyspace notifications on
//! the lock key, ZooKeeper's watch on the election's children, a read of the database
//! row every few milliseconds.

pub mod etcd;
pub mod pg;
pub mod raft;
pub mod redis;
pub mod server;
pub mod zk;

use crate::backend::etcd::cluster::EtcdStartError;
use crate::backend::etcd::cluster::{EtcdCluster, EtcdClusterConfig};
use crate::backend::pg::server::{PgServer, DB_NAME, DB_USER};
use crate::backend::redis::server::RedisServer;
use crate::backend::server::Server;
use crate::backend::server::ServerStartError;
use crate::backend::zk::server::ZkServer;
use crate::backoff::Backoff;
use crate::events::EventLog;
use crate::protocol::RealProtocol;
use baton_model::protocol::ProtocolName;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use tokio::task::JoinHandle;

/// The first and the longest pause between tries to open a backend observer: short,
/// since what happens while it is closed is lost.
const WATCH_RETRY_MS: (u64, u64) = (50, 500);

/// How many rounds of the recipe's calls warm a fresh ZooKeeper up before the fleet
/// starts (see [`crate::backend::zk::client::warm_up`]).
const ZK_WARM_UP_ROUNDS: usize = 100;

/// What the backend of `protocol` is called in messages (`etcd`, `Redis`, `no backend`).
pub fn backend_name(protocol: ProtocolName) -> &'static str {
    match protocol.backend_name() {
        "none" => "no backend",
        b => b,
    }
}

/// What a report says the run was against (`a live etcd`; raft's nodes are their own
/// service).
pub fn against(protocol: ProtocolName) -> String {
    match protocol.backend_name() {
        "none" => "its own node processes (no backend)".to_string(),
        b => format!("a live {b}"),
    }
}

/// Why a backend did not start. Each message is one line, saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// etcd did not start.
    #[error(transparent)]
    Etcd(#[from] EtcdStartError),
    /// A server (Redis, ZooKeeper, PostgreSQL) did not start.
    #[error(transparent)]
    Server(#[from] ServerStartError),
    /// The backend started but what the protocol needs on it could not be made (the
    /// database's table, the election's parent znode).
    #[error("{backend}: {why}")]
    Setup {
        /// The backend.
        backend: &'static str,
        /// What failed.
        why: SetupError,
    },
}

/// What the protocol needs on its backend, and could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The database's table.
    #[error(transparent)]
    Pg(#[from] crate::backend::pg::client::PgError),
    /// The election's parent znode, on a warmed-up ZooKeeper.
    #[error(transparent)]
    Zk(#[from] crate::backend::zk::ZkSetupError),
}

/// A running backend. Dropping it stops it and removes its data.
#[derive(Debug)]
pub enum Backend {
    /// A live etcd cluster (`etcd-lease`).
    Etcd(EtcdCluster),
    /// A live Redis (`redis-naive`, `redis-fenced`).
    Redis(Server),
    /// A live ZooKeeper (`zk-sequential`).
    Zk(Server),
    /// A live PostgreSQL (`db-row`).
    Postgres(Server),
    /// None: the nodes are the service (`raft`).
    Peers,
}

/// The libpq connection string of a PostgreSQL reached at `addr`.
pub(crate) fn conninfo(addr: SocketAddr) -> String {
    format!(
        "host={} port={} user={DB_USER} dbname={DB_NAME}",
        addr.ip(),
        addr.port()
    )
}

impl Backend {
    /// Starts the backend `protocol` runs on, its logs in `log_dir`; `etcd` says how to
    /// start an etcd cluster.
    pub async fn start(
        protocol: &RealProtocol,
        etcd: &EtcdClusterConfig,
        log_dir: &Path,
    ) -> Result<Backend, BackendError> {
        let backend = match protocol {
            RealProtocol::EtcdLease(_) => {
                let mut cfg = etcd.clone();
                cfg.log_dir = Some(log_dir.to_path_buf());
                Backend::Etcd(EtcdCluster::start(&cfg).await?)
            }
            RealProtocol::RedisNaive(_) | RealProtocol::RedisFenced(_) => {
                Backend::Redis(Server::start(Box::new(RedisServer), log_dir).await?)
            }
            RealProtocol::ZkSequential(c) => {
                Backend::Zk(Server::start(Box::new(ZkServer::for_config(c)), log_dir).await?)
            }
            RealProtocol::DbRow(_) => {
                Backend::Postgres(Server::start(Box::new(PgServer), log_dir).await?)
            }
            RealProtocol::Raft(_) => Backend::Peers,
        };
        backend.prepare(protocol).await?;
        Ok(backend)
    }

    /// Makes what the protocol expects to find: the database's table, the election's
    /// parent znode (on a ZooKeeper warmed up first).
    async fn prepare(&self, protocol: &RealProtocol) -> Result<(), BackendError> {
        let setup = |why: SetupError| BackendError::Setup {
            backend: backend_name(protocol.name()),
            why,
        };
        match (self, protocol) {
            (Backend::Postgres(s), _) => {
                crate::backend::pg::client::create_table(&conninfo(s.addr()))
                    .await
                    .map_err(|e| setup(e.into()))
            }
            (Backend::Zk(s), RealProtocol::ZkSequential(c)) => {
                let connect = s.addr().to_string();
                crate::backend::zk::client::warm_up(&connect, ZK_WARM_UP_ROUNDS)
                    .await
                    .map_err(|e| setup(e.into()))?;
                crate::backend::zk::watch::create_parent(&connect, &c.election_path)
                    .await
                    .map_err(|e| setup(e.into()))
            }
            _ => Ok(()),
        }
    }

    /// The single server, when the backend is one.
    fn server(&self) -> Option<&Server> {
        match self {
            Backend::Etcd(_) | Backend::Peers => None,
            Backend::Redis(s) | Backend::Zk(s) | Backend::Postgres(s) => Some(s),
        }
    }

    /// The single server, mutably, when the backend is one.
    pub fn server_mut(&mut self) -> Option<&mut Server> {
        match self {
            Backend::Etcd(_) | Backend::Peers => None,
            Backend::Redis(s) | Backend::Zk(s) | Backend::Postgres(s) => Some(s),
        }
    }

    /// Where each node's backend proxies point: every etcd member's client port, in
    /// member order, or the one server.
    pub fn addrs(&self) -> Vec<SocketAddr> {
        match self {
            Backend::Etcd(e) => e
                .members()
                .iter()
                .map(|m| SocketAddr::from((crate::ports::LOOPBACK, m.client_port)))
                .collect(),
            Backend::Redis(s) | Backend::Zk(s) | Backend::Postgres(s) => vec![s.addr()],
            Backend::Peers => vec![],
        }
    }

    /// The address a node's client is given for a proxy at `proxy`.
    pub fn endpoint(&self, proxy: SocketAddr) -> String {
        match self {
            Backend::Etcd(_) => format!("http://{proxy}"),
            Backend::Redis(_) => format!("redis://{proxy}/"),
            Backend::Zk(_) => proxy.to_string(),
            Backend::Postgres(_) => conninfo(proxy),
            Backend::Peers => String::new(),
        }
    }

    /// Every port it listens on.
    pub fn ports(&self) -> Vec<u16> {
        match self {
            Backend::Etcd(e) => e.ports(),
            Backend::Redis(s) | Backend::Zk(s) | Backend::Postgres(s) => vec![s.port()],
            Backend::Peers => vec![],
        }
    }

    /// Its processes' ids.
    pub fn pids(&self) -> Vec<u32> {
        match self {
            Backend::Etcd(e) => e.pids(),
            Backend::Redis(s) | Backend::Zk(s) | Backend::Postgres(s) => vec![s.pid()],
            Backend::Peers => vec![],
        }
    }

    /// Where it keeps its data (removed when it stops); none for raft, whose nodes keep
    /// theirs in the run directory.
    pub fn data_dir(&self) -> Option<PathBuf> {
        match self {
            Backend::Etcd(e) => Some(e.data_dir().to_path_buf()),
            Backend::Redis(s) | Backend::Zk(s) | Backend::Postgres(s) => {
                Some(s.data_dir().to_path_buf())
            }
            Backend::Peers => None,
        }
    }

    /// Its processes that exited by themselves (not killed by a fault verb, which leaves
    /// no process: pid 0), with their logs: `(what, log)`.
    pub fn dead(&self) -> Vec<(String, PathBuf)> {
        let gone = |pid: u32| pid != 0 && !crate::process::process_alive(pid);
        match self {
            Backend::Etcd(e) => e
                .members()
                .iter()
                .filter(|m| gone(m.pid()))
                .map(|m| (format!("etcd member {}", m.name), m.log.clone()))
                .collect(),
            Backend::Redis(s) | Backend::Zk(s) | Backend::Postgres(s) if gone(s.pid()) => {
                vec![(s.name().to_string(), s.log_path().to_path_buf())]
            }
            _ => vec![],
        }
    }

    /// The etcd cluster, when the backend is one.
    pub fn etcd(&self) -> Option<&EtcdCluster> {
        match self {
            Backend::Etcd(e) => Some(e),
            _ => None,
        }
    }

    /// The etcd cluster, mutably, when the backend is one.
    pub fn etcd_mut(&mut self) -> Option<&mut EtcdCluster> {
        match self {
            Backend::Etcd(e) => Some(e),
            _ => None,
        }
    }

    /// Starts the observers that log, into `log`, what the backend does to grants (see
    /// the module doc); they end when the returned tasks are aborted.
    pub fn observers(
        &self,
        protocol: &RealProtocol,
        log: &EventLog,
        seed: u64,
    ) -> Vec<JoinHandle<()>> {
        let backoff = |what: &str| {
            Backoff::new(
                WATCH_RETRY_MS.0,
                WATCH_RETRY_MS.1,
                baton_model::seed::fork(seed, &format!("backoff/supervisor/{what}")),
            )
        };
        let log = log.clone();
        match (self, protocol) {
            (Backend::Etcd(e), RealProtocol::EtcdLease(c)) => vec![
                tokio::spawn(crate::backend::etcd::watch::watch_keys(
                    e.client_urls(),
                    format!("{}/", c.prefix),
                    log.clone(),
                    backoff("watch"),
                )),
                tokio::spawn(crate::backend::etcd::watch::watch_leader(
                    e.client_urls(),
                    log,
                )),
            ],
            (Backend::Redis(s), RealProtocol::RedisNaive(c) | RealProtocol::RedisFenced(c)) => {
                vec![tokio::spawn(crate::backend::redis::watch::watch_lock(
                    s.addr(),
                    c.key.clone(),
                    log,
                    backoff("redis"),
                ))]
            }
            (Backend::Zk(s), RealProtocol::ZkSequential(c)) => {
                vec![tokio::spawn(crate::backend::zk::watch::watch_children(
                    s.addr().to_string(),
                    c.election_path.clone(),
                    log,
                    backoff("zookeeper"),
                ))]
            }
            (Backend::Postgres(s), RealProtocol::DbRow(c)) => {
                vec![tokio::spawn(crate::backend::pg::watch::watch_row(
                    conninfo(s.addr()),
                    c.lease_ttl_ms,
                    log,
                    backoff("postgresql"),
                ))]
            }
            _ => vec![],
        }
    }

    /// The server's name for messages (`redis`), when the backend is one server.
    pub fn server_name(&self) -> Option<&'static str> {
        self.server().map(Server::name)
    }

    /// Stops it and removes its data now.
    pub fn stop(self) {
        drop(self)
    }
}
