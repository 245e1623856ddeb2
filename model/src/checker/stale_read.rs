//! Stale reads: a read answered from a leader's lease must reflect every sequencer batch
//! that took effect before the client sent it (linearizability, Herlihy and Wing 1990).
//!
//! Reads are served by a leader from its own state machine, with no quorum round trip,
//! while its leader lease holds on its clock (`ReadServed`). Batches take effect at their
//! first application anywhere (`BatchCommitted`), which is after they were committed.
//! A read sent at `t` that returned `v` is **stale** if a batch ending above `v` took
//! effect before `t`: that batch was committed before the read began, so any
//! linearizable answer includes it. The check cannot fire on a read that merely
//! overlapped a commit, since the batch's time is at or after its commit.
//!
//! A deposed leader still inside its own lease answers from a state machine that no
//! longer moves; a clock running slower than the lease's margin assumes is how that
//! happens (Raft thesis, section 6.4.1: lease reads "rely on bounded clock drift").
//! One violation per leadership (node and term) that served stale reads.

use super::{us_to_ms, CheckInput, Property, Violation};
use crate::timeline::{Entry, Event};
use crate::NodeId;
use serde::Serialize;
use std::collections::BTreeMap;

/// Leased reads over the run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StaleReadSummary {
    /// Reads answered by a leader (`reads.served`).
    pub served: u64,
    /// Of those, reads that missed a batch committed before they were sent
    /// (`reads.stale`).
    pub stale: u64,
    /// The most sequence numbers a stale read was behind by.
    pub max_numbers_behind: u64,
}

/// Appends one violation per leadership that served stale reads; returns the summary.
pub fn check(input: &CheckInput, out: &mut Vec<Violation>) -> StaleReadSummary {
    check_entries(input.entries, out)
}

/// The stale reads of one leadership, for its violation.
struct Streak {
    first_at_us: i64,
    last_at_us: i64,
    count: u64,
    max_behind: u64,
    /// The batch the first stale read missed: its proposer and term.
    missed: (NodeId, u64),
}

/// As [`check`], over a bare timeline.
pub fn check_entries(entries: &[Entry], out: &mut Vec<Violation>) -> StaleReadSummary {
    let mut s = StaleRead::default();
    for e in entries {
        s.entry(e);
    }
    s.finish(out)
}

/// Stale reads, read one event at a time.
#[derive(Default)]
pub(crate) struct StaleRead {
    summary: StaleReadSummary,
    /// Batches in the order they took effect, with the highest number so far: the
    /// timeline is in time order, so a read's bound is the last batch before its send.
    /// (Kept whole: a read may have been sent long before a paused leader answers it.)
    effective: Vec<(i64, u64, usize)>,
    /// Proposers and terms of the batches, by index into `names`.
    names: Vec<(NodeId, u64)>,
    streaks: BTreeMap<(NodeId, u64), Streak>,
}

impl StaleRead {
    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        match &e.event {
            Event::BatchCommitted {
                node, token, last, ..
            } => {
                let hi = self.effective.last().map_or(0, |b| b.1).max(*last);
                if self.names.last() != Some(&(node.clone(), *token)) {
                    self.names.push((node.clone(), *token));
                }
                self.effective.push((e.at_us, hi, self.names.len() - 1));
            }
            Event::ReadServed {
                node,
                token,
                value,
                sent_at_us,
                count,
            } => {
                self.summary.served += count;
                let before = self.effective.partition_point(|b| b.0 < *sent_at_us);
                let Some(&(_, committed, by)) = before.checked_sub(1).map(|i| &self.effective[i])
                else {
                    return;
                };
                if *value >= committed {
                    return;
                }
                self.summary.stale += count;
                let behind = committed - value;
                self.summary.max_numbers_behind = self.summary.max_numbers_behind.max(behind);
                let missed = self.names[by].clone();
                let s = self
                    .streaks
                    .entry((node.clone(), *token))
                    .or_insert(Streak {
                        first_at_us: e.at_us,
                        last_at_us: e.at_us,
                        count: 0,
                        max_behind: 0,
                        missed,
                    });
                s.last_at_us = e.at_us;
                s.count += count;
                s.max_behind = s.max_behind.max(behind);
            }
            _ => {}
        }
    }

    /// Appends one violation per leadership that served stale reads; returns the
    /// summary.
    pub fn finish(self, out: &mut Vec<Violation>) -> StaleReadSummary {
        for ((node, term), s) in self.streaks {
            out.push(Violation {
property: Property::StaleRead,
                at_ms: us_to_ms(s.first_at_us),
                detail: format!(
                    "{node} (term {term}) answered {} reads from its lease between {} and {} ms that missed batches already committed, up to {} numbers behind; the first missed batch was {}'s in term {}",
                    s.count,
                    us_to_ms(s.first_at_us),
                    us_to_ms(s.last_at_us),
                    s.max_behind,
                    s.missed.0,
                    s.missed.1
                ),
            });
        }
        self.summary
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built timelines. Canary: a read sent after a batch took effect
    //! returns the value before it (fires, once per leadership). Quiet: a read that
    //! overlapped the batch (sent before it took effect) may return the old value.
    use super::*;

    fn at(at_us: i64, event: Event) -> Entry {
        Entry { at_us, event }
    }

    fn batch(at_us: i64, node: &str, token: u64, first: u64, last: u64) -> Entry {
        at(
            at_us,
            Event::BatchCommitted {
                node: node.into(),
                token,
                index: last,
                first,
                last,
            },
        )
    }

    fn read(at_us: i64, node: &str, token: u64, value: u64, sent_at_us: i64) -> Entry {
        at(
            at_us,
            Event::ReadServed {
                node: node.into(),
                token,
                value,
                sent_at_us,
                count: 1,
            },
        )
    }

    #[test]
    fn a_read_missing_an_earlier_commit_is_stale() {
        let entries = vec![
            batch(1_000, "n1", 1, 1, 10),
            batch(5_000, "n2", 2, 11, 20),
            read(7_000, "n1", 1, 10, 6_000),
            read(8_000, "n1", 1, 10, 7_500),
            read(9_000, "n2", 2, 20, 8_500),
        ];
        let mut out = vec![];
        let s = check_entries(&entries, &mut out);
        assert_eq!(s.served, 3);
        assert_eq!(s.stale, 2);
        assert_eq!(s.max_numbers_behind, 10);
        assert_eq!(out.len(), 1, "one violation for n1's term 1: {out:?}");
        assert_eq!(out[0].property, Property::StaleRead);
        assert!(
            out[0].detail.contains("n2's in term 2"),
            "{}",
            out[0].detail
        );
    }

    #[test]
    fn a_read_overlapping_a_commit_may_return_the_old_value() {
        let entries = vec![
            batch(1_000, "n1", 1, 1, 10),
            // Sent at 4,000, before the batch took effect at 5,000: either answer is
            // linearizable.
            batch(5_000, "n1", 1, 11, 20),
            read(6_000, "n1", 1, 10, 4_000),
            read(6_500, "n1", 1, 20, 6_000),
        ];
        let mut out = vec![];
        let s = check_entries(&entries, &mut out);
        assert_eq!((s.served, s.stale), (2, 0));
        assert!(out.is_empty(), "{out:?}");
    }
}
