//! [`RedisApi`] over a live Redis, with the `redis` crate: what `redis-naive` and
//! `redis-fenced` run on in real mode, the same elector code as in the simulator.
//!
//! One [`ConnectionManager`] per node, made lazily (a node started while its link to
//! Redis is cut comes up and waits), which reconnects by itself after Redis restarts.
//! Every call is bounded by the lock's `rpc_timeout_ms` (Jedis's 2 s socket timeout by
//! default): no answer in time is [`RedisError::Timeout`], as a cut link or a paused
//! server gives in the simulator. The two scripts are the elector's own
//! ([`COMPARE_AND_EXTEND_LUA`], [`COMPARE_AND_DELETE_LUA`]), sent with `EVALSHA` and
//! loaded on a `NOSCRIPT` (a restarted Redis has forgotten them).

use async_trait::async_trait;
use baton_protocols::redis_lock::{
    RedisApi, RedisError, COMPARE_AND_DELETE_LUA, COMPARE_AND_EXTEND_LUA,
};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Script};
use std::future::Future;
use std::time::Duration;

/// How long a lost connection waits before its first reconnect, and at most.
const RECONNECT_DELAY_MS: (u64, u64) = (50, 1000);

/// A Redis client that cannot be made for `url` (a URL the `redis` crate refuses).
#[derive(Debug, thiserror::Error)]
#[error("{url}: {source}")]
pub struct RedisUrlError {
    /// The URL.
    pub url: String,
    /// What the `redis` crate said.
    pub source: redis::RedisError,
}

/// A node's Redis client. See the module doc.
pub struct RealRedis {
    conn: ConnectionManager,
    timeout: Duration,
    extend: Script,
    delete: Script,
}

impl RealRedis {
    /// A client of the Redis at `url` (`redis://127.0.0.1:<port>/`, through the node's
    /// proxy) whose every call waits at most `rpc_timeout_ms`. Nothing is connected yet.
    pub fn new(url: &str, rpc_timeout_ms: u64) -> Result<RealRedis, RedisUrlError> {
        let timeout = Duration::from_millis(rpc_timeout_ms.max(1));
        let fail = |source| RedisUrlError {
            url: url.to_string(),
            source,
        };
        let client = redis::Client::open(url).map_err(fail)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_min_delay(Duration::from_millis(RECONNECT_DELAY_MS.0))
            .set_max_delay(Duration::from_millis(RECONNECT_DELAY_MS.1))
            .set_number_of_retries(usize::MAX);
        let conn = ConnectionManager::new_lazy_with_config(client, config).map_err(fail)?;
        Ok(RealRedis {
            conn,
            timeout,
            extend: Script::new(COMPARE_AND_EXTEND_LUA),
            delete: Script::new(COMPARE_AND_DELETE_LUA),
        })
    }

    /// Runs `call` within the call timeout.
    async fn bounded<T>(
        &self,
        call: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, RedisError> {
        match tokio::time::timeout(self.timeout, call).await {
            Err(_) => Err(RedisError::Timeout),
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) if e.is_timeout() || e.is_io_error() || e.is_connection_dropped() => {
                Err(RedisError::Timeout)
            }
            Ok(Err(e)) if e.is_connection_refusal() => Err(RedisError::Timeout),
            Ok(Err(e)) => Err(RedisError::Server(e.to_string())),
        }
    }
}

#[async_trait]
impl RedisApi for RealRedis {
    async fn set_nx_px(&self, key: &str, value: &str, ttl_ms: u64) -> Result<bool, RedisError> {
        let mut c = self.conn.clone();
        let set: Option<String> = self
            .bounded(
                redis::cmd("SET")
                    .arg(key)
                    .arg(value)
                    .arg("NX")
                    .arg("PX")
                    .arg(ttl_ms)
                    .query_async(&mut c),
            )
            .await?;
        Ok(set.is_some())
    }

    async fn get(&self, key: &str) -> Result<Option<String>, RedisError> {
        let mut c = self.conn.clone();
        self.bounded(c.get(key)).await
    }

    async fn pexpire(&self, key: &str, ttl_ms: u64) -> Result<bool, RedisError> {
        let mut c = self.conn.clone();
        self.bounded(c.pexpire(key, ttl_ms as i64)).await
    }

    async fn compare_and_extend(
        &self,
        key: &str,
        value: &str,
        ttl_ms: u64,
    ) -> Result<bool, RedisError> {
        let mut c = self.conn.clone();
        let n: i64 = self
            .bounded(
                self.extend
                    .key(key)
                    .arg(value)
                    .arg(ttl_ms)
                    .invoke_async(&mut c),
            )
            .await?;
        Ok(n == 1)
    }

    async fn compare_and_delete(&self, key: &str, value: &str) -> Result<bool, RedisError> {
        let mut c = self.conn.clone();
        let n: i64 = self
            .bounded(self.delete.key(key).arg(value).invoke_async(&mut c))
            .await?;
        Ok(n == 1)
    }

    async fn incr(&self, key: &str) -> Result<i64, RedisError> {
        let mut c = self.conn.clone();
        self.bounded(c.incr(key, 1)).await
    }

    async fn del(&self, key: &str) -> Result<bool, RedisError> {
        let mut c = self.conn.clone();
        let n: i64 = self.bounded(c.del(key)).await?;
        Ok(n == 1)
    }
}
