//! `consul-session`: a Consul session with a TTL and a lock on a KV key, as the Go
//! client's `api.Lock` (`consul lock`) does it.
//!
//! Modelled on Consul's documented semantics (Consul docs "Sessions and distributed
//! locks overview", formerly "Sessions"; HTTP API docs "Session" and "KV Store"):
//! - a session is created with a TTL and `Behavior = release`. The TTL is a lower bound
//!   for invalidation: Consul will not invalidate the session before the TTL passes
//!   since its creation or last renewal, but may wait longer; the HTTP API docs warn
//!   sessions "may not be reaped for up to double this TTL" (Consul's server arms a
//!   timer of `SessionTTLMultiplier` = 2 x TTL). TTLs must lie between
//!   `session_ttl_min` (agent config, default 10 s) and 24 h;
//! - `PUT /v1/kv/<key>?acquire=<session>` takes the lock when no session holds the key
//!   and the key's lock-delay has passed; `?release=<session>` gives it up;
//! - when a session is invalidated (TTL, or destroyed) while it holds a key, the key is
//!   released (its `ModifyIndex` moves) and acquisitions of it are refused for the
//!   session's lock-delay (default 15 s), so that a holder that did not notice it lost
//!   the lock has time to stop before anyone else takes it;
//! - `GET /v1/kv/<key>?index=N&wait=W` is a blocking query: it returns once the key's
//!   index passes N, or after W.
//!
//! The recipe follows the Go client's `api.Lock` (`lock.go`, used by `consul lock`):
//! - it creates a session (`DefaultLockSessionTTL` = "15s", `Behavior = release`) and
//!   renews it with `RenewPeriodic`: every TTL / 2, retrying every 1 s after an error,
//!   giving up once the TTL has passed since the last renewal;
//! - it waits with a blocking GET (`DefaultLockWaitTime` = 15 s) while another session
//!   holds the key, then tries `acquire`; when that fails on a key nobody holds, a
//!   lock-delay is in force and it sleeps `DefaultLockRetryTime` (5 s) before trying
//!   again;
//! - once it holds the lock, `monitorLock` long-polls the key and reports the lock lost
//!   when another session (or none) holds it, or when a query fails (`MonitorRetries`,
//!   default 0, retries after `DefaultMonitorRetryTime` = 2 s);
//! - `Unlock` releases the key, then the session is destroyed.
//!
//! The fencing token is the key's `ModifyIndex` right after the acquisition: Consul's
//! Raft index, which only grows, so a later holder always carries a higher one. The Go
//! client does not read it; here the holder reads the key once after acquiring it.
//!
//! Like the etcd recipe, the node also keeps its own deadline on its own clock (the send
//! time of its last answered renewal + the TTL, the lower bound Consul promises) and
//! stops acting when it passes, even if the server never answers again.

use crate::clock::{sleep_local, Clock};
use crate::elector::{Elector, ElectorError, LeaderInfo};
use crate::leadership::{Leadership, LeaseHandle, LossReason};
use crate::safety::SafetyBounds;
use crate::NodeId;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a Consul blocking query waits when the caller names no `wait`: the monitor's
/// queries (Consul's `default_query_time`, 300 s).
pub const DEFAULT_QUERY_TIME_MS: u64 = 300_000;

/// `RenewPeriodic` waits this long after a failed renewal before the next try (1 s in
/// the Go client).
pub const RENEW_RETRY_MS: u64 = 1000;

/// Parameters of the consul-session protocol (a scenario's `[consul-session]` table).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConsulSessionConfig {
    /// The session TTL (Go client `DefaultLockSessionTTL`: 15 s).
    pub session_ttl_ms: u64,
    /// The session's lock-delay (Consul's default: 15 s; 0 disables it).
    pub lock_delay_ms: u64,
    /// How long one blocking query of a waiting candidate lasts (`DefaultLockWaitTime`:
    /// 15 s).
    pub lock_wait_time_ms: u64,
    /// How long a candidate sleeps after an acquisition refused by lock-delay
    /// (`DefaultLockRetryTime`: 5 s).
    pub lock_retry_time_ms: u64,
    /// How many failed monitor queries the holder rides out (`MonitorRetries`: 0).
    pub monitor_retries: u32,
    /// The pause between monitor retries (`DefaultMonitorRetryTime`: 2 s).
    pub monitor_retry_time_ms: u64,
    /// Timeout of every call to the agent, on top of a blocking query's wait.
    pub rpc_timeout_ms: u64,
    /// The lock's key.
    pub key: String,
    /// Server side: shortest TTL a session may have (agent config `session_ttl_min`,
    /// default 10 s); a shorter one is refused.
    pub session_ttl_min_ms: u64,
    /// Server side: how often the server looks for sessions past 2 x TTL on its own
    /// clock. Consul arms an exact timer per session; a periodic check invalidates up
    /// to this much later.
    pub ttl_check_interval_ms: u64,
}

