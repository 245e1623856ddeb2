//! A user's own node function as a protocol: the elector of [`crate::library`].
//!
//! Baton's node loop (`crate::world::node::run`) asks its elector to campaign, does the
//! leader's protected work under the token the campaign returned (fenced writes, the
//! sequencer's batches, the job's checkpoints) until the leadership ends, and then
//! steps down. Here the elector is a bridge: the user's async function runs on the same
//! simulated node, elects itself however it likes (over `baton-etcd-client`, say), and
//! *reports its beliefs* through its [`NodeCtx`]: [`NodeCtx::lead`] when it believes it
//! leads with a token, [`Term::step_down`] when it believes it no longer does. The bridge
//! turns the first into a won campaign and the second into the end of that leadership, so
//! the node's work, its timeline events and every checker treat the user's node exactly
//! as they treat Baton's own protocols. The work stops when the user's belief ends, never
//! on a deadline of Baton's: a user elector without a local deadline acts as long as it
//! believes, which is what the checkers are there to catch.
//!
//! Everything else about the protocol (its lease service, its bounds, its scenario
//! table) is the scenario's `etcd-lease`: the user's node runs on its etcd cluster.
//! Baton's world never names the user's crate: the function comes in as a closure.

use super::desk::{self, Desk};
use super::{BackendCtx, ElectorCtx, Protocol};
use crate::world::service::etcd_cluster::member_addr;
use async_trait::async_trait;
use baton_model::protocol::{Bound, ProtocolModel, ProtocolName};
use baton_model::scenario::key_error::KeyError;
use baton_protocols::{
    sleep_local, sleep_until_local, Clock, Elector, ElectorError, LeaderInfo, Leadership,
    LeaseHandle, LossReason,
};
use futures::future::BoxFuture;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// The user's node function: called once per start of each node (again after a
/// restart), on that node; the future it returns is the node's process.
pub type NodeFn = Arc<dyn Fn(NodeCtx) -> BoxFuture<'static, ()> + Send + Sync>;

/// What a user's node gets from the world: the simulated twin of the node contract's
/// placeholders.
#[derive(Clone)]
pub struct NodeCtx {
    name: String,
    incarnation: u64,
    endpoints: Vec<String>,
    lease_ttl_ms: u64,
    tick_ms: u64,
    clock: Arc<dyn Clock>,
    terms: mpsc::UnboundedSender<(u64, LeaseHandle)>,
    current: Arc<Mutex<Option<Term>>>,
    seen: Seen,
    desk: watch::Receiver<Option<Arc<dyn Desk>>>,
}

/// Whom the user's node last saw leading: the `NotLeader` hint its followers give.
type Seen = Arc<Mutex<Option<LeaderInfo>>>;

impl NodeCtx {
    /// The node's name (`n1`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many times this node has started (1 on first start).
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    /// The etcd members' client URLs (`http://10.0.2.1:2379`), `etcd-1` first: what to
    /// give `baton_etcd_client::Client::connect`.
    pub fn endpoints(&self) -> Vec<String> {
        self.endpoints.clone()
    }

    /// The scenario's `etcd-lease.lease_ttl_ms`: the TTL the run's bounds (failover,
    /// safety) are computed for.
    pub fn lease_ttl_ms(&self) -> u64 {
        self.lease_ttl_ms
    }

    /// The scenario's `work.tick_interval_ms`: how often a leader writes the scheduler's
    /// tick (for a node that does its own work).
    pub fn tick_interval_ms(&self) -> u64 {
        self.tick_ms
    }

    /// The node's own clock: the scenario's drift and steps apply to it.
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    /// The node's local time now, in microseconds.
    pub fn now_us(&self) -> i64 {
        self.clock.now_us()
    }

    /// Sleeps `local` on the node's own clock.
    pub async fn sleep(&self, local: Duration) {
        sleep_local(self.clock.as_ref(), local).await
    }

    /// Sleeps until the node's own clock reads `local_us` (a local deadline).
    pub async fn sleep_until(&self, local_us: i64) {
        sleep_until_local(self.clock.as_ref(), local_us).await
    }

    /// Reports whom the node sees leading (`(node, token)`, from the election key's
    /// value and create revision), or that it sees no leader. A follower's answer to
    /// the sequencer's client names it (the `NotLeader` hint), as Baton's own nodes
    /// name the leader their elector observes.
    pub fn sees_leader(&self, leader: Option<(&str, u64)>) {
        let info = leader.map(|(node, token)| LeaderInfo {
            node: baton_protocols::NodeId::from(node),
            token,
        });
        *self.seen.lock().unwrap() = info;
    }

    /// Reports that the node believes it leads with fencing `token` (etcd: the key's
    /// create revision). From now until the returned term ends, the node does the
    /// leader's protected work under `token`, as Baton's own nodes do. A term still open
    /// is ended first (revoked): one node holds one belief.
    pub fn lead(&self, token: u64) -> Term {
        let handle = LeaseHandle::new(self.clock.clone(), i64::MAX, false);
        let term = Term {
            token,
            handle: handle.clone(),
        };
        if let Some(old) = self.current.lock().unwrap().replace(term.clone()) {
            old.step_down(LossReason::Revoked);
        }
        // The node's loop is gone only when the node is (killed): nothing to tell then.
        let _ = self.terms.send((token, handle));
        term
    }

    /// The desk of `term`, for a node that does its own protected work
    /// (`crate::library::World::own_work`): its fenced writes and the sequencer's
    /// requests. Waits until the node has taken the term up; `None` once the term is
    /// over (and always, for a world where Baton's node does the work).
    pub async fn desk(&self, term: &Term) -> Option<Arc<dyn Desk>> {
        let mut rx = self.desk.clone();
        let token = term.token;
        tokio::select! {
            biased;
            d = rx.wait_for(|d| desk::holds(d, token)) => d.ok().and_then(|d| d.clone()),
            _ = term.ended() => None,
        }
    }
}

