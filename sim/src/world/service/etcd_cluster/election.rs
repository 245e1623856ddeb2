//! Raft's election among the members, as etcd 3.4 runs it (no pre-vote, check-quorum):
//! a member's answer to a vote and to an append, a candidate's campaign, the leader's
//! beat that steps it down when a majority stops answering, and a follower's randomised
//! wait for a leader.

use super::messages::{Append, Vote};
use super::{member_addr, Cluster, Member, Raft, Role};
use crate::world::net::Endpoint;
use crate::world::rpc::call;
use crate::world::timeline::Event;
use baton_protocols::{sleep_local, Clock};
use futures::stream::{FuturesUnordered, StreamExt};
use rand::Rng;
use std::sync::Arc;
use std::time::Duration;

impl Cluster {
    /// Steps member `m` down to follower of `term` (a higher term seen), leader unknown.
    pub(super) fn step_down(&self, m: &Member, r: &mut Raft, term: u64) {
        if r.role == Role::Leader {
            self.timeline.record(Event::EtcdLeaderLost {
                member: m.name.clone(),
                term: r.term,
            });
        }
        if term > r.term {
            r.term = term;
            r.voted_for = None;
        }
        r.role = Role::Follower;
        r.leader = None;
        r.primary = false;
    }

    /// Handles a vote request on member `m`.
    pub(super) fn on_vote(&self, m: &Member, v: Vote) -> (u64, bool) {
        let mut r = m.raft.lock().unwrap();
        if v.term > r.term {
            self.step_down(m, &mut r, v.term);
        }
        let up_to_date = (v.log.1, v.log.0) >= (r.log.1, r.log.0);
        let grant = v.term == r.term && up_to_date && r.voted_for.is_none_or(|c| c == v.candidate);
        if grant {
            r.voted_for = Some(v.candidate);
            drop(r);
            m.heard.notify_waiters();
            return (v.term, true);
        }
        (r.term, false)
    }

    /// Handles an append (heartbeat or entry) on member `m`.
    pub(super) async fn on_append(&self, m: &Member, a: Append) -> (u64, bool) {
        {
            let mut r = m.raft.lock().unwrap();
            if a.term < r.term {
                return (r.term, false);
            }
            if a.term > r.term || r.role != Role::Follower {
                self.step_down(m, &mut r, a.term);
            }
            r.leader = Some(a.leader);
            // The log as the leader has it (the entries' catch-up is not modelled).
            if !a.entry {
                r.log = r.log.max(a.log);
            }
        }
        m.heard.notify_waiters();
        if a.entry {
            self.fsync(m).await;
            let mut r = m.raft.lock().unwrap();
            r.log = r.log.max(a.log);
        }
        (a.term, true)
    }

    /// Member `m` stands in a new term: votes from every other member, then leads if a
    /// majority granted.
    pub(super) async fn campaign(self: &Arc<Self>, m: &Arc<Member>, ep: &Arc<Endpoint>) {
        let (term, log) = {
            let mut r = m.raft.lock().unwrap();
            r.term += 1;
            r.voted_for = Some(m.i);
            r.role = Role::Candidate;
            r.leader = None;
            r.primary = false;
            (r.term, r.log)
        };
        let mut votes: FuturesUnordered<_> = self
            .members
            .iter()
            .filter(|p| p.i != m.i)
            .map(|p| {
                let req = Vote {
                    term,
                    candidate: m.i,
                    log,
                };
                let (ep, to, t) = (ep.clone(), p.i, self.election_timeout_ms());
                async move { call(&ep, member_addr(to), req, t).await.ok() }
            })
            .collect();
        let mut granted = 1;
        while granted < self.cfg.quorum() {
            match votes.next().await {
                Some(Some((t, ok))) => {
                    let mut r = m.raft.lock().unwrap();
                    if t > r.term {
                        self.step_down(m, &mut r, t);
                        return;
                    }
                    granted += usize::from(ok && t == term);
                }
                Some(None) => {}
                None => return,
            }
        }
        self.won(m, ep, term).await;
    }

    /// The leader's beat: a heartbeat round every `heartbeat_ms`; it steps down when a
    /// majority has not answered for an election timeout (check-quorum).
    pub(super) async fn beat(self: &Arc<Self>, m: &Arc<Member>, ep: &Arc<Endpoint>) {
        let term = m.raft.lock().unwrap().term;
        let (c, me, ep2) = (self.clone(), m.clone(), ep.clone());
        madsim::task::spawn(async move {
            c.quorum_round(&me, &ep2, term, false).await;
        });
        madsim::time::sleep(Duration::from_millis(self.cfg.heartbeat_ms)).await;
        let mut r = m.raft.lock().unwrap();
        if r.role != Role::Leader || r.term != term {
            return;
        }
        let now = m.clock.now_us();
        let window = self.election_timeout_ms() as i64 * 1000;
        let fresh = 1 + self
            .members
            .iter()
            .filter(|p| p.i != m.i && now - r.acked_us[p.i] < window)
            .count();
        if fresh < self.cfg.quorum() {
            self.step_down(m, &mut r, term);
        }
    }

    /// A follower's or candidate's wait: true if it heard from a leader or candidate
    /// within its randomised election timeout, false if the timeout ran out.
    pub(super) async fn heard_in_time(&self, m: &Member) -> bool {
        let base = self.election_timeout_ms() * 1000;
        let us = m.rng.lock().unwrap().gen_range(base..2 * base);
        let heard = m.heard.notified();
        tokio::pin!(heard);
        heard.as_mut().enable();
        tokio::select! {
            biased;
            _ = heard => true,
            _ = sleep_local(&m.clock, Duration::from_micros(us)) => false,
        }
    }
}
