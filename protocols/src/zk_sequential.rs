//! `zk-sequential`: ZooKeeper's leader-election recipe over ephemeral sequential znodes.
//!
//! Modelled on the ZooKeeper documentation ("ZooKeeper Recipes and Solutions: Leader
//! Election", "ZooKeeper Programmer's Guide: ZooKeeper Sessions") and on Apache Curator's
//! `LeaderLatch` (Curator docs: "Recipes: Leader Latch", "Errors"):
//! - a client opens a **session** with a timeout; the server negotiates it into
//!   `[2 x tickTime, 20 x tickTime]` (Programmer's Guide: "the current implementation
//!   requires that the timeout be a minimum of 2 times the tickTime ... and a maximum of
//!   20 times the tickTime"; `tickTime` defaults to 2000 ms, so 4 s to 40 s). Curator's
//!   default session timeout is 60 s (`CuratorFrameworkFactory`, with a 15 s connection
//!   timeout), which the server lowers to 40 s at the default tickTime: that is this
//!   module's default;
//! - the client pings when idle: the Java client's read timeout is 2/3 of the negotiated
//!   timeout and it pings after half of that (`ClientCnxn`), so every timeout / 3;
//! - the server expires a session on ITS clock when nothing was heard for the timeout,
//!   and deletes the session's ephemeral znodes; the client is not told until it talks to
//!   the server again (Programmer's Guide: "expiration is managed by the ZooKeeper
//!   cluster itself, not by the client");
//! - the recipe: create `ELECTION/n_` with `EPHEMERAL_SEQUENTIAL` (the server appends the
//!   parent's 10-digit sequence counter); the lowest sequence leads; every other
//!   candidate watches only the znode just below its own with `exists` + a watch, and on
//!   its deletion re-reads the children (no herd effect: one deletion wakes one waiter);
//! - the fencing token is the leader znode's creation zxid (`Stat.czxid`, returned by
//!   `create2` since ZooKeeper 3.5): zxids grow with every write, and a later leader's
//!   znode was always created after an earlier leader's.
//!
//! A disconnected client cannot know whether its session still exists. Curator's advice
//! ("Errors": on `SUSPENDED` you cannot be certain you are still the leader; on `LOST` you
//! certainly are not) and Curator 3's client-side expiry (it declares `LOST` once the
//! session timeout has elapsed without a server answer) are what this elector does with
//! its own clock: the leadership deadline is the send time of the last answered ping plus
//! the negotiated timeout, so the node stops acting no later than the server could have
//! expired its session (given equal clock rates). A pause or a slow clock can still make
//! that belief wrong; the czxid token at the fenced resource is what makes it harmless.
//!
//! `local_deadline = "suspended"` models the election libraries as their users run
//! them instead: Curator's `LeaderLatch` and a kazoo `Election` whose state listener
//! stops the work at `SUSPENDED`, which their clients report once nothing was heard
//! for the read timeout, 2/3 of the negotiated timeout (see [`LocalDeadline::Suspended`]).
//!
//! Not modelled: a multi-server ensemble (its quorum, session moves between servers) and
//! the connection timeout; one server stands for the ensemble.