/// One term the user's node believes it leads.
#[derive(Clone)]
pub struct Term {
    token: u64,
    handle: LeaseHandle,
}

impl Term {
    /// The term's fencing token.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// Reports that the node no longer believes it leads, for `reason`
    /// (`DeadlinePassed`: its local deadline passed; `Revoked`: etcd said the lease or
    /// key is gone; `Resigned`: it gives the seat up). The node stops its protected work;
    /// the first reason given sticks.
    pub fn step_down(&self, reason: LossReason) {
        self.handle.end(reason);
    }

    /// False once the term has ended, by the user's report or by the node's work (a
    /// fencing rejection, a step-down the scenario asked for).
    pub fn is_held(&self) -> bool {
        self.handle.valid()
    }

    /// Resolves when the term ends; the user's elector waits on it to learn that the
    /// node's work ended the term (fenced out), then releases its key.
    pub async fn ended(&self) {
        self.handle.expired().await
    }
}

/// The protocol: the scenario's own (`etcd-lease`, for its cluster and bounds), with the
/// user's function as every node's elector.
pub struct UserNode {
    inner: Arc<dyn Protocol>,
    node_fn: NodeFn,
    lease_ttl_ms: u64,
    tick_ms: u64,
    own_work: bool,
}

impl UserNode {
    /// The user's `node_fn` over the scenario's protocol `inner`, whose etcd lease TTL is
    /// `lease_ttl_ms` and scheduler tick `tick_ms`; with `own_work`, the user's node does
    /// the protected work itself.
    pub fn new(
        inner: Arc<dyn Protocol>,
        node_fn: NodeFn,
        (lease_ttl_ms, tick_ms): (u64, u64),
        own_work: bool,
    ) -> Self {
        UserNode {
            inner,
            node_fn,
            lease_ttl_ms,
            tick_ms,
            own_work,
        }
    }
}

impl std::fmt::Debug for UserNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserNode")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl ProtocolModel for UserNode {
    fn name(&self) -> ProtocolName {
        self.inner.name()
    }
    fn validate(&self) -> Result<(), KeyError> {
        self.inner.validate()
    }
    fn failover_bound(&self) -> Bound {
        self.inner.failover_bound()
    }
    fn safety_bounds(&self) -> baton_protocols::SafetyBounds {
        self.inner.safety_bounds()
    }
    fn default_liveness_bound_ms(&self) -> u64 {
        self.inner.default_liveness_bound_ms()
    }
    fn token_is_term(&self) -> bool {
        self.inner.token_is_term()
    }
    fn has_replicated_log(&self) -> bool {
        self.inner.has_replicated_log()
    }
    fn read_lease_bound(&self) -> Option<String> {
        self.inner.read_lease_bound()
    }
    fn stepdown_method(&self) -> Option<&'static str> {
        self.inner.stepdown_method()
    }
    fn transfer_method(&self) -> &'static str {
        self.inner.transfer_method()
    }
}

impl Protocol for UserNode {
    fn start_backend(&self, ctx: BackendCtx) -> Option<madsim::task::NodeId> {
        self.inner.start_backend(ctx)
    }

    fn own_work(&self) -> bool {
        self.own_work
    }

    /// Starts the user's function on the calling node (so a kill ends it with the node)
    /// and returns the bridge that turns its reports into campaigns won and lost.
    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector> {
        let (tx, rx) = mpsc::unbounded_channel();
        let seen = Seen::default();
        let members = ctx.etcd_cluster.map_or(0, |c| c.members as usize);
        let node = NodeCtx {
            name: ctx.node.to_string(),
            incarnation: ctx.incarnation,
            endpoints: (1..=members)
                .map(|i| format!("http://{}", member_addr(i)))
                .collect(),
            lease_ttl_ms: self.lease_ttl_ms,
            tick_ms: self.tick_ms,
            clock: ctx.clock.clone(),
            terms: tx,
            current: Arc::new(Mutex::new(None)),
            seen: seen.clone(),
            desk: ctx.desk.subscribe(),
        };
        madsim::task::spawn((self.node_fn)(node));
        Arc::new(Bridge {
            terms: tokio::sync::Mutex::new(rx),
            seen,
        })
    }
}

/// The elector Baton's node loop sees: a campaign is the user's next [`NodeCtx::lead`].
struct Bridge {
    terms: tokio::sync::Mutex<mpsc::UnboundedReceiver<(u64, LeaseHandle)>>,
    seen: Seen,
}

#[async_trait]
impl Elector for Bridge {
    async fn campaign(&self) -> Result<Leadership, ElectorError> {
        loop {
            let term = self.terms.lock().await.recv().await;
            let Some((token, handle)) = term else {
                // The user's function returned and dropped its context: it never
                // campaigns again. Wait as a node that stopped campaigning would.
                return std::future::pending().await;
            };
            // A term the user ended before the node took it up was never acted on.
            if handle.valid() {
                return Ok(handle.leadership(token));
            }
        }
    }

    /// Nothing to do: the node's work ended the leadership before it calls this (a
    /// fencing rejection, a step-down the scenario asked for), which ended the user's
    /// term too; its [`Term::ended`] has told the user's function to release its key.
    async fn resign(&self, leadership: &Leadership) -> Result<(), ElectorError> {
        let _ = leadership;
        Ok(())
    }

    /// Whom the user's node last said it sees leading ([`NodeCtx::sees_leader`]).
    async fn observe(&self) -> Result<Option<LeaderInfo>, ElectorError> {
        Ok(self.seen.lock().unwrap().clone())
    }
}
