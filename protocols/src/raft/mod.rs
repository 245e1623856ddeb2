//! `raft`: leader election by Raft consensus among the nodes themselves (openraft 0.9).
//!
//! Each node runs an [openraft](https://docs.rs/openraft/0.9.25) instance; there is no
//! external service. Semantics, from the Raft paper (Ongaro and Ousterhout, "In Search of
//! an Understandable Consensus Algorithm", 2014, sections 5.2 and 8) and openraft's docs:
//! - a follower that hears no heartbeat for a randomised election timeout becomes a
//!   candidate in the next term and asks for votes; a majority makes it leader;
//! - openraft's followers also keep a **leader lease** (openraft docs, "Leader lease",
//!   `docs::protocol::replication::leader_lease`): after a heartbeat from a leader they
//!   refuse to vote for anyone else for `election_timeout_max`, and wait that lease plus
//!   an election timeout before campaigning themselves;
//! - with the `single-term-leader` feature (openraft docs, "feature flags") a term has
//!   at most one leader, so the **term is the fencing token**. Without it openraft lets
//!   two candidates share a term (seen in the simulator: 2 in 100 chaos seeds).
//!
//! The elector adds the leader side of the lease, as the same openraft page describes
//! it: a leader that has a heartbeat acknowledged by a quorum, sent at local time `t`,
//! knows no other leader can exist before `t + lease`, as long as `lease` is below the
//! followers' lease. The elector sees every AppendEntries openraft sends (its network
//! adapter, [`net`]) with its local send time, and every peer that accepted one (did not
//! answer with a higher vote). Whenever a majority (itself included) has accepted one of
//! the current term, it extends its leadership to the send time of the latest such
//! message that a majority accepted + `leader_lease_ms`, as openraft computes its own
//! `last_quorum_acked_time`. openraft's heartbeats (every tick, 1.5 heartbeat intervals)
//! and its replication renew the lease; there is no round of the elector's own. It acts
//! only while the lease holds on its own clock, and stops the moment it lapses, even if
//! openraft still believes it leads. `leader_lease_ms` must stay below
//! `election_timeout_min_ms` (the brief's margin for drift; the followers' own lease is
//! `election_timeout_max_ms`), and above the tick plus a round trip, or it lapses between
//! heartbeats.
//!
//! **Election timer.** openraft 0.9 draws one election timeout per Raft instance, at
//! start-up, and keeps it for the life of the process. Under a storm that kills only the
//! leader, only winners restart and draw again: the node that drew the longest timeout
//! is beaten to every election by the others and can go through a hundred elections
//! without a win (16 of 100 election-storm seeds had such a node). The Raft paper
//! (section 5.2) and etcd's raft draw a fresh timeout whenever the timer restarts. The
//! elector does that: openraft's own timer is off (`Config::enable_elect = false`), and
//! the elector starts each election with `Raft::trigger().elect()`, which openraft
//! honours with its timer off (`RaftCore`, `ExternalCommand::Elect`). Its timer follows
//! openraft's rules otherwise: it restarts with a fresh draw in
//! `[election_timeout_min_ms, election_timeout_max_ms)` at every AppendEntries openraft
//! accepted (then it first waits out the followers' lease, `election_timeout_max_ms`, as
//! openraft does after a committed vote), at every other change of this node's vote (a
//! vote granted, an election begun, a higher term seen), at every election attempt, and
//! at start-up.
//!
//! **Pre-vote** (Ongaro's thesis, section 9.6; `pre_vote = true`, the default). openraft
//! 0.9 has none. Without it, a follower cut off from its peers times out again and again,
//! raising its term each time; when it rejoins, the leader's next AppendEntries meets that
//! higher term and openraft's leader steps down (a `HigherVote` reply), although nothing
//! was wrong with it. With pre-vote, a node whose timer fires first asks its peers
//! whether they would vote for it in the next term ([`PreVoteRequest`]), without changing
//! its own term, and starts the real election only if a majority (itself included) says
//! yes and its own vote did not change meanwhile (had it voted for another candidate, its
//! election would run one term higher than the one its peers approved). A peer says yes
//! under openraft's own conditions for a real vote: it does not lead, it has not heard
//! from a leader for the followers' lease, the candidate's vote for the next term is at
//! least its own (so a peer that already voted in that term says no), and the
//! candidate's last log id is at least its own. The thesis says "the minimum election
//! timeout" for the lease; openraft's followers refuse real votes for
//! `election_timeout_max_ms` after a heartbeat, and a pre-vote granted earlier would only
//! lead to an election openraft then refuses. A cut-off node never gathers a majority,
//! keeps its term, and rejoins quietly.
//!
//! Defaults are openraft's `Config` defaults: election timeout 150-300 ms, heartbeat
//! 50 ms; pre-vote is on, as in etcd (`etcd --pre-vote`, default true). A graceful
//! step-down here stops heartbeats and elections on the resigning node and lets the
//! other nodes' election timeout run. openraft 0.9 has no leadership transfer call;
//! `transfer.rs` builds one from its public API (`RaftTransfer`).
//!
//! **Sequencer in the log** (`sequencer = "log"`, [`SequencerPath`]). A batch of sequence
//! numbers is one entry ([`SeqBatch`]); the state machine assigns its numbers in log order
//! and `client_write` returns them once the entry is committed and applied here. The
//! leader also answers reads from its state machine while its lease holds (a lease read,
//! Raft thesis section 6.4.1), with no round trip; for that a new leader's lease starts
//! only once its state machine has applied everything committed before its term (what
//! `ensure_linearizable` waits for, see `linearizable_round`): from then on its own
//! batches are applied here before they are handed out. A lease read is linearizable only while the leader's lease ends,
//! in real time, before a follower's: `leader_lease_ms / leader clock rate <=
//! election_timeout_max_ms / follower clock rate`.
//!
//! Durability: the log, vote and state machine live in a [`RaftDisk`] that the caller
//! keeps across restarts, the way files on a disk survive `kill -9`.