use crate::clock::Clock;
use crate::elector::{Elector, ElectorError, LeaderInfo, TransferReadiness};
use crate::leadership::{Leadership, LeaseHandle, LossReason};
use crate::mailbox::Mailbox;
use crate::requeue::Waited;
use crate::safety::SafetyBounds;
use crate::NodeId;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Parameters of the zk-sequential protocol (a scenario's `[zk-sequential]` table).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZkSequentialConfig {
    /// Session timeout asked for (Curator's default: 60 s). The server negotiates it
    /// into `[min_session_timeout_ms, max_session_timeout_ms]`.
    pub session_timeout_ms: u64,
    /// How often the client pings (the Java client: negotiated timeout / 3).
    /// 0 means negotiated timeout / 3.
    pub ping_interval_ms: u64,
    /// Timeout of every call to the server (Baton's bound on one request; the real
    /// client fails a request with `CONNECTIONLOSS` once its connection is deemed dead).
    pub rpc_timeout_ms: u64,
    /// The election parent znode.
    pub election_path: String,
    /// Server side: `tickTime` (ZooKeeper's default 2000 ms); the session tracker looks
    /// for expired sessions once per tick.
    pub tick_time_ms: u64,
    /// Server side: `minSessionTimeout`; 0 means 2 x `tick_time_ms` (the default).
    pub min_session_timeout_ms: u64,
    /// Server side: `maxSessionTimeout`; 0 means 20 x `tick_time_ms` (the default).
    pub max_session_timeout_ms: u64,
    /// Server side: how long a write transaction (a create, a delete, a session's
    /// creation or close) waits for its log's fsync before it applies, drawn uniformly
    /// from `[min, max]` ms at µs resolution. `[0, 1]`: the fsync of this machine kind's
    /// disk, as etcd's (`[etcd] fsync_ms`); a live ZooKeeper here took 0.9 ms for a
    /// create and 0.3 ms for a read (`real/tests/call_latency.rs`).
    pub fsync_ms: [u64; 2],
    /// Server side: what opening a session costs beyond its round trips (the new
    /// connection, the server's set-up of it), drawn uniformly from `[min, max]` ms. A
    /// live ZooKeeper here opened a session in 4.5 ms (median; p90 9.2 ms) where a
    /// request on an open one took 0.2-0.9 ms (`real/tests/call_latency.rs`).
    pub session_setup_ms: [u64; 2],
    /// How the leader bounds its leadership on its own clock: `session-timeout` (Baton's
    /// node, Curator 3's client-side `LOST`) or `suspended` (Curator's `LeaderLatch`, a
    /// kazoo node that stops at `SUSPENDED`).
    pub local_deadline: LocalDeadline,
}

/// How a zk-sequential leader bounds its leadership on its own clock (`local_deadline`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LocalDeadline {
    /// The send of the last answered ping plus the negotiated timeout: the node stops
    /// no later than the server could have expired its session (Curator 3's
    /// client-side `LOST`).
    #[default]
    SessionTimeout,
    /// The arrival of the last answer plus the client's read timeout, 2/3 of the
    /// negotiated timeout: when ZooKeeper's Java client (`ClientCnxn`) and kazoo's
    /// connection loop (`read_timeout = negotiated * 2 / 3`) give the connection up and
    /// report `SUSPENDED` (Curator: `ConnectionState.SUSPENDED`; kazoo:
    /// `KazooState.SUSPENDED`). Curator's `LeaderLatch` gives leadership up there
    /// (`StandardConnectionStateErrorPolicy`), and kazoo's documentation asks its users
    /// to ("a client should not assume that locks are valid during this time").
    /// Not modelled: a connection back on the same session (Curator's latch then
    /// queues again with a new znode, as this model does; a kazoo node may lead on
    /// under the same znode), and kazoo's jitter of its ping (0-400 ms earlier).
    Suspended,
}

impl Default for ZkSequentialConfig {
    fn default() -> Self {
        ZkSequentialConfig {
            session_timeout_ms: 60_000,
            ping_interval_ms: 0,
            rpc_timeout_ms: 500,
            election_path: "/election".to_string(),
            tick_time_ms: 2000,
            min_session_timeout_ms: 0,
            max_session_timeout_ms: 0,
            fsync_ms: [0, 1],
            session_setup_ms: [3, 6],
            local_deadline: LocalDeadline::SessionTimeout,
        }
    }
}

impl ZkSequentialConfig {
    /// What this protocol promises without the fence: its leader's deadline counts from before its
    /// request left, so it stops before the backend's grant ends while its clock is true
    /// and it is not paused; it keeps no margin beyond that (see
    /// [`SafetyBounds::LEASE_WITHOUT_MARGIN`]).
    pub fn safety_bounds(&self) -> SafetyBounds {
        SafetyBounds::LEASE_WITHOUT_MARGIN
    }

    /// The server's lower bound on session timeouts in force.
    pub fn effective_min_session_timeout_ms(&self) -> u64 {
        if self.min_session_timeout_ms == 0 {
            2 * self.tick_time_ms
        } else {
            self.min_session_timeout_ms
        }
    }

