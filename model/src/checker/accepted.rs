//! Accepted writes: the events turned into the writes that took effect, in timeline
//! order, each tied to the leadership that made it, and the succession of leaderships
//! they show. Most checkers read these rather than the raw events.

use crate::timeline::{Entry, Event, Role, WriteOp};
use crate::NodeId;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// Which leadership a write belongs to: the writer, its token, and the timeline position
/// of the win that began the writer's current leadership (`None` when the timeline holds
/// no such win, as in hand-built timelines). Tokens alone cannot tell leaderships apart
/// when a protocol has none (redis-naive writes token 0) or breaks them (a constant-token
/// canary), and the checkers must still see who acted.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct LeadershipKey {
    /// The writer.
    pub node: Arc<str>,
    /// The token it carried.
    pub token: u64,
    /// Where its win sits in the timeline.
    pub win_idx: Option<usize>,
}

/// One write the resource accepted (or a sequencer batch a replicated log committed,
/// as a `seq` write), with where it sits in the timeline.
#[derive(Clone, Debug)]
pub(crate) struct Accepted {
    /// Position in the timeline: the order checkers judge "before" by.
    pub idx: usize,
    /// When.
    pub at_us: i64,
    /// The writer.
    pub node: Arc<str>,
    /// The token it carried.
    pub token: u64,
    /// What was written.
    pub op: WriteOp,
    /// The leadership it was written under.
    pub leadership: LeadershipKey,
}

/// A write waiting to be handed to the checkers: a log batch is one only if its leader
/// handed it out (`BatchHandedOut`, which comes after the batch took effect), so every
/// write after an undecided batch waits too, and the checkers see writes in timeline
/// order.
struct Pending {
    write: Accepted,
    /// `Some(true)`: counts; `Some(false)`: a batch never handed out; `None`: a batch
    /// whose leader may still hand it out.
    counts: Option<bool>,
}

/// Turns the events into the accepted writes, in timeline order, each tied to its
/// leadership.
#[derive(Default)]
pub(crate) struct AcceptedTracker {
    /// node -> (token, index of its latest win, still believes it leads). A write
    /// belongs to its node's latest win under its token, even if it lands after the node
    /// stopped or was killed: a late write is the old leadership acting, not a new one.
    latest: BTreeMap<Arc<str>, (u64, usize, bool)>,
    /// Node names, shared by every write that carries them.
    names: BTreeSet<Arc<str>>,
    pending: VecDeque<Pending>,
    /// Hand-outs seen before their batch took effect (none in practice).
    early: BTreeSet<(NodeId, u64, u64)>,
}

impl AcceptedTracker {
    fn name(&mut self, node: &NodeId) -> Arc<str> {
        if let Some(n) = self.names.get(node.as_str()) {
            return n.clone();
        }
        let n: Arc<str> = Arc::from(node.as_str());
        self.names.insert(n.clone());
        n
    }

    /// Reads event `idx`; returns the writes now known, in timeline order.
    pub fn entry(&mut self, idx: usize, e: &Entry) -> Vec<Accepted> {
        match &e.event {
            Event::RoleChanged {
                node,
                role: Role::Leader,
                token,
            } => {
                let token = token.unwrap_or(0);
                // A repeated belief in the same leadership is not a new win.
                let repeat =
                    matches!(self.latest.get(node.as_str()), Some(&(t, _, true)) if t == token);
                if !repeat {
                    let n = self.name(node);
                    self.latest.insert(n, (token, idx, true));
                }
            }
            Event::RoleChanged { node, .. } | Event::NodeKilled { node } => {
                if let Some(l) = self.latest.get_mut(node.as_str()) {
                    l.2 = false;
                }
                if matches!(e.event, Event::NodeKilled { .. }) {
                    self.decide(|w| &*w.node == node.as_str(), false);
                }
            }
            Event::StoppedActing { node, token, .. } => {
                // A leader hands out its batches before it stops acting.
                self.decide(|w| &*w.node == node.as_str() && w.token == *token, false);
            }
            Event::BatchHandedOut {
                node, token, first, ..
            } => {
                let mut found = false;
                for p in self.pending.iter_mut() {
                    if p.counts.is_none()
                        && &*p.write.node == node.as_str()
                        && p.write.token == *token
                        && matches!(p.write.op, WriteOp::Seq { first: f, .. } if f == *first)
                    {
                        p.counts = Some(true);
                        found = true;
                    }
                }
                if !found {
                    self.early.insert((node.clone(), *token, *first));
                }
            }
            Event::WriteAccepted {
                node, token, op, ..
            } => {
                let w = self.accepted(idx, e.at_us, node, *token, *op);
                self.pending.push_back(Pending {
                    write: w,
                    counts: Some(true),
                });
            }
            Event::BatchCommitted {
                node,
                token,
                first,
                last,
                ..
            } => {
                let op = WriteOp::Seq {
                    first: *first,
                    last: *last,
                };
                let w = self.accepted(idx, e.at_us, node, *token, op);
                let early = self.early.remove(&(node.clone(), *token, *first));
                self.pending.push_back(Pending {
                    write: w,
                    counts: early.then_some(true),
                });
            }
            _ => {}
        }
        self.ready()
    }