mod election;
pub mod net;
pub mod runtime;
pub mod store;
mod transfer;

use crate::clock::{sleep_local, Clock};
use crate::elector::{Elector, ElectorError, LeaderInfo, ReplicatedLog, TransferReadiness};
use crate::leadership::{Leadership, LeaseHandle, LossReason};
use crate::peer::ElectionLog;
pub use crate::raft_config::{RaftCanary, RaftConfig, RaftTransfer, SequencerPath};
use crate::NodeId;
use async_trait::async_trait;
use election::TimerReset;
use net::{AckSink, Net};
pub use net::{PreVoteRequest, PreVoteResponse, RaftMsg, RaftReply, RaftTransport};
use openraft::raft::AppendEntriesResponse;
use openraft::{EmptyNode, Raft, ServerState, Vote};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use runtime::MadsimRuntime;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
pub use store::RaftDisk;
// openraft 0.9.25's declare_raft_types! names `Cursor` unqualified for its default
// snapshot data type.
use std::io::Cursor;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

openraft::declare_raft_types!(
    /// Raft's types as Baton uses them: a sequencer batch per entry (the response is the
    /// batch's last number), node ids 1..=n.
    pub TypeConfig:
        D = SeqBatch,
        R = u64,
        NodeId = u64,
        Node = EmptyNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = MadsimRuntime,
);

/// One log entry of the replicated sequencer: `count` more numbers, proposed by node
/// `leader`. With `single-term-leader` a log id carries only the term, so the entry names
/// its proposer itself (for the timeline; the state machine ignores it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeqBatch {
    /// The proposing node (1-based id).
    pub leader: u64,
    /// How many numbers the batch takes.
    pub count: u64,
}

/// A leadership with no lease (the canary) runs "forever": 100 years.
const NO_LEASE_US: i64 = 100 * 365 * 86_400 * 1_000_000;

#[derive(Default)]
struct State {
    /// False after a resign, until the step-down is over.
    participating: bool,
    /// Our leadership while it holds: the term and its lease.
    leading: Option<(u64, LeaseHandle)>,
    /// Who leads as openraft last reported it, and in which term.
    leader: Option<(u64, u64)>,
    /// openraft says this node leads, in this term.
    raft_leader_term: Option<u64>,
    /// The last term in which this node was seen campaigning.
    candidate_term: Option<u64>,
    /// The log index openraft last reported applied.
    last_applied: Option<u64>,
    /// Local time of the last AppendEntries openraft accepted (or of start-up with a
    /// leader's vote on disk): openraft's followers' lease runs from here.
    lease_from_us: Option<i64>,
    /// When the election timer fires, in local microseconds.
    election_deadline_us: i64,
    /// This node's vote as openraft last reported it.
    vote: Option<Vote<u64>>,
    /// For each peer, the latest AppendEntries it accepted: (term, local send time).
    acks: BTreeMap<u64, (u64, i64)>,
    /// In log mode, the term whose leader has applied everything committed before it
    /// (its lease may start).
    log_ready_term: Option<u64>,
}

