//! `etcd-lease` in the simulator: the etcd-like service as the backend, and the
//! simulated side of the [`EtcdApi`] seam (RPCs to it) under the election recipe.

use crate::world::net::Endpoint;
use crate::world::rpc::{
    call, EtcdGrant, EtcdKeepAlive, EtcdRange, EtcdRevoke, EtcdTxn, EtcdWatch, BACKEND_ADDR,
};
use async_trait::async_trait;
use baton_protocols::{
    EtcdApi, EtcdError, LeaseGrant, RangeRequest, RangeResponse, Txn, TxnResponse, WatchEvent,
};
use std::sync::Arc;

use super::etcd_cluster_client::ClusterClient;
use super::{BackendCtx, ElectorCtx, Protocol};
use crate::world::service::etcd;
use crate::world::service::etcd_cluster::{Op, Reply};
pub use baton_model::protocol::etcd_lease::EtcdLease;
use baton_protocols::etcd_lease::{EtcdLeaseConfig, EtcdLeaseElector};
use baton_protocols::Elector;
use madsim::task::NodeId;

/// An etcd client for one node; every call is bounded by `rpc_timeout_ms`. It talks to
/// the one service at `backend`, or to a cluster's members.
pub struct SimEtcdClient {
    ep: Arc<Endpoint>,
    node: baton_model::NodeId,
    rpc_timeout_ms: u64,
    cluster: Option<ClusterClient>,
}

impl SimEtcdClient {
    /// A client sending from `ep` on behalf of `node`, to the one service.
    pub fn new(ep: Arc<Endpoint>, node: &baton_model::NodeId, rpc_timeout_ms: u64) -> Self {
        SimEtcdClient {
            ep,
            node: node.clone(),
            rpc_timeout_ms,
            cluster: None,
        }
    }

    /// The same client, to a cluster's members instead.
    pub fn to_cluster(mut self, client: ClusterClient) -> Self {
        self.cluster = Some(client);
        self
    }

    /// `op` to the cluster, when there is one.
    async fn cluster_op(&self, op: Op) -> Option<Result<Reply, EtcdError>> {
        let c = self.cluster.as_ref()?;
        Some(c.op(op, self.rpc_timeout_ms).await.map_err(cluster_error))
    }
}

fn cluster_error(e: Option<String>) -> EtcdError {
    match e {
        None => EtcdError::Timeout,
        Some(text) => EtcdError::Server(text),
    }
}

/// A reply of the wrong kind cannot come: each op has its own.
fn unexpected(r: Reply) -> EtcdError {
    EtcdError::Server(format!("unexpected reply {r:?}"))
}

fn timeout<T>(r: Result<T, crate::world::rpc::TimedOut>) -> Result<T, EtcdError> {
    r.map_err(|_| EtcdError::Timeout)
}

#[async_trait]
impl EtcdApi for SimEtcdClient {
    async fn lease_grant(&self, ttl_ms: u64) -> Result<LeaseGrant, EtcdError> {
        let op = Op::Grant {
            node: self.node.clone(),
            ttl_ms,
        };
        if let Some(r) = self.cluster_op(op).await {
            return match r? {
                Reply::Granted(g) => Ok(g),
                other => Err(unexpected(other)),
            };
        }
        timeout(
            call(
                &self.ep,
                BACKEND_ADDR,
                EtcdGrant {
                    node: self.node.clone(),
                    ttl_ms,
                },
                self.rpc_timeout_ms,
            )
            .await,
        )
    }

    async fn lease_keep_alive(&self, id: i64) -> Result<Option<u64>, EtcdError> {
        if let Some(r) = self.cluster_op(Op::KeepAlive(id)).await {
            return match r? {
                Reply::KeptAlive(t) => Ok(t),
                other => Err(unexpected(other)),
            };
        }
        timeout(
            call(
                &self.ep,
                BACKEND_ADDR,
                EtcdKeepAlive { id },
                self.rpc_timeout_ms,
            )
            .await,
        )
    }

