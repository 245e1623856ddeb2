//! The lease service as an etcd cluster: members that elect a leader Raft's way, writes
//! that commit on a quorum after an fsync, a lessor that lives on the leader and is
//! promoted with every lease extended. What is and is not modelled is written once, in
//! `baton_model::scenario::etcd_cluster`; this file carries it out on the simulated network.
//!
//! One `Service` (from `etcd.rs`) is the replicated state machine: every member applies
//! the same committed writes, so the simulation applies each once, when it commits. Each
//! member keeps its own Raft state (term, vote, log length and last term on its "disk",
//! which survive a kill; its role, its leader and its lessor's promotion, which do not).

use super::etcd::v3_messages::{V3Answer, V3Header, V3Request};
use super::etcd::watch_messages::WatchPoll;
use super::etcd::{IdGen, Service, START_EPOCH_UNIX_MS};
use crate::world::clock::NodeClock;
use crate::world::net::{Endpoint, Net};
use crate::world::rpc::{call, EtcdWatch};
use crate::world::timeline::{Event, Timeline};
use baton_model::scenario::etcd_cluster::{member_name, EtcdCluster};
use baton_protocols::{sleep_local, Clock};
use futures::stream::{FuturesUnordered, StreamExt};
use madsim::runtime::Handle;
use madsim::task::NodeId;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::Notify;

mod election;
mod messages;
use messages::{Append, Forward, Vote};
pub use messages::{ClientOp, Op, Refusal, Reply};

/// The address of member `etcd-<i>` (1-based).
pub fn member_addr(i: usize) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 2, i as u8)), 2379)
}

/// How long a proposal waits to commit before the member answers that it timed out
/// (etcd: 5 s plus two election timeouts).
const REQUEST_TIMEOUT_MS: u64 = 7_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Follower,
    Candidate,
    Leader,
}

/// One member's Raft state.
struct Raft {
    // On disk: survives a kill.
    term: u64,
    voted_for: Option<usize>,
    /// (log length, last entry's term).
    log: (u64, u64),
    // In memory: lost on a kill.
    role: Role,
    leader: Option<usize>,
    /// The lessor is promoted (this member leads and its first entry committed).
    primary: bool,
    /// Leader only: when each member last answered, on this member's clock (µs).
    acked_us: Vec<i64>,
}

/// A member: its process's state and its disk.
pub struct Member {
    i: usize,
    name: String,
    /// The member's own clock (skewable as `etcd-<i>`).
    pub clock: NodeClock,
    /// The member's madsim node.
    pub node: OnceLock<NodeId>,
    raft: Mutex<Raft>,
    ids: Mutex<IdGen>,
    rng: Mutex<ChaCha8Rng>,
    /// A heartbeat or vote from a live leader or candidate: the election timer restarts.
    heard: Notify,
    /// A `slow-disk` fault in force: fsyncs wait for `unstalled`.
    stalled: AtomicBool,
    unstalled: Notify,
    /// Whether the process runs (killed members are down).
    pub up: AtomicBool,
}

impl Member {
    /// Its name (`etcd-2`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its node in the world.
    pub fn id(&self) -> NodeId {
        *self.node.get().expect("set at start")
    }
}

/// The cluster: its members, the state machine they share, and its timing.
pub struct Cluster {
    cfg: EtcdCluster,
    svc: Arc<Service>,
    /// The members, `etcd-1` first.
    pub members: Vec<Arc<Member>>,
    timeline: Timeline,
    /// The lessor's expiry check interval (etcd: 500 ms).
    expiry_check_ms: u64,
}