/// The `raft` elector of one node.
pub struct RaftElector {
    me: u64,
    names: Vec<NodeId>,
    clock: Arc<dyn Clock>,
    cfg: RaftConfig,
    raft: tokio::sync::OnceCell<Raft<TypeConfig>>,
    state: Mutex<State>,
    changed: Notify,
    /// Draws every election timeout (see the module doc).
    rng: Mutex<ChaCha8Rng>,
    log: Arc<dyn ElectionLog>,
    /// The node's durable state; its state machine answers leased reads.
    disk: Arc<RaftDisk>,
    /// Reaches the peers, for pre-votes (openraft gets its own handle).
    transport: Arc<dyn RaftTransport>,
}

/// Where a Raft elector runs: which node it is, how it reaches its peers, and what the
/// world gives it (a clock, a seeded generator, its disk, where elections are logged).
pub struct RaftNode {
    /// This node's number, 1-based.
    pub me: u64,
    /// Every node, in order.
    pub names: Vec<NodeId>,
    /// Reaches the peers.
    pub transport: Arc<dyn RaftTransport>,
    /// The node's clock.
    pub clock: Arc<dyn Clock>,
    /// The node's seeded generator.
    pub rng: ChaCha8Rng,
    /// The node's durable state.
    pub disk: Arc<RaftDisk>,
    /// Where each election this node starts is reported.
    pub log: Arc<dyn ElectionLog>,
}

