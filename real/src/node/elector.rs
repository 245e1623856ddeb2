//! A node process's elector: the protocol's own elector (the simulator's code), built on
//! the live client of the node's backend, through the node's proxies.
//!
//! - `etcd-lease`: [`EtcdLeaseElector`] on [`RealEtcdClient`], made again until it
//!   connects (a node restarted while its link to etcd is cut comes up and waits, as a
//!   real process would); its lease events go to the node's log and metrics.
//! - `redis-naive`, `redis-fenced`: [`RedisLockElector`] on [`RealRedis`], which connects
//!   on first use and reconnects by itself; its lock values are drawn from the
//!   simulator's generator for this node and start (`<protocol>/<node>/<incarnation>`);
//! - `zk-sequential`: [`ZkSequentialElector`] on [`RealZk`] (a connection per session);
//! - `db-row`: [`DbRowElector`] on [`RealDb`] (one connection, opened as the node starts
//!   and again when it breaks, its statements prepared once);
//! - `raft`: [`RaftElector`] on [`HttpRaft`], its log and vote in its file, its election
//!   timeouts drawn from the simulator's generator for this node and start
//!   (`raft/<node>/<incarnation>`); the node answers its peers with it (`POST /raft`).

use crate::backend::etcd::client::{LeaseObserver, RealEtcdClient};
use crate::backend::pg::client::RealDb;
use crate::backend::raft::{EventElectionLog, HttpRaft};
use crate::backend::redis::client::RealRedis;
use crate::backend::zk::client::RealZk;
use crate::backoff::Backoff;
use crate::events::{Event, EventLog};
use crate::node::config::NodeConfig;
use crate::node::error::NodeError;
use crate::node::metrics::NodeMetrics;
use crate::protocol::RealProtocol;
use baton_model::NodeId;
use baton_protocols::db_row::DbRowElector;
use baton_protocols::etcd_lease::EtcdLeaseElector;
use baton_protocols::raft::{RaftDisk, RaftElector, RaftNode};
use baton_protocols::redis_lock::{Fencing, RedisLockElector};
use baton_protocols::zk_sequential::ZkSequentialElector;
use baton_protocols::{Clock, Elector};
use std::sync::Arc;

/// The first and the longest pause between tries to make the etcd client
/// ([`crate::backoff::Backoff`]).
const CONNECT_RETRY_MS: (u64, u64) = (100, 2000);

/// What the elector reports to: the node's clock, log and metrics.
pub struct NodeSide {
    /// The node's (skewable) clock.
    pub clock: Arc<dyn Clock>,
    /// Its event log.
    pub log: EventLog,
    /// Its metrics.
    pub metrics: Arc<NodeMetrics>,
    /// The run's clock (a database statement sent with the node's own time turns it into
    /// a timestamp against it).
    pub run: crate::run_clock::RunClock,
}

/// A node's elector, and the raft one as itself too (the node routes its peers'
/// messages to it).
pub struct Built {
    /// The elector.
    pub elector: Arc<dyn Elector>,
    /// The same, when it is raft's.
    pub raft: Option<Arc<RaftElector>>,
}

/// The node's elector for `cfg.protocol` (see the module doc).
pub async fn build(cfg: &NodeConfig, side: &NodeSide) -> Result<Built, NodeError> {
    if let RealProtocol::Raft(raft) = &cfg.protocol {
        let e = raft_elector(cfg, side, raft)?;
        return Ok(Built {
            elector: e.clone(),
            raft: Some(e),
        });
    }
    Ok(Built {
        elector: lease_elector(cfg, side).await?,
        raft: None,
    })
}

/// A raft node's elector (see the module doc).
fn raft_elector(
    cfg: &NodeConfig,
    side: &NodeSide,
    raft: &baton_protocols::raft::RaftConfig,
) -> Result<Arc<RaftElector>, NodeError> {
    let path = cfg.raft_disk.as_ref().ok_or(NodeError::NoRaftDisk)?;
    let disk = RaftDisk::durable(path).map_err(|source| NodeError::RaftDisk {
        path: path.clone(),
        source,
    })?;
    let me = cfg
        .peers
        .iter()
        .position(|p| p.name == cfg.name)
        .ok_or(NodeError::NotAPeer)? as u64
        + 1;
    let http = reqwest::Client::builder()
        .build()
        .map_err(NodeError::Http)?;
    let node = RaftNode {
        me,
        names: cfg.peers.iter().map(|p| p.name.clone()).collect(),
        transport: Arc::new(HttpRaft {
            urls: cfg.raft_peers.clone(),
            http,
        }),
        clock: side.clock.clone(),
        rng: cfg.rng("raft"),
        disk: Arc::new(disk),
        log: Arc::new(EventElectionLog {
            node: cfg.name.clone(),
            log: side.log.clone(),
        }),
    };
    Ok(RaftElector::start(node, raft.clone()))
}

