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
//! followers' lease. Here every `heartbeat_interval_ms` the leader runs a quorum round
//! (`Raft::is_leader`, which sends a heartbeat to every voter and waits for a majority)
//! and extends its leadership to the local time just before that round was sent +
//! `leader_lease_ms`. It acts only while that holds on its own clock, and stops the
//! moment it lapses, even if openraft still believes it leads. `leader_lease_ms` must
//! stay below `election_timeout_min_ms` (the brief's margin for drift; the followers'
//! own lease is `election_timeout_max_ms`).
//!
//! Defaults are openraft's `Config` defaults: election timeout 150-300 ms, heartbeat
//! 50 ms. openraft 0.9 has no pre-vote and no leadership transfer (both arrive in later
//! versions), so a graceful step-down here stops heartbeats and elections on the
//! resigning node and lets the other nodes' election timeout run.
//!
//! Durability: the log, vote and state machine live in a [`RaftDisk`] that the caller
//! keeps across restarts, the way files on a disk survive `kill -9`.

pub mod runtime;
pub mod store;

use crate::clock::{sleep_local, sleep_until_local, Clock};
use crate::elector::{Elector, ElectorError, LeaderInfo, ReplicatedLog};
use crate::leadership::{Leadership, LeaseHandle, LossReason};
use crate::peer::{ElectionLog, PeerTimeout};
use async_trait::async_trait;
use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{EmptyNode, Raft, RaftNetwork, RaftNetworkFactory, ServerState};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use runtime::MadsimRuntime;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
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

/// A deliberately broken variant, for the harness to catch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RaftCanary {
    /// The real protocol.
    #[default]
    None,
    /// The leader acts for as long as openraft believes it leads, with no lease check:
    /// a paused or cut-off leader keeps acting until it hears of a higher term.
    NoLeaseCheck,
}

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

/// Where the sequencer's numbers are made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SequencerPath {
    /// At the fenced resource, like every other protocol: the term fences each batch.
    #[default]
    Resource,
    /// Through the Raft log: a batch is a log entry, its numbers are assigned when it is
    /// applied, and they are handed out only once it is committed. The log is its own
    /// fence: an entry from a deposed leader never commits. Needed for leased reads.
    Log,
}

/// Parameters of the raft protocol (a scenario's `[raft]` table).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RaftConfig {
    /// Lower bound of the randomised election timeout (openraft default 150 ms).
    pub election_timeout_min_ms: u64,
    /// Upper bound of the election timeout (openraft default 300 ms); also the
    /// followers' lease, during which they refuse to vote for another leader.
    pub election_timeout_max_ms: u64,
    /// The leader's heartbeat interval (openraft default 50 ms); also how often the
    /// elector renews the leader lease with a quorum round.
    pub heartbeat_interval_ms: u64,
    /// How long after sending a quorum-acknowledged heartbeat the leader may act. Must
    /// be below `election_timeout_min_ms`.
    pub leader_lease_ms: u64,
    /// Where the sequencer's numbers are made: `resource` or `log`.
    pub sequencer: SequencerPath,
    /// A deliberately broken variant (`none` for the real protocol).
    pub canary: RaftCanary,
}

impl Default for RaftConfig {
    fn default() -> Self {
        RaftConfig {
            election_timeout_min_ms: 150,
            election_timeout_max_ms: 300,
            heartbeat_interval_ms: 50,
            leader_lease_ms: 100,
            sequencer: SequencerPath::Resource,
            canary: RaftCanary::None,
        }
    }
}

impl RaftConfig {
    /// openraft's tick: it checks election timeouts every 1.5 heartbeat intervals.
    pub fn tick_ms(&self) -> u64 {
        self.heartbeat_interval_ms * 3 / 2
    }
}

