//! A Consul-like server: sessions with TTLs, and KV locks with lock-delay, as one
//! simulated node.
//!
//! Modelled on Consul's semantics (Consul docs "Sessions and distributed locks
//! overview"; HTTP API docs "Session" and "KV Store"), not its implementation:
//! - one Raft `index`, bumped by every write (session create and destroy, acquire,
//!   release); keys carry `CreateIndex`, `ModifyIndex` and `LockIndex`. Renewals do not
//!   go through Raft in Consul and do not bump it here;
//! - a session's TTL is a lower bound: the server invalidates a session whose last
//!   renewal (or creation) is older than 2 x TTL on its own clock (Consul's
//!   `SessionTTLMultiplier` = 2; the HTTP API docs: sessions "may not be reaped for up
//!   to double this TTL"). Consul arms a timer per session; this server looks every
//!   `ttl_check_interval_ms` instead, so it may invalidate up to that much later;
//! - TTLs outside [`session_ttl_min`, 24 h] are refused (`session_ttl_min`: agent
//!   config, 10 s by default);
//! - invalidation (TTL or destroy) releases every key the session holds (`Behavior =
//!   release`), moving their `ModifyIndex`, and for each sets a lock-delay: acquiring
//!   the key is refused until the session's lock-delay has passed on the server's clock.
//!   A release by the holder sets none;
//! - a GET with `index > 0` is a blocking query: it answers once the key's index passes
//!   `index`, or after `wait_ms` on the server's clock.
//!
//! Not modelled: a multi-server cluster (leader changes, which also reset TTL timers),
//! health checks bound to sessions (the recipe uses TTL-only sessions, as `consul lock`
//! does), the `delete` behavior, and the random wait/16 jitter Consul adds to blocking
//! queries.

use crate::world::clock::NodeClock;
use crate::world::net::Endpoint;
use crate::world::rpc::{request, BACKEND_ADDR};
use crate::world::timeline::{Event, Timeline};
use baton_protocols::consul_session::{KvPair, KvRead, SessionRequest};
use baton_protocols::{sleep_local, Clock};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

pub use baton_model::protocol::consul_session::MAX_TTL_MS;

// The requests this service answers: it declares them, and its client
// (`crate::world::protocol::consul_session`) sends them.

/// `PUT /v1/session/create`; an error message when the TTL is out of range.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConsulSessionCreate {
    /// Who asks (for the timeline).
    pub node: baton_model::NodeId,
    /// The session asked for.
    pub req: SessionRequest,
}
request!(ConsulSessionCreate => Result<String, ConsulServerError>);

/// Consul's error answers, worded as Consul words them (its client shows the words, as
/// a live Consul's client does).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum ConsulServerError {
    /// A session TTL out of Consul's range (Go durations, as Consul names them).
    #[error("Invalid Session TTL '{ttl}', must be between [{min}=24h0m0s]")]
    InvalidTtl {
        /// The TTL asked for.
        ttl: String,
        /// The server's smallest.
        min: String,
    },
    /// A lock taken under a session that does not exist.
    #[error("invalid session \"{0}\"")]
    InvalidSession(String),
}

/// `PUT /v1/session/renew/<id>`: the TTL in force, `None` when the session is gone.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConsulSessionRenew {
    /// The session.
    pub id: String,
}
request!(ConsulSessionRenew => Option<u64>);

/// `PUT /v1/session/destroy/<id>`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConsulSessionDestroy {
    /// The session.
    pub id: String,
}
request!(ConsulSessionDestroy => ());

/// `GET /v1/kv/<key>?index=<index>&wait=<wait_ms>`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConsulKvGet {
    /// The key.
    pub key: String,
    /// Block until the key's index passes this (0: answer at once).
    pub index: u64,
    /// Block at most this long (server clock).
    pub wait_ms: u64,
}
request!(ConsulKvGet => KvRead);

/// `PUT /v1/kv/<key>?acquire=<session>`; an error message for an unknown session.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConsulKvAcquire {
    /// The key.
    pub key: String,
    /// The value written with the lock.
    pub value: String,
    /// The session taking the lock.
    pub session: String,
}
request!(ConsulKvAcquire => Result<bool, ConsulServerError>);

/// `PUT /v1/kv/<key>?release=<session>`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConsulKvRelease {
    /// The key.
    pub key: String,
    /// The session giving the lock up.
    pub session: String,
}
request!(ConsulKvRelease => Result<bool, ConsulServerError>);

/// Consul's `SessionTTLMultiplier`: a session is invalidated once 2 x TTL passed
/// without a renewal.
pub const SESSION_TTL_MULTIPLIER: i64 = 2;

/// The server's own settings.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Shortest TTL accepted (`session_ttl_min`).
    pub session_ttl_min_ms: u64,
    /// How often the server looks for sessions past 2 x TTL.
    pub ttl_check_interval_ms: u64,
}