    async fn lease_revoke(&self, id: i64) -> Result<(), EtcdError> {
        if let Some(r) = self.cluster_op(Op::Revoke(id)).await {
            return r.map(|_| ());
        }
        timeout(
            call(
                &self.ep,
                BACKEND_ADDR,
                EtcdRevoke { id },
                self.rpc_timeout_ms,
            )
            .await,
        )
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse, EtcdError> {
        if self.cluster.is_some() {
            let r = self.cluster_op(Op::Txn(txn)).await;
            return match r.expect("a cluster")? {
                Reply::Txn(t) => t.map_err(|e| EtcdError::Server(e.to_string())),
                other => Err(unexpected(other)),
            };
        }
        timeout(call(&self.ep, BACKEND_ADDR, EtcdTxn(txn), self.rpc_timeout_ms).await)?
            .map_err(|e| EtcdError::Server(e.to_string()))
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResponse, EtcdError> {
        if self.cluster.is_some() {
            let r = self.cluster_op(Op::Range(req)).await;
            return match r.expect("a cluster")? {
                Reply::Range(t) => Ok(t),
                other => Err(unexpected(other)),
            };
        }
        timeout(call(&self.ep, BACKEND_ADDR, EtcdRange(req), self.rpc_timeout_ms).await)
    }

    async fn watch(
        &self,
        key: &str,
        start_revision: i64,
        wait_ms: u64,
    ) -> Result<Vec<WatchEvent>, EtcdError> {
        let req = EtcdWatch {
            key: key.to_string(),
            start_revision,
            wait_ms,
        };
        if let Some(c) = &self.cluster {
            return c
                .watch(req, wait_ms + self.rpc_timeout_ms)
                .await
                .map_err(cluster_error);
        }
        timeout(call(&self.ep, BACKEND_ADDR, req, wait_ms + self.rpc_timeout_ms).await)
    }
}

/// A node's client of the lease service (of its cluster, when it is one).
fn client(cfg: &EtcdLeaseConfig, ctx: ElectorCtx) -> Arc<dyn EtcdApi> {
    {
        let mut client = SimEtcdClient::new(ctx.ep.clone(), ctx.node, cfg.rpc_timeout_ms);
        if let Some(c) = ctx.etcd_cluster {
            client = client.to_cluster(ClusterClient::new(
                ctx.ep,
                (ctx.index, ctx.etcd_member),
                c.members,
                c.client_retry_ms,
            ));
        }
        Arc::new(client)
    }
}

impl Protocol for EtcdLease {
    fn start_backend(&self, ctx: BackendCtx) -> Option<NodeId> {
        let (tl, clock, requests) = (ctx.timeline, ctx.clock, ctx.requests);
        let (min_ttl, interval) = (self.0.min_lease_ttl_ms, self.0.expiry_check_interval_ms);
        // The member's id, as etcd derives it from its name and cluster: a seeded draw.
        let member_id = {
            use rand::Rng;
            baton_model::seed::fork(ctx.seed, "etcd/member").gen::<u16>()
        };
        // Where the lessor's expiry-check cycle stands when the scenario starts.
        let lessor_phase_us = {
            use rand::Rng;
            baton_model::seed::fork(ctx.seed, "etcd/lessor").gen_range(0..interval.max(1) * 1000)
        };
        let node = ctx
            .handle
            .create_node()
            .name("backend")
            .ip(BACKEND_ADDR.ip())
            .init(move || {
                etcd::serve(
                    tl.clone(),
                    clock.clone(),
                    requests.clone(),
                    min_ttl,
                    interval,
                    member_id,
                    lessor_phase_us,
                )
            })
            .build();
        Some(node.id())
    }

    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector> {
        let node = ctx.node.clone();
        let clock = ctx.clock.clone();
        Arc::new(EtcdLeaseElector::new(
            &node,
            client(&self.0, ctx),
            clock,
            self.0.clone(),
        ))
    }

    /// One client for the registry and every partition's election (one connection per
    /// process, as a real node would share its etcd client), and an election per
    /// partition under `<prefix>-p<k>`.
    fn sharded(&self, ctx: ElectorCtx, partitions: u32) -> Option<super::ShardKit> {
        let node = ctx.node.clone();
        let clock = ctx.clock.clone();
        let api = client(&self.0, ctx);
        let electors = (0..partitions)
            .map(|p| {
                let cfg = EtcdLeaseConfig {
                    prefix: format!("{}-p{p}", self.0.prefix),
                    ..self.0.clone()
                };
                Arc::new(EtcdLeaseElector::new(
                    &node,
                    api.clone(),
                    clock.clone(),
                    cfg,
                )) as Arc<dyn Elector>
            })
            .collect();
        Some(super::ShardKit {
            registry: api,
            ttl_ms: self.0.lease_ttl_ms,
            electors,
        })
    }
}