/// Builds and starts the members of `cfg` in the current runtime. `lessor` is etcd's
/// minimum TTL and expiry check interval (ms).
pub fn start(
    handle: &Handle,
    cfg: &EtcdCluster,
    timeline: Timeline,
    requests: Arc<crate::world::requests::RequestCounter>,
    seed: u64,
    lessor: (u64, u64),
) -> Arc<Cluster> {
    let svc = Arc::new(Service::new(
        timeline.clone(),
        NodeClock::new(),
        requests,
        lessor,
        0,
    ));
    let members = (1..=cfg.members as usize)
        .map(|i| {
            let mut rng = baton_model::seed::fork(seed, &format!("etcd/member-{i}"));
            // Each member's id (etcd derives it from its name and cluster): a seeded draw.
            let id: u16 = rng.gen();
            let start = START_EPOCH_UNIX_MS + rng.gen_range(0..1000);
            Arc::new(Member {
                i,
                name: member_name(i as u32),
                clock: NodeClock::new(),
                node: OnceLock::new(),
                // The cluster was started and elected etcd-1 before the run (real mode
                // starts the fleet once its live cluster is healthy): term 1, led by
                // etcd-1, whose lessor is promoted; every member has its first entry.
                raft: Mutex::new(Raft {
                    term: 1,
                    voted_for: Some(1),
                    log: (1, 1),
                    role: if i == 1 { Role::Leader } else { Role::Follower },
                    leader: Some(1),
                    primary: i == 1,
                    acked_us: vec![0; cfg.members as usize + 1],
                }),
                ids: Mutex::new(IdGen::new(id, start)),
                rng: Mutex::new(rng),
                heard: Notify::new(),
                stalled: AtomicBool::new(false),
                unstalled: Notify::new(),
                up: AtomicBool::new(true),
            })
        })
        .collect();
    timeline.record(Event::EtcdLeaderElected {
        member: member_name(1),
        term: 1,
    });
    let cluster = Arc::new(Cluster {
        cfg: cfg.clone(),
        svc,
        members,
        timeline,
        expiry_check_ms: lessor.1,
    });
    for m in &cluster.members {
        let (c, i) = (cluster.clone(), m.i);
        let node = handle
            .create_node()
            .name(m.name.clone())
            .ip(member_addr(i).ip())
            .init(move || run_member(c.clone(), i))
            .build();
        m.node.set(node.id()).expect("set once");
    }
    for a in &cluster.members {
        for b in &cluster.members {
            if a.i != b.i {
                Net::current().slow(a.id(), b.id(), Some(cluster.peer_latency_us()));
            }
        }
    }
    cluster
}

impl Cluster {
    /// The latency between two members (`etcd.peer_latency_ms`), µs: what a member's
    /// link to another has when no fault slows it.
    pub fn peer_latency_us(&self) -> (u64, u64) {
        let [lo, hi] = self.cfg.peer_latency_ms;
        (lo * 1000, hi * 1000)
    }

    fn member(&self, i: usize) -> &Arc<Member> {
        &self.members[i - 1]
    }

    /// The member named `name`, if it is one.
    pub fn by_name(&self, name: &str) -> Option<&Arc<Member>> {
        self.members.iter().find(|m| m.name == name)
    }

    /// The member that leads now (a live one that believes it does, the highest term if
    /// several do).
    pub fn leader(&self) -> Option<String> {
        self.members
            .iter()
            .filter(|m| m.up.load(Ordering::SeqCst))
            .filter_map(|m| {
                let r = m.raft.lock().unwrap();
                (r.role == Role::Leader).then(|| (r.term, m.name.clone()))
            })
            .max()
            .map(|(_, n)| n)
    }

    /// Marks member `name` killed: its memory is lost (a leader's leadership with it).
    pub fn killed(&self, name: &str) {
        let Some(m) = self.by_name(name) else { return };
        m.up.store(false, Ordering::SeqCst);
        let mut r = m.raft.lock().unwrap();
        if r.role == Role::Leader {
            self.timeline.record(Event::EtcdLeaderLost {
                member: m.name.clone(),
                term: r.term,
            });
        }
        r.role = Role::Follower;
        r.leader = None;
        r.primary = false;
    }

    /// Stalls (or un-stalls) member `name`'s disk.
    pub fn stall_disk(&self, name: &str, stalled: bool) {
        if let Some(m) = self.by_name(name) {
            m.stalled.store(stalled, Ordering::SeqCst);
            if !stalled {
                m.unstalled.notify_waiters();
            }
        }
    }

    fn election_timeout_ms(&self) -> u64 {
        self.cfg.election_timeout_ms
    }

    /// One fsync on member `m`: a draw from `fsync_ms`, after any stall in force.
    async fn fsync(&self, m: &Member) {
        while m.stalled.load(Ordering::SeqCst) {
            let n = m.unstalled.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if !m.stalled.load(Ordering::SeqCst) {
                break;
            }
            n.await;
        }
        let [lo, hi] = self.cfg.fsync_ms;
        let us = m.rng.lock().unwrap().gen_range(lo * 1000..=hi * 1000);
        madsim::time::sleep(Duration::from_micros(us)).await;
    }

