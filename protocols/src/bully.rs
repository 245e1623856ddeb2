//! `bully`: Garcia-Molina's bully election among peers, with heartbeat failure detection.
//!
//! After H. Garcia-Molina, "Elections in a Distributed Computing System", IEEE
//! Transactions on Computers C-31(1), 1982, as textbooks sketch it:
//! - a node that suspects the coordinator (no heartbeat for `failure_timeout_ms`, see
//!   [`crate::peer`]) or that (re)joins sends ELECTION to every node with a higher id;
//! - a node that receives ELECTION from a lower id answers OK and holds its own election
//!   (a coordinator just re-announces itself to the asker);
//! - if no higher node answers OK within `answer_timeout_ms`, the node takes epoch =
//!   highest epoch seen + 1 and announces COORDINATOR to every node; if some answered
//!   OK, it waits `coordinator_timeout_ms` for a COORDINATOR and otherwise starts over;
//! - so the highest id alive (as far as the node can tell) always ends up coordinator,
//!   taking over even from a lower one that leads: hence "bully".
//!
//! One refinement over the sketch: a node about to lead waits for the replies to its
//! COORDINATOR (at most `answer_timeout_ms`), and if a reply shows a higher coordinator,
//! it does not lead but starts over with the higher epoch. That keeps a restarted node,
//! which forgot every epoch, from leading with a stale one when its peers can tell it.
//! It does not help a node cut off from every peer: no reply, no objection.
//!
//! Tokens and safety: the token is the epoch. A leader has no lease and acts until it
//! learns of a higher `(epoch, id)`. Under a partition both sides elect: the cut-off side
//! keeps its coordinator and, once that one is fenced and campaigns again, may pick the
//! same epoch as the other side. Two leaders then act, which the fenced resource cannot
//! tell apart: the algorithm assumes a network that does not partition.
//!
//! Defaults: there is no deployed bully system to copy defaults from. Baton picks values
//! comparable to the other protocols' 3 s leases: a heartbeat every 1 s, suspicion after
//! three silent seconds, 500 ms for an answer (Garcia-Molina's bound T on a round trip;
//! the same per-call bound as the other protocols' RPC timeout) and 2 s for the
//! COORDINATOR that an OK promises.

use crate::clock::Clock;
use crate::elector::{Elector, ElectorError, LeaderInfo};
use crate::leadership::Leadership;
use crate::peer::{self, Coord, Core, ElectionLog, PeerNet, View};
use crate::safety::SafetyBounds;
use crate::NodeId;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Parameters of the bully protocol (a scenario's `[bully]` table).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BullyConfig {
    /// The coordinator sends a heartbeat to every peer this often.
    pub heartbeat_interval_ms: u64,
    /// A node suspects its coordinator after hearing nothing from it this long.
    pub failure_timeout_ms: u64,
    /// How long a node waits for a reply (OK, or an answer to COORDINATOR).
    pub answer_timeout_ms: u64,
    /// After an OK, how long a node waits for a COORDINATOR before starting over.
    pub coordinator_timeout_ms: u64,
}

impl Default for BullyConfig {
    fn default() -> Self {
        BullyConfig {
            heartbeat_interval_ms: 1000,
            failure_timeout_ms: 3000,
            answer_timeout_ms: 500,
            coordinator_timeout_ms: 2000,
        }
    }
}

impl BullyConfig {
    /// What this protocol promises without the fence: nothing. An election among peers with no lease: a
    /// node that stops hearing the leader elects another while the old one still
    /// leads, so two may act at once whenever messages are lost or late.
    pub fn safety_bounds(&self) -> SafetyBounds {
        SafetyBounds::FENCE_ONLY
    }

    /// The longest one election round can take: ELECTION answers, then either the wait
    /// for COORDINATOR or the COORDINATOR replies.
    pub fn round_ms(&self) -> u64 {
        self.answer_timeout_ms + self.coordinator_timeout_ms.max(self.answer_timeout_ms)
    }
}

/// A bully message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BullyMsg {
    /// ELECTION from a lower node.
    Election {
        /// The sender's id.
        from: usize,
        /// The highest epoch the sender has seen.
        epoch_seen: u64,
    },
    /// COORDINATOR: the sender leads with this epoch.
    Coordinator(Coord),
    /// The coordinator is alive.
    Heartbeat(Coord),
    /// The coordinator stepped down (a graceful resign).
    Resign(Coord),
}

/// The answer to every bully message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BullyReply {
    /// To ELECTION: OK, a higher node takes over the election.
    pub ok: bool,
    /// The answerer's view.
    pub view: View,
}

/// A bully elector for one node.
pub struct BullyElector {
    inner: Arc<Inner>,
}

struct Inner {
    core: Arc<Core>,
    net: Arc<dyn PeerNet<BullyMsg, BullyReply>>,
    cfg: BullyConfig,
}

