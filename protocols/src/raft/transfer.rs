//! Leadership transfer for openraft 0.9.25, which has no transfer call.
//!
//! The Raft thesis (section 3.10) transfers leadership in three steps: the leader stops
//! accepting work, brings the target's log up to date, and sends it `TimeoutNow`, on
//! which the target starts an election at once. Its voters must then disregard their
//! leader lease for that election (section 4.2.3), and openraft 0.9's voters cannot be
//! told to: they refuse every vote for `election_timeout_max` after the old leader's last
//! heartbeat (`Engine::handle_vote_req`). `TimeoutNow` alone (`raft.transfer = "elect"`)
//! therefore leaves the seat empty until that lease runs out.
//!
//! The default (`raft.transfer = "vote"`) takes another path openraft 0.9 offers: a node
//! whose vote becomes a committed vote naming itself becomes leader
//! (`VoteHandler::become_leader`, whose doc names this use: "node-a electing for node-b,
//! which can be used for Leader-a to transfer leadership to Follower-b"). Once the
//! successor's log matches the leader's, the leader builds an empty AppendEntries
//! carrying the committed vote `(term + 1, successor)` after its last log id, applies it
//! to itself (it now follows the successor), sends it to the other voters, and only once
//! a majority, itself included, holds that vote sends it to the successor. No other
//! candidate can win `term + 1` then: with `single-term-leader` two votes of one term for
//! different nodes are incomparable, so a voter holding the successor's refuses every
//! other. The successor, told last, becomes leader, appends its blank entry and
//! replicates it; its lease starts once a majority accepts an AppendEntries of its term,
//! as for any win. Had the majority not been reached, the successor is not told, and the
//! followers' election timers elect someone in a later term.

use super::net::{RaftMsg, RaftReply};
use super::{RaftElector, TypeConfig};
use crate::clock::sleep_until_local;
use crate::elector::{ElectorError, TransferReadiness};
use crate::leadership::LossReason;
use crate::raft_config::RaftTransfer;
use crate::NodeId;
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse};
use openraft::{Raft, Vote};

/// How long a leader that stepped aside waits for another to lead before it takes part
/// in elections again.
const STAND_ASIDE_US: i64 = 2_000_000;

impl RaftElector {
    /// The 1-based id of the node named `name`.
    fn id_of(&self, name: &NodeId) -> Option<u64> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| i as u64 + 1)
    }

    /// Ready once `successor` has matched this leader's last log entry (the thesis's
    /// first step: a successor behind would be refused by the voters, or lose entries).
    pub(super) fn successor_caught_up(&self, successor: &NodeId) -> TransferReadiness {
        let (Some(raft), Some(to)) = (self.raft.get(), self.id_of(successor)) else {
            return TransferReadiness::Waiting(format!("`{successor}` is not a raft peer"));
        };
        let last = raft.data_metrics().borrow().last_log;
        let matched = raft
            .metrics()
            .borrow()
            .replication
            .as_ref()
            .and_then(|r| r.get(&to).cloned())
            .flatten();
        if matched >= last {
            TransferReadiness::Ready
        } else {
            TransferReadiness::Waiting(format!(
                "`{successor}`'s log is behind: matched {matched:?}, last {last:?}"
            ))
        }
    }

    /// Stops this node's heartbeats and elections and ends its leadership for `reason`:
    /// the first step of a resign or a transfer.
    pub(super) fn stand_aside(&self, raft: &Raft<TypeConfig>, reason: LossReason) {
        {
            let mut st = self.state.lock().unwrap();
            st.participating = false;
            if let Some((_, h)) = st.leading.take() {
                h.end(reason);
            }
        }
        raft.runtime_config().heartbeat(false);
    }

    /// Waits until another node leads (or [`STAND_ASIDE_US`] pass), then takes part in
    /// heartbeats and elections again.
    pub(super) async fn rejoin_once_another_leads(&self, raft: &Raft<TypeConfig>) {
        let until = self.clock.now_us() + STAND_ASIDE_US;
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
        self.state.lock().unwrap().participating = true;
        self.changed.notify_waiters();
    }

    /// Hands this node's leadership to `successor` (see the module doc), then rejoins
    /// once another node leads.
    pub(super) async fn hand_over(&self, successor: &NodeId) -> Result<(), ElectorError> {
        let raft = self.raft.get().cloned().ok_or(ElectorError::NotLeader)?;
        let to = self.id_of(successor).ok_or(ElectorError::NotLeader)?;
        let term = self.state.lock().unwrap().raft_leader_term;
        let term = term.ok_or(ElectorError::NotLeader)?;
        self.stand_aside(&raft, LossReason::Transferred);
        let handed = match self.cfg.transfer {
            RaftTransfer::Vote => self.elect_successor(&raft, term, to).await,
            RaftTransfer::Elect => {
                let timeout_ms = self.cfg.election_timeout_min_ms;
                match self
                    .transport
                    .call(to, RaftMsg::TimeoutNow, timeout_ms)
                    .await
                {
                    Ok(RaftReply::TimeoutNow) => Ok(()),
                    _ => Err(ElectorError::Unavailable(format!(
                        "`{successor}` did not answer TimeoutNow"
                    ))),
                }
            }
        };
        self.rejoin_once_another_leads(&raft).await;
        handed
    }

    /// The committed vote for `to` in `term + 1`: this node first, then a majority, then
    /// `to` (see the module doc).
    async fn elect_successor(
        &self,
        raft: &Raft<TypeConfig>,
        term: u64,
        to: u64,
    ) -> Result<(), ElectorError> {
        let committed = raft
            .with_raft_state(|st| st.committed)
            .await
            .map_err(|e| ElectorError::Unavailable(e.to_string()))?;
        let req = AppendEntriesRequest::<TypeConfig> {
            vote: Vote::new_committed(term + 1, to),
            prev_log_id: raft.data_metrics().borrow().last_log,
            entries: vec![],
            leader_commit: committed,
        };
        let holds = |r: &Result<AppendEntriesResponse<u64>, _>| {
            matches!(r, Ok(AppendEntriesResponse::Success))
        };
        if !holds(&raft.append_entries(req.clone()).await) {
            return Err(ElectorError::NotLeader);
        }
        let n = self.names.len() as u64;
        let quorum = n / 2 + 1;
        let timeout_ms = self.cfg.election_timeout_min_ms;
        // One task per voter; answers arrive in the order the simulation delivers them.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for peer in (1..=n).filter(|&p| p != self.me && p != to) {
            let (t, req, tx) = (self.transport.clone(), req.clone(), tx.clone());
            madsim::task::spawn(async move {
                let held = matches!(
                    t.call(peer, RaftMsg::Append(req), timeout_ms).await,
                    Ok(RaftReply::Append(Ok(AppendEntriesResponse::Success)))
                );
                let _ = tx.send(held);
            });
        }
        drop(tx);
        let mut held = 1;
        while held < quorum {
            match rx.recv().await {
                Some(true) => held += 1,
                Some(false) => {}
                None => {
                    return Err(ElectorError::Unavailable(
                        "no majority took the successor's vote".into(),
                    ))
                }
            }
        }
        match self
            .transport
            .call(to, RaftMsg::Append(req), timeout_ms)
            .await
        {
            Ok(RaftReply::Append(Ok(AppendEntriesResponse::Success))) => Ok(()),
            _ => Err(ElectorError::Unavailable(
                "the successor did not take its vote".into(),
            )),
        }
    }
}