impl Default for ConsulSessionConfig {
    fn default() -> Self {
        ConsulSessionConfig {
            session_ttl_ms: 15_000,
            lock_delay_ms: 15_000,
            lock_wait_time_ms: 15_000,
            lock_retry_time_ms: 5_000,
            monitor_retries: 0,
            monitor_retry_time_ms: 2_000,
            rpc_timeout_ms: 500,
            key: "service/baton/leader".to_string(),
            session_ttl_min_ms: 10_000,
            ttl_check_interval_ms: 100,
        }
    }
}

impl ConsulSessionConfig {
    /// What this protocol promises without the fence: its leader's deadline counts from before its
    /// request left, so it stops before the backend's grant ends while its clock is true
    /// and it is not paused; it keeps no margin beyond that (see
    /// [`SafetyBounds::LEASE_WITHOUT_MARGIN`]).
    pub fn safety_bounds(&self) -> SafetyBounds {
        SafetyBounds::LEASE_WITHOUT_MARGIN
    }

    /// How often the session is renewed: TTL / 2, as `RenewPeriodic`.
    pub fn renew_interval_ms(&self) -> u64 {
        (self.session_ttl_ms / 2).max(1)
    }
}

/// What `PUT /v1/session/create` asks for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRequest {
    /// A name, for operators (the Go client: "Consul API Lock").
    pub name: String,
    /// The TTL.
    pub ttl_ms: u64,
    /// The lock-delay applied to keys the session holds when it is invalidated.
    pub lock_delay_ms: u64,
}

/// A KV entry as `GET /v1/kv/<key>` returns it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvPair {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
    /// The session holding the lock, empty when none.
    pub session: String,
    /// Raft index of the key's creation.
    pub create_index: u64,
    /// Raft index of the key's last change (a put, an acquisition, a release).
    pub modify_index: u64,
    /// How many times the key was acquired.
    pub lock_index: u64,
}

/// The answer to a KV read: the entry, if any, and the index to block on next
/// (`X-Consul-Index`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvRead {
    /// The entry, `None` when the key does not exist.
    pub pair: Option<KvPair>,
    /// The index of the result.
    pub index: u64,
}

/// Why a Consul call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConsulError {
    /// No answer within the call's timeout.
    Timeout,
    /// The agent answered with an error (HTTP 4xx/5xx), with its message.
    Server(String),
}

impl std::fmt::Display for ConsulError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConsulError::Timeout => write!(f, "timed out"),
            ConsulError::Server(m) => write!(f, "server error: {m}"),
        }
    }
}

/// The Consul HTTP API calls the lock recipe uses. Every call is bounded by a timeout
/// inside the implementation (for a blocking query: its wait plus the timeout).
#[async_trait]
pub trait ConsulApi: Send + Sync {
    /// `PUT /v1/session/create`: the new session's ID.
    async fn session_create(&self, req: SessionRequest) -> Result<String, ConsulError>;
    /// `PUT /v1/session/renew/<id>`: the TTL in force, `None` when the session is gone
    /// (HTTP 404).
    async fn session_renew(&self, id: &str) -> Result<Option<u64>, ConsulError>;
    /// `PUT /v1/session/destroy/<id>`.
    async fn session_destroy(&self, id: &str) -> Result<(), ConsulError>;
    /// `GET /v1/kv/<key>`; with `index > 0`, a blocking query that waits up to
    /// `wait_ms` for the key's index to pass `index`.
    async fn kv_get(&self, key: &str, index: u64, wait_ms: u64) -> Result<KvRead, ConsulError>;
    /// `PUT /v1/kv/<key>?acquire=<session>` with `value`: whether the lock was taken.
    async fn kv_acquire(&self, key: &str, value: &str, session: &str) -> Result<bool, ConsulError>;
    /// `PUT /v1/kv/<key>?release=<session>`: whether the session held it.
    async fn kv_release(&self, key: &str, session: &str) -> Result<bool, ConsulError>;
}