    fn accepted(
        &mut self,
        idx: usize,
        at_us: i64,
        node: &NodeId,
        token: u64,
        op: WriteOp,
    ) -> Accepted {
        let node = self.name(node);
        let win_idx = self.latest.get(&node).filter(|l| l.0 == token).map(|l| l.1);
        Accepted {
            idx,
            at_us,
            node: node.clone(),
            token,
            op,
            leadership: LeadershipKey {
                node,
                token,
                win_idx,
            },
        }
    }

    /// Decides every undecided batch that `which` picks.
    fn decide(&mut self, which: impl Fn(&Accepted) -> bool, counts: bool) {
        for p in self.pending.iter_mut() {
            if p.counts.is_none() && which(&p.write) {
                p.counts = Some(counts);
            }
        }
    }

    fn ready(&mut self) -> Vec<Accepted> {
        let mut out = vec![];
        while self.pending.front().is_some_and(|p| p.counts.is_some()) {
            let p = self.pending.pop_front().expect("checked");
            if p.counts == Some(true) {
                out.push(p.write);
            }
        }
        out
    }

    /// The run is over: a batch still undecided was never handed out.
    pub fn finish(&mut self) -> Vec<Accepted> {
        self.decide(|_| true, false);
        self.ready()
    }
}

/// The accepted writes of a whole timeline, in timeline order (for tests and callers
/// holding a timeline in memory).
pub(crate) fn accepted_writes(entries: &[Entry]) -> Vec<Accepted> {
    let mut t = AcceptedTracker::default();
    let mut out = vec![];
    for (idx, e) in entries.iter().enumerate() {
        out.extend(t.entry(idx, e));
    }
    out.extend(t.finish());
    out
}

/// Where a write stands in the succession of leaderships.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Written under the newest leadership that has acted so far.
    Current,
    /// The first write of a leadership newer than every earlier one; `previous` is the
    /// one it succeeds.
    Newer {
        /// The leadership it took over from, if any had acted.
        previous: Option<LeadershipKey>,
    },
    /// Written under a leadership older than one that has already acted: two leaders
    /// acted, interleaved.
    Stale {
        /// The newest leadership that had acted.
        newest: LeadershipKey,
    },
}

/// Orders leaderships by token, then by when each first had a write accepted, so that
/// leaderships sharing a token are still told apart by who started later.
#[derive(Default)]
pub(crate) struct Succession {
    first_idx: BTreeMap<LeadershipKey, usize>,
    newest: Option<((u64, usize), LeadershipKey)>,
}

impl Succession {
    /// Places the next accepted write (in timeline order).
    pub fn step(&mut self, w: &Accepted) -> Step {
        let first = *self.first_idx.entry(w.leadership.clone()).or_insert(w.idx);
        let rank = (w.token, first);
        match &self.newest {
            Some((_, key)) if *key == w.leadership => Step::Current,
            Some((newest_rank, key)) if rank < *newest_rank => Step::Stale {
                newest: key.clone(),
            },
            previous => {
                let previous = previous.as_ref().map(|p| p.1.clone());
                self.newest = Some((rank, w.leadership.clone()));
                Step::Newer { previous }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: a hand-built log-mode timeline with a batch handed out, a batch its
    //! leader never handed out (it was killed), and ticks between them.
    use super::*;
    use crate::checker::testing::*;

    fn committed(at_ms: i64, node: &str, token: u64, first: u64, last: u64) -> Entry {
        at(
            at_ms,
            Event::BatchCommitted {
                node: node.into(),
                token,
                index: first,
                first,
                last,
            },
        )
    }

    fn handed_out(at_ms: i64, node: &str, token: u64, first: u64, last: u64) -> Entry {
        at(
            at_ms,
            Event::BatchHandedOut {
                node: node.into(),
                token,
                first,
                last,
            },
        )
    }

    #[test]
    fn log_batches_count_only_once_handed_out_and_writes_keep_timeline_order() {
        // n1 commits two batches and hands out the first; a tick lands between; n1 is
        // killed before it hands out the second (its successor committed it). Only the
        // handed-out batch is n1's act, and the tick still comes after it.
        let entries = vec![
            leader(100, "n1", 1),
            committed(200, "n1", 1, 1, 10),
            tick(210, "n1", 1),
            handed_out(220, "n1", 1, 1, 10),
            committed(300, "n1", 1, 11, 20),
            tick(310, "n1", 1),
            killed(320, "n1"),
        ];
        let w = accepted_writes(&entries);
        let got: Vec<(usize, WriteOp)> = w.iter().map(|w| (w.idx, w.op)).collect();
        assert_eq!(
            got,
            vec![
                (1, WriteOp::Seq { first: 1, last: 10 }),
                (2, WriteOp::Tick { n: 0 }),
                (5, WriteOp::Tick { n: 0 }),
            ]
        );
        assert!(w.iter().all(|w| w.leadership.win_idx == Some(0)));
    }
}
