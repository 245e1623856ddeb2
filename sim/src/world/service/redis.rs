//! A single Redis instance, as one simulated node: string keys with per-key expiry.
//!
//! Modelled on Redis's semantics, not its implementation:
//! - keys hold strings; `SET ... NX PX`, `GET`, `PEXPIRE`, `INCR` and two `EVAL` scripts
//!   (compare-and-extend, compare-and-delete), each atomic, as Redis runs one command or
//!   script at a time;
//! - a key's expiry is judged on the server's own clock: an expired key is gone for every
//!   command that touches it (Redis's passive expiry on access), and an active cycle
//!   deletes expired keys nobody touches every 100 ms (Redis's `hz 10`), which only
//!   decides when the timeline sees the key go.
//!
//! Not modelled: replication and failover (a replica promoted without the lock is the
//! other classic way to lose it), persistence, eviction.

use crate::world::clock::NodeClock;
use crate::world::net::Endpoint;
use crate::world::rpc::{request, BACKEND_ADDR};
use crate::world::timeline::{Event, Timeline};
use baton_protocols::{sleep_local, Clock};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

// The requests this service answers: it declares them, and its client
// (`crate::world::protocol::redis_lock`) sends them.

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

/// `DEL key`; true when a key was deleted.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RedisDel {
    /// The key.
    pub key: String,
}
request!(RedisDel => bool);

/// `INCR key`; the server's error when the value is not an integer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RedisIncr {
    /// The key.
    pub key: String,
}
request!(RedisIncr => Result<i64, RedisServerError>);

/// Redis's error replies, worded as Redis words them (its client shows the words, as a
/// live Redis's client does).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum RedisServerError {
    /// `INCR` of a value that is not an integer.
    #[error("ERR value is not an integer or out of range")]
    NotAnInteger,
    /// `INCR` past `i64::MAX`.
    #[error("ERR increment or decrement would overflow")]
    Overflow,
}

/// Redis's active expiry runs `hz` times a second; `hz` defaults to 10.
const ACTIVE_EXPIRE_CYCLE_MS: u64 = 100;

struct Entry {
    value: String,
    /// Server-clock microseconds at which the key expires; `None`: it never does.
    expires_at_us: Option<i64>,
}

struct Service {
    keys: Mutex<BTreeMap<String, Entry>>,
    clock: NodeClock,
    timeline: Timeline,
}

/// Runs the Redis instance on the current node until the node is killed.
///
/// `requests` counts every request served (the backend load a protocol puts on it).
pub async fn serve(
    timeline: Timeline,
    clock: NodeClock,
    requests: Arc<crate::world::requests::RequestCounter>,
) {
    let ep = Endpoint::bind(BACKEND_ADDR).expect("backend address is free");
    let svc = Arc::new(Service {
        keys: Mutex::new(BTreeMap::new()),
        clock,
        timeline,
    });
    let (s, n) = (svc.clone(), requests.clone());
    ep.add_rpc_handler(move |r: RedisSetNxPx| {
        n.fetch_add(1, Ordering::Relaxed);
        let out = s.set_nx_px(r.key, r.value, r.ttl_ms);
        async move { out }
    });
    let (s, n) = (svc.clone(), requests.clone());
    ep.add_rpc_handler(move |r: RedisGet| {
        n.fetch_add(1, Ordering::Relaxed);
        let out = s.get(&r.key);
        async move { out }
    });
    let (s, n) = (svc.clone(), requests.clone());
    ep.add_rpc_handler(move |r: RedisPexpire| {
        n.fetch_add(1, Ordering::Relaxed);
        let out = s.pexpire(&r.key, r.ttl_ms);
        async move { out }
    });
    let (s, n) = (svc.clone(), requests.clone());
    ep.add_rpc_handler(move |r: RedisEvalExtend| {
        n.fetch_add(1, Ordering::Relaxed);
        let out = s.compare_and_extend(&r.key, &r.value, r.ttl_ms);
        async move { out }
    });
    let (s, n) = (svc.clone(), requests.clone());
    ep.add_rpc_handler(move |r: RedisEvalDelete| {
        n.fetch_add(1, Ordering::Relaxed);
        let out = s.compare_and_delete(&r.key, &r.value);
        async move { out }
    });
    let (s, n) = (svc.clone(), requests.clone());
    ep.add_rpc_handler(move |r: RedisDel| {
        n.fetch_add(1, Ordering::Relaxed);
        let out = s.del(&r.key);
        async move { out }
    });
    let (s, n) = (svc.clone(), requests);
    ep.add_rpc_handler(move |r: RedisIncr| {
        n.fetch_add(1, Ordering::Relaxed);
        let out = s.incr(&r.key);
        async move { out }
    });
    let cycle = Duration::from_millis(ACTIVE_EXPIRE_CYCLE_MS);
    loop {
        sleep_local(&svc.clock, cycle).await;
        svc.active_expire();
    }
}