    /// The server's upper bound on session timeouts in force.
    pub fn effective_max_session_timeout_ms(&self) -> u64 {
        if self.max_session_timeout_ms == 0 {
            20 * self.tick_time_ms
        } else {
            self.max_session_timeout_ms
        }
    }

    /// The session timeout the server will grant.
    pub fn negotiated_timeout_ms(&self) -> u64 {
        let (lo, hi) = (
            self.effective_min_session_timeout_ms(),
            self.effective_max_session_timeout_ms(),
        );
        self.session_timeout_ms.clamp(lo, hi.max(lo))
    }

    /// The local deadline after an answer: `sent_us` is when its request left,
    /// `arrived_us` when the answer came, for a session of `timeout_ms`.
    pub fn deadline_after(&self, sent_us: i64, arrived_us: i64, timeout_ms: u64) -> i64 {
        match self.local_deadline {
            LocalDeadline::SessionTimeout => sent_us + timeout_ms as i64 * 1000,
            LocalDeadline::Suspended => arrived_us + (timeout_ms * 2 / 3) as i64 * 1000,
        }
    }

    /// The ping interval in force for a session of `timeout_ms`.
    pub fn ping_interval_for(&self, timeout_ms: u64) -> u64 {
        if self.ping_interval_ms == 0 {
            (timeout_ms / 3).max(1)
        } else {
            self.ping_interval_ms
        }
    }
}

/// A znode's metadata (the part of ZooKeeper's `Stat` the recipe reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stat {
    /// The zxid of the transaction that created the znode.
    pub czxid: i64,
    /// The owning session of an ephemeral znode, 0 otherwise.
    pub ephemeral_owner: i64,
}

/// How a znode is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CreateMode {
    /// Lives until deleted.
    Persistent,
    /// Deleted with its session; the server appends a 10-digit sequence number.
    EphemeralSequential,
}

/// A session the server opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionGrant {
    /// The session id.
    pub id: i64,
    /// The negotiated timeout.
    pub timeout_ms: u64,
}

/// Why a ZooKeeper call failed (named after ZooKeeper's `KeeperException` codes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ZkError {
    /// No answer in time: the client cannot tell whether the request was applied.
    ConnectionLoss,
    /// The server expired or closed the session.
    SessionExpired,
    /// The znode (or its parent) does not exist.
    NoNode,
    /// The znode already exists.
    NodeExists,
    /// The znode has children.
    NotEmpty,
}

impl std::fmt::Display for ZkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            ZkError::ConnectionLoss => "connection loss",
            ZkError::SessionExpired => "session expired",
            ZkError::NoNode => "no node",
            ZkError::NodeExists => "node exists",
            ZkError::NotEmpty => "not empty",
        };
        write!(f, "{s}")
    }
}

/// The ZooKeeper calls the recipe uses. Every call is bounded by a timeout inside the
/// implementation (a timeout is [`ZkError::ConnectionLoss`]). `session` 0 is a read
/// made without a session (an observer's look at the election).
#[async_trait]
pub trait ZkApi: Send + Sync {
    /// Opens a session asking for `timeout_ms`; the server answers with the negotiated one.
    async fn create_session(&self, timeout_ms: u64) -> Result<SessionGrant, ZkError>;
    /// Pings the session, which the server then counts as alive from now.
    async fn ping(&self, session: i64) -> Result<(), ZkError>;
    /// Closes the session, deleting its ephemeral znodes.
    async fn close_session(&self, session: i64) -> Result<(), ZkError>;
    /// Creates a znode; for a sequential mode `path` is the prefix the server appends
    /// the sequence to. Returns the created path and its stat (ZooKeeper's `create2`).
    async fn create(
        &self,
        session: i64,
        path: &str,
        data: &str,
        mode: CreateMode,
    ) -> Result<(String, Stat), ZkError>;
    /// The names of a znode's children.
    async fn get_children(&self, session: i64, path: &str) -> Result<Vec<String>, ZkError>;
    /// A znode's data and stat.
    async fn get_data(&self, session: i64, path: &str) -> Result<(String, Stat), ZkError>;
    /// `exists` with a one-shot watch, as a long poll: `None` at once if the znode does
    /// not exist, `None` when it is deleted within `wait_ms`, else its stat after the wait.
    async fn exists_watch(
        &self,
        session: i64,
        path: &str,
        wait_ms: u64,
    ) -> Result<Option<Stat>, ZkError>;
    /// Deletes a znode (any version).
    async fn delete(&self, session: i64, path: &str) -> Result<(), ZkError>;
}