impl RaftElector {
    /// Starts node `me` (1-based) of `names.len()`: registers its clock and RNG with the
    /// runtime, builds its Raft instance over `disk` (initialising the cluster on first
    /// boot), and starts the lease loop. Each election this node starts (it becomes a
    /// candidate in a new term) is reported to `log`. Must be called on the node itself.
    pub fn start(node: RaftNode, cfg: RaftConfig) -> Arc<Self> {
        let RaftNode {
            me,
            names,
            transport,
            clock,
            rng,
            disk,
            log,
        } = node;
        let mut rng = rng;
        let own = ChaCha8Rng::seed_from_u64(rng.next_u64());
        let fsync = Arc::new(store::Fsync {
            clock: clock.clone(),
            range_ms: cfg.fsync_ms,
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(rng.next_u64())),
        });
        runtime::register(clock.clone(), rng);
        let e = Arc::new(RaftElector {
            me,
            names,
            clock,
            cfg,
            raft: tokio::sync::OnceCell::new(),
            state: Mutex::new(State {
                participating: true,
                ..State::default()
            }),
            changed: Notify::new(),
            rng: Mutex::new(own),
            log,
            disk: disk.clone(),
            transport,
        });
        let e2 = e.clone();
        madsim::task::spawn(async move { e2.boot(disk, fsync).await });
        e
    }

    async fn boot(self: Arc<Self>, disk: Arc<RaftDisk>, fsync: Arc<store::Fsync>) {
        let config = openraft::Config {
            cluster_name: "baton".into(),
            election_timeout_min: self.cfg.election_timeout_min_ms,
            election_timeout_max: self.cfg.election_timeout_max_ms,
            heartbeat_interval: self.cfg.heartbeat_interval_ms,
            // The elector's timer starts elections (see the module doc).
            enable_elect: false,
            // The log stays small in a run: no snapshots, so no snapshot transfer.
            snapshot_policy: openraft::SnapshotPolicy::Never,
            ..Default::default()
        };
        let config = Arc::new(config.validate().expect("validated by the scenario"));
        // openraft checks election timeouts on a tick that starts when the instance is
        // built. Real processes never start on the same microsecond; simulated nodes do,
        // and with aligned ticks two followers whose timeouts round to the same tick
        // campaign together and split the vote. A seeded start-up delay of up to one
        // tick gives each node its own tick phase, as a real fleet has.
        let jitter_us = self
            .rng
            .lock()
            .unwrap()
            .gen_range(0..self.cfg.tick_ms() * 1000);
        sleep_local(self.clock.as_ref(), Duration::from_micros(jitter_us)).await;
        let blank = disk.is_blank();
        let raft = Raft::new(
            self.me,
            config,
            Net {
                transport: self.transport.clone(),
                acks: Arc::downgrade(&self) as std::sync::Weak<dyn AckSink>,
            },
            store::LogStore(disk.clone(), fsync),
            store::StateMachine {
                disk,
                log: self.log.clone(),
            },
        )
        .await
        .expect("in-memory storage does not fail");
        if blank {
            // Every node initialises with the same membership on first boot; openraft
            // accepts that (the entries are identical) and refuses it once anything is
            // stored, which is why a restarted node skips it.
            let members: BTreeSet<u64> = (1..=self.names.len() as u64).collect();
            let _ = raft.initialize(members).await;
        }
        let _ = self.raft.set(raft.clone());
        // openraft restarts its followers' lease at start-up when the stored vote is a
        // leader's (its `vote_last_modified` is the boot instant), and so does the timer.
        if raft.metrics().borrow().vote.is_committed() {
            self.reset_timer(TimerReset::LeaderContact);
        } else {
            self.reset_timer(TimerReset::Election);
        }
        if self.cfg.sequencer == SequencerPath::Log {
            let e = self.clone();
            madsim::task::spawn(async move { e.log_gate().await });
        }
        let e = self.clone();
        madsim::task::spawn(async move { e.election_timer().await });
        let mut rx = raft.metrics();
        loop {
            let m = rx.borrow_and_update().clone();
            self.on_metrics(&m);
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Follows openraft's view: who leads, and whether this node still does.
    fn on_metrics(&self, m: &openraft::RaftMetrics<u64, EmptyNode>) {
        let mut st = self.state.lock().unwrap();
        // openraft restarts its timer whenever its vote changes (`vote_last_modified`):
        // a vote granted, an election begun, or a higher vote seen in a reply (a leader
        // or candidate stepping down). A leader's committed vote is reset where its
        // AppendEntries arrive instead, lease first.
        let vote_changed = st.vote.replace(m.vote).is_some_and(|v| v != m.vote);
        st.leader = m.current_leader.map(|l| (l, m.current_term));
        st.last_applied = m.last_applied.map(|l| l.index);
        if m.state == ServerState::Candidate && st.candidate_term != Some(m.current_term) {
            st.candidate_term = Some(m.current_term);
            // With pre-vote the campaign began with the pre-vote round, logged there.
            if !self.cfg.pre_vote {
                self.log.election_started();
            }
        }
        let mine = m.state == ServerState::Leader && m.current_leader == Some(self.me);
        st.raft_leader_term = mine.then_some(m.current_term);
        if let Some((term, h)) = &st.leading {
            if !mine || *term != m.current_term {
                // openraft stepped down (it saw a higher term): leadership ends now.
                h.end(LossReason::Revoked);
                st.leading = None;
            }
        }
        // Acknowledgements may have come before openraft reported this node leader.
        self.renew(&mut st);
        drop(st);
        if vote_changed && !m.vote.is_committed() {
            self.reset_timer(TimerReset::Election);
        }
        self.changed.notify_waiters();
    }

    /// In log mode, lets each new leadership's lease start once the state machine has
    /// applied everything committed before the term (see the module doc); in resource
    /// mode the lease needs no such wait.
    async fn log_gate(self: Arc<Self>) {
        let raft = self.raft.get().expect("set before the loop starts").clone();
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let term = {
                let st = self.state.lock().unwrap();
                st.raft_leader_term
                    .filter(|t| st.participating && st.log_ready_term != Some(*t))
            };
            let Some(term) = term else {
                notified.await;
                continue;
            };
            let bound = self
                .clock
                .global_duration_for(Duration::from_millis(self.cfg.heartbeat_interval_ms * 2));
            if matches!(
                madsim::time::timeout(bound, self.linearizable_round(&raft)).await,
                Ok(true)
            ) {
                let mut st = self.state.lock().unwrap();
                if st.raft_leader_term == Some(term) {
                    st.log_ready_term = Some(term);
                    self.renew(&mut st);
                }
                drop(st);
                self.changed.notify_waiters();
            } else {
                sleep_local(
                    self.clock.as_ref(),
                    Duration::from_millis(self.cfg.heartbeat_interval_ms),
                )
                .await;
            }
        }
    }

    /// What `Raft::ensure_linearizable` does: a quorum heartbeat round, then a wait until
    /// the state machine has applied everything committed before it. openraft's own wait
    /// waits on its metrics channel, and tokio's watch channel files each waiter under a
    /// slot drawn from tokio's RNG, which madsim does not seed: with several waiters, they
    /// woke in a different order each run (`sim check-determinism` caught it). This waits on the
    /// elector's own `Notify` (woken, in order, on every metrics change) instead, and has
    /// no timer of its own: the caller bounds it.
    async fn linearizable_round(&self, raft: &Raft<TypeConfig>) -> bool {
        let Ok((read_log_id, _)) = raft.get_read_log_id().await else {
            return false;
        };
        let want = read_log_id.map(|l| l.index);
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.state.lock().unwrap().last_applied >= want {
                return true;
            }
            notified.await;
        }
    }

    /// Answers a message from a peer.
    pub async fn handle(&self, msg: RaftMsg) -> RaftReply {
        let Some(raft) = self.raft.get() else {
            return RaftReply::NotReady;
        };
        match msg {
            RaftMsg::Append(r) => {
                let res = raft.append_entries(r).await;
                // Only a leader openraft accepted (its vote is at least ours) restarts
                // the timer; a `HigherVote` reply means the sender is no leader of ours.
                if matches!(&res, Ok(r) if !matches!(r, AppendEntriesResponse::HigherVote(_))) {
                    self.reset_timer(TimerReset::LeaderContact);
                }
                RaftReply::Append(res)
            }
            RaftMsg::Vote(r) => {
                let res = raft.vote(r).await;
                if matches!(&res, Ok(r) if r.vote_granted) {
                    self.reset_timer(TimerReset::Election);
                }
                RaftReply::Vote(res)
            }
            RaftMsg::Snapshot(r) => RaftReply::Snapshot(raft.install_snapshot(r).await),
            RaftMsg::PreVote(r) => RaftReply::PreVote(self.answer_pre_vote(raft, &r)),
            RaftMsg::TimeoutNow => {
                // Raft thesis 3.10: the transfer's target elects at once, no pre-vote.
                let _ = raft.trigger().elect().await;
                RaftReply::TimeoutNow
            }
        }
    }

    fn name_of(&self, id: u64) -> NodeId {
        self.names
            .get(id as usize - 1)
            .cloned()
            .unwrap_or_else(|| NodeId::nth(id as usize))
    }

    /// Extends (or starts) the leadership from the acknowledgements so far, if openraft
    /// says this node leads: to the send time of the latest AppendEntries of the term
    /// that a majority (this node included) accepted, + `leader_lease_ms`.
    fn renew(&self, st: &mut State) {
        let Some(term) = st.raft_leader_term.filter(|_| st.participating) else {
            return;
        };
        let deadline_us = if self.cfg.canary == RaftCanary::NoLeaseCheck {
            self.clock.now_us() + NO_LEASE_US
        } else {
            if self.cfg.sequencer == SequencerPath::Log && st.log_ready_term != Some(term) {
                return;
            }
            // A majority of n is n / 2 + 1: this node and n / 2 peers.
            let need = self.names.len() / 2;
            let anchor_us = if need == 0 {
                self.clock.now_us()
            } else {
                let mut sent: Vec<i64> = st
                    .acks
                    .iter()
                    .filter(|(peer, (t, _))| **peer != self.me && *t == term)
                    .map(|(_, (_, sent_us))| *sent_us)
                    .collect();
                if sent.len() < need {
                    return;
                }
                sent.sort_unstable_by(|a, b| b.cmp(a));
                sent[need - 1]
            };
            anchor_us + self.cfg.leader_lease_ms as i64 * 1000
        };
        match &st.leading {
            Some((t, h)) if *t == term && h.valid() => h.extend_to(deadline_us),
            _ => {
                if deadline_us > self.clock.now_us() {
                    let lease = LeaseHandle::new(self.clock.clone(), deadline_us, true);
                    if self.cfg.canary == RaftCanary::ReleaseInFlight {
                        lease.arm_release_in_flight_canary();
                    }
                    st.leading = Some((term, lease));
                }
            }
        }
    }
}

