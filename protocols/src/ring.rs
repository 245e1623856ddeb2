//! `ring`: the Chang-Roberts ring election among peers, with heartbeat failure detection.
//!
//! After E. Chang and R. Roberts, "An improved algorithm for decentralized
//! extrema-finding in circular configurations of processes", Communications of the ACM
//! 22(5), 1979, with the usual textbook additions for failures:
//! - nodes sit on a logical ring by id (the successor of i is i + 1, the last wraps to
//!   the first); a message goes to the successor, and a successor that does not
//!   acknowledge within `hop_timeout_ms` is skipped for the next one;
//! - a node that suspects the coordinator (no heartbeat for `failure_timeout_ms`, see
//!   [`crate::peer`]) marks itself a participant and sends ELECTION(its id);
//! - on ELECTION(c): c above its own id, a node forwards it; below, a non-participant
//!   replaces it with its own id, a participant drops it; its own id back means it has
//!   the highest id on the ring: it is elected and circulates ELECTED;
//! - the message also carries the highest epoch any node on the way has seen; the elected
//!   node takes that + 1, so epochs climb even across restarts that forget them;
//! - a participant that sees no result within `election_timeout_ms` starts over (a lost
//!   message or a node that died holding one would otherwise stall the ring).
//!
//! A coordinator that receives an ELECTION swallows it and heartbeats everyone at once,
//! so a node that rejoins finds the live coordinator instead of unseating it: unlike the
//! bully, the ring keeps its leader until the leader fails.
//!
//! Tokens and safety: the token is the epoch. A leader has no lease and acts until it
//! learns of a higher `(epoch, id)`. A node cut off from every peer skips every successor
//! and gets its own ELECTION back: it elects itself, with the epochs it alone has seen,
//! while the rest of the ring elects another. Two leaders then act, possibly under the
//! same epoch: the algorithm assumes a network that does not partition.
//!
//! Defaults: there is no deployed ring system to copy defaults from. Baton picks values
//! comparable to the other protocols' 3 s leases: a heartbeat every 1 s, suspicion after
//! three silent seconds, 500 ms per hop (the other protocols' per-call bound) and 3 s
//! for a round to come back.

use crate::clock::Clock;
use crate::elector::{Elector, ElectorError, LeaderInfo};
use crate::leadership::Leadership;
use crate::peer::{self, Coord, Core, ElectionLog, PeerNet, View};
use crate::safety::SafetyBounds;
use crate::NodeId;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Parameters of the ring protocol (a scenario's `[ring]` table).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RingConfig {
    /// The coordinator sends a heartbeat to every peer this often.
    pub heartbeat_interval_ms: u64,
    /// A node suspects its coordinator after hearing nothing from it this long.
    pub failure_timeout_ms: u64,
    /// How long a node waits for its successor to acknowledge before skipping it.
    pub hop_timeout_ms: u64,
    /// A participant that sees no ELECTED this long after joining a round starts over.
    pub election_timeout_ms: u64,
}

impl Default for RingConfig {
    fn default() -> Self {
        RingConfig {
            heartbeat_interval_ms: 1000,
            failure_timeout_ms: 3000,
            hop_timeout_ms: 500,
            election_timeout_ms: 3000,
        }
    }
}

/// A ring message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RingMsg {
    /// ELECTION: the highest candidate id so far, and the highest epoch seen on the way.
    Election {
        /// The candidate.
        candidate: usize,
        /// The highest epoch seen by the nodes it passed.
        max_epoch: u64,
    },
    /// ELECTED: the new coordinator.
    Elected(Coord),
    /// The coordinator is alive.
    Heartbeat(Coord),
    /// The coordinator stepped down (a graceful resign).
    Resign(Coord),
}

/// The acknowledgement of every ring message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RingReply {
    /// The answerer's view.
    pub view: View,
}

/// A ring elector for one node.
pub struct RingElector {
    inner: Arc<Inner>,
}

struct Inner {
    core: Arc<Core>,
    net: Arc<dyn PeerNet<RingMsg, RingReply>>,
    cfg: RingConfig,
}

impl RingElector {
    /// The elector of node `me` (1-based) among `names` (id i is `names[i - 1]`). Starts
    /// its failure detector at once; messages from peers go to [`RingElector::handle`].
    pub fn new(
        me: usize,
        names: Vec<NodeId>,
        net: Arc<dyn PeerNet<RingMsg, RingReply>>,
        clock: Arc<dyn Clock>,
        cfg: RingConfig,
        log: Arc<dyn ElectionLog>,
    ) -> Self {
        let core = peer::core(
            me,
            names,
            clock,
            log,
            cfg.heartbeat_interval_ms,
            cfg.failure_timeout_ms,
            cfg.election_timeout_ms,
        );
        let inner = Arc::new(Inner { core, net, cfg });
        let i = inner.clone();
        madsim::task::spawn(async move {
            let starter = i.clone();
            i.core
                .clone()
                .detect(move || {
                    let s = starter.clone();
                    let msg = RingMsg::Election {
                        candidate: s.core.me,
                        max_epoch: s.core.epoch_seen(),
                    };
                    madsim::task::spawn(s.send_along(msg));
                })
                .await
        });
        RingElector { inner }
    }

