//! `redis-naive` and `redis-fenced`: leadership as a lock on one Redis instance.
//!
//! Modelled on the single-instance lock of the Redis docs ("Distributed Locks with
//! Redis", the `SET` command page) and on the clients that follow it:
//! - acquire with `SET <key> <random value> NX PX <ttl>`: the key is set only if absent,
//!   with a time to live in milliseconds that the server judges on its own clock. The
//!   value must be unique to this acquisition (the docs: a random value, unique across
//!   all clients and all lock requests); here `<node>:<64 random bits>`, from the seeded
//!   RNG the node is given;
//! - while the key is taken, retry every `retry_interval_ms` (redis-py's `Lock` sleeps
//!   `sleep = 0.1` s per loop iteration while blocking);
//! - keep it with a renew loop every TTL / 3, extending only while the value is still
//!   ours, with the compare-and-extend script
//!   `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`
//!   (Redisson's lock watchdog renews every `lockWatchdogTimeout / 3`);
//! - release with the docs' compare-and-delete script
//!   `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`,
//!   so a client never deletes a lock another client has since acquired.
//!
//! Defaults: Redis has no lock TTL of its own. The docs' example uses `PX 30000`, and
//! Redisson's `lockWatchdogTimeout` defaults to 30 000 ms, renewed every 10 s: so a
//! 30 s TTL renewed every TTL / 3. Calls time out after 2 s (Jedis's default socket
//! timeout).
//!
//! **`redis-naive` is the instructive wrong default.** Its only identity is the random
//! value, which the protected resource never sees: every leadership carries fencing
//! token 0, and a resource that accepts tokens at or above the highest it has seen
//! accepts every write, exactly as a resource that cannot check would. A holder that
//! pauses past its TTL (a GC pause after its last lease check) wakes up still believing
//! it holds the lock, and its writes land after the next holder's: two leaders acting.
//! The lock itself was never violated; the TTL simply says nothing about the writes in
//! flight. (Kleppmann, "How to do distributed locking", makes this argument.)
//!
//! **`redis-fenced`** adds a fencing token: right after it acquires the lock, the holder
//! runs `INCR <key>:token` (the lock's token counter) and carries the result. The counter
//! only grows, so a later holder always has a higher token and the resource rejects the
//! woken holder. The `INCR` is a separate command after the `SET`, so the holder checks
//! its own lease deadline once it has the token: a holder stalled between the two past
//! its TTL might otherwise carry a token newer than its successor's.
//!
//! As in every Baton protocol, the node keeps its own lease deadline on its own clock
//! (the time just before it sent the `SET` or the last answered renewal, plus the TTL)
//! and stops acting when it passes, even if Redis never answers again.

use crate::clock::{sleep_local, Clock};
use crate::elector::{Elector, ElectorError, LeaderInfo};
use crate::leadership::{Leadership, LeaseHandle, LossReason};
use crate::safety::SafetyBounds;
use crate::NodeId;
use async_trait::async_trait;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The Redis docs' lock release script: delete the key only if it still holds our value.
pub const COMPARE_AND_DELETE_LUA: &str = "if redis.call(\"get\", KEYS[1]) == ARGV[1] then return redis.call(\"del\", KEYS[1]) else return 0 end";

/// The renewal script: extend the key's TTL only if it still holds our value.
pub const COMPARE_AND_EXTEND_LUA: &str = "if redis.call(\"get\", KEYS[1]) == ARGV[1] then return redis.call(\"pexpire\", KEYS[1], ARGV[2]) else return 0 end";

/// Why a Redis call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RedisError {
    /// No answer within the call's timeout (lost packets, partition, a paused server).
    Timeout,
    /// The server answered with an error (`ERR value is not an integer ...`).
    Server(String),
}

impl std::fmt::Display for RedisError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RedisError::Timeout => write!(f, "timed out"),
            RedisError::Server(m) => write!(f, "server error: {m}"),
        }
    }
}