    /// A round from leader `m` in `term` to every other member: heartbeats (`entry`
    /// false) or one entry each persists; true once a majority (the leader counted when
    /// `own` is done) acknowledged, false if the term ended or the round timed out.
    async fn quorum_round(
        self: &Arc<Self>,
        m: &Arc<Member>,
        ep: &Arc<Endpoint>,
        term: u64,
        entry: bool,
    ) -> bool {
        let log = m.raft.lock().unwrap().log;
        let mut acks: FuturesUnordered<
            std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>>,
        > = FuturesUnordered::new();
        let (c, me) = (self.clone(), m.clone());
        acks.push(Box::pin(async move {
            if entry {
                c.fsync(&me).await;
            }
            true
        }));
        for peer in self.members.iter().filter(|p| p.i != m.i) {
            let (c, me, ep, to) = (self.clone(), m.clone(), ep.clone(), peer.i);
            let req = Append {
                term,
                leader: m.i,
                log,
                entry,
            };
            acks.push(Box::pin(async move {
                let timeout = c.election_timeout_ms();
                match call(&ep, member_addr(to), req, timeout).await {
                    Ok((t, ok)) => {
                        let mut r = me.raft.lock().unwrap();
                        if t > r.term {
                            c.step_down(&me, &mut r, t);
                            return false;
                        }
                        if ok {
                            r.acked_us[to] = me.clock.now_us();
                        }
                        ok
                    }
                    Err(_) => false,
                }
            }));
        }
        let need = self.cfg.quorum();
        let counted = async {
            let mut got = 0;
            while let Some(ok) = acks.next().await {
                got += usize::from(ok);
                if got >= need {
                    return true;
                }
            }
            false
        };
        // Each call gives up after an election timeout; only a proposal's own fsync (a
        // stalled disk) can outlast that, so only a proposal needs the request timeout
        // (a heartbeat, ten a second, would keep seventy idle timers pending).
        let committed = if entry {
            tokio::select! {
                biased;
                ok = counted => ok,
                _ = madsim::time::sleep(Duration::from_millis(REQUEST_TIMEOUT_MS)) => false,
            }
        } else {
            counted.await
        };
        let r = m.raft.lock().unwrap();
        committed && r.role == Role::Leader && r.term == term
    }

    /// Leader `m` proposes one entry and waits for it to commit.
    async fn propose(self: &Arc<Self>, m: &Arc<Member>, ep: &Arc<Endpoint>) -> Result<(), Refusal> {
        let term = {
            let mut r = m.raft.lock().unwrap();
            if r.role != Role::Leader {
                return Err(Refusal::NotCommitted("etcdserver: not leader".into()));
            }
            r.log = (r.log.0 + 1, r.term);
            r.term
        };
        if self.quorum_round(m, ep, term, true).await {
            self.promote_once(m, term);
            Ok(())
        } else {
            Err(Refusal::NotCommitted(
                "etcdserver: leader changed or request timed out".into(),
            ))
        }
    }

    /// A client's request on member `m`: served if it leads, forwarded if it knows the
    /// leader (once: a forward is not forwarded again), refused if it knows none.
    async fn serve(
        self: &Arc<Self>,
        m: &Arc<Member>,
        ep: &Arc<Endpoint>,
        op: Op,
        forwarded: bool,
    ) -> Result<Reply, Refusal> {
        let (role, leader) = {
            let r = m.raft.lock().unwrap();
            (r.role, r.leader)
        };
        match (role, leader) {
            (Role::Leader, _) => self.lead(m, ep, op).await,
            (_, Some(l)) if !forwarded && l != m.i => {
                match call(ep, member_addr(l), Forward(op), REQUEST_TIMEOUT_MS).await {
                    Ok(r) => r,
                    Err(_) => Err(Refusal::NotCommitted(
                        "etcdserver: request timed out".into(),
                    )),
                }
            }
            _ => Err(Refusal::NoLeader),
        }
    }

