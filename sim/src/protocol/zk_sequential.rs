//! `zk-sequential` in the simulator: the ZooKeeper-like service as the backend, and the
//! simulated side of the [`ZkApi`] seam (RPCs to it) under the election recipe.

use super::{BackendCtx, ElectorCtx, Protocol};
use crate::net::Endpoint;
use crate::rpc::{call, BACKEND_ADDR};
use crate::service::zk::{
    self, ZkClose, ZkConnect, ZkCreate, ZkDelete, ZkExists, ZkGetChildren, ZkGetData, ZkPing,
    ZkSettings,
};
use async_trait::async_trait;
pub use baton_model::protocol::zk_sequential::ZkSequential;
use baton_protocols::zk_sequential::{
    CreateMode, SessionGrant, Stat, ZkApi, ZkError, ZkSequentialElector,
};
use baton_protocols::Elector;
use madsim::task::NodeId;
use std::sync::Arc;

/// A ZooKeeper client for one node; every call is bounded by `rpc_timeout_ms`.
pub struct SimZkClient {
    ep: Arc<Endpoint>,
    node: String,
    rpc_timeout_ms: u64,
}

impl SimZkClient {
    /// A client sending from `ep` on behalf of `node`.
    pub fn new(ep: Arc<Endpoint>, node: &str, rpc_timeout_ms: u64) -> Self {
        SimZkClient {
            ep,
            node: node.to_string(),
            rpc_timeout_ms,
        }
    }

    async fn call<R: crate::net::Request>(
        &self,
        req: R,
        extra_ms: u64,
    ) -> Result<R::Response, ZkError> {
        call(&self.ep, BACKEND_ADDR, req, self.rpc_timeout_ms + extra_ms)
            .await
            .map_err(|_| ZkError::ConnectionLoss)
    }
}

#[async_trait]
impl ZkApi for SimZkClient {
    async fn create_session(&self, timeout_ms: u64) -> Result<SessionGrant, ZkError> {
        let node = self.node.clone();
        self.call(ZkConnect { node, timeout_ms }, 0).await
    }

    async fn ping(&self, session: i64) -> Result<(), ZkError> {
        self.call(ZkPing { session }, 0).await?
    }

    async fn close_session(&self, session: i64) -> Result<(), ZkError> {
        self.call(ZkClose { session }, 0).await
    }

    async fn create(
        &self,
        session: i64,
        path: &str,
        data: &str,
        mode: CreateMode,
    ) -> Result<(String, Stat), ZkError> {
        let req = ZkCreate {
            session,
            path: path.to_string(),
            data: data.to_string(),
            mode,
        };
        self.call(req, 0).await?
    }

    async fn get_children(&self, session: i64, path: &str) -> Result<Vec<String>, ZkError> {
        let path = path.to_string();
        self.call(ZkGetChildren { session, path }, 0).await?
    }

    async fn get_data(&self, session: i64, path: &str) -> Result<(String, Stat), ZkError> {
        let path = path.to_string();
        self.call(ZkGetData { session, path }, 0).await?
    }

    async fn exists_watch(
        &self,
        session: i64,
        path: &str,
        wait_ms: u64,
    ) -> Result<Option<Stat>, ZkError> {
        let req = ZkExists {
            session,
            path: path.to_string(),
            wait_ms,
        };
        // The long poll may legitimately take `wait_ms`; the timeout covers the rest.
        self.call(req, wait_ms).await?
    }

    async fn delete(&self, session: i64, path: &str) -> Result<(), ZkError> {
        let path = path.to_string();
        self.call(ZkDelete { session, path }, 0).await?
    }
}

impl Protocol for ZkSequential {
    fn start_backend(&self, ctx: BackendCtx) -> Option<NodeId> {
        let (tl, clock, requests) = (ctx.timeline, ctx.clock, ctx.requests);
        let settings = ZkSettings {
            tick_time_ms: self.0.tick_time_ms,
            min_session_timeout_ms: self.0.effective_min_session_timeout_ms(),
            max_session_timeout_ms: self.0.effective_max_session_timeout_ms(),
        };
        let node = ctx
            .handle
            .create_node()
            .name("backend")
            .ip(BACKEND_ADDR.ip())
            .init(move || zk::serve(tl.clone(), clock.clone(), requests.clone(), settings))
            .build();
        Some(node.id())
    }

    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector> {
        let api = Arc::new(SimZkClient::new(ctx.ep, ctx.node, self.0.rpc_timeout_ms));
        Arc::new(ZkSequentialElector::new(
            ctx.node,
            api,
            ctx.clock,
            self.0.clone(),
        ))
    }
}
