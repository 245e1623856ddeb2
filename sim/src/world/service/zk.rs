//! A ZooKeeper-like coordination service, as one simulated node standing for an ensemble.
//!
//! Modelled on ZooKeeper's semantics, not its implementation:
//! - one global `zxid`, bumped once per write transaction (createSession, create,
//!   delete, closeSession and a session's expiry with all its ephemerals); every znode
//!   records the zxid that created it (`czxid`);
//! - sessions are judged on the service's own clock: the session tracker wakes once per
//!   `tickTime` and expires every session not heard from for its negotiated timeout
//!   (ZooKeeper rounds expiry up to the next tick the same way), deleting its ephemeral
//!   znodes; any request on a session counts as hearing from it (`touchSession`);
//! - a session timeout is negotiated into `[min, max]` (2 and 20 x tickTime by default);
//! - a sequential znode's name gets the parent's child-version counter (`cversion`,
//!   bumped by every child create and delete) as a 10-digit suffix;
//! - `exists` with a watch is a long poll that returns when the znode is deleted.
//!
//! Not modelled: the ensemble's quorum and leader changes, ACLs, znode versions beyond
//! what the election recipe reads, and watch delivery on other event types.

use crate::world::clock::NodeClock;
use crate::world::net::Endpoint;
use crate::world::rpc::{request, BACKEND_ADDR};
use crate::world::timeline::{Event, Timeline};
use baton_protocols::zk_sequential::{CreateMode, SessionGrant, Stat, ZkError};
use baton_protocols::{sleep_local, Clock};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

// The requests this service answers: it declares them, and its client
// (`crate::world::protocol::zk_sequential`) sends them.

/// ZooKeeper `createSession` (the connect handshake).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ZkConnect {
    /// Who connects (for the timeline).
    pub node: baton_model::NodeId,
    /// Session timeout asked for.
    pub timeout_ms: u64,
}
request!(ZkConnect => SessionGrant);

/// A ping on a session.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ZkPing {
    /// The session.
    pub session: i64,
}
request!(ZkPing => Result<(), ZkError>);

/// `closeSession`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ZkClose {
    /// The session.
    pub session: i64,
}
request!(ZkClose => ());

/// `create` (answered as `create2`: path and stat).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ZkCreate {
    /// The session (owner of an ephemeral znode).
    pub session: i64,
    /// The path, or the prefix of a sequential znode.
    pub path: String,
    /// The data.
    pub data: String,
    /// The create mode.
    pub mode: CreateMode,
}
request!(ZkCreate => Result<(String, Stat), ZkError>);

/// `delete` (any version).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ZkDelete {
    /// The session.
    pub session: i64,
    /// The znode.
    pub path: String,
}
request!(ZkDelete => Result<(), ZkError>);

/// `getChildren`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ZkGetChildren {
    /// The session (0: a sessionless read).
    pub session: i64,
    /// The parent znode.
    pub path: String,
}
request!(ZkGetChildren => Result<Vec<String>, ZkError>);

/// `getData`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ZkGetData {
    /// The session (0: a sessionless read).
    pub session: i64,
    /// The znode.
    pub path: String,
}
request!(ZkGetData => Result<(String, Stat), ZkError>);

/// `exists` with a watch, as a long poll until the znode is deleted.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ZkExists {
    /// The session.
    pub session: i64,
    /// The znode.
    pub path: String,
    /// Wait at most this long (service clock) for its deletion.
    pub wait_ms: u64,
}
request!(ZkExists => Result<Option<Stat>, ZkError>);

struct Znode {
    data: String,
    stat: Stat,
    /// Bumped by every create and delete of a child; the next sequence number.
    cversion: i64,
}

struct Session {
    timeout_ms: u64,
    last_heard_us: i64,
    ephemerals: BTreeSet<String>,
}

struct Tree {
    zxid: i64,
    next_session: i64,
    nodes: BTreeMap<String, Znode>,
    sessions: BTreeMap<i64, Session>,
}

