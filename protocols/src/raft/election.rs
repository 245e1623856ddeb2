//! The elector's election timer and pre-vote (see the module doc of [`super`]): a fresh
//! seeded timeout at every reset, and, with `pre_vote`, a round that asks the peers
//! before the term is raised.

use super::net::{PreVoteRequest, PreVoteResponse, RaftMsg, RaftReply};
use super::{RaftElector, TypeConfig};
use crate::clock::sleep_until_local;
use openraft::{Raft, ServerState, Vote};
use rand::Rng;
use std::sync::Arc;

/// Why the election timer restarts; it decides whether the followers' lease comes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TimerReset {
    /// openraft accepted a leader's AppendEntries: lease, then a timeout.
    LeaderContact,
    /// This node granted its vote, or just tried an election: a timeout.
    Election,
}

impl RaftElector {
    /// Restarts the election timer with a fresh random timeout (Raft paper, section 5.2),
    /// after the followers' lease when a leader was just heard from.
    pub(super) fn reset_timer(&self, why: TimerReset) {
        let (min, max) = (
            self.cfg.election_timeout_min_ms,
            self.cfg.election_timeout_max_ms,
        );
        let mut wait_ms = self.rng.lock().unwrap().gen_range(min..max);
        if why == TimerReset::LeaderContact {
            wait_ms += max;
        }
        let now = self.clock.now_us();
        let mut st = self.state.lock().unwrap();
        if why == TimerReset::LeaderContact {
            st.lease_from_us = Some(now);
        }
        st.election_deadline_us = now + wait_ms as i64 * 1000;
    }

    /// The election timer: when it fires on a node that is not leading and takes part,
    /// the node campaigns (after a pre-vote round when `pre_vote` is on). Every attempt
    /// restarts the timer, so a split vote or a refused pre-vote is retried after a
    /// fresh timeout.
    pub(super) async fn election_timer(self: Arc<Self>) {
        let raft = self
            .raft
            .get()
            .expect("set before the timer starts")
            .clone();
        loop {
            let deadline_us = self.state.lock().unwrap().election_deadline_us;
            sleep_until_local(self.clock.as_ref(), deadline_us).await;
            if self.clock.now_us() < self.state.lock().unwrap().election_deadline_us {
                continue; // restarted while asleep
            }
            self.reset_timer(TimerReset::Election);
            let leading = raft.metrics().borrow().state == ServerState::Leader;
            if leading || !self.state.lock().unwrap().participating {
                continue;
            }
            if self.cfg.pre_vote && !self.pre_vote_round(&raft).await {
                continue;
            }
            let _ = raft.trigger().elect().await;
        }
    }

    /// Asks every peer whether it would vote for this node in the next term. True when
    /// a majority, this node included, would, and nothing changed here meanwhile: no
    /// leader heard from, and this node's own vote (so its term) is the one it asked for.
    async fn pre_vote_round(&self, raft: &Raft<TypeConfig>) -> bool {
        self.log.election_started();
        let vote_before = raft.metrics().borrow().vote;
        let req = PreVoteRequest {
            term: vote_before.leader_id().term + 1,
            candidate: self.me,
            last_log_id: raft.data_metrics().borrow().last_log,
        };
        let n = self.names.len() as u64;
        let quorum = n / 2 + 1;
        let lease_before = self.state.lock().unwrap().lease_from_us;
        // One task per peer; answers arrive in the order the simulation delivers them.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for to in (1..=n).filter(|&to| to != self.me) {
            let (t, req, tx) = (self.transport.clone(), req.clone(), tx.clone());
            let timeout_ms = self.cfg.election_timeout_min_ms;
            madsim::task::spawn(async move {
                let granted = matches!(
                    t.call(to, RaftMsg::PreVote(req), timeout_ms).await,
                    Ok(RaftReply::PreVote(PreVoteResponse { granted: true, .. }))
                );
                let _ = tx.send(granted);
            });
        }
        drop(tx);
        let mut granted = 1;
        while granted < quorum {
            match rx.recv().await {
                Some(true) => granted += 1,
                Some(false) => {}
                None => return false, // every peer answered or timed out
            }
        }
        self.state.lock().unwrap().lease_from_us == lease_before
            && raft.metrics().borrow().vote == vote_before
    }

    /// Whether this node would vote for `req`'s candidate now, by openraft's own rules
    /// for a real vote: it does not lead, has not heard from a leader for the followers'
    /// lease, the candidate's vote is at least its own, and the candidate's log is at
    /// least as up to date as its own.
    pub(super) fn answer_pre_vote(
        &self,
        raft: &Raft<TypeConfig>,
        req: &PreVoteRequest,
    ) -> PreVoteResponse {
        let (vote, leading) = {
            let m = raft.metrics();
            let m = m.borrow();
            (m.vote, m.state == ServerState::Leader)
        };
        let last_log_id = raft.data_metrics().borrow().last_log;
        let lease_us = self.cfg.election_timeout_max_ms as i64 * 1000;
        let now = self.clock.now_us();
        let leader_heard = self
            .state
            .lock()
            .unwrap()
            .lease_from_us
            .is_some_and(|t| now <= t + lease_us);
        // Votes are partially ordered: two candidates of one term are incomparable, so
        // a peer that voted in `req.term` for someone else says no.
        let asked = Vote::new(req.term, req.candidate);
        PreVoteResponse {
            granted: !leading && !leader_heard && asked >= vote && req.last_log_id >= last_log_id,
            term: vote.leader_id().term,
        }
    }
}
