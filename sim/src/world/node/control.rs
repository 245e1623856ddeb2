//! The world's handle on one node: what it keeps for the node across kills and
//! restarts (identity, clock, disk, pauses in force) and the node's current belief.
//!
//! It lives apart from the node's life ([`crate::world::node`]) and from the leader's work
//! ([`crate::world::node::work`]), since both read it and the world holds it while neither runs.

use crate::world::clock::NodeClock;
use crate::world::protocol::DiskSlot;
use crate::world::timeline::Role;
use baton_protocols::{Leadership, LossReason};
use madsim::task::NodeId;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::Notify;

/// A node's current belief, as the world sees it (to resolve the `leader` target).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeStatus {
    /// Its role by its own belief.
    pub role: Role,
    /// Its token while it leads.
    pub token: Option<u64>,
    /// Killed and not restarted.
    pub dead: bool,
}

/// What the world keeps for a node across kills and restarts: its identity, its clock
/// (a restart does not fix a skewed clock), its status and the world's requests to it.
pub struct NodeControl {
    /// `n1`, `n2`, ...
    pub name: baton_model::NodeId,
    /// 1-based index (`n3` is 3).
    pub index: usize,
    /// The node's clock.
    pub clock: NodeClock,
    /// Its belief, updated by the node.
    pub status: Mutex<NodeStatus>,
    /// The leadership it holds while it leads: at a kill the world reads from it when
    /// the node's belief ended, if that was before (see [`NodeControl::belief_ended`]).
    pub leading: Mutex<Option<Leadership>>,
    /// Set by the world to ask a leader to step down.
    pub resign_requested: AtomicBool,
    /// Set by the world to ask a leader to hand over to this successor (a transfer).
    pub transfer_to: Mutex<Option<baton_model::NodeId>>,
    /// Wakes a leader waiting for work when a resign or a transfer is requested.
    pub resign_notify: Notify,
    /// A pause armed to strike at the next protected write: (fault index, duration).
    pub pause_armed: Mutex<Option<(usize, u64)>>,
    /// The madsim node id, set once the node is built.
    pub id: OnceLock<NodeId>,
    /// How many times the node has started (1 on first start).
    pub incarnation: AtomicU64,
    /// The node's disk: what a persisting protocol keeps across restarts.
    pub disk: DiskSlot,
    /// The etcd member its lease client talks to now (1-based; 0 when the lease service
    /// is not a cluster): the client moves it, the fault plan reads it (`leader-member`).
    pub etcd_member: Arc<AtomicUsize>,
    /// Stop-the-world pauses in force (scripted and GC noise): the node runs when none
    /// is, so that one pause ending never wakes a node another still holds.
    holds: Mutex<u32>,
}

impl NodeControl {
    /// Resolves once a resign is asked of this node, taking the request.
    pub async fn resign_asked(&self) {
        loop {
            let asked = self.resign_notify.notified();
            tokio::pin!(asked);
            asked.as_mut().enable();
            if self.resign_requested.swap(false, Ordering::SeqCst) {
                return;
            }
            asked.await;
        }
    }

    /// A control block for node `index` (1-based).
    pub fn new(index: usize) -> Self {
        NodeControl {
            name: baton_model::NodeId::nth(index),
            index,
            clock: NodeClock::new(),
            status: Mutex::new(NodeStatus {
                role: Role::Follower,
                token: None,
                dead: false,
            }),
            leading: Mutex::new(None),
            resign_requested: AtomicBool::new(false),
            transfer_to: Mutex::new(None),
            resign_notify: Notify::new(),
            pause_armed: Mutex::new(None),
            id: OnceLock::new(),
            incarnation: AtomicU64::new(0),
            disk: DiskSlot::default(),
            etcd_member: Arc::new(AtomicUsize::new(0)),
            holds: Mutex::new(0),
        }
    }

    /// Stops the world on the node, one more pause in force. Returns the incarnation it
    /// hit, for [`NodeControl::release`], or `None` when the node is down.
    pub fn hold(&self) -> Option<u64> {
        if self.status.lock().unwrap().dead {
            return None;
        }
        let mut holds = self.holds.lock().unwrap();
        if *holds == 0 {
            madsim::runtime::Handle::current().pause(*self.id.get().expect("built"));
        }
        *holds += 1;
        Some(self.incarnation.load(Ordering::SeqCst))
    }

    /// Ends one pause taken by [`NodeControl::hold`] on `incarnation`; the node runs
    /// again when it was the last. A pause on an incarnation since killed ends nothing.
    pub fn release(&self, incarnation: u64) {
        if self.incarnation.load(Ordering::SeqCst) != incarnation {
            return;
        }
        let mut holds = self.holds.lock().unwrap();
        if *holds == 0 {
            return;
        }
        *holds -= 1;
        if *holds == 0 {
            madsim::runtime::Handle::current().resume(*self.id.get().expect("built"));
        }
    }

    /// Forgets every pause in force: the node was killed (madsim drops its tasks, and a
    /// restart starts it unpaused).
    pub fn clear_holds(&self) {
        *self.holds.lock().unwrap() = 0;
    }

    /// The leadership it held, forgotten, if its belief in it had already ended by its
    /// own judgement at global time `now_us`: (token, why, when it ended). A leader notices
    /// a passed deadline only once its write in flight is done, so one killed meanwhile
    /// never recorded its stop; its belief ended at the deadline all the same.
    pub fn belief_ended(&self, now_us: i64) -> Option<(u64, LossReason, i64)> {
        let l = self.leading.lock().unwrap().take()?;
        let at = l.lost_at_us(now_us)?;
        Some((l.token, l.loss_reason(), at))
    }

    /// Records the node's belief: its role and, while it leads, its token.
    pub(crate) fn set_status(&self, role: Role, token: Option<u64>) {
        let mut s = self.status.lock().unwrap();
        s.role = role;
        s.token = token;
    }
}