/// Session bounds and timing the service enforces.
#[derive(Clone, Copy, Debug)]
pub struct ZkSettings {
    /// `tickTime`: how often the session tracker looks for expired sessions.
    pub tick_time_ms: u64,
    /// `minSessionTimeout`.
    pub min_session_timeout_ms: u64,
    /// `maxSessionTimeout`.
    pub max_session_timeout_ms: u64,
    /// Where in its tick the session tracker is when the run starts, ms (below
    /// `tick_time_ms`): a real server's ticks run on its own clock since it started, so
    /// a fault lands at any phase of them (drawn from the seed).
    pub tick_phase_ms: u64,
    /// A write transaction's fsync, drawn from `[min, max]` ms.
    pub fsync_ms: [u64; 2],
    /// A new session's set-up beyond its round trips, drawn from `[min, max]` ms.
    pub session_setup_ms: [u64; 2],
    /// The server's own generator (its fsync and set-up draws), forked from the seed.
    pub seed: u64,
}

struct Service {
    tree: Mutex<Tree>,
    clock: NodeClock,
    timeline: Timeline,
    settings: ZkSettings,
    requests: Arc<crate::world::requests::RequestCounter>,
    changed: Notify,
    /// Draws the fsyncs and session set-ups.
    rng: Mutex<rand_chacha::ChaCha8Rng>,
}

/// What a request costs the server before it applies.
#[derive(Clone, Copy)]
enum Cost {
    /// A write transaction: its fsync.
    Write,
    /// A new session: its set-up, then its createSession transaction's fsync.
    Session,
}

fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// Runs the service on the current node until the node is killed.
///
/// `requests` counts every request served (the backend load a protocol puts on it).
pub async fn serve(
    timeline: Timeline,
    clock: NodeClock,
    requests: Arc<crate::world::requests::RequestCounter>,
    settings: ZkSettings,
) {
    let ep = Endpoint::bind(BACKEND_ADDR).expect("backend address is free");
    let svc = Arc::new(Service::new(timeline, clock, requests, settings));
    answer(&ep, &svc);
    track_sessions(&svc).await
}

