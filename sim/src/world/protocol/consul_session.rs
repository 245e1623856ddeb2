//! `consul-session` in the simulator: the Consul-like server as the backend, and the
//! simulated side of the [`ConsulApi`] seam (RPCs to it) under the lock recipe.

use super::{BackendCtx, ElectorCtx, Protocol};
use crate::world::net::Endpoint;
use crate::world::rpc::{call, BACKEND_ADDR};
use crate::world::service::consul::{
    self, ConsulKvAcquire, ConsulKvGet, ConsulKvRelease, ConsulSessionCreate, ConsulSessionDestroy,
    ConsulSessionRenew,
};
use async_trait::async_trait;
pub use baton_model::protocol::consul_session::ConsulSession;
use baton_protocols::consul_session::{
    ConsulApi, ConsulError, ConsulSessionElector, KvRead, SessionRequest,
};
use baton_protocols::Elector;
use madsim::task::NodeId;
use std::sync::Arc;

/// A Consul client for one node; every call is bounded by `rpc_timeout_ms` (a blocking
/// query by its wait plus that).
pub struct SimConsulClient {
    ep: Arc<Endpoint>,
    node: baton_model::NodeId,
    rpc_timeout_ms: u64,
}

impl SimConsulClient {
    /// A client sending from `ep` on behalf of `node`.
    pub fn new(ep: Arc<Endpoint>, node: &baton_model::NodeId, rpc_timeout_ms: u64) -> Self {
        SimConsulClient {
            ep,
            node: node.clone(),
            rpc_timeout_ms,
        }
    }
}

fn timeout<T>(r: Result<T, crate::world::rpc::TimedOut>) -> Result<T, ConsulError> {
    r.map_err(|_| ConsulError::Timeout)
}

#[async_trait]
impl ConsulApi for SimConsulClient {
    async fn session_create(&self, req: SessionRequest) -> Result<String, ConsulError> {
        let r = ConsulSessionCreate {
            node: self.node.clone(),
            req,
        };
        timeout(call(&self.ep, BACKEND_ADDR, r, self.rpc_timeout_ms).await)?
            .map_err(|e| ConsulError::Server(e.to_string()))
    }

    async fn session_renew(&self, id: &str) -> Result<Option<u64>, ConsulError> {
        let r = ConsulSessionRenew { id: id.to_string() };
        timeout(call(&self.ep, BACKEND_ADDR, r, self.rpc_timeout_ms).await)
    }

    async fn session_destroy(&self, id: &str) -> Result<(), ConsulError> {
        let r = ConsulSessionDestroy { id: id.to_string() };
        timeout(call(&self.ep, BACKEND_ADDR, r, self.rpc_timeout_ms).await)
    }

    async fn kv_get(&self, key: &str, index: u64, wait_ms: u64) -> Result<KvRead, ConsulError> {
        let r = ConsulKvGet {
            key: key.to_string(),
            index,
            wait_ms,
        };
        let wait = if index > 0 { wait_ms } else { 0 };
        timeout(call(&self.ep, BACKEND_ADDR, r, wait + self.rpc_timeout_ms).await)
    }

    async fn kv_acquire(&self, key: &str, value: &str, session: &str) -> Result<bool, ConsulError> {
        let r = ConsulKvAcquire {
            key: key.to_string(),
            value: value.to_string(),
            session: session.to_string(),
        };
        timeout(call(&self.ep, BACKEND_ADDR, r, self.rpc_timeout_ms).await)?
            .map_err(|e| ConsulError::Server(e.to_string()))
    }

    async fn kv_release(&self, key: &str, session: &str) -> Result<bool, ConsulError> {
        let r = ConsulKvRelease {
            key: key.to_string(),
            session: session.to_string(),
        };
        timeout(call(&self.ep, BACKEND_ADDR, r, self.rpc_timeout_ms).await)?
            .map_err(|e| ConsulError::Server(e.to_string()))
    }
}

impl Protocol for ConsulSession {
    fn start_backend(&self, ctx: BackendCtx) -> Option<NodeId> {
        let (tl, clock, requests) = (ctx.timeline, ctx.clock, ctx.requests);
        let settings = consul::Settings {
            session_ttl_min_ms: self.0.session_ttl_min_ms,
            ttl_check_interval_ms: self.0.ttl_check_interval_ms,
        };
        let node = ctx
            .handle
            .create_node()
            .name("backend")
            .ip(BACKEND_ADDR.ip())
            .init(move || consul::serve(tl.clone(), clock.clone(), requests.clone(), settings))
            .build();
        Some(node.id())
    }

    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector> {
        let api = Arc::new(SimConsulClient::new(
            ctx.ep,
            ctx.node,
            self.0.rpc_timeout_ms,
        ));
        Arc::new(ConsulSessionElector::new(
            ctx.node,
            api,
            ctx.clock,
            self.0.clone(),
        ))
    }
}
