//! Leadership transfer on the node: a leader asked to hand over to a designated
//! successor (the `transfer` fault) prepares the backend while it still works, stops its
//! protected writes, and hands the seat over by the protocol's primitive.
//!
//! The steps, and where each lives:
//! 1. **Prepare** ([`prepare`]), while the leader goes on writing: ask the elector, every
//!    [`PREPARE_POLL_MS`], how far the backend is from giving the seat to the successor
//!    ([`Elector::transfer_readiness`]): a queue with others ahead of it (etcd, ZooKeeper:
//!    each is sent [`Requeue`] and queues again at the back), a successor not yet queued,
//!    or a raft log behind. Meanwhile the leader starts no new job step. A transfer not
//!    ready within [`PREPARE_MS_MAX`] is aborted (`transfer_aborted`) and the leader leads
//!    on.
//! 2. **Publish and stop** (the leader's loop, `crate::world::node::work`): once ready, and once the
//!    job step in progress has checkpointed its cursor (a fenced write: the cursor is
//!    published where the successor's claim reads it), the leader stops writing.
//! 3. **Hand over** ([`hand_over`]), after the stop and before anything else: the
//!    elector's [`Elector::transfer`] (a resign in a queue whose head is the successor; a
//!    release to it as the Lease's preferred holder; a committed vote for it in raft),
//!    then [`TakeOverNow`] to the successor so that it tries at once, not at its next
//!    retry. The fence stays the guard: the successor's token is higher, and the old
//!    leader wrote nothing after its stop.

use crate::world::net::Endpoint;
use crate::world::node::control::NodeControl;
use crate::world::node::env::NodeEnv;
use crate::world::rpc::{node_addr_of, Requeue, TakeOverNow};
use crate::world::timeline::Event;
use baton_model::NodeId;
use baton_protocols::sleep_local;
use baton_protocols::{Clock, Elector, Leadership, TransferReadiness};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// How often a preparing leader asks the backend again.
pub const PREPARE_POLL_MS: u64 = 20;
/// How long a transfer may prepare before it is aborted.
pub const PREPARE_MS_MAX: u64 = 2000;

/// Adds the handlers of the messages a transferring leader sends to other nodes.
pub fn serve(ep: &Endpoint, elector: &Arc<dyn Elector>) {
    let e = elector.clone();
    ep.add_message_handler(move |_: Requeue, _| e.requeue());
    let e = elector.clone();
    ep.add_message_handler(move |_: TakeOverNow, _| e.take_over_now());
}

/// Where a transfer's preparation stands.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Stage {
    Preparing,
    Ready,
    Aborted(String),
}

/// A transfer the leader is preparing while it works.
pub struct Preparing {
    /// The designated successor.
    pub to: NodeId,
    stage: Arc<Mutex<Stage>>,
    settled: Arc<Notify>,
}

/// What the leader's loop does about a transfer it prepares.
pub enum Next {
    /// Keep working.
    Work,
    /// Stop writing once no job step is in progress: the backend is ready.
    Stop,
    /// Give the transfer up, for this reason, and lead on.
    Abort(String),
}

impl Preparing {
    /// What the leader's loop does now.
    pub fn next(&self) -> Next {
        match &*self.stage.lock().unwrap() {
            Stage::Preparing => Next::Work,
            Stage::Ready => Next::Stop,
            Stage::Aborted(why) => Next::Abort(why.clone()),
        }
    }

    /// Resolves once the preparation is ready or aborted.
    pub async fn settled(&self) {
        loop {
            let notified = self.settled.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if *self.stage.lock().unwrap() != Stage::Preparing {
                return;
            }
            notified.await;
        }
    }
}

/// What a leader that stopped for a transfer hands over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handover {
    /// The designated successor.
    pub to: NodeId,
    /// The job's cursor it published (0 without a job).
    pub cursor: u64,
}

/// Starts preparing the transfer of `l` to `to` (see the module doc), in a task of its
/// own that ends when the preparation settles or the leadership ends.
pub fn prepare(
    ctl: &NodeControl,
    ep: &Endpoint,
    elector: &Arc<dyn Elector>,
    l: &Leadership,
    to: NodeId,
) -> Preparing {
    let p = Preparing {
        to: to.clone(),
        stage: Arc::new(Mutex::new(Stage::Preparing)),
        settled: Arc::new(Notify::new()),
    };
    let (stage, settled) = (p.stage.clone(), p.settled.clone());
    let (ep, elector, l, clock) = (ep.clone(), elector.clone(), l.clone(), ctl.clock.clone());
    madsim::task::spawn(async move {
        let settle = |s: Stage| {
            *stage.lock().unwrap() = s;
            settled.notify_waiters();
        };
        let until_us = clock.now_us() + PREPARE_MS_MAX as i64 * 1000;
        let mut why = String::from("no answer from the backend");
        while l.acting() {
            if clock.now_us() >= until_us {
                return settle(Stage::Aborted(format!(
                    "not ready within {PREPARE_MS_MAX} ms: {why}"
                )));
            }
            match elector.transfer_readiness(&l, &to).await {
                Ok(TransferReadiness::Ready) => return settle(Stage::Ready),
                Ok(TransferReadiness::Behind(ahead)) => {
                    for addr in ahead.iter().filter_map(node_addr_of) {
                        ep.send(addr, Requeue);
                    }
                    why = format!("{} queued ahead of `{to}`", ahead.join(", "));
                }
                Ok(TransferReadiness::Waiting(w)) => why = w,
                Err(e) => return settle(Stage::Aborted(e.to_string())),
            }
            sleep_local(&clock, Duration::from_millis(PREPARE_POLL_MS)).await;
        }
        settle(Stage::Aborted("the leadership ended first".into()));
    });
    p
}

/// Hands `l`, whose writes have stopped, to `h.to`: records it, carries it out by the
/// protocol's primitive, and tells the successor to take over now. A handover the
/// backend refused falls back to a plain resign.
pub async fn hand_over(
    ctl: &NodeControl,
    env: &NodeEnv,
    ep: &Endpoint,
    elector: &dyn Elector,
    l: &Leadership,
    h: &Handover,
) {
    env.timeline.record(Event::HandedOver {
        node: ctl.name.clone(),
        token: l.token,
        to: h.to.clone(),
        cursor: h.cursor,
    });
    env.timeline.record(Event::Released {
        node: ctl.name.clone(),
        token: l.token,
    });
    if let Err(e) = elector.transfer(l, &h.to).await {
        env.timeline.record(Event::TransferAborted {
            node: ctl.name.clone(),
            token: l.token,
            to: h.to.clone(),
            reason: format!("the backend refused the handover ({e}); resigned instead"),
        });
        let _ = elector.resign(l).await;
    }
    if let Some(addr) = node_addr_of(&h.to) {
        ep.send(addr, TakeOverNow);
    }
}