/// The Redis commands the lock uses. Every call is bounded by a timeout inside the
/// implementation: a partitioned client must never wait forever.
#[async_trait]
pub trait RedisApi: Send + Sync {
    /// `SET key value NX PX ttl_ms`: true when the key was set, false when it exists.
    async fn set_nx_px(&self, key: &str, value: &str, ttl_ms: u64) -> Result<bool, RedisError>;
    /// `GET key`.
    async fn get(&self, key: &str) -> Result<Option<String>, RedisError>;
    /// `PEXPIRE key ttl_ms`: true when the key exists and its TTL was set.
    async fn pexpire(&self, key: &str, ttl_ms: u64) -> Result<bool, RedisError>;
    /// `EVAL` of [`COMPARE_AND_EXTEND_LUA`]: true when the key held `value` and was
    /// extended to `ttl_ms`.
    async fn compare_and_extend(
        &self,
        key: &str,
        value: &str,
        ttl_ms: u64,
    ) -> Result<bool, RedisError>;
    /// `EVAL` of [`COMPARE_AND_DELETE_LUA`]: true when the key held `value` and was
    /// deleted.
    async fn compare_and_delete(&self, key: &str, value: &str) -> Result<bool, RedisError>;
    /// `INCR key`: the value after the increment (a missing key counts as 0).
    async fn incr(&self, key: &str) -> Result<i64, RedisError>;
    /// `DEL key`: true when a key was deleted (whoever's value it held).
    async fn del(&self, key: &str) -> Result<bool, RedisError>;
}

/// Parameters of a Redis lock (a scenario's `[redis-naive]` or `[redis-fenced]` table).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RedisLockConfig {
    /// The lock's key; the fenced variant's token counter is `<key>:token`.
    pub key: String,
    /// The lock's TTL (`PX`). Redis has no default; the docs' example and Redisson's
    /// watchdog use 30 s.
    pub lock_ttl_ms: u64,
    /// How often the holder extends the lock. 0 means TTL / 3 (Redisson's watchdog).
    pub renew_interval_ms: u64,
    /// How long a candidate sleeps after finding the lock taken (redis-py: 100 ms).
    pub retry_interval_ms: u64,
    /// Timeout of every call to Redis (Jedis: 2 s).
    pub rpc_timeout_ms: u64,
    /// How the holder releases the lock: `compare-and-delete` (the docs' script) or
    /// `del` (a plain `DEL`, the bug: a holder whose lock expired deletes its
    /// successor's, and a third node takes it while the second still leads; redis-py's
    /// `Lock` before 3.0, redis-py#415 and #1031).
    pub release: Release,
    /// Whether the holder stops acting when its own deadline passes (the fix). `false`
    /// trusts the renewal loop (Redisson's watchdog): a failed renewal is only logged,
    /// and the holder acts on until a renewal that gets through finds the lock gone
    /// (redisson#4698, #5698).
    pub stop_at_deadline: bool,
    /// Whether the holder stops at its first renewal that fails (no answer within
    /// `rpc_timeout_ms`, or an error): a node on redis-py's `Lock` as its users write
    /// it, which extends with `reacquire()` and gives the lock up when that raises.
    /// redis-py's `lock.py` keeps no deadline of its own: set `stop_at_deadline = false`
    /// with it to model that node. A renewal that gets through and finds the lock gone
    /// ends the leadership either way.
    pub stop_at_failed_renewal: bool,
}

/// How a Redis lock is released (`release`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Release {
    /// The Redis docs' compare-and-delete script.
    #[default]
    CompareAndDelete,
    /// `DEL key`, whoever holds it (the bug).
    Del,
}

impl Default for RedisLockConfig {
    fn default() -> Self {
        RedisLockConfig {
            key: "baton:leader".to_string(),
            lock_ttl_ms: 30_000,
            renew_interval_ms: 0,
            retry_interval_ms: 100,
            rpc_timeout_ms: 2000,
            release: Release::CompareAndDelete,
            stop_at_deadline: true,
            stop_at_failed_renewal: false,
        }
    }
}