struct SessionState {
    /// The number behind the ID, for the timeline.
    num: i64,
    ttl_ms: u64,
    lock_delay_ms: u64,
    /// Server clock at creation or the last renewal.
    renewed_at_us: i64,
}

#[derive(Default)]
struct Store {
    /// The Raft index.
    index: u64,
    /// The index of the last change to the KV table (what a read of a missing key
    /// reports).
    kv_index: u64,
    next_session: i64,
    sessions: BTreeMap<String, SessionState>,
    kv: BTreeMap<String, KvPair>,
    /// Per key: the `ModifyIndex` its current holder's acquisition wrote (its token).
    acquired_at: BTreeMap<String, u64>,
    /// Per key: acquisitions are refused until this server-clock time.
    lock_delay_until_us: BTreeMap<String, i64>,
}

struct Service {
    store: Mutex<Store>,
    clock: NodeClock,
    timeline: Timeline,
    settings: Settings,
    requests: Arc<crate::world::requests::RequestCounter>,
    changed: Notify,
}

/// Runs the Consul-like server on the current node until the node is killed.
///
/// `requests` counts every request served.
pub async fn serve(
    timeline: Timeline,
    clock: NodeClock,
    requests: Arc<crate::world::requests::RequestCounter>,
    settings: Settings,
) {
    let ep = Endpoint::bind(BACKEND_ADDR).expect("backend address is free");
    let svc = Arc::new(Service {
        store: Mutex::new(Store {
            index: 1,
            kv_index: 1,
            next_session: 1,
            ..Default::default()
        }),
        clock,
        timeline,
        settings,
        requests,
        changed: Notify::new(),
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: ConsulSessionCreate| {
        s.requests.fetch_add(1, Ordering::Relaxed);
        let out = s.session_create(&r.node, &r.req);
        async move { out }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: ConsulSessionRenew| {
        s.requests.fetch_add(1, Ordering::Relaxed);
        let out = s.session_renew(&r.id);
        async move { out }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: ConsulSessionDestroy| {
        s.requests.fetch_add(1, Ordering::Relaxed);
        s.invalidate(&r.id, "destroyed");
        async move {}
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: ConsulKvAcquire| {
        s.requests.fetch_add(1, Ordering::Relaxed);
        let out = s.acquire(&r.key, &r.value, &r.session);
        async move { out }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: ConsulKvRelease| {
        s.requests.fetch_add(1, Ordering::Relaxed);
        let out = s.release(&r.key, &r.session);
        async move { out }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: ConsulKvGet| {
        s.requests.fetch_add(1, Ordering::Relaxed);
        let s = s.clone();
        async move { s.get(r).await }
    });
    // The session reaper, on the server's own clock.
    let interval = Duration::from_millis(svc.settings.ttl_check_interval_ms);
    loop {
        sleep_local(&svc.clock, interval).await;
        svc.reap();
    }
}

/// Consul's TTLs are Go durations; its error message names them so.
fn go_duration(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

impl Service {
    fn session_create(
        &self,
        node: &str,
        req: &SessionRequest,
    ) -> Result<String, ConsulServerError> {
        let min = self.settings.session_ttl_min_ms;
        if req.ttl_ms < min || req.ttl_ms > MAX_TTL_MS {
            return Err(ConsulServerError::InvalidTtl {
                ttl: go_duration(req.ttl_ms),
                min: go_duration(min),
            });
        }
        let now = self.clock.now_us();
        let mut st = self.store.lock().unwrap();
        st.index += 1;
        let num = st.next_session;
        st.next_session += 1;
        // Consul's IDs are UUIDs; a counter in UUID form keeps runs reproducible.
        let id = format!("00000000-0000-4000-8000-{num:012x}");
        st.sessions.insert(
            id.clone(),
            SessionState {
                num,
                ttl_ms: req.ttl_ms,
                lock_delay_ms: req.lock_delay_ms,
                renewed_at_us: now,
            },
        );
        self.timeline.record(Event::LeaseGranted {
            node: node.into(),
            lease_id: num,
            ttl_requested_ms: req.ttl_ms,
            ttl_granted_ms: req.ttl_ms,
        });
        Ok(id)
    }

    fn session_renew(&self, id: &str) -> Option<u64> {
        let now = self.clock.now_us();
        let mut st = self.store.lock().unwrap();
        let s = st.sessions.get_mut(id)?;
        s.renewed_at_us = now;
        Some(s.ttl_ms)
    }

    /// Invalidates every session whose last renewal is older than 2 x TTL.
    fn reap(&self) {
        let now = self.clock.now_us();
        let expired: Vec<String> = {
            let st = self.store.lock().unwrap();
            st.sessions
                .iter()
                .filter(|(_, s)| {
                    now - s.renewed_at_us >= SESSION_TTL_MULTIPLIER * s.ttl_ms as i64 * 1000
                })
                .map(|(id, _)| id.clone())
                .collect()
        };
        for id in expired {
            self.invalidate(&id, "expired");
        }
    }

    /// Ends a session: release its keys, each under lock-delay, in one Raft write.
    fn invalidate(&self, id: &str, cause: &str) {
        let now = self.clock.now_us();
        let mut st = self.store.lock().unwrap();
        let Some(session) = st.sessions.remove(id) else {
            return;
        };
        st.index += 1;
        let index = st.index;
        self.timeline.record(if cause == "expired" {
            Event::LeaseExpired {
                lease_id: session.num,
            }
        } else {
            Event::LeaseRevoked {
                lease_id: session.num,
            }
        });
        let held: Vec<String> = st
            .kv
            .iter()
            .filter(|(_, p)| p.session == id)
            .map(|(k, _)| k.clone())
            .collect();
        for key in held {
            Self::unlock(&mut st, &self.timeline, &key, index, cause);
            if session.lock_delay_ms > 0 {
                st.lock_delay_until_us
                    .insert(key, now + session.lock_delay_ms as i64 * 1000);
            }
        }
        drop(st);
        self.changed.notify_waiters();
    }

    /// Clears the key's holder at `index`.
    fn unlock(st: &mut Store, timeline: &Timeline, key: &str, index: u64, cause: &str) {
        let Some(p) = st.kv.get_mut(key) else {
            return;
        };
        p.session.clear();
        p.modify_index = index;
        st.kv_index = index;
        let token = st.acquired_at.remove(key).unwrap_or(0);
        timeline.record(Event::SeatVacated {
            key: key.to_string(),
            token,
            cause: cause.to_string(),
        });
    }

    fn acquire(&self, key: &str, value: &str, session: &str) -> Result<bool, ConsulServerError> {
        let now = self.clock.now_us();
        let mut st = self.store.lock().unwrap();
        if !st.sessions.contains_key(session) {
            return Err(ConsulServerError::InvalidSession(session.to_string()));
        }
        // Consul's KV endpoint refuses a lock under lock-delay before it reaches Raft.
        if st.lock_delay_until_us.get(key).is_some_and(|t| *t > now) {
            return Ok(false);
        }
        let existing = st.kv.get(key).cloned();
        if existing
            .as_ref()
            .is_some_and(|p| !p.session.is_empty() && p.session != session)
        {
            return Ok(false);
        }
        st.index += 1;
        let index = st.index;
        let pair = match existing {
            // The holder acquiring again only updates the value.
            Some(p) if p.session == session => KvPair {
                value: value.to_string(),
                modify_index: index,
                ..p
            },
            Some(p) => KvPair {
                value: value.to_string(),
                session: session.to_string(),
                modify_index: index,
                lock_index: p.lock_index + 1,
                ..p
            },
            None => KvPair {
                key: key.to_string(),
                value: value.to_string(),
                session: session.to_string(),
                create_index: index,
                modify_index: index,
                lock_index: 1,
            },
        };
        st.kv.insert(key.to_string(), pair);
        st.kv_index = index;
        st.acquired_at.entry(key.to_string()).or_insert(index);
        drop(st);
        self.changed.notify_waiters();
        Ok(true)
    }

    fn release(&self, key: &str, session: &str) -> Result<bool, ConsulServerError> {
        let mut st = self.store.lock().unwrap();
        if st.kv.get(key).map(|p| p.session.as_str()) != Some(session) {
            return Ok(false);
        }
        st.index += 1;
        let index = st.index;
        Self::unlock(&mut st, &self.timeline, key, index, "released");
        drop(st);
        self.changed.notify_waiters();
        Ok(true)
    }

    fn read(&self, key: &str) -> KvRead {
        let st = self.store.lock().unwrap();
        let pair = st.kv.get(key).cloned();
        let index = pair.as_ref().map_or(st.kv_index, |p| p.modify_index).max(1);
        KvRead { pair, index }
    }

    async fn get(&self, r: ConsulKvGet) -> KvRead {
        let deadline = self.clock.now_us() + r.wait_ms as i64 * 1000;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let read = self.read(&r.key);
            let now = self.clock.now_us();
            if r.index == 0 || read.index > r.index || now >= deadline {
                return read;
            }
            let left = Duration::from_micros((deadline - now) as u64);
            tokio::select! {
                // Biased: tokio would otherwise pick among ready branches with its own RNG, which
                // madsim does not seed; polling in written order keeps runs deterministic.
                biased;
                _ = notified => {}
                _ = sleep_local(&self.clock, left) => {}
            }
        }
    }
}