/// A Raft message from one node to another.
#[derive(Debug, Serialize, Deserialize)]
pub enum RaftMsg {
    /// AppendEntries (also the heartbeat).
    Append(AppendEntriesRequest<TypeConfig>),
    /// RequestVote.
    Vote(VoteRequest<u64>),
    /// InstallSnapshot (one chunk).
    Snapshot(InstallSnapshotRequest<TypeConfig>),
}

/// The answer to a [`RaftMsg`].
#[derive(Debug, Serialize, Deserialize)]
pub enum RaftReply {
    /// To AppendEntries.
    Append(Result<AppendEntriesResponse<u64>, RaftError<u64>>),
    /// To RequestVote.
    Vote(Result<VoteResponse<u64>, RaftError<u64>>),
    /// To InstallSnapshot.
    Snapshot(Result<InstallSnapshotResponse<u64>, RaftError<u64, InstallSnapshotError>>),
    /// The node has not finished starting its Raft instance.
    NotReady,
}

/// The network seen from one node: a call to peer `to` (1-based id) that waits at most
/// `timeout_ms`. The simulator implements it with RPCs between nodes.
#[async_trait]
pub trait RaftTransport: Send + Sync {
    /// Sends `msg` to `to` and waits for its reply.
    async fn call(&self, to: u64, msg: RaftMsg, timeout_ms: u64) -> Result<RaftReply, PeerTimeout>;
}

/// openraft's network factory over a [`RaftTransport`].
struct Net(Arc<dyn RaftTransport>);

/// One peer as openraft reaches it.
struct Conn {
    t: Arc<dyn RaftTransport>,
    to: u64,
}

impl RaftNetworkFactory<TypeConfig> for Net {
    type Network = Conn;
    async fn new_client(&mut self, to: u64, _: &EmptyNode) -> Conn {
        Conn {
            t: self.0.clone(),
            to,
        }
    }
}

#[derive(Debug)]
struct Silent;
impl std::fmt::Display for Silent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no answer in time")
    }
}
impl std::error::Error for Silent {}

fn silent<E: std::error::Error>() -> RPCError<u64, EmptyNode, E> {
    RPCError::Network(NetworkError::new(&Silent))
}

impl Conn {
    async fn send(&self, msg: RaftMsg, option: &RPCOption) -> Option<RaftReply> {
        let ms = (option.hard_ttl().as_millis() as u64).max(1);
        match self.t.call(self.to, msg, ms).await {
            Ok(RaftReply::NotReady) | Err(_) => None,
            Ok(r) => Some(r),
        }
    }
}

type RpcResult<T, E = openraft::error::Infallible> =
    Result<T, RPCError<u64, EmptyNode, RaftError<u64, E>>>;