impl RedisLockConfig {
    /// What this protocol promises without the fence: its leader's deadline counts from before its
    /// request left, so it stops before the backend's grant ends while its clock is true
    /// and it is not paused; it keeps no margin beyond that (see
    /// [`SafetyBounds::LEASE_WITHOUT_MARGIN`]).
    pub fn safety_bounds(&self) -> SafetyBounds {
        SafetyBounds::LEASE_WITHOUT_MARGIN
    }

    /// The renew interval in force (TTL / 3 when not set).
    pub fn effective_renew_interval_ms(&self) -> u64 {
        if self.renew_interval_ms == 0 {
            (self.lock_ttl_ms / 3).max(1)
        } else {
            self.renew_interval_ms
        }
    }

    /// The key of the lock's fencing-token counter.
    pub fn token_key(&self) -> String {
        format!("{}:token", self.key)
    }
}

/// Which token a leadership carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fencing {
    /// `redis-naive`: no token; every leadership carries 0.
    None,
    /// `redis-fenced`: `INCR <key>:token` right after acquiring.
    IncrCounter,
}

/// The lock this node holds: the value it set and its lease.
struct Held {
    value: String,
    lease: LeaseHandle,
}

/// A Redis-lock elector for one node.
pub struct RedisLockElector {
    api: Arc<dyn RedisApi>,
    clock: Arc<dyn Clock>,
    cfg: RedisLockConfig,
    fencing: Fencing,
    node: NodeId,
    rng: Mutex<Box<dyn RngCore + Send>>,
    held: Mutex<Option<Held>>,
}

fn unavailable(e: RedisError) -> ElectorError {
    ElectorError::Unavailable(e.to_string())
}

impl RedisLockElector {
    /// An elector for `node` talking to Redis through `api`, reading time on `clock`,
    /// drawing lock values from `rng`.
    pub fn new(
        node: &NodeId,
        api: Arc<dyn RedisApi>,
        clock: Arc<dyn Clock>,
        cfg: RedisLockConfig,
        fencing: Fencing,
        rng: Box<dyn RngCore + Send>,
    ) -> Self {
        RedisLockElector {
            api,
            clock,
            cfg,
            fencing,
            node: node.clone(),
            rng: Mutex::new(rng),
            held: Mutex::new(None),
        }
    }

    /// A value unique to one acquisition, naming the node so `observe` can report it.
    fn fresh_value(&self) -> String {
        let bits = self.rng.lock().unwrap().next_u64();
        format!("{}:{bits:016x}", self.node)
    }

    /// Polls `SET NX PX` until it succeeds; returns the local time just before the
    /// successful request left, from which the lease deadline counts.
    async fn acquire(&self, value: &str) -> Result<i64, ElectorError> {
        let retry = Duration::from_millis(self.cfg.retry_interval_ms);
        loop {
            let sent_us = self.clock.now_us();
            match self
                .api
                .set_nx_px(&self.cfg.key, value, self.cfg.lock_ttl_ms)
                .await
            {
                Ok(true) => return Ok(sent_us),
                Ok(false) => sleep_local(self.clock.as_ref(), retry).await,
                Err(e) => {
                    // The SET may have landed with its answer lost: remove our value so the
                    // lock is not held by a node that does not know it holds it.
                    let _ = self.api.compare_and_delete(&self.cfg.key, value).await;
                    return Err(unavailable(e));
                }
            }
        }
    }
}