/// A zk-sequential elector for one node.
pub struct ZkSequentialElector {
    api: Arc<dyn ZkApi>,
    clock: Arc<dyn Clock>,
    cfg: ZkSequentialConfig,
    node: NodeId,
    /// The session of the current campaign or leadership.
    session: Mutex<Option<Session>>,
    /// This node's znode in the queue (its name under the election path), while queued.
    znode: Mutex<Option<String>>,
    /// A transferring leader's request that this waiter queue again at the back.
    requeue: Mailbox,
}

#[derive(Clone)]
struct Session {
    id: i64,
    timeout_ms: u64,
    lease: LeaseHandle,
}

fn unavailable(e: ZkError) -> ElectorError {
    match e {
        ZkError::SessionExpired => ElectorError::LeaseLost,
        e => ElectorError::Unavailable(e.to_string()),
    }
}

/// The sequence number of a child name `n_0000000042`, for ordering.
fn sequence_of(name: &str) -> Option<u64> {
    name.rsplit('_').next()?.parse().ok()
}

impl ZkSequentialElector {
    /// An elector for `node` talking to the server through `api`, reading time on `clock`.
    pub fn new(
        node: &NodeId,
        api: Arc<dyn ZkApi>,
        clock: Arc<dyn Clock>,
        cfg: ZkSequentialConfig,
    ) -> Self {
        ZkSequentialElector {
            api,
            clock,
            cfg,
            node: node.clone(),
            session: Mutex::new(None),
            znode: Mutex::new(None),
            requeue: Mailbox::default(),
        }
    }

    /// Creates this node's `EPHEMERAL_SEQUENTIAL` znode: its name and creation zxid.
    async fn create_znode(&self, s: &Session) -> Result<(String, i64), ElectorError> {
        let prefix = format!("{}/n_", self.cfg.election_path);
        let (path, stat) = self
            .api
            .create(
                s.id,
                &prefix,
                self.node.as_str(),
                CreateMode::EphemeralSequential,
            )
            .await
            .map_err(unavailable)?;
        let mine = path.rsplit('/').next().unwrap_or_default().to_string();
        *self.znode.lock().unwrap() = Some(mine.clone());
        Ok((mine, stat.czxid))
    }

    /// The children of the election path, lowest sequence first.
    async fn queue(&self, session: i64) -> Result<Vec<String>, ZkError> {
        let mut children = self
            .api
            .get_children(session, &self.cfg.election_path)
            .await?;
        children.sort_by_key(|c| sequence_of(c));
        Ok(children)
    }

    /// Opens a session and starts pinging it; the handle ends when the session is lost.
    async fn open_session(&self) -> Result<Session, ElectorError> {
        // The deadline counts from before the request left: the server's timeout started
        // no earlier than that, so this bound is conservative.
        let sent_us = self.clock.now_us();
        let grant = self
            .api
            .create_session(self.cfg.session_timeout_ms)
            .await
            .map_err(unavailable)?;
        let deadline = self
            .cfg
            .deadline_after(sent_us, self.clock.now_us(), grant.timeout_ms);
        let lease = LeaseHandle::new(self.clock.clone(), deadline, true);
        spawn_pinger(
            self.api.clone(),
            self.clock.clone(),
            lease.clone(),
            grant,
            self.cfg.clone(),
        );
        Ok(Session {
            id: grant.id,
            timeout_ms: grant.timeout_ms,
            lease,
        })
    }

    /// Best effort: closing the session deletes its znode at once, so the next waiter
    /// need not wait for the session timeout.
    async fn close_session(&self, s: &Session) {
        let _ = self.api.close_session(s.id).await;
    }

