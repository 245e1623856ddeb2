//! The leader's desk: how a user's node that does its own protected work
//! (`crate::library::World::own_work`) makes its fenced writes and answers the
//! sequencer's client, through the node's own endpoint, as Baton's node does in
//! [`crate::world::node::work`].
//!
//! The node loop takes up a term the user's node leads (the bridge's campaign, see
//! `crate::world::protocol::user_node`) and, instead of doing the work itself, puts the
//! term's [`Desk`] out ([`serve`]) until the term ends: the user's step-down, or a
//! resignation the scenario asks for (the loop ends the term; the user's `Term::ended`
//! resolves). Each write goes through the same path as Baton's own: the lease check
//! (the user's belief), a `point = "before-write"` pause when one is armed, the
//! `write_attempted` event, the fenced call with the resource's timeout. A rejected write
//! does not end the term: the user's node decides, and a node that leads on after a
//! rejection is what the checkers are for.

use crate::world::net::Endpoint;
use crate::world::node::control::NodeControl;
use crate::world::node::env::NodeEnv;
use crate::world::node::work::{self, LeaderWork, Outcome, Queued};
use crate::world::protocol::desk::{Desk, DeskSlot, Requests, Written};
use crate::world::rpc::NextReply;
use crate::world::timeline::WriteOp;
use async_trait::async_trait;
use baton_protocols::{Leadership, LossReason};
use std::sync::Arc;

/// One term's desk: the node's endpoint, control block and sequencer queue, under the
/// term's leadership.
#[derive(Clone)]
pub struct NodeDesk {
    ctl: Arc<NodeControl>,
    env: Arc<NodeEnv>,
    ep: Endpoint,
    work: Arc<LeaderWork>,
    leadership: Leadership,
}

impl NodeDesk {
    /// The desk of `leadership`'s term on the node `ctl` of the world `env`.
    pub fn new(
        ctl: Arc<NodeControl>,
        env: Arc<NodeEnv>,
        ep: Endpoint,
        work: Arc<LeaderWork>,
        leadership: Leadership,
    ) -> NodeDesk {
        NodeDesk {
            ctl,
            env,
            ep,
            work,
            leadership,
        }
    }
}

#[async_trait]
impl Desk for NodeDesk {
    fn token(&self) -> u64 {
        self.leadership.token
    }

    async fn write(&self, op: WriteOp) -> Written {
        let d = self.clone();
        let sent = madsim::task::spawn(async move {
            work::write(&d.ctl, &d.env, &d.ep, &d.leadership, op).await
        });
        match sent.await {
            Ok(Outcome::Written(last_seq, _)) => Written::Accepted { last_seq },
            Ok(Outcome::Fenced) => Written::Rejected,
            Ok(Outcome::TimedOut | Outcome::NotActing) | Err(_) => Written::Failed,
        }
    }

    async fn requests(&self) -> Option<Box<dyn Requests>> {
        loop {
            let queued = self.work.queued.notified();
            tokio::pin!(queued);
            queued.as_mut().enable();
            if !self.leadership.acting() {
                return None;
            }
            let batches = self.work.take();
            if !batches.is_empty() {
                return Some(Box::new(NodeRequests {
                    work: self.work.clone(),
                    batches: Some(batches),
                }));
            }
            tokio::select! {
                biased;
                _ = self.leadership.lost() => return None,
                _ = queued => {}
            }
        }
    }
}

/// Client batches of `next` the leader took from the node's queue.
struct NodeRequests {
    work: Arc<LeaderWork>,
    batches: Option<Vec<Queued>>,
}

impl Requests for NodeRequests {
    fn count(&self) -> u64 {
        self.batches.iter().flatten().map(|q| q.count).sum()
    }

    fn grant(mut self: Box<Self>, token: u64, first: u64) {
        let mut next = first;
        if let Some(batches) = self.batches.take() {
            self.work.answer(batches, |q| {
                let (first, last) = (next, next + q.count - 1);
                next += q.count;
                NextReply::Ok { token, first, last }
            });
        }
    }

    /// Dropping them answers them so.
    fn unavailable(self: Box<Self>) {}
}

/// Requests dropped unanswered are answered `Unavailable`: the client tries again.
impl Drop for NodeRequests {
    fn drop(&mut self) {
        if let Some(batches) = self.batches.take() {
            self.work.answer(batches, |_| NextReply::Unavailable);
        }
    }
}

/// The node loop's term for a user's node that does its own work: the desk is out, and
/// the sequencer's requests queue for it, until the user's belief ends or the scenario
/// asks the leader to resign. Returns why the term ended.
pub async fn serve(slot: &DeskSlot, desk: NodeDesk) -> LossReason {
    let l = desk.leadership.clone();
    let ctl = desk.ctl.clone();
    desk.work.lead(l.token);
    slot.send_replace(Some(Arc::new(desk)));
    let reason = tokio::select! {
        biased;
        _ = l.lost() => l.loss_reason(),
        _ = ctl.resign_asked() => {
            l.end(LossReason::Resigned);
            LossReason::Resigned
        }
    };
    slot.send_replace(None);
    reason
}