    /// The leader's part of a request.
    async fn lead(
        self: &Arc<Self>,
        m: &Arc<Member>,
        ep: &Arc<Endpoint>,
        op: Op,
    ) -> Result<Reply, Refusal> {
        self.svc.count_request();
        match op {
            Op::Grant { node, ttl_ms } => {
                let id = (m.ids.lock().unwrap().next() & ((1 << 63) - 1)) as i64;
                self.propose(m, ep).await?;
                Ok(Reply::Granted(self.svc.grant_as(
                    &node,
                    ttl_ms,
                    id,
                    m.clock.now_us(),
                )))
            }
            Op::KeepAlive(id) => {
                if !m.raft.lock().unwrap().primary {
                    // etcd answers ErrNotPrimary; the client's stream retries.
                    return Err(Refusal::NoLeader);
                }
                Ok(Reply::KeptAlive(self.svc.renew(id, m.clock.now_us())))
            }
            Op::Revoke(id) => {
                self.propose(m, ep).await?;
                self.svc.revoke(id, "revoked");
                Ok(Reply::Revoked)
            }
            Op::Txn(t) => {
                self.propose(m, ep).await?;
                Ok(Reply::Txn(self.svc.txn(t)))
            }
            Op::Range(r) => {
                // A linearizable read: the leader confirms it still leads (read index).
                let term = m.raft.lock().unwrap().term;
                if !self.quorum_round(m, ep, term, false).await {
                    return Err(Refusal::NotCommitted("etcdserver: leader changed".into()));
                }
                Ok(Reply::Range(self.svc.range(&r)))
            }
            Op::V3(req) => self.lead_v3(m, ep, *req).await,
        }
    }

    /// The leader's part of a full etcd v3 request: a read through the read index (as
    /// `Range`), a write by a proposal (as `Txn`), then applied to the same store.
    async fn lead_v3(
        self: &Arc<Self>,
        m: &Arc<Member>,
        ep: &Arc<Endpoint>,
        req: V3Request,
    ) -> Result<Reply, Refusal> {
        let term = m.raft.lock().unwrap().term;
        if req.is_read_only() {
            if !self.quorum_round(m, ep, term, false).await {
                return Err(Refusal::NotCommitted("etcdserver: leader changed".into()));
            }
        } else {
            self.propose(m, ep).await?;
        }
        let (revision, result) = self.svc.v3(req, m.clock.now_us());
        Ok(Reply::V3(Box::new(V3Answer {
            header: V3Header {
                revision,
                raft_term: term,
                member_id: m.i as u64,
            },
            result,
        })))
    }

    /// Leader `m`'s entry of `term` committed: the first such entry promotes its lessor
    /// (etcd promotes when the leader has applied its term's first entry; before this, a
    /// leader whose first entry timed out was never promoted and refused every
    /// keepalive for the rest of its term, which `sim search scenarios/etcd/swarm.toml`
    /// found: seed 64, no Baton leader for 37 s after the faults ended).
    fn promote_once(&self, m: &Arc<Member>, term: u64) {
        {
            let mut r = m.raft.lock().unwrap();
            if r.role != Role::Leader || r.term != term || r.primary {
                return;
            }
            r.primary = true;
        }
        let leases = self
            .svc
            .promote(m.clock.now_us(), self.election_timeout_ms());
        self.timeline.record(Event::EtcdLessorPromoted {
            member: m.name.clone(),
            leases,
        });
    }

    /// Member `m` won `term`: it leads, and once its first entry commits its lessor is
    /// promoted.
    async fn won(self: &Arc<Self>, m: &Arc<Member>, ep: &Arc<Endpoint>, term: u64) {
        {
            let mut r = m.raft.lock().unwrap();
            if r.role != Role::Candidate || r.term != term {
                return;
            }
            r.role = Role::Leader;
            r.leader = Some(m.i);
            let now = m.clock.now_us();
            r.acked_us.iter_mut().for_each(|a| *a = now);
        }
        self.timeline.record(Event::EtcdLeaderElected {
            member: m.name.clone(),
            term,
        });
        // The term's first entry (etcd's empty entry); the lessor is promoted when an
        // entry of this term first commits (`promote_once`, from whichever proposal
        // that is). A leader that cannot reach a majority keeps retrying, as Raft keeps
        // replicating its log, until it commits or the leader steps down.
        let (c, me, ep) = (self.clone(), m.clone(), ep.clone());
        madsim::task::spawn(async move {
            while c.propose(&me, &ep).await.is_err() {
                {
                    let r = me.raft.lock().unwrap();
                    if r.role != Role::Leader || r.term != term || r.primary {
                        return;
                    }
                }
                // Raft retries replication at its heartbeat.
                madsim::time::sleep(Duration::from_millis(c.cfg.heartbeat_ms)).await;
            }
        });
    }

