//! What the peer-to-peer elections ([`crate::bully`], [`crate::ring`]) share: epochs, the
//! coordinator a node believes in, heartbeat failure detection, and the transport seam.
//!
//! There is no external service. The coordinator sends a heartbeat to every peer each
//! `heartbeat_interval_ms`; a node that has heard nothing from its coordinator for
//! `failure_timeout_ms` on its own clock suspects it and starts an election (the
//! heartbeat detector of the textbooks: it cannot tell a dead coordinator from a slow or
//! cut-off one). Every node tracks the highest epoch it has seen in any message; a new
//! coordinator takes that + 1 and announces it, and the epoch is its fencing token.
//!
//! A coordinator has **no lease**: its leadership has no deadline and ends only when it
//! learns of a coordinator with a higher `(epoch, id)`, from an announcement, a heartbeat,
//! or a peer's reply. A coordinator cut off from its peers therefore keeps acting while
//! the others elect a new one, and two cut-off sides can pick the same epoch. Nothing in
//! the algorithms prevents it: that is the point the simulator shows.

use crate::clock::{sleep_until_local, Clock};
use crate::leadership::{Leadership, LeaseHandle, LossReason};
use crate::NodeId;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// A coordinator as a node knows it: ordered by epoch, then by id (the tie-break when two
/// sides of a partition picked the same epoch).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Coord {
    /// Its epoch (the fencing token).
    pub epoch: u64,
    /// Its id (1-based).
    pub id: usize,
}

/// What a node tells whoever it answers: the highest epoch it has seen and the
/// coordinator it follows, so that a stale coordinator learns it was replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    /// The highest epoch seen in any message.
    pub epoch_seen: u64,
    /// The coordinator it follows (itself if it leads).
    pub coordinator: Option<Coord>,
}

/// A peer did not answer in time (dead, paused, cut off, or the message was lost).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerTimeout;

/// The network seen from one node: a call to peer `to` (1-based id) that waits at most
/// `timeout_ms`. The simulator implements it with RPCs between nodes.
#[async_trait]
pub trait PeerNet<M: Send + 'static, R: Send + 'static>: Send + Sync {
    /// Sends `msg` to `to` and waits for its reply.
    async fn call(&self, to: usize, msg: M, timeout_ms: u64) -> Result<R, PeerTimeout>;
}

/// Where an elector reports the start of an election round (the simulator records it
/// in its timeline, to time elections from it).
pub trait ElectionLog: Send + Sync {
    /// This node started an election round.
    fn election_started(&self);

    /// This node applied a log entry that took sequencer numbers `first..=last`; it sits
    /// at log position `index` and was proposed by node `leader` (1-based) in `term`.
    /// Only protocols with a replicated log (raft) call it.
    fn batch_applied(&self, _index: u64, _term: u64, _leader: u64, _first: u64, _last: u64) {}
}

/// A leadership with no lease runs "forever" on the node's clock: 100 years.
const NO_LEASE_US: i64 = 100 * 365 * 86_400 * 1_000_000;

/// A node's election state.
pub(crate) struct State {
    pub epoch_seen: u64,
    /// The coordinator this node follows, or itself while it leads.
    pub coordinator: Option<Coord>,
    /// Local time the coordinator was last heard from (announcement or heartbeat).
    pub last_heard_us: i64,
    /// True while the node campaigns or leads (false after it resigned).
    pub participating: bool,
    /// This node's own leadership, while it lasts.
    pub leading: Option<(Coord, LeaseHandle)>,
    /// Local time the current election round started (the ring's "participant").
    pub election_since_us: Option<i64>,
    /// Counts coordinators adopted, so an election round can wait for an announcement.
    pub adoptions: u64,
}

/// The shared machinery of one node.
pub(crate) struct Core {
    pub me: usize,
    pub nodes: usize,
    pub names: Vec<NodeId>,
    pub clock: Arc<dyn Clock>,
    pub state: Mutex<State>,
    pub changed: Notify,
    pub log: Arc<dyn ElectionLog>,
    pub heartbeat_interval_ms: u64,
    pub failure_timeout_ms: u64,
    /// A round still unfinished after this long is abandoned and the detector may start
    /// another.
    pub election_timeout_ms: u64,
}

impl Core {
    /// The peers of this node, in id order.
    pub fn others(&self) -> Vec<usize> {
        (1..=self.nodes).filter(|&j| j != self.me).collect()
    }

