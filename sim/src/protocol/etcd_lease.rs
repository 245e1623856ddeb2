//! `etcd-lease` in the simulator: the etcd-like service as the backend, and the
//! simulated side of the [`EtcdApi`] seam (RPCs to it) under the election recipe.

use crate::net::Endpoint;
use crate::rpc::{
    call, EtcdGrant, EtcdKeepAlive, EtcdRange, EtcdRevoke, EtcdTxn, EtcdWatch, BACKEND_ADDR,
};
use async_trait::async_trait;
use baton_protocols::etcd_api::{
    EtcdApi, EtcdError, LeaseGrant, RangeRequest, RangeResponse, Txn, TxnResponse, WatchEvent,
};
use std::sync::Arc;

use super::{BackendCtx, ElectorCtx, Protocol};
use crate::service::etcd;
pub use baton_model::protocol::etcd_lease::EtcdLease;
use baton_protocols::etcd_lease::EtcdLeaseElector;
use baton_protocols::Elector;
use madsim::task::NodeId;

/// An etcd client for one node; every call is bounded by `rpc_timeout_ms`.
pub struct SimEtcdClient {
    ep: Arc<Endpoint>,
    node: String,
    rpc_timeout_ms: u64,
}

impl SimEtcdClient {
    /// A client sending from `ep` on behalf of `node`.
    pub fn new(ep: Arc<Endpoint>, node: &str, rpc_timeout_ms: u64) -> Self {
        SimEtcdClient {
            ep,
            node: node.to_string(),
            rpc_timeout_ms,
        }
    }
}

fn timeout<T>(r: Result<T, crate::rpc::TimedOut>) -> Result<T, EtcdError> {
    r.map_err(|_| EtcdError::Timeout)
}

#[async_trait]
impl EtcdApi for SimEtcdClient {
    async fn lease_grant(&self, ttl_ms: u64) -> Result<LeaseGrant, EtcdError> {
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
        timeout(call(&self.ep, BACKEND_ADDR, EtcdTxn(txn), self.rpc_timeout_ms).await)?
            .map_err(EtcdError::Server)
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResponse, EtcdError> {
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
        timeout(call(&self.ep, BACKEND_ADDR, req, wait_ms + self.rpc_timeout_ms).await)
    }
}

impl Protocol for EtcdLease {
    fn start_backend(&self, ctx: BackendCtx) -> Option<NodeId> {
        let (tl, clock, requests) = (ctx.timeline, ctx.clock, ctx.requests);
        let (min_ttl, interval) = (self.0.min_lease_ttl_ms, self.0.expiry_check_interval_ms);
        // The member's id, as etcd derives it from its name and cluster: a seeded draw.
        let member_id = {
            use rand::Rng;
            crate::seed::fork(ctx.seed, "etcd/member").gen::<u16>()
        };
        // Where the lessor's expiry-check cycle stands when the scenario starts.
        let lessor_phase_us = {
            use rand::Rng;
            crate::seed::fork(ctx.seed, "etcd/lessor").gen_range(0..interval.max(1) * 1000)
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
        let api = Arc::new(SimEtcdClient::new(ctx.ep, ctx.node, self.0.rpc_timeout_ms));
        Arc::new(EtcdLeaseElector::new(
            ctx.node,
            api,
            ctx.clock,
            self.0.clone(),
        ))
    }
}