    /// The lessor of member `m`: while it is primary, every expiry check revokes the
    /// leases past their expiry on its clock, each by a proposal.
    async fn lessor(self: Arc<Self>, m: Arc<Member>, ep: Arc<Endpoint>) {
        let interval = Duration::from_millis(self.expiry_check_ms);
        let phase = m
            .rng
            .lock()
            .unwrap()
            .gen_range(0..self.expiry_check_ms.max(1) * 1000);
        sleep_local(&m.clock, Duration::from_micros(phase)).await;
        loop {
            sleep_local(&m.clock, interval).await;
            if !m.raft.lock().unwrap().primary {
                continue;
            }
            for id in self.svc.expired_at(m.clock.now_us()) {
                if self.propose(&m, &ep).await.is_err() {
                    break;
                }
                self.svc.revoke(id, "expired");
            }
        }
    }
}

/// A member's process: its handlers, its lessor, and its Raft loop, until it is killed.
async fn run_member(cluster: Arc<Cluster>, i: usize) {
    let m = cluster.member(i).clone();
    if !m.up.swap(true, Ordering::SeqCst) {
        cluster.timeline.record(Event::MemberRestarted {
            member: m.name.clone(),
        });
        // What lived in memory is gone; the first start keeps the state `start` gave.
        let mut r = m.raft.lock().unwrap();
        r.role = Role::Follower;
        r.leader = None;
        r.primary = false;
    }
    let ep = Arc::new(Endpoint::bind(member_addr(i)).expect("member address is free"));
    let (c, me) = (cluster.clone(), m.clone());
    ep.add_rpc_handler(move |v: Vote| {
        let out = c.on_vote(&me, v);
        async move { out }
    });
    let (c, me) = (cluster.clone(), m.clone());
    ep.add_rpc_handler(move |a: Append| {
        let (c, me) = (c.clone(), me.clone());
        async move { c.on_append(&me, a).await }
    });
    for forwarded in [false, true] {
        let (c, me, e) = (cluster.clone(), m.clone(), Arc::downgrade(&ep));
        let handler = move |op: Op| {
            let (c, me, e) = (c.clone(), me.clone(), e.clone());
            async move {
                match e.upgrade() {
                    Some(ep) => c.serve(&me, &ep, op, forwarded).await,
                    None => Err(Refusal::NoLeader),
                }
            }
        };
        if forwarded {
            ep.add_rpc_handler(move |f: Forward| handler(f.0));
        } else {
            ep.add_rpc_handler(move |f: ClientOp| handler(f.0));
        }
    }
    let (c, me) = (cluster.clone(), m.clone());
    ep.add_rpc_handler(move |w: EtcdWatch| {
        let (c, me) = (c.clone(), me.clone());
        c.svc.count_request();
        async move { c.svc.watch_on(&me.clock, w).await }
    });
    let (c, me) = (cluster.clone(), m.clone());
    ep.add_rpc_handler(move |p: WatchPoll| {
        let (c, me) = (c.clone(), me.clone());
        c.svc.count_request();
        async move {
            let term = me.raft.lock().unwrap().term;
            c.svc.watch_poll(&me.clock, p, (term, me.i as u64)).await
        }
    });
    madsim::task::spawn(cluster.clone().lessor(m.clone(), ep.clone()));
    loop {
        let role = m.raft.lock().unwrap().role;
        if role == Role::Leader {
            cluster.beat(&m, &ep).await;
        } else if !cluster.heard_in_time(&m).await {
            cluster.campaign(&m, &ep).await;
        }
    }
}

#[cfg(test)]
mod message_size {
    use super::{Op, Reply};

    /// Every message moves an `Op` or a `Reply`: a large variant costs every run (the
    /// client crate's v3 request and answer are boxed for this).
    #[test]
    fn ops_and_replies_stay_small() {
        assert!(
            std::mem::size_of::<Op>() <= 72,
            "{}",
            std::mem::size_of::<Op>()
        );
        assert!(
            std::mem::size_of::<Reply>() <= 40,
            "{}",
            std::mem::size_of::<Reply>()
        );
    }
}