impl AckSink for RaftElector {
    fn now_us(&self) -> i64 {
        self.clock.now_us()
    }

    fn acked(&self, peer: u64, term: u64, sent_us: i64) {
        let mut st = self.state.lock().unwrap();
        let newer = match st.acks.get(&peer) {
            Some(&(t, s)) => (term, sent_us) > (t, s),
            None => true,
        };
        if !newer {
            return;
        }
        st.acks.insert(peer, (term, sent_us));
        let before = st.leading.as_ref().map(|(t, h)| (*t, h.valid()));
        self.renew(&mut st);
        let started = st.leading.as_ref().map(|(t, h)| (*t, h.valid())) != before;
        drop(st);
        // Only a leadership that began needs waking the campaign; an extension is read
        // from the handle.
        if started {
            self.changed.notify_waiters();
        }
    }
}

#[async_trait]
impl Elector for RaftElector {
    async fn campaign(&self) -> Result<Leadership, ElectorError> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let st = self.state.lock().unwrap();
                if let Some((term, h)) = &st.leading {
                    if h.valid() && st.participating {
                        return Ok(h.leadership(*term));
                    }
                }
            }
            notified.await;
        }
    }

    async fn resign(&self, leadership: &Leadership) -> Result<(), ElectorError> {
        if leadership.loss_reason() != LossReason::Resigned {
            // A lapsed lease or a fenced write: openraft decides whether this node still
            // leads, and the lease loop renews the leadership if it does.
            return Ok(());
        }
        let Some(raft) = self.raft.get().cloned() else {
            return Ok(());
        };
        // A plain resign: stop heartbeats and elections here and let the others'
        // election timeout run, until someone else leads.
        self.stand_aside(&raft, LossReason::Resigned);
        self.rejoin_once_another_leads(&raft).await;
        Ok(())
    }

    async fn transfer_readiness(
        &self,
        _leadership: &Leadership,
        successor: &NodeId,
    ) -> Result<TransferReadiness, ElectorError> {
        Ok(self.successor_caught_up(successor))
    }

    async fn transfer(
        &self,
        _leadership: &Leadership,
        successor: &NodeId,
    ) -> Result<(), ElectorError> {
        self.hand_over(successor).await
    }

    async fn observe(&self) -> Result<Option<LeaderInfo>, ElectorError> {
        let leader = self.state.lock().unwrap().leader;
        Ok(leader.map(|(id, term)| LeaderInfo {
            node: self.name_of(id),
            token: term,
        }))
    }

    fn replicated_log(&self) -> Option<&dyn ReplicatedLog> {
        (self.cfg.sequencer == SequencerPath::Log).then_some(self as &dyn ReplicatedLog)
    }
}

