//! `redis-naive` and `redis-fenced` in the simulator: one simulated Redis instance as the
//! backend, and the simulated side of the [`RedisApi`] seam (RPCs to it).

use super::{require_positive, BackendCtx, Bound, ElectorCtx, Protocol, ProtocolName};
use crate::net::Endpoint;
use crate::rpc::{call, request, BACKEND_ADDR};
use crate::scenario::Scenario;
use crate::service::redis;
use async_trait::async_trait;
use baton_protocols::redis_lock::{
    Fencing, RedisApi, RedisError, RedisLockConfig, RedisLockElector,
};
use baton_protocols::Elector;
use madsim::task::NodeId;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// `SET key value NX PX ttl_ms`; true when the key was set.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RedisSetNxPx {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
    /// Its time to live.
    pub ttl_ms: u64,
}
request!(RedisSetNxPx => bool);

/// `GET key`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RedisGet {
    /// The key.
    pub key: String,
}
request!(RedisGet => Option<String>);

/// `PEXPIRE key ttl_ms`; true when the key exists.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RedisPexpire {
    /// The key.
    pub key: String,
    /// The new time to live.
    pub ttl_ms: u64,
}
request!(RedisPexpire => bool);

/// `EVAL` of the compare-and-extend script; true when extended.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RedisEvalExtend {
    /// The key.
    pub key: String,
    /// The value it must hold.
    pub value: String,
    /// The new time to live.
    pub ttl_ms: u64,
}
request!(RedisEvalExtend => bool);

/// `EVAL` of the compare-and-delete script; true when deleted.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RedisEvalDelete {
    /// The key.
    pub key: String,
    /// The value it must hold.
    pub value: String,
}
request!(RedisEvalDelete => bool);

/// `INCR key`; the server's error text when the value is not an integer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RedisIncr {
    /// The key.
    pub key: String,
}
request!(RedisIncr => Result<i64, String>);

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

    async fn call<R: crate::net::Request>(&self, req: R) -> Result<R::Response, RedisError> {
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

    async fn incr(&self, key: &str) -> Result<i64, RedisError> {
        self.call(RedisIncr { key: key.into() })
            .await?
            .map_err(RedisError::Server)
    }
}

fn validate(c: &RedisLockConfig) -> Result<(), (String, String)> {
    require_positive(&[
        ("lock_ttl_ms", c.lock_ttl_ms),
        ("retry_interval_ms", c.retry_interval_ms),
        ("rpc_timeout_ms", c.rpc_timeout_ms),
    ])?;
    if c.key.is_empty() {
        return Err(("key".into(), "must not be empty".into()));
    }
    Ok(())
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
    let rng = crate::seed::fork(
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

/// The holder's key expires at most one TTL after its last renewal, which it sent no
/// later than its last write (plus that renewal's trip). Redis judges expiry on access,
/// so the first candidate to retry after that takes the lock: within one retry interval
/// and one round trip. Then the token (fenced only) and the claim write.
fn bound(cfg: &RedisLockConfig, s: &Scenario, fencing: Fencing) -> Bound {
    let ttl = cfg.lock_ttl_ms;
    let retry = cfg.retry_interval_ms;
    let (trips, what) = match fencing {
        Fencing::None => (3, "last renewal, SET NX PX, claim write"),
        Fencing::IncrCounter => (4, "last renewal, SET NX PX, INCR, claim write"),
    };
    let lat = s.network.latency_ms_max;
    let round = trips * 2 * lat;
    Bound {
        ms: ttl + retry + round,
        formula: format!(
            "TTL + retry + acquisition = lock TTL {ttl} ms + one retry interval {retry} ms + {trips} round trips ({what}) at <= {lat} ms one way = {round} ms"
        ),
    }
}

fn liveness_bound_ms(cfg: &RedisLockConfig) -> u64 {
    2 * cfg.lock_ttl_ms + cfg.retry_interval_ms + 1000
}

/// `redis-naive`: the lock without a fencing token (every leadership carries 0).
#[derive(Clone, Debug)]
pub struct RedisNaive(pub RedisLockConfig);

impl Protocol for RedisNaive {
    fn name(&self) -> ProtocolName {
        ProtocolName::RedisNaive
    }

    fn validate(&self) -> Result<(), (String, String)> {
        validate(&self.0)
    }

    fn start_backend(&self, ctx: BackendCtx) -> Option<NodeId> {
        start_backend(ctx)
    }

    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector> {
        elector(self.name(), &self.0, Fencing::None, ctx)
    }

    fn failover_bound(&self, s: &Scenario) -> Bound {
        bound(&self.0, s, Fencing::None)
    }

    fn default_liveness_bound_ms(&self, _: &Scenario) -> u64 {
        liveness_bound_ms(&self.0)
    }
}

/// `redis-fenced`: the lock plus a token from `INCR <key>:token` on acquisition.
#[derive(Clone, Debug)]
pub struct RedisFenced(pub RedisLockConfig);

impl Protocol for RedisFenced {
    fn name(&self) -> ProtocolName {
        ProtocolName::RedisFenced
    }

    fn validate(&self) -> Result<(), (String, String)> {
        validate(&self.0)
    }

    fn start_backend(&self, ctx: BackendCtx) -> Option<NodeId> {
        start_backend(ctx)
    }

    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector> {
        elector(self.name(), &self.0, Fencing::IncrCounter, ctx)
    }

    fn failover_bound(&self, s: &Scenario) -> Bound {
        bound(&self.0, s, Fencing::IncrCounter)
    }

    fn default_liveness_bound_ms(&self, _: &Scenario) -> u64 {
        liveness_bound_ms(&self.0)
    }
}