    pub fn view(&self) -> View {
        let st = self.state.lock().unwrap();
        View {
            epoch_seen: st.epoch_seen,
            coordinator: st.coordinator,
        }
    }

    pub fn epoch_seen(&self) -> u64 {
        self.state.lock().unwrap().epoch_seen
    }

    pub fn see_epoch(&self, epoch: u64) {
        let mut st = self.state.lock().unwrap();
        st.epoch_seen = st.epoch_seen.max(epoch);
    }

    pub fn participating(&self) -> bool {
        self.state.lock().unwrap().participating
    }

    /// This node's coordinator entry while its leadership holds.
    pub fn leading_coord(&self) -> Option<Coord> {
        let st = self.state.lock().unwrap();
        leading(&st)
    }

    /// A coordinator `c` spoke to us (an announcement or a heartbeat). Follows it unless
    /// we already follow a higher one; a leadership of ours below it ends. Returns true
    /// when `c` is newly adopted (not merely heard again).
    pub fn heard_from(&self, c: Coord) -> Option<bool> {
        let mut st = self.state.lock().unwrap();
        st.epoch_seen = st.epoch_seen.max(c.epoch);
        if st.coordinator.is_some_and(|k| c < k) {
            return None;
        }
        let new = st.coordinator != Some(c);
        if new {
            st.adoptions += 1;
        }
        st.coordinator = Some(c);
        st.last_heard_us = self.clock.now_us();
        st.election_since_us = None;
        if let Some((mine, h)) = &st.leading {
            if *mine < c {
                // A higher coordinator exists: leadership ends here, and only here.
                h.end(LossReason::Revoked);
                st.leading = None;
            }
        }
        drop(st);
        self.changed.notify_waiters();
        Some(new)
    }

    /// A peer's reply told us its view: raise our epoch, and end our leadership if the
    /// peer follows a higher coordinator than us.
    pub fn learned(&self, v: &View) {
        let mut st = self.state.lock().unwrap();
        st.epoch_seen = st.epoch_seen.max(v.epoch_seen);
        let Some((mine, h)) = &st.leading else {
            return;
        };
        if v.coordinator.is_some_and(|k| k > *mine) {
            h.end(LossReason::Revoked);
            st.leading = None;
            st.coordinator = None;
            drop(st);
            self.changed.notify_waiters();
        }
    }

    /// Starts an election round unless one is running (or the node does not take part
    /// or leads). Returns true when the caller must run it.
    pub fn begin_election(&self) -> bool {
        let mut st = self.state.lock().unwrap();
        if !st.participating || leading(&st).is_some() || st.election_since_us.is_some() {
            return false;
        }
        st.election_since_us = Some(self.clock.now_us());
        drop(st);
        self.log.election_started();
        true
    }

    /// The current round is over (won, lost or abandoned).
    pub fn end_election(&self) {
        self.state.lock().unwrap().election_since_us = None;
        self.changed.notify_waiters();
    }

    /// Becomes coordinator with `epoch`, unless the node stopped taking part or a
    /// coordinator at least as high was adopted meanwhile.
    pub fn become_leader(&self, epoch: u64) -> Option<Coord> {
        let mut st = self.state.lock().unwrap();
        let c = Coord { epoch, id: self.me };
        if !st.participating || st.coordinator.is_some_and(|k| k > c) {
            return None;
        }
        st.epoch_seen = st.epoch_seen.max(epoch);
        st.coordinator = Some(c);
        st.election_since_us = None;
        // Two rounds can overlap (the failure detector gives up on a slow round and starts
        // another), so a leader may win again with a higher epoch, which its peers now
        // follow. Its leadership under the old epoch ends here: otherwise nothing would
        // ever end it, and the node would act under both.
        if let Some((_, old)) = st.leading.take() {
            old.end(LossReason::Revoked);
        }
        let deadline = self.clock.now_us() + NO_LEASE_US;
        st.leading = Some((c, LeaseHandle::new(self.clock.clone(), deadline, true)));
        drop(st);
        self.changed.notify_waiters();
        Some(c)
    }

    /// The leadership handle of `c`, if it still holds.
    pub fn lease_of(&self, c: Coord) -> Option<LeaseHandle> {
        let st = self.state.lock().unwrap();
        match &st.leading {
            Some((mine, h)) if *mine == c && h.valid() => Some(h.clone()),
            _ => None,
        }
    }