#[async_trait]
impl ReplicatedLog for RaftElector {
    async fn advance(&self, token: u64, count: u64) -> Result<(u64, u64), ElectorError> {
        let raft = self.raft.get().cloned().ok_or(ElectorError::NotLeader)?;
        if self.state.lock().unwrap().raft_leader_term != Some(token) {
            return Err(ElectorError::NotLeader);
        }
        // openraft answers only once the entry is committed and applied here, or with
        // an error once this node learns it no longer leads. A leader cut off from its
        // quorum never hears either: the caller bounds the wait.
        let resp = raft
            .client_write(SeqBatch {
                leader: self.me,
                count,
            })
            .await
            .map_err(|_| ElectorError::NotLeader)?;
        // Committed in a later term of ours would still be a valid batch, but the caller
        // acts under `token`: report the batch only if the term has not moved.
        if resp.log_id.leader_id.term != token {
            return Err(ElectorError::NotLeader);
        }
        let last = resp.data;
        Ok((last.saturating_sub(count.saturating_sub(1)), last))
    }

    fn leased_read(&self) -> Option<(u64, u64)> {
        let st = self.state.lock().unwrap();
        let (term, h) = st.leading.as_ref()?;
        (st.participating && h.valid()).then(|| (*term, self.disk.value()))
    }
}