    /// Handles a message from a peer and returns the acknowledgement. Forwarding happens
    /// in the background, so a hop's acknowledgement never waits on the rest of the ring.
    pub fn handle(&self, msg: RingMsg) -> RingReply {
        self.inner.clone().handle(msg);
        RingReply {
            view: self.inner.core.view(),
        }
    }
}

impl Inner {
    fn handle(self: Arc<Self>, msg: RingMsg) {
        let core = &self.core;
        match msg {
            RingMsg::Election {
                candidate,
                max_epoch,
            } => {
                core.see_epoch(max_epoch);
                let max_epoch = core.epoch_seen();
                if let Some(c) = core.leading_coord() {
                    // A live coordinator answers the round by making itself heard.
                    let (core, net) = (core.clone(), self.net.clone());
                    madsim::task::spawn(async move {
                        let t = core.heartbeat_interval_ms.max(1);
                        peer::heartbeat_round(
                            &core,
                            &net,
                            c,
                            RingMsg::Heartbeat,
                            |r: &RingReply| r.view,
                            t,
                        )
                        .await
                    });
                } else if candidate == core.me {
                    self.elected(max_epoch);
                } else if candidate > core.me {
                    if core.participating() {
                        // Forwarding a higher candidate makes us a participant.
                        core.state
                            .lock()
                            .unwrap()
                            .election_since_us
                            .get_or_insert(core.clock.now_us());
                    }
                    let msg = RingMsg::Election {
                        candidate,
                        max_epoch,
                    };
                    madsim::task::spawn(self.clone().send_along(msg));
                } else if !core.participating() {
                    // Not a candidate (it resigned): pass the round on untouched.
                    let msg = RingMsg::Election {
                        candidate,
                        max_epoch,
                    };
                    madsim::task::spawn(self.clone().send_along(msg));
                } else if core.begin_election() {
                    // A lower candidate and we are not yet in this round: put ourselves up.
                    let msg = RingMsg::Election {
                        candidate: core.me,
                        max_epoch,
                    };
                    madsim::task::spawn(self.clone().send_along(msg));
                }
                // Otherwise a participant drops a lower candidate (Chang-Roberts).
            }
            RingMsg::Elected(c) => {
                if c.id == core.me {
                    // Our announcement went all the way round.
                    return;
                }
                // Pass it on only when it is news, so it cannot circle forever.
                if core.heard_from(c) == Some(true) {
                    madsim::task::spawn(self.clone().send_along(RingMsg::Elected(c)));
                }
            }
            RingMsg::Heartbeat(c) => {
                core.heard_from(c);
            }
            RingMsg::Resign(c) => core.abdicated(c),
        }
    }

    /// Our own ELECTION came back: lead with the highest epoch the ring has seen + 1.
    fn elected(self: Arc<Self>, max_epoch: u64) {
        let core = &self.core;
        if core.state.lock().unwrap().election_since_us.is_none() {
            // A stale round of ours (we left it, or it was superseded): ignore it.
            return;
        }
        let Some(c) = core.become_leader(max_epoch.max(core.epoch_seen()) + 1) else {
            core.end_election();
            return;
        };
        madsim::task::spawn(peer::heartbeats(
            core.clone(),
            self.net.clone(),
            c,
            RingMsg::Heartbeat,
            |r: &RingReply| r.view,
        ));
        madsim::task::spawn(self.clone().send_along(RingMsg::Elected(c)));
    }

    /// Sends `msg` to the first successor that acknowledges. If none does, the ring has
    /// shrunk to this node: its own ELECTION has come back to it.
    async fn send_along(self: Arc<Self>, msg: RingMsg) {
        let core = &self.core;
        for k in 1..core.nodes {
            let to = (core.me - 1 + k) % core.nodes + 1;
            if let Ok(r) = self
                .net
                .call(to, msg.clone(), self.cfg.hop_timeout_ms)
                .await
            {
                core.learned(&r.view);
                return;
            }
        }
        if let RingMsg::Election {
            candidate,
            max_epoch,
        } = msg
        {
            if candidate == core.me {
                self.elected(max_epoch);
            }
        }
    }
}

#[async_trait]
impl Elector for RingElector {
    async fn campaign(&self) -> Result<Leadership, ElectorError> {
        // The failure detector starts a round if no live coordinator is known.
        self.inner.core.join();
        Ok(self.inner.core.wait_leadership().await)
    }

    async fn resign(&self, leadership: &Leadership) -> Result<(), ElectorError> {
        leadership.end(crate::LossReason::Resigned);
        let i = &self.inner;
        // Tell the peers, so they elect now rather than after a failure timeout.
        if let Some(c) = i.core.resign() {
            i.core
                .announce_resign(&i.net, RingMsg::Resign(c), i.cfg.hop_timeout_ms)
                .await;
        }
        Ok(())
    }

    async fn observe(&self) -> Result<Option<LeaderInfo>, ElectorError> {
        Ok(self.inner.core.leader_info())
    }
}

impl RingConfig {
    /// What this protocol promises without the fence: nothing. An election among peers with no lease: a
    /// node that stops hearing the leader elects another while the old one still
    /// leads, so two may act at once whenever messages are lost or late.
    pub fn safety_bounds(&self) -> SafetyBounds {
        SafetyBounds::FENCE_ONLY
    }
}