/// A consul-session elector for one node.
pub struct ConsulSessionElector {
    api: Arc<dyn ConsulApi>,
    clock: Arc<dyn Clock>,
    cfg: ConsulSessionConfig,
    node: NodeId,
    /// The session of the current campaign or leadership.
    session: Mutex<Option<Session>>,
}

#[derive(Clone)]
struct Session {
    id: String,
    lease: LeaseHandle,
}

fn unavailable(e: ConsulError) -> ElectorError {
    ElectorError::Unavailable(e.to_string())
}

impl ConsulSessionElector {
    /// An elector for `node` talking to Consul through `api`, reading time on `clock`.
    pub fn new(
        node: &NodeId,
        api: Arc<dyn ConsulApi>,
        clock: Arc<dyn Clock>,
        cfg: ConsulSessionConfig,
    ) -> Self {
        ConsulSessionElector {
            api,
            clock,
            cfg,
            node: node.clone(),
            session: Mutex::new(None),
        }
    }

    /// Creates a session and starts renewing it; the handle ends when it is lost.
    async fn open_session(&self) -> Result<Session, ElectorError> {
        // The TTL runs at the server from when it created the session, which is after
        // this instant: counting from here keeps the local deadline conservative.
        let sent_us = self.clock.now_us();
        let id = self
            .api
            .session_create(SessionRequest {
                name: "Consul API Lock".to_string(),
                ttl_ms: self.cfg.session_ttl_ms,
                lock_delay_ms: self.cfg.lock_delay_ms,
            })
            .await
            .map_err(unavailable)?;
        let lease = LeaseHandle::new(
            self.clock.clone(),
            sent_us + self.cfg.session_ttl_ms as i64 * 1000,
            true,
        );
        spawn_renew(
            self.api.clone(),
            self.clock.clone(),
            lease.clone(),
            id.clone(),
            self.cfg.session_ttl_ms,
        );
        Ok(Session { id, lease })
    }

    /// Best effort, as `Unlock` then the end of `RenewPeriodic`: release the key (so no
    /// lock-delay applies) and destroy the session.
    async fn close_session(&self, s: &Session) {
        let _ = self.api.kv_release(&self.cfg.key, &s.id).await;
        let _ = self.api.session_destroy(&s.id).await;
    }

    /// `Lock`'s acquisition loop: wait while another session holds the key, try to
    /// acquire, and back off while a lock-delay is in force. Returns the token.
    async fn acquire(&self, s: &Session) -> Result<u64, ElectorError> {
        let key = &self.cfg.key;
        let mut index = 0;
        loop {
            if !s.lease.valid() {
                return Err(ElectorError::LeaseLost);
            }
            let read = self
                .api
                .kv_get(key, index, self.cfg.lock_wait_time_ms)
                .await
                .map_err(unavailable)?;
            let held = read.pair.as_ref().is_some_and(|p| !p.session.is_empty());
            if held && read.pair.as_ref().map(|p| p.session.as_str()) != Some(s.id.as_str()) {
                index = read.index;
                continue;
            }
            if !held {
                let locked = self
                    .api
                    .kv_acquire(key, self.node.as_str(), &s.id)
                    .await
                    .map_err(unavailable)?;
                if !locked {
                    // Why not? If someone holds it, long-poll again; if nobody does, a
                    // lock-delay is in force and only a timed wait helps.
                    let read = self.api.kv_get(key, 0, 0).await.map_err(unavailable)?;
                    if read.pair.as_ref().is_some_and(|p| !p.session.is_empty()) {
                        index = read.index;
                    } else {
                        sleep_local(
                            self.clock.as_ref(),
                            Duration::from_millis(self.cfg.lock_retry_time_ms),
                        )
                        .await;
                        index = 0;
                    }
                    continue;
                }
            }
            // Held by us: read the index the acquisition wrote, the fencing token.
            let read = self.api.kv_get(key, 0, 0).await.map_err(unavailable)?;
            return match read.pair {
                Some(p) if p.session == s.id => Ok(p.modify_index),
                _ => Err(ElectorError::LeaseLost),
            };
        }
    }
}