    /// Curator's `ensurePath`: create the election parent if it is missing.
    async fn ensure_parent(&self, s: &Session) -> Result<(), ElectorError> {
        match self
            .api
            .create(s.id, &self.cfg.election_path, "", CreateMode::Persistent)
            .await
        {
            Ok(_) | Err(ZkError::NodeExists) => Ok(()),
            Err(e) => Err(unavailable(e)),
        }
    }

    /// The recipe: wait until our znode has the lowest sequence, watching only the
    /// znode just below ours each round.
    async fn wait_predecessors(&self, s: &Session, mine: &str) -> Result<Waited, ElectorError> {
        let my_seq = sequence_of(mine).ok_or(ElectorError::LeaseLost)?;
        loop {
            if !s.lease.valid() {
                return Err(ElectorError::LeaseLost);
            }
            let children = self
                .api
                .get_children(s.id, &self.cfg.election_path)
                .await
                .map_err(unavailable)?;
            // Our znode is gone only if the server expired our session.
            if !children.iter().any(|c| c == mine) {
                return Err(ElectorError::LeaseLost);
            }
            let pred = children
                .iter()
                .filter_map(|c| sequence_of(c).map(|q| (q, c)))
                .filter(|(q, _)| *q < my_seq)
                .max();
            let Some((_, pred)) = pred else {
                return Ok(Waited::Done);
            };
            let pred_path = format!("{}/{}", self.cfg.election_path, pred);
            // Watch the predecessor until it is gone, re-checking our own session between
            // long polls (a lost session means our own znode is gone too).
            loop {
                if !s.lease.valid() {
                    return Err(ElectorError::LeaseLost);
                }
                let wait_ms = self.cfg.ping_interval_for(s.timeout_ms);
                let watch = self.api.exists_watch(s.id, &pred_path, wait_ms);
                let Some(watched) = self.requeue.unless_asked(watch).await else {
                    return Ok(Waited::Requeued);
                };
                let stat = watched.map_err(unavailable)?;
                if stat.is_none() {
                    break;
                }
            }
        }
    }
}

/// Pings the session every ping interval until it is lost. An answered ping extends the
/// local deadline ([`ZkSequentialConfig::deadline_after`]); an unanswered one extends
/// nothing, so a partitioned node's deadline runs out on its own clock.
fn spawn_pinger(
    api: Arc<dyn ZkApi>,
    clock: Arc<dyn Clock>,
    lease: LeaseHandle,
    grant: SessionGrant,
    cfg: ZkSequentialConfig,
) {
    let interval_ms = cfg.ping_interval_for(grant.timeout_ms);
    madsim::task::spawn(async move {
        loop {
            if !lease
                .sleep_while_valid(clock.as_ref(), Duration::from_millis(interval_ms))
                .await
            {
                return;
            }
            let sent_us = clock.now_us();
            match api.ping(grant.id).await {
                Ok(()) => {
                    // Past the deadline the client already declared the session lost
                    // (Curator's LOST): a late answer must not bring leadership back.
                    if !lease.valid() {
                        lease.end(LossReason::DeadlinePassed);
                        return;
                    }
                    lease.extend_to(cfg.deadline_after(sent_us, clock.now_us(), grant.timeout_ms));
                }
                Err(ZkError::ConnectionLoss) => {}
                Err(_) => {
                    lease.end(LossReason::Revoked);
                    return;
                }
            }
        }
    });
}

#[async_trait]
impl Elector for ZkSequentialElector {
    async fn campaign(&self) -> Result<Leadership, ElectorError> {
        self.requeue.clear();
        let s = self.open_session().await?;
        *self.session.lock().unwrap() = Some(s.clone());
        let result = async {
            self.ensure_parent(&s).await?;
            let (mut mine, mut czxid) = self.create_znode(&s).await?;
            while self.wait_predecessors(&s, &mine).await? == Waited::Requeued {
                // To the back of the queue: a new znode, a higher sequence.
                let path = format!("{}/{}", self.cfg.election_path, mine);
                self.api.delete(s.id, &path).await.map_err(unavailable)?;
                (mine, czxid) = self.create_znode(&s).await?;
            }
            if !s.lease.valid() {
                return Err(ElectorError::LeaseLost);
            }
            Ok(s.lease.leadership(czxid as u64))
        }
        .await;
        if result.is_err() {
            // Closing the session also removes a znode whose create answer was lost, so
            // no orphan blocks the queue (the recipe's GUID prefix solves the same).
            s.lease.end(LossReason::Revoked);
            self.close_session(&s).await;
            *self.session.lock().unwrap() = None;
        }
        result
    }

