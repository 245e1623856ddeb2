//! `redis-naive` and `redis-fenced` in the simulator: one simulated Redis instance as the
//! backend, and the simulated side of the [`RedisApi`] seam (RPCs to it).

use super::{BackendCtx, ElectorCtx, Protocol, ProtocolName};
use crate::world::net::Endpoint;
use crate::world::rpc::{call, BACKEND_ADDR};
use crate::world::service::redis::{
    self, RedisDel, RedisEvalDelete, RedisEvalExtend, RedisGet, RedisIncr, RedisPexpire,
    RedisSetNxPx,
};
use async_trait::async_trait;
pub use baton_model::protocol::redis_lock::{RedisFenced, RedisNaive};
use baton_protocols::redis_lock::{
    Fencing, RedisApi, RedisError, RedisLockConfig, RedisLockElector,
};
use baton_protocols::Elector;
use madsim::task::NodeId;
use std::sync::Arc;

/// A Redis client for one node; every call is bounded by `rpc_timeout_ms`.
pub struct SimRedisClient {
    ep: Arc<Endpoint>,
    rpc_timeout_ms: u64,
}

impl SimRedisClient {
    /// A client sending from `ep`.
    pub fn new(ep: Arc<Endpoint>, rpc_timeout_ms: u64) -> Self {
        SimRedisClient { ep, rpc_timeout_ms }
    }

    async fn call<R: crate::world::net::Request>(&self, req: R) -> Result<R::Response, RedisError> {
        call(&self.ep, BACKEND_ADDR, req, self.rpc_timeout_ms)
            .await
            .map_err(|_| RedisError::Timeout)
    }
}

#[async_trait]
impl RedisApi for SimRedisClient {
    async fn set_nx_px(&self, key: &str, value: &str, ttl_ms: u64) -> Result<bool, RedisError> {
        self.call(RedisSetNxPx {
            key: key.into(),
            value: value.into(),
            ttl_ms,
        })
        .await
    }

    async fn get(&self, key: &str) -> Result<Option<String>, RedisError> {
        self.call(RedisGet { key: key.into() }).await
    }

    async fn pexpire(&self, key: &str, ttl_ms: u64) -> Result<bool, RedisError> {
        self.call(RedisPexpire {
            key: key.into(),
            ttl_ms,
        })
        .await
    }

    async fn compare_and_extend(
        &self,
        key: &str,
        value: &str,
        ttl_ms: u64,
    ) -> Result<bool, RedisError> {
        self.call(RedisEvalExtend {
            key: key.into(),
            value: value.into(),
            ttl_ms,
        })
        .await
    }

    async fn compare_and_delete(&self, key: &str, value: &str) -> Result<bool, RedisError> {
        self.call(RedisEvalDelete {
            key: key.into(),
            value: value.into(),
        })
        .await
    }

    async fn del(&self, key: &str) -> Result<bool, RedisError> {
        self.call(RedisDel { key: key.into() }).await
    }

    async fn incr(&self, key: &str) -> Result<i64, RedisError> {
        self.call(RedisIncr { key: key.into() })
            .await?
            .map_err(|e| RedisError::Server(e.to_string()))
    }
}

fn start_backend(ctx: BackendCtx) -> Option<NodeId> {
    let (tl, clock, requests) = (ctx.timeline, ctx.clock, ctx.requests);
    let node = ctx
        .handle
        .create_node()
        .name("backend")
        .ip(BACKEND_ADDR.ip())
        .init(move || redis::serve(tl.clone(), clock.clone(), requests.clone()))
        .build();
    Some(node.id())
}

fn elector(
    name: ProtocolName,
    cfg: &RedisLockConfig,
    fencing: Fencing,
    ctx: ElectorCtx,
) -> Arc<dyn Elector> {
    let api = Arc::new(SimRedisClient::new(ctx.ep, cfg.rpc_timeout_ms));
    let rng = baton_model::seed::fork(
        ctx.seed,
        &format!("{}/{}/{}", name.name(), ctx.node, ctx.incarnation),
    );
    Arc::new(RedisLockElector::new(
        ctx.node,
        api,
        ctx.clock,
        cfg.clone(),
        fencing,
        Box::new(rng),
    ))
}

impl Protocol for RedisNaive {
    fn start_backend(&self, ctx: BackendCtx) -> Option<NodeId> {
        start_backend(ctx)
    }

    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector> {
        elector(ProtocolName::RedisNaive, &self.0, Fencing::None, ctx)
    }
}

impl Protocol for RedisFenced {
    fn start_backend(&self, ctx: BackendCtx) -> Option<NodeId> {
        start_backend(ctx)
    }

    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector> {
        elector(
            ProtocolName::RedisFenced,
            &self.0,
            Fencing::IncrCounter,
            ctx,
        )
    }
}