impl Service {
    /// Passive expiry: drops `key` if its time has come, as Redis does on every access.
    fn expire_if_due(&self, keys: &mut BTreeMap<String, Entry>, key: &str) {
        let now = self.clock.now_us();
        if keys
            .get(key)
            .and_then(|e| e.expires_at_us)
            .is_some_and(|at| at <= now)
        {
            self.remove(keys, key, "expired");
        }
    }

    /// Removes `key` and records it.
    ///
    /// Timeline only: a Redis key has no create revision, but the election-latency
    /// checker pairs a vacancy with the previous holder's token. For a lock `k` that is
    /// the client's token counter `k:token` where it keeps one (`redis-fenced`), and 0
    /// otherwise (`redis-naive`'s token).
    fn remove(&self, keys: &mut BTreeMap<String, Entry>, key: &str, cause: &str) -> bool {
        if keys.remove(key).is_none() {
            return false;
        }
        let token = keys
            .get(&format!("{key}:token"))
            .and_then(|e| e.value.parse::<i64>().ok())
            .unwrap_or(0);
        self.timeline.record(Event::KeyDeleted {
            key: key.to_string(),
            create_revision: token,
            cause: cause.to_string(),
        });
        true
    }

    fn active_expire(&self) {
        let now = self.clock.now_us();
        let mut keys = self.keys.lock().unwrap();
        let due: Vec<String> = keys
            .iter()
            .filter(|(_, e)| e.expires_at_us.is_some_and(|at| at <= now))
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            self.remove(&mut keys, &key, "expired");
        }
    }

    fn set_nx_px(&self, key: String, value: String, ttl_ms: u64) -> bool {
        let mut keys = self.keys.lock().unwrap();
        self.expire_if_due(&mut keys, &key);
        if keys.contains_key(&key) {
            return false;
        }
        let expires_at_us = Some(self.clock.now_us() + ttl_ms as i64 * 1000);
        keys.insert(
            key,
            Entry {
                value,
                expires_at_us,
            },
        );
        true
    }

    fn get(&self, key: &str) -> Option<String> {
        let mut keys = self.keys.lock().unwrap();
        self.expire_if_due(&mut keys, key);
        keys.get(key).map(|e| e.value.clone())
    }

    fn pexpire(&self, key: &str, ttl_ms: u64) -> bool {
        let mut keys = self.keys.lock().unwrap();
        self.pexpire_locked(&mut keys, key, ttl_ms)
    }

    fn pexpire_locked(&self, keys: &mut BTreeMap<String, Entry>, key: &str, ttl_ms: u64) -> bool {
        self.expire_if_due(keys, key);
        let now = self.clock.now_us();
        match keys.get_mut(key) {
            Some(e) => {
                e.expires_at_us = Some(now + ttl_ms as i64 * 1000);
                true
            }
            None => false,
        }
    }

    fn holds(&self, keys: &mut BTreeMap<String, Entry>, key: &str, value: &str) -> bool {
        self.expire_if_due(keys, key);
        keys.get(key).is_some_and(|e| e.value == value)
    }

    /// The renewal script, `if GET(key) == value then PEXPIRE(key, ttl)`: one lock held
    /// throughout, as Redis runs a script with nothing interleaved.
    fn compare_and_extend(&self, key: &str, value: &str, ttl_ms: u64) -> bool {
        let mut keys = self.keys.lock().unwrap();
        self.holds(&mut keys, key, value) && self.pexpire_locked(&mut keys, key, ttl_ms)
    }

    /// The release script, `if GET(key) == value then DEL(key)`, atomically.
    fn compare_and_delete(&self, key: &str, value: &str) -> bool {
        let mut keys = self.keys.lock().unwrap();
        self.holds(&mut keys, key, value) && self.remove(&mut keys, key, "deleted")
    }

    /// `DEL key`, whatever it holds.
    fn del(&self, key: &str) -> bool {
        let mut keys = self.keys.lock().unwrap();
        self.expire_if_due(&mut keys, key);
        keys.contains_key(key) && self.remove(&mut keys, key, "deleted")
    }

    fn incr(&self, key: &str) -> Result<i64, RedisServerError> {
        let mut keys = self.keys.lock().unwrap();
        self.expire_if_due(&mut keys, key);
        let entry = keys.entry(key.to_string()).or_insert(Entry {
            value: "0".into(),
            expires_at_us: None,
        });
        let n: i64 = entry
            .value
            .parse()
            .map_err(|_| RedisServerError::NotAnInteger)?;
        let n = n.checked_add(1).ok_or(RedisServerError::Overflow)?;
        // INCR keeps the key's TTL, as Redis does.
        entry.value = n.to_string();
        Ok(n)
    }
}