/// A lease protocol's elector, on its backend's live client (see the module doc).
async fn lease_elector(cfg: &NodeConfig, side: &NodeSide) -> Result<Arc<dyn Elector>, NodeError> {
    let endpoint = || {
        cfg.backend_endpoints
            .first()
            .cloned()
            .ok_or(NodeError::NoEndpoint)
    };
    Ok(match &cfg.protocol {
        RealProtocol::EtcdLease(lease) => {
            let api = connect_etcd(cfg, lease.rpc_timeout_ms, side).await;
            Arc::new(EtcdLeaseElector::new(
                &cfg.name,
                Arc::new(api),
                side.clock.clone(),
                lease.clone(),
            ))
        }
        RealProtocol::RedisNaive(lock) | RealProtocol::RedisFenced(lock) => {
            let api = RealRedis::new(&endpoint()?, lock.rpc_timeout_ms)?;
            let fencing = match cfg.protocol {
                RealProtocol::RedisFenced(_) => Fencing::IncrCounter,
                _ => Fencing::None,
            };
            Arc::new(RedisLockElector::new(
                &cfg.name,
                Arc::new(api),
                side.clock.clone(),
                lock.clone(),
                fencing,
                Box::new(cfg.rng(cfg.protocol.name().name())),
            ))
        }
        RealProtocol::ZkSequential(zk) => Arc::new(ZkSequentialElector::new(
            &cfg.name,
            Arc::new(RealZk::new(&endpoint()?, zk.rpc_timeout_ms)),
            side.clock.clone(),
            zk.clone(),
        )),
        RealProtocol::DbRow(db) => {
            let api = RealDb::new(&endpoint()?, db.statement_timeout_ms, side.run);
            api.connect_now().await;
            Arc::new(DbRowElector::new(
                &cfg.name,
                Arc::new(api),
                side.clock.clone(),
                db.clone(),
                Box::new(cfg.rng(cfg.protocol.name().name())),
            ))
        }
        RealProtocol::Raft(_) => return Err(NodeError::NotALease),
    })
}

/// Logs lease events and counts renewals for the node's metrics.
struct Observer {
    node: NodeId,
    log: EventLog,
    metrics: Arc<NodeMetrics>,
}

impl LeaseObserver for Observer {
    fn granted(&self, id: i64, requested_ms: u64, granted_ms: u64) {
        self.log.record(Event::LeaseGranted {
            node: self.node.clone(),
            lease_id: id,
            ttl_requested_ms: requested_ms,
            ttl_granted_ms: granted_ms,
        });
    }
    fn renewed(&self, id: i64, renewed: bool) {
        if renewed {
            // The lessor has just renewed it: a lease's overrun runs from here.
            self.log.record(Event::LeaseRenewed { lease_id: id });
            self.metrics.renewals.inc();
        } else {
            self.metrics.renewal_failures.inc();
        }
    }
    fn renewal_failed(&self, _: i64) {
        self.metrics.renewal_failures.inc();
    }
    fn revoked(&self, id: i64) {
        self.log.record(Event::LeaseRevoked { lease_id: id });
    }
    fn unreachable(&self, endpoints: &[String], why: &str) {
        eprintln!(
            "baton-real node {}: cannot reach etcd at {} ({why}); retrying, pausing up to the call timeout between tries",
            self.node,
            endpoints.join(", ")
        );
    }
    fn reachable_again(&self, failures: u32) {
        eprintln!(
            "baton-real node {}: etcd answers again, after {failures} failed calls in a row",
            self.node
        );
    }
}

/// The node's etcd client, retried until it can be made.
async fn connect_etcd(cfg: &NodeConfig, rpc_timeout_ms: u64, side: &NodeSide) -> RealEtcdClient {
    // etcd is reached after the node listens, and retried: a node restarted while its
    // link to etcd is cut must come up and wait, as a real process would, not exit.
    let mut backoff = Backoff::new(
        CONNECT_RETRY_MS.0,
        CONNECT_RETRY_MS.1,
        cfg.rng("backoff/connect"),
    );
    loop {
        let observer = Observer {
            node: cfg.name.clone(),
            log: side.log.clone(),
            metrics: side.metrics.clone(),
        };
        match RealEtcdClient::connect(
            &cfg.backend_endpoints,
            rpc_timeout_ms,
            Box::new(observer),
            cfg.rng("backoff/etcd"),
        )
        .await
        {
            Ok(api) => return api,
            Err(e) => {
                let pause = backoff.failed();
                if backoff.failures() == 1 {
                    eprintln!(
                        "baton-real node {}: etcd client for {}: {e}; retrying, pausing up to {} ms between tries",
                        cfg.name,
                        cfg.backend_endpoints.join(", "),
                        CONNECT_RETRY_MS.1
                    );
                }
                tokio::time::sleep(pause).await;
            }
        }
    }
}