/// Registers the service's answer to each request on `ep`.
fn answer(ep: &Endpoint, svc: &Arc<Service>) {
    let s = svc.clone();
    ep.add_rpc_handler(move |r: ZkConnect| {
        s.count();
        let s = s.clone();
        async move {
            s.pay(Cost::Session).await;
            s.connect(&r.node, r.timeout_ms)
        }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: ZkPing| {
        s.count();
        let out = s.touch(r.session);
        async move { out }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: ZkClose| {
        s.count();
        let s = s.clone();
        async move {
            s.pay(Cost::Write).await;
            s.end_session(r.session, "revoked");
        }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: ZkCreate| {
        s.count();
        let s = s.clone();
        async move {
            s.pay(Cost::Write).await;
            s.create(r.session, &r.path, r.data, r.mode)
        }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: ZkDelete| {
        s.count();
        let s = s.clone();
        async move {
            s.pay(Cost::Write).await;
            s.delete(r.session, &r.path)
        }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: ZkGetChildren| {
        s.count();
        let out = s.children(r.session, &r.path);
        async move { out }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: ZkGetData| {
        s.count();
        let out = s.get_data(r.session, &r.path);
        async move { out }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: ZkExists| {
        s.count();
        let s = s.clone();
        async move { s.exists_watch(r).await }
    });
}

/// The session tracker: expires sessions on the service's own clock, once per tick, its
/// first tick `tick_phase_ms` in, until the node is killed.
async fn track_sessions(svc: &Service) {
    let tick = Duration::from_millis(svc.settings.tick_time_ms);
    sleep_local(
        &svc.clock,
        Duration::from_millis(svc.settings.tick_phase_ms),
    )
    .await;
    svc.expire();
    loop {
        sleep_local(&svc.clock, tick).await;
        svc.expire();
    }
}

impl Service {
    /// A fresh server: an empty tree with its root, no sessions.
    fn new(
        timeline: Timeline,
        clock: NodeClock,
        requests: Arc<crate::world::requests::RequestCounter>,
        settings: ZkSettings,
    ) -> Service {
        let mut nodes = BTreeMap::new();
        nodes.insert(
            "/".to_string(),
            Znode {
                data: String::new(),
                stat: Stat {
                    czxid: 0,
                    ephemeral_owner: 0,
                },
                cversion: 0,
            },
        );
        Service {
            tree: Mutex::new(Tree {
                zxid: 0,
                next_session: 1,
                nodes,
                sessions: BTreeMap::new(),
            }),
            clock,
            timeline,
            rng: Mutex::new(baton_model::seed::fork(settings.seed, "zk/server")),
            settings,
            requests,
            changed: Notify::new(),
        }
    }

    fn count(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// Waits what `cost` takes on the server's clock: a write transaction is logged
    /// and fsynced before it applies (ZooKeeper's `SyncRequestProcessor` comes before
    /// the `FinalRequestProcessor` that applies it), and a session is set up first.
    async fn pay(&self, cost: Cost) {
        let draw = |[lo, hi]: [u64; 2]| {
            self.rng
                .lock()
                .unwrap()
                .gen_range(lo * 1000..=hi.max(lo) * 1000)
        };
        let us = match cost {
            Cost::Write => draw(self.settings.fsync_ms),
            Cost::Session => draw(self.settings.session_setup_ms) + draw(self.settings.fsync_ms),
        };
        if us > 0 {
            sleep_local(&self.clock, Duration::from_micros(us)).await;
        }
    }

    fn connect(&self, node: &str, requested_ms: u64) -> SessionGrant {
        let s = self.settings;
        let timeout_ms = requested_ms.clamp(
            s.min_session_timeout_ms,
            s.max_session_timeout_ms.max(s.min_session_timeout_ms),
        );
        let mut t = self.tree.lock().unwrap();
        // createSession is a transaction of its own.
        t.zxid += 1;
        let id = t.next_session;
        t.next_session += 1;
        t.sessions.insert(
            id,
            Session {
                timeout_ms,
                last_heard_us: self.clock.now_us(),
                ephemerals: BTreeSet::new(),
            },
        );
        self.timeline.record(Event::LeaseGranted {
            node: node.into(),
            lease_id: id,
            ttl_requested_ms: requested_ms,
            ttl_granted_ms: timeout_ms,
        });
        SessionGrant { id, timeout_ms }
    }

    /// Counts a request on `session` as hearing from it; session 0 is a sessionless read.
    fn touch(&self, session: i64) -> Result<(), ZkError> {
        if session == 0 {
            return Ok(());
        }
        let now = self.clock.now_us();
        let mut t = self.tree.lock().unwrap();
        let s = t
            .sessions
            .get_mut(&session)
            .ok_or(ZkError::SessionExpired)?;
        s.last_heard_us = now;
        Ok(())
    }

    fn expire(&self) {
        let now = self.clock.now_us();
        let expired: Vec<i64> = {
            let t = self.tree.lock().unwrap();
            t.sessions
                .iter()
                .filter(|(_, s)| s.last_heard_us + s.timeout_ms as i64 * 1000 <= now)
                .map(|(id, _)| *id)
                .collect()
        };
        for id in expired {
            self.end_session(id, "expired");
        }
    }

    /// Ends a session (closeSession or expiry) and deletes its ephemerals in one zxid.
    fn end_session(&self, id: i64, cause: &str) {
        let mut t = self.tree.lock().unwrap();
        let Some(session) = t.sessions.remove(&id) else {
            return;
        };
        t.zxid += 1;
        self.timeline.record(if cause == "expired" {
            Event::LeaseExpired { lease_id: id }
        } else {
            Event::LeaseRevoked { lease_id: id }
        });
        for path in session.ephemerals {
            Self::remove(&mut t, &self.timeline, &path, cause);
        }
        drop(t);
        self.changed.notify_waiters();
    }

    fn remove(t: &mut Tree, timeline: &Timeline, path: &str, cause: &str) {
        let Some(z) = t.nodes.remove(path) else {
            return;
        };
        if let Some(p) = t.nodes.get_mut(parent_of(path)) {
            p.cversion += 1;
        }
        if z.stat.ephemeral_owner != 0 {
            if let Some(s) = t.sessions.get_mut(&z.stat.ephemeral_owner) {
                s.ephemerals.remove(path);
            }
        }
        timeline.record(Event::KeyDeleted {
            key: path.to_string(),
            create_revision: z.stat.czxid,
            cause: cause.to_string(),
        });
    }

    fn create(
        &self,
        session: i64,
        path: &str,
        data: String,
        mode: CreateMode,
    ) -> Result<(String, Stat), ZkError> {
        self.touch(session)?;
        let mut t = self.tree.lock().unwrap();
        let ephemeral = mode == CreateMode::EphemeralSequential;
        if ephemeral && !t.sessions.contains_key(&session) {
            return Err(ZkError::SessionExpired);
        }
        let parent = parent_of(path).to_string();
        let seq = t.nodes.get(&parent).ok_or(ZkError::NoNode)?.cversion;
        let path = match mode {
            CreateMode::Persistent => path.to_string(),
            CreateMode::EphemeralSequential => format!("{path}{seq:010}"),
        };
        if t.nodes.contains_key(&path) {
            return Err(ZkError::NodeExists);
        }
        t.zxid += 1;
        let stat = Stat {
            czxid: t.zxid,
            ephemeral_owner: if ephemeral { session } else { 0 },
        };
        t.nodes.insert(
            path.clone(),
            Znode {
                data,
                stat,
                cversion: 0,
            },
        );
        t.nodes.get_mut(&parent).expect("checked above").cversion += 1;
        if ephemeral {
            t.sessions
                .get_mut(&session)
                .expect("checked above")
                .ephemerals
                .insert(path.clone());
        }
        drop(t);
        self.changed.notify_waiters();
        Ok((path, stat))
    }

    fn delete(&self, session: i64, path: &str) -> Result<(), ZkError> {
        self.touch(session)?;
        let mut t = self.tree.lock().unwrap();
        if !t.nodes.contains_key(path) {
            return Err(ZkError::NoNode);
        }
        if !Self::child_names(&t, path).is_empty() {
            return Err(ZkError::NotEmpty);
        }
        t.zxid += 1;
        Self::remove(&mut t, &self.timeline, path, "deleted");
        drop(t);
        self.changed.notify_waiters();
        Ok(())
    }

    fn child_names(t: &Tree, path: &str) -> Vec<String> {
        let prefix = if path == "/" {
            "/".to_string()
        } else {
            format!("{path}/")
        };
        t.nodes
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k[prefix.len()..].to_string())
            .filter(|rest| !rest.is_empty() && !rest.contains('/'))
            .collect()
    }

    fn children(&self, session: i64, path: &str) -> Result<Vec<String>, ZkError> {
        self.touch(session)?;
        let t = self.tree.lock().unwrap();
        if !t.nodes.contains_key(path) {
            return Err(ZkError::NoNode);
        }
        Ok(Self::child_names(&t, path))
    }

    fn get_data(&self, session: i64, path: &str) -> Result<(String, Stat), ZkError> {
        self.touch(session)?;
        let t = self.tree.lock().unwrap();
        let z = t.nodes.get(path).ok_or(ZkError::NoNode)?;
        Ok((z.data.clone(), z.stat))
    }

    async fn exists_watch(&self, r: ZkExists) -> Result<Option<Stat>, ZkError> {
        self.touch(r.session)?;
        let deadline = self.clock.now_us() + r.wait_ms as i64 * 1000;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let stat = self.tree.lock().unwrap().nodes.get(&r.path).map(|z| z.stat);
            let now = self.clock.now_us();
            if stat.is_none() || now >= deadline {
                return Ok(stat);
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