impl RaftNetwork<TypeConfig> for Conn {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<u64>> {
        match self.send(RaftMsg::Append(rpc), &option).await {
            Some(RaftReply::Append(r)) => r.map_err(|e| RemoteError::new(self.to, e).into()),
            _ => Err(silent()),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<u64>, InstallSnapshotError> {
        match self.send(RaftMsg::Snapshot(rpc), &option).await {
            Some(RaftReply::Snapshot(r)) => r.map_err(|e| RemoteError::new(self.to, e).into()),
            _ => Err(silent()),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<u64>> {
        match self.send(RaftMsg::Vote(rpc), &option).await {
            Some(RaftReply::Vote(r)) => r.map_err(|e| RemoteError::new(self.to, e).into()),
            _ => Err(silent()),
        }
    }
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
}

/// The `raft` elector of one node.
pub struct RaftElector {
    me: u64,
    names: Vec<String>,
    clock: Arc<dyn Clock>,
    cfg: RaftConfig,
    raft: tokio::sync::OnceCell<Raft<TypeConfig>>,
    state: Mutex<State>,
    changed: Notify,
    /// Draws each election's extra random timeout (see `on_metrics`).
    rng: Mutex<ChaCha8Rng>,
    log: Arc<dyn ElectionLog>,
    /// The node's durable state; its state machine answers leased reads.
    disk: Arc<RaftDisk>,
}

impl RaftElector {
    /// Starts node `me` (1-based) of `names.len()`: registers its clock and RNG with the
    /// runtime, builds its Raft instance over `disk` (initialising the cluster on first
    /// boot), and starts the lease loop. Each election this node starts (it becomes a
    /// candidate in a new term) is reported to `log`. Must be called on the node itself.
    pub fn start(
        me: u64,
        names: Vec<String>,
        transport: Arc<dyn RaftTransport>,
        clock: Arc<dyn Clock>,
        rng: ChaCha8Rng,
        disk: Arc<RaftDisk>,
        cfg: RaftConfig,
        log: Arc<dyn ElectionLog>,
    ) -> Arc<Self> {
        let mut rng = rng;
        let own = ChaCha8Rng::seed_from_u64(rng.next_u64());
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
        });
        let e2 = e.clone();
        madsim::task::spawn(async move { e2.boot(transport, disk).await });
        e
    }

    async fn boot(self: Arc<Self>, transport: Arc<dyn RaftTransport>, disk: Arc<RaftDisk>) {
        let config = openraft::Config {
            cluster_name: "baton".into(),
            election_timeout_min: self.cfg.election_timeout_min_ms,
            election_timeout_max: self.cfg.election_timeout_max_ms,
            heartbeat_interval: self.cfg.heartbeat_interval_ms,
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
            Net(transport),
            store::LogStore(disk.clone()),
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
        let e = self.clone();
        madsim::task::spawn(async move { e.lease_loop().await });
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
        st.leader = m.current_leader.map(|l| (l, m.current_term));
        st.last_applied = m.last_applied.map(|l| l.index);
        if m.state == ServerState::Candidate && st.candidate_term != Some(m.current_term) {
            st.candidate_term = Some(m.current_term);
            self.log.election_started();
            self.schedule_reelection(m.current_term);
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
        drop(st);
        self.changed.notify_waiters();
    }

    /// Raft draws a fresh random election timeout for every election (Raft paper,
    /// section 5.2); openraft 0.9 draws one per Raft instance and checks it on a tick that
    /// starts at the same instant on every node of a simulated fleet, so two candidates
    /// whose draws round to the same tick split every vote, forever. As the paper does,
    /// each election here gets its own timeout, drawn from the node's seeded RNG: if the
    /// node still campaigns in `term` once it passes, it starts the next election.
    fn schedule_reelection(&self, term: u64) {
        let (min, max) = (
            self.cfg.election_timeout_min_ms,
            self.cfg.election_timeout_max_ms,
        );
        let wait_ms = self.rng.lock().unwrap().gen_range(min..max);
        let Some(raft) = self.raft.get().cloned() else {
            return;
        };
        let clock = self.clock.clone();
        let mut rx = raft.metrics();
        madsim::task::spawn(async move {
            sleep_local(clock.as_ref(), Duration::from_millis(wait_ms)).await;
            let m = rx.borrow_and_update().clone();
            if m.state == ServerState::Candidate && m.current_term == term {
                let _ = raft.trigger().elect().await;
            }
        });
    }

    /// While openraft says this node leads, renews the leader lease every heartbeat
    /// interval with a quorum round; a round starts at once when leadership begins.
    async fn lease_loop(self: Arc<Self>) {
        let raft = self.raft.get().expect("set before the loop starts").clone();
        let hb_us = self.cfg.heartbeat_interval_ms as i64 * 1000;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let t0 = self.clock.now_us();
            let term = {
                let st = self.state.lock().unwrap();
                st.raft_leader_term.filter(|_| st.participating)
            };
            let Some(term) = term else {
                notified.await;
                continue;
            };
            if self.cfg.canary == RaftCanary::NoLeaseCheck {
                self.extend(term, t0 + NO_LEASE_US);
            } else {
                // is_leader waits for a quorum of heartbeat acknowledgements (each call
                // bounded by the heartbeat interval inside openraft). It is deprecated for
                // ensure_linearizable, which also waits for the state machine to apply
                // everything committed before the round: leased reads need that (a new
                // leader must not answer from a state machine that lags its log), the
                // fenced-resource path needs only the quorum round. See
                // `linearizable_round` for why it is not ensure_linearizable itself.
                let bound = self
                    .clock
                    .global_duration_for(Duration::from_millis(self.cfg.heartbeat_interval_ms * 2));
                let acked = if self.cfg.sequencer == SequencerPath::Log {
                    matches!(
                        madsim::time::timeout(bound, self.linearizable_round(&raft)).await,
                        Ok(true)
                    )
                } else {
                    #[allow(deprecated)]
                    let round = madsim::time::timeout(bound, raft.is_leader()).await;
                    matches!(round, Ok(Ok(())))
                };
                if acked {
                    self.extend(term, t0 + self.cfg.leader_lease_ms as i64 * 1000);
                }
            }
            sleep_until_local(self.clock.as_ref(), t0 + hb_us).await;
        }
    }

    /// What `Raft::ensure_linearizable` does: a quorum heartbeat round, then a wait until
    /// the state machine has applied everything committed before it. openraft's own wait
    /// waits on its metrics channel, and tokio's watch channel files each waiter under a
    /// slot drawn from tokio's RNG, which madsim does not seed: with several waiters, they
    /// woke in a different order each run (seen: 4 of 8 seeds differed). This waits on the
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

    /// A quorum acknowledged a heartbeat of `term` sent before `deadline_us - lease`.
    fn extend(&self, term: u64, deadline_us: i64) {
        let mut st = self.state.lock().unwrap();
        if st.raft_leader_term != Some(term) || !st.participating {
            return;
        }
        match &st.leading {
            Some((t, h)) if *t == term && h.valid() => h.extend_to(deadline_us),
            _ => {
                if deadline_us > self.clock.now_us() {
                    st.leading = Some((
                        term,
                        LeaseHandle::new(self.clock.clone(), deadline_us, true),
                    ));
                }
            }
        }
        drop(st);
        self.changed.notify_waiters();
    }

    /// Answers a message from a peer.
    pub async fn handle(&self, msg: RaftMsg) -> RaftReply {
        let Some(raft) = self.raft.get() else {
            return RaftReply::NotReady;
        };
        match msg {
            RaftMsg::Append(r) => RaftReply::Append(raft.append_entries(r).await),
            RaftMsg::Vote(r) => RaftReply::Vote(raft.vote(r).await),
            RaftMsg::Snapshot(r) => RaftReply::Snapshot(raft.install_snapshot(r).await),
        }
    }

    fn name_of(&self, id: u64) -> String {
        self.names
            .get(id as usize - 1)
            .cloned()
            .unwrap_or_else(|| format!("n{id}"))
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
        // openraft 0.9 has no leadership transfer: stop heartbeats and elections here and
        // let the others' election timeout run, until someone else leads (or 2 s pass).
        {
            let mut st = self.state.lock().unwrap();
            st.participating = false;
            if let Some((_, h)) = st.leading.take() {
                h.end(LossReason::Resigned);
            }
        }
        raft.runtime_config().heartbeat(false);
        raft.runtime_config().elect(false);
        let until = self.clock.now_us() + 2_000_000;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let other = self
                .state
                .lock()
                .unwrap()
                .leader
                .is_some_and(|(l, _)| l != self.me);
            if other || self.clock.now_us() >= until {
                break;
            }
            tokio::select! {
                // Biased: tokio would otherwise pick among ready branches with its own
                // RNG, which madsim does not seed.
                biased;
                _ = notified => {}
                _ = sleep_until_local(self.clock.as_ref(), until) => {}
            }
        }
        raft.runtime_config().heartbeat(true);
        raft.runtime_config().elect(true);
        self.state.lock().unwrap().participating = true;
        self.changed.notify_waiters();
        Ok(())
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