/// Extends the lock every renew interval until the lease is lost. Each renewal is its own
/// task, sent on schedule without waiting for the previous answer, so one lost answer
/// costs one renewal and not the cadence. An answered renewal extends the local deadline
/// to (time it was sent + TTL); `0` (the value is no longer ours) ends the lease; a
/// timed-out one extends nothing, so a partitioned holder's deadline runs out on its own,
/// or, with `stop_at_failed_renewal`, ends the lease at once.
fn spawn_renewals(
    api: Arc<dyn RedisApi>,
    clock: Arc<dyn Clock>,
    lease: LeaseHandle,
    value: String,
    cfg: &RedisLockConfig,
) {
    let (key, ttl_ms) = (cfg.key.clone(), cfg.lock_ttl_ms);
    let interval_ms = cfg.effective_renew_interval_ms();
    let stop_at_failure = cfg.stop_at_failed_renewal;
    madsim::task::spawn(async move {
        loop {
            if !lease
                .sleep_while_valid(clock.as_ref(), Duration::from_millis(interval_ms))
                .await
            {
                return;
            }
            let (api, clock, lease, key, value) = (
                api.clone(),
                clock.clone(),
                lease.clone(),
                key.clone(),
                value.clone(),
            );
            madsim::task::spawn(async move {
                let sent_us = clock.now_us();
                match api.compare_and_extend(&key, &value, ttl_ms).await {
                    Ok(true) => lease.extend_to(sent_us + ttl_ms as i64 * 1000),
                    Ok(false) => lease.end(LossReason::Revoked),
                    Err(_) if stop_at_failure => lease.end(LossReason::RenewalFailed),
                    Err(_) => {}
                }
            });
        }
    });
}

#[async_trait]
impl Elector for RedisLockElector {
    async fn campaign(&self) -> Result<Leadership, ElectorError> {
        let value = self.fresh_value();
        let sent_us = self.acquire(&value).await?;
        let ttl_ms = self.cfg.lock_ttl_ms;
        let lease = LeaseHandle::new(
            self.clock.clone(),
            sent_us + ttl_ms as i64 * 1000,
            self.cfg.stop_at_deadline,
        );
        *self.held.lock().unwrap() = Some(Held {
            value: value.clone(),
            lease: lease.clone(),
        });
        spawn_renewals(
            self.api.clone(),
            self.clock.clone(),
            lease.clone(),
            value.clone(),
            &self.cfg,
        );
        let token = match self.fencing {
            Fencing::None => Ok(0),
            Fencing::IncrCounter => self
                .api
                .incr(&self.cfg.token_key())
                .await
                .map(|t| t.max(0) as u64)
                .map_err(unavailable),
        };
        // A token drawn after our lease ran out may be newer than our successor's.
        let token = token.and_then(|t| {
            if lease.valid() {
                Ok(t)
            } else {
                Err(ElectorError::LeaseLost)
            }
        });
        match token {
            Ok(t) => Ok(lease.leadership(t)),
            Err(e) => {
                lease.end(LossReason::Revoked);
                *self.held.lock().unwrap() = None;
                let _ = self.api.compare_and_delete(&self.cfg.key, &value).await;
                Err(e)
            }
        }
    }

    async fn resign(&self, leadership: &Leadership) -> Result<(), ElectorError> {
        leadership.end(LossReason::Resigned);
        let held = self.held.lock().unwrap().take();
        if let Some(h) = held {
            h.lease.end(LossReason::Resigned);
            match self.cfg.release {
                Release::CompareAndDelete => self
                    .api
                    .compare_and_delete(&self.cfg.key, &h.value)
                    .await
                    .map_err(unavailable)?,
                Release::Del => self.api.del(&self.cfg.key).await.map_err(unavailable)?,
            };
        }
        Ok(())
    }

    async fn observe(&self) -> Result<Option<LeaderInfo>, ElectorError> {
        let Some(value) = self.api.get(&self.cfg.key).await.map_err(unavailable)? else {
            return Ok(None);
        };
        let node = NodeId::from(value.rsplit_once(':').map_or(value.as_str(), |(n, _)| n));
        let token = match self.fencing {
            Fencing::None => 0,
            Fencing::IncrCounter => self
                .api
                .get(&self.cfg.token_key())
                .await
                .map_err(unavailable)?
                .and_then(|t| t.parse().ok())
                .unwrap_or(0),
        };
        Ok(Some(LeaderInfo { node, token }))
    }
}