    /// `campaign`: take part, then wait until this node leads.
    pub async fn wait_leadership(&self) -> Leadership {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let st = self.state.lock().unwrap();
                if let Some((c, h)) = &st.leading {
                    if h.valid() {
                        return h.leadership(c.epoch);
                    }
                }
            }
            notified.await;
        }
    }

    pub fn join(&self) {
        self.state.lock().unwrap().participating = true;
        self.changed.notify_waiters();
    }

    /// Stops taking part: the leadership (if any) ends and its heartbeats stop. Returns
    /// the coordinator entry it held, for the caller to tell the peers.
    pub fn resign(&self) -> Option<Coord> {
        let mut st = self.state.lock().unwrap();
        st.participating = false;
        let held = st.leading.take().map(|(c, h)| {
            h.end(LossReason::Resigned);
            c
        });
        if st.coordinator.is_some_and(|c| c.id == self.me) {
            st.coordinator = None;
        }
        st.election_since_us = None;
        drop(st);
        self.changed.notify_waiters();
        held
    }

    /// Coordinator `c` stepped down: a follower of it elects at once instead of waiting
    /// for its failure detector.
    pub fn abdicated(&self, c: Coord) {
        let mut st = self.state.lock().unwrap();
        if st.coordinator == Some(c) {
            st.coordinator = None;
            drop(st);
            self.changed.notify_waiters();
        }
    }

    /// Tells every peer (in parallel, best effort) that the coordinator `c` stepped down.
    pub async fn announce_resign<M, R>(&self, net: &Arc<dyn PeerNet<M, R>>, msg: M, timeout_ms: u64)
    where
        M: Clone + Send + 'static,
        R: Send + 'static,
    {
        let calls = self
            .others()
            .into_iter()
            .map(|j| net.call(j, msg.clone(), timeout_ms));
        futures::future::join_all(calls).await;
    }

    /// The failure detector: while the node takes part and does not lead, start an
    /// election when the coordinator has been silent for `failure_timeout_ms` (or none is
    /// known), or when a round has run for `election_timeout_ms` without a result.
    pub async fn detect(self: Arc<Self>, start: impl Fn() + Send + Sync) {
        enum Next {
            Start,
            Wait(Option<i64>),
        }
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let now = self.clock.now_us();
            let next = {
                let mut st = self.state.lock().unwrap();
                if !st.participating || leading(&st).is_some() {
                    Next::Wait(None)
                } else if let Some(since) = st.election_since_us {
                    let until = since + self.election_timeout_ms as i64 * 1000;
                    if now >= until {
                        // The round produced nothing: give it up and start afresh.
                        st.election_since_us = None;
                        Next::Start
                    } else {
                        Next::Wait(Some(until))
                    }
                } else {
                    match st.coordinator {
                        Some(c) if c.id != self.me => {
                            let until = st.last_heard_us + self.failure_timeout_ms as i64 * 1000;
                            if now >= until {
                                Next::Start
                            } else {
                                Next::Wait(Some(until))
                            }
                        }
                        _ => Next::Start,
                    }
                }
            };
            match next {
                Next::Start => {
                    if self.begin_election() {
                        start();
                    } else {
                        // Nothing to start after all (state changed): wait for news.
                        notified.await;
                    }
                }
                Next::Wait(None) => notified.await,
                Next::Wait(Some(until)) => {
                    tokio::select! {
                        // Biased: tokio would otherwise pick among ready branches with its own RNG, which
                        // madsim does not seed; polling in written order keeps runs deterministic.
                        biased;
                        _ = notified => {}
                        _ = sleep_until_local(self.clock.as_ref(), until) => {}
                    }
                }
            }
        }
    }

    /// Waits until a coordinator is adopted after `since_adoptions`, at most `wait_ms`.
    pub async fn wait_adoption(&self, since_adoptions: u64, wait_ms: u64) -> bool {
        let until = self.clock.now_us() + wait_ms as i64 * 1000;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.state.lock().unwrap().adoptions != since_adoptions {
                return true;
            }
            if self.clock.now_us() >= until {
                return false;
            }
            tokio::select! {
                // Biased: tokio would otherwise pick among ready branches with its own RNG, which
                // madsim does not seed; polling in written order keeps runs deterministic.
                biased;
                _ = notified => {}
                _ = sleep_until_local(self.clock.as_ref(), until) => {}
            }
        }
    }

    /// Who leads as this node believes.
    pub fn leader_info(&self) -> Option<crate::elector::LeaderInfo> {
        let c = self.state.lock().unwrap().coordinator?;
        Some(crate::elector::LeaderInfo {
            node: self.names.get(c.id - 1).cloned().unwrap_or_default(),
            token: c.epoch,
        })
    }
}

