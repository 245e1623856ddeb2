//! `k8s-lease` in the simulator: the Kubernetes-API-like server as the backend, and the
//! simulated side of the [`LeaseApi`] seam (RPCs to it) under client-go's elector.

use super::{BackendCtx, ElectorCtx, Protocol};
use crate::world::net::Endpoint;
use crate::world::rpc::{call, BACKEND_ADDR};
use crate::world::service::k8s::{self, ApiStatus, K8sLeaseCreate, K8sLeaseGet, K8sLeaseUpdate};
use async_trait::async_trait;
pub use baton_model::protocol::k8s_lease::K8sLease;
use baton_protocols::k8s_lease::{K8sError, K8sLeaseElector, Lease, LeaseApi};
use baton_protocols::Elector;
use madsim::task::NodeId;
use std::sync::Arc;

// The service answers with an HTTP status; the elector's seam speaks `K8sError`.
impl From<ApiStatus> for K8sError {
    fn from(s: ApiStatus) -> K8sError {
        match s {
            ApiStatus::NotFound => K8sError::NotFound,
            ApiStatus::AlreadyExists => K8sError::AlreadyExists,
            ApiStatus::Conflict => K8sError::Conflict,
        }
    }
}

/// A Lease client for one node; every call is bounded by `rpc_timeout_ms`.
pub struct SimLeaseClient {
    ep: Arc<Endpoint>,
    rpc_timeout_ms: u64,
}

impl SimLeaseClient {
    /// A client sending from `ep`.
    pub fn new(ep: Arc<Endpoint>, rpc_timeout_ms: u64) -> Self {
        SimLeaseClient { ep, rpc_timeout_ms }
    }
}

fn answer(
    r: Result<Result<Lease, ApiStatus>, crate::world::rpc::TimedOut>,
) -> Result<Lease, K8sError> {
    match r {
        Ok(inner) => inner.map_err(K8sError::from),
        Err(_) => Err(K8sError::Timeout),
    }
}

#[async_trait]
impl LeaseApi for SimLeaseClient {
    async fn get(&self, name: &str) -> Result<Lease, K8sError> {
        let r = K8sLeaseGet {
            name: name.to_string(),
        };
        answer(call(&self.ep, BACKEND_ADDR, r, self.rpc_timeout_ms).await)
    }

    async fn create(&self, lease: Lease) -> Result<Lease, K8sError> {
        answer(
            call(
                &self.ep,
                BACKEND_ADDR,
                K8sLeaseCreate(lease),
                self.rpc_timeout_ms,
            )
            .await,
        )
    }

    async fn update(&self, lease: Lease) -> Result<Lease, K8sError> {
        answer(
            call(
                &self.ep,
                BACKEND_ADDR,
                K8sLeaseUpdate(lease),
                self.rpc_timeout_ms,
            )
            .await,
        )
    }
}

impl Protocol for K8sLease {
    fn start_backend(&self, ctx: BackendCtx) -> Option<NodeId> {
        let (tl, clock, requests) = (ctx.timeline, ctx.clock, ctx.requests);
        let node = ctx
            .handle
            .create_node()
            .name("backend")
            .ip(BACKEND_ADDR.ip())
            .init(move || k8s::serve(tl.clone(), clock.clone(), requests.clone()))
            .build();
        Some(node.id())
    }

    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector> {
        let api = Arc::new(SimLeaseClient::new(ctx.ep, self.0.call_timeout_ms()));
        let rng = baton_model::seed::fork(
            ctx.seed,
            &format!("k8s-lease/{}/{}", ctx.node, ctx.incarnation),
        );
        Arc::new(K8sLeaseElector::new(
            ctx.node,
            &ctx.incarnation.to_string(),
            api,
            ctx.clock,
            self.0.clone(),
            Box::new(rng),
        ))
    }
}