impl BullyElector {
    /// The elector of node `me` (1-based) among `names` (id i is `names[i - 1]`). Starts
    /// its failure detector at once; messages from peers go to [`BullyElector::handle`].
    pub fn new(
        me: usize,
        names: Vec<NodeId>,
        net: Arc<dyn PeerNet<BullyMsg, BullyReply>>,
        clock: Arc<dyn Clock>,
        cfg: BullyConfig,
        log: Arc<dyn ElectionLog>,
    ) -> Self {
        let core = peer::core(
            me,
            names,
            clock,
            log,
            cfg.heartbeat_interval_ms,
            cfg.failure_timeout_ms,
            // A safety net only: a round ends itself well before this.
            cfg.round_ms() + cfg.heartbeat_interval_ms,
        );
        let inner = Arc::new(Inner { core, net, cfg });
        let i = inner.clone();
        madsim::task::spawn(async move {
            let starter = i.clone();
            i.core
                .clone()
                .detect(move || {
                    madsim::task::spawn(starter.clone().round());
                })
                .await
        });
        BullyElector { inner }
    }

    /// Handles a message from a peer and returns the answer.
    pub fn handle(&self, msg: BullyMsg) -> BullyReply {
        let i = &self.inner;
        let mut ok = false;
        match msg {
            BullyMsg::Election { from, epoch_seen } => {
                i.core.see_epoch(epoch_seen);
                if i.core.participating() && from < i.core.me {
                    ok = true;
                    if let Some(c) = i.core.leading_coord() {
                        // Already coordinator: tell the asker instead of a new election.
                        let (net, core) = (i.net.clone(), i.core.clone());
                        let t = i.cfg.answer_timeout_ms;
                        madsim::task::spawn(async move {
                            if let Ok(r) = net.call(from, BullyMsg::Coordinator(c), t).await {
                                core.learned(&r.view);
                            }
                        });
                    } else if i.core.begin_election() {
                        madsim::task::spawn(i.clone().round());
                    }
                }
            }
            BullyMsg::Coordinator(c) | BullyMsg::Heartbeat(c) => {
                i.core.heard_from(c);
            }
            BullyMsg::Resign(c) => i.core.abdicated(c),
        }
        BullyReply {
            ok,
            view: i.core.view(),
        }
    }
}

impl Inner {
    /// One election round (begun with `Core::begin_election`).
    async fn round(self: Arc<Self>) {
        let core = &self.core;
        let adoptions = core.state.lock().unwrap().adoptions;
        let election = BullyMsg::Election {
            from: core.me,
            epoch_seen: core.epoch_seen(),
        };
        let t = self.cfg.answer_timeout_ms;
        let calls = (core.me + 1..=core.nodes).map(|j| self.net.call(j, election.clone(), t));
        let mut ok = false;
        for r in futures::future::join_all(calls).await.into_iter().flatten() {
            core.learned(&r.view);
            ok |= r.ok;
        }
        if !core.participating() {
            core.end_election();
            return;
        }
        if ok {
            // A higher node took over; its COORDINATOR should follow. If it does not, the
            // failure detector starts over.
            core.wait_adoption(adoptions, self.cfg.coordinator_timeout_ms)
                .await;
            core.end_election();
            return;
        }
        let c = Coord {
            epoch: core.epoch_seen() + 1,
            id: core.me,
        };
        core.see_epoch(c.epoch);
        let calls = core
            .others()
            .into_iter()
            .map(|j| self.net.call(j, BullyMsg::Coordinator(c), t));
        let mut beaten = false;
        for r in futures::future::join_all(calls).await.into_iter().flatten() {
            core.see_epoch(r.view.epoch_seen);
            beaten |= r.view.coordinator.is_some_and(|k| k > c);
        }
        if beaten || core.become_leader(c.epoch).is_none() {
            core.end_election();
            return;
        }
        madsim::task::spawn(peer::heartbeats(
            core.clone(),
            self.net.clone(),
            c,
            BullyMsg::Heartbeat,
            |r: &BullyReply| r.view,
        ));
    }
}

#[async_trait]
impl Elector for BullyElector {
    async fn campaign(&self) -> Result<Leadership, ElectorError> {
        let i = &self.inner;
        i.core.join();
        // A node that (re)joins holds an election at once, whoever leads: the bully rule.
        if i.core.begin_election() {
            madsim::task::spawn(i.clone().round());
        }
        Ok(i.core.wait_leadership().await)
    }

    async fn resign(&self, leadership: &Leadership) -> Result<(), ElectorError> {
        leadership.end(crate::LossReason::Resigned);
        let i = &self.inner;
        // Tell the peers, so they elect now rather than after a failure timeout.
        if let Some(c) = i.core.resign() {
            i.core
                .announce_resign(&i.net, BullyMsg::Resign(c), i.cfg.answer_timeout_ms)
                .await;
        }
        Ok(())
    }

    async fn observe(&self) -> Result<Option<LeaderInfo>, ElectorError> {
        Ok(self.inner.core.leader_info())
    }
}