fn leading(st: &State) -> Option<Coord> {
    match &st.leading {
        Some((c, h)) if h.valid() => Some(*c),
        _ => None,
    }
}

/// The coordinator's heartbeats: every `interval_ms`, one message to every peer (in
/// parallel, each bounded by the interval), until the leadership of `c` ends. A round
/// runs on its own, so a peer that does not answer never delays the next round to the
/// others. Replies carry the peers' views, which is how a coordinator that was replaced
/// finds out.
pub(crate) async fn heartbeats<M, R>(
    core: Arc<Core>,
    net: Arc<dyn PeerNet<M, R>>,
    c: Coord,
    make: fn(Coord) -> M,
    view_of: fn(&R) -> View,
) where
    M: Send + 'static,
    R: Send + 'static,
{
    let timeout_ms = core.heartbeat_interval_ms.max(1);
    loop {
        let Some(lease) = core.lease_of(c) else {
            return;
        };
        let (core2, net2) = (core.clone(), net.clone());
        madsim::task::spawn(async move {
            heartbeat_round(&core2, &net2, c, make, view_of, timeout_ms).await
        });
        if !lease
            .sleep_while_valid(
                core.clock.as_ref(),
                Duration::from_millis(core.heartbeat_interval_ms),
            )
            .await
        {
            return;
        }
    }
}

/// One heartbeat to every peer, in parallel.
pub(crate) async fn heartbeat_round<M, R>(
    core: &Core,
    net: &Arc<dyn PeerNet<M, R>>,
    c: Coord,
    make: fn(Coord) -> M,
    view_of: fn(&R) -> View,
    timeout_ms: u64,
) where
    M: Send + 'static,
    R: Send + 'static,
{
    let calls = core
        .others()
        .into_iter()
        .map(|j| net.call(j, make(c), timeout_ms));
    for reply in futures::future::join_all(calls).await.into_iter().flatten() {
        core.learned(&view_of(&reply));
    }
}

/// A fresh core for node `me` of `names.len()`.
pub(crate) fn core(
    me: usize,
    names: Vec<NodeId>,
    clock: Arc<dyn Clock>,
    log: Arc<dyn ElectionLog>,
    heartbeat_interval_ms: u64,
    failure_timeout_ms: u64,
    election_timeout_ms: u64,
) -> Arc<Core> {
    Arc::new(Core {
        me,
        nodes: names.len(),
        names,
        clock,
        state: Mutex::new(State {
            epoch_seen: 0,
            coordinator: None,
            last_heard_us: 0,
            participating: false,
            leading: None,
            election_since_us: None,
            adoptions: 0,
        }),
        changed: Notify::new(),
        log,
        heartbeat_interval_ms,
        failure_timeout_ms,
        election_timeout_ms,
    })
}

#[cfg(test)]
mod tests {
    //! Methodology: a bare `Core` on a frozen clock, driven by hand.
    use super::*;

    struct Frozen;
    impl Clock for Frozen {
        fn now_us(&self) -> i64 {
            0
        }
        fn monotonic_us(&self) -> i64 {
            0
        }
        fn global_duration_for(&self, local: Duration) -> Duration {
            local
        }
    }

    struct NoLog;
    impl ElectionLog for NoLog {
        fn election_started(&self) {}
    }

    #[test]
    fn winning_again_with_a_higher_epoch_ends_the_older_leadership() {
        // Seen in gc-pause-unfenced under bully (seed 14): two overlapping rounds of one
        // node both won; the second replaced the first's leadership without ending it,
        // and the node kept acting under the old epoch after a higher coordinator
        // deposed the new one.
        let names = NodeId::fleet(3);
        let core = core(
            3,
            names,
            Arc::new(Frozen),
            Arc::new(NoLog),
            1000,
            3000,
            4000,
        );
        core.join();
        let first = core.become_leader(3).expect("leads");
        let h3 = core.lease_of(first).expect("held");
        let second = core.become_leader(4).expect("leads again");
        assert!(!h3.valid(), "the epoch-3 leadership must end");
        assert!(core.lease_of(first).is_none());
        assert!(core.lease_of(second).is_some());
    }
}