/// `RenewPeriodic`: renew every TTL / 2; after an error, retry every second. A renewal
/// extends the local deadline to (send time + TTL granted); an unanswered one extends
/// nothing, so a cut-off node's deadline runs out on its own clock. A renewal the server
/// answers with "no such session" ends the lease.
fn spawn_renew(
    api: Arc<dyn ConsulApi>,
    clock: Arc<dyn Clock>,
    lease: LeaseHandle,
    id: String,
    ttl_ms: u64,
) {
    madsim::task::spawn(async move {
        let mut wait_ms = (ttl_ms / 2).max(1);
        loop {
            if !lease
                .sleep_while_valid(clock.as_ref(), Duration::from_millis(wait_ms))
                .await
            {
                return;
            }
            let sent_us = clock.now_us();
            match api.session_renew(&id).await {
                Ok(Some(ttl_ms)) => {
                    // The server may answer with a longer TTL; renew at half of it.
                    lease.extend_to(sent_us + ttl_ms as i64 * 1000);
                    wait_ms = (ttl_ms / 2).max(1);
                }
                Ok(None) => {
                    lease.end(LossReason::Revoked);
                    return;
                }
                Err(_) => wait_ms = RENEW_RETRY_MS,
            }
        }
    });
}

/// `monitorLock`: long-poll the key while this session holds it; the lock is lost when
/// another session (or none) holds it, or when a query fails beyond `monitor_retries`.
fn spawn_monitor(
    api: Arc<dyn ConsulApi>,
    clock: Arc<dyn Clock>,
    lease: LeaseHandle,
    key: String,
    session: String,
    cfg: ConsulSessionConfig,
) {
    madsim::task::spawn(async move {
        let mut index = 0;
        let mut retries = cfg.monitor_retries;
        loop {
            let read = tokio::select! {
                // Biased: tokio would otherwise pick among ready branches with its own RNG, which
                // madsim does not seed; polling in written order keeps runs deterministic.
                biased;
                _ = lease.expired() => return,
                r = api.kv_get(&key, index, DEFAULT_QUERY_TIME_MS) => r,
            };
            match read {
                Ok(r) if r.pair.as_ref().is_some_and(|p| p.session == session) => {
                    index = r.index;
                    retries = cfg.monitor_retries;
                }
                Ok(_) => {
                    lease.end(LossReason::Revoked);
                    return;
                }
                Err(_) if retries > 0 => {
                    retries -= 1;
                    index = 0;
                    sleep_local(
                        clock.as_ref(),
                        Duration::from_millis(cfg.monitor_retry_time_ms),
                    )
                    .await;
                }
                Err(_) => {
                    // The Go client closes the leader channel on a failed monitor query:
                    // it can no longer vouch for the lock.
                    lease.end(LossReason::Revoked);
                    return;
                }
            }
        }
    });
}

#[async_trait]
impl Elector for ConsulSessionElector {
    async fn campaign(&self) -> Result<Leadership, ElectorError> {
        let s = self.open_session().await?;
        *self.session.lock().unwrap() = Some(s.clone());
        let result = self.acquire(&s).await;
        match result {
            Ok(token) if s.lease.valid() => {
                spawn_monitor(
                    self.api.clone(),
                    self.clock.clone(),
                    s.lease.clone(),
                    self.cfg.key.clone(),
                    s.id.clone(),
                    self.cfg.clone(),
                );
                Ok(s.lease.leadership(token))
            }
            other => {
                s.lease.end(LossReason::Revoked);
                self.close_session(&s).await;
                *self.session.lock().unwrap() = None;
                Err(other.err().unwrap_or(ElectorError::LeaseLost))
            }
        }
    }

    async fn resign(&self, leadership: &Leadership) -> Result<(), ElectorError> {
        leadership.end(LossReason::Resigned);
        let s = self.session.lock().unwrap().take();
        if let Some(s) = s {
            self.close_session(&s).await;
        }
        Ok(())
    }

    async fn observe(&self) -> Result<Option<LeaderInfo>, ElectorError> {
        let read = self
            .api
            .kv_get(&self.cfg.key, 0, 0)
            .await
            .map_err(unavailable)?;
        Ok(read
            .pair
            .filter(|p| !p.session.is_empty())
            .map(|p| LeaderInfo {
                node: NodeId::from(p.value),
                token: p.modify_index,
            }))
    }
}