    async fn resign(&self, leadership: &Leadership) -> Result<(), ElectorError> {
        leadership.end(LossReason::Resigned);
        let s = self.session.lock().unwrap().take();
        if let Some(s) = s {
            self.close_session(&s).await;
        }
        Ok(())
    }

    /// Ready once the successor's znode is the next after the leader's (by sequence);
    /// other nodes' znodes ahead of it are asked to requeue (see `requeue.rs`).
    async fn transfer_readiness(
        &self,
        _leadership: &Leadership,
        successor: &NodeId,
    ) -> Result<TransferReadiness, ElectorError> {
        let session = self.session.lock().unwrap().as_ref().map(|s| s.id);
        let mine = self.znode.lock().unwrap().clone();
        let (Some(session), Some(mine)) = (session, mine) else {
            return Err(ElectorError::NotLeader);
        };
        let children = self.queue(session).await.map_err(unavailable)?;
        if children.first() != Some(&mine) {
            return Err(ElectorError::NotLeader);
        }
        let mut queue = vec![];
        for c in &children[1..] {
            let path = format!("{}/{}", self.cfg.election_path, c);
            match self.api.get_data(session, &path).await {
                Ok((node, _)) => queue.push(node),
                // Gone since the listing: no longer in the queue.
                Err(ZkError::NoNode) => {}
                Err(e) => return Err(unavailable(e)),
            }
        }
        let queue: Vec<&str> = queue.iter().map(String::as_str).collect();
        Ok(crate::requeue::readiness(&queue, successor))
    }

    fn requeue(&self) {
        self.requeue.ask();
    }

    async fn observe(&self) -> Result<Option<LeaderInfo>, ElectorError> {
        let children = match self.api.get_children(0, &self.cfg.election_path).await {
            Ok(c) => c,
            Err(ZkError::NoNode) => return Ok(None),
            Err(e) => return Err(unavailable(e)),
        };
        let Some((_, lowest)) = children
            .iter()
            .filter_map(|c| sequence_of(c).map(|q| (q, c)))
            .min()
        else {
            return Ok(None);
        };
        let path = format!("{}/{}", self.cfg.election_path, lowest);
        match self.api.get_data(0, &path).await {
            Ok((node, stat)) => Ok(Some(LeaderInfo {
                node: NodeId::from(node),
                token: stat.czxid as u64,
            })),
            Err(ZkError::NoNode) => Ok(None),
            Err(e) => Err(unavailable(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_follows_the_tick_bounds() {
        let c = ZkSequentialConfig::default();
        // Curator's 60 s is above 20 x 2000 ms: the server grants 40 s.
        assert_eq!(c.negotiated_timeout_ms(), 40_000);
        let c = ZkSequentialConfig {
            session_timeout_ms: 1000,
            ..Default::default()
        };
        assert_eq!(c.negotiated_timeout_ms(), 4000);
        assert_eq!(c.ping_interval_for(3000), 1000);
    }

    #[test]
    fn suspended_stops_at_the_read_timeout_after_the_last_answer() {
        let c = ZkSequentialConfig::default();
        // Baton's node: the send of the last answered ping plus the timeout.
        assert_eq!(c.deadline_after(1_000, 5_000, 3000), 3_001_000);
        let c = ZkSequentialConfig {
            local_deadline: LocalDeadline::Suspended,
            ..Default::default()
        };
        // SUSPENDED: 2/3 of the timeout after the answer arrived, earlier.
        assert_eq!(c.deadline_after(1_000, 5_000, 3000), 2_005_000);
    }

    #[test]
    fn sequence_orders_children() {
        assert_eq!(sequence_of("n_0000000042"), Some(42));
        assert_eq!(sequence_of("junk"), None);
    }
}
