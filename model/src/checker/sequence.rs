//! Sequence continuity: every sequence number handed out is above all earlier ones, and
//! none is handed out twice.
//!
//! Read over the accepted `Seq { first, last }` writes in timeline order:
//!
//! - a **non-increasing step** is a batch whose `first` is <= the highest sequence number
//!   accepted before it; each one is a [`Property::SequenceNotIncreasing`];
//! - **reused** counts the distinct sequence numbers accepted more than once.
//!
//! Batches can span huge ranges, so coverage is kept as merged intervals, never as a set
//! of values. The client's own counts (what it actually received) are reported beside
//! the resource's; a client that received a number twice is one summarizing
//! [`Property::SequenceReused`], because the client's counts carry no time.

use super::{accepted_writes, Accepted, CheckInput, Property, Violation};
use crate::timeline::WriteOp;
use serde::Serialize;
use std::collections::BTreeMap;

/// Sequence continuity over the run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SequenceSummary {
    /// Accepted batches that did not start above every earlier number
    /// (`sequence.non_increasing_steps`).
    pub non_increasing_steps: u64,
    /// Distinct sequence numbers the resource accepted more than once.
    pub reused: u64,
    /// The client's count of replies carrying a number it had already received.
    pub client_reused: u64,
    /// Late batches the resource refused because the row had moved past them.
    pub refused_late: u64,
}

/// Appends the violations and returns the summary.
pub fn check(input: &CheckInput, out: &mut Vec<Violation>) -> SequenceSummary {
    let mut q = Sequence::default();
    for w in accepted_writes(input.entries) {
        q.write(&w);
    }
    q.finish(&input.client, input.end_ms(), out)
}

/// Sequence continuity, read one accepted write at a time.
#[derive(Default)]
pub(crate) struct Sequence {
    refused_late: u64,
    non_increasing_steps: u64,
    highest: Option<u64>,
    seen: IntervalSet,
    reused: IntervalSet,
    violations: Vec<Violation>,
}

impl Sequence {
    /// Reads the next accepted write.
    /// Reads the next event (the resource's refusals of late batches).
    pub fn entry(&mut self, e: &crate::timeline::Entry) {
        if matches!(e.event, crate::timeline::Event::SeqRefused { .. }) {
            self.refused_late += 1;
        }
    }

    pub fn write(&mut self, w: &Accepted) {
        let WriteOp::Seq { first, last } = w.op else {
            return;
        };
        if let Some(hi) = self.highest.filter(|&hi| first <= hi) {
            self.non_increasing_steps += 1;
            self.violations.push(Violation {
                property: Property::SequenceNotIncreasing,
                at_ms: super::us_to_ms(w.at_us),
                detail: format!(
                    "{} (token {}) handed out {first}..={last}, not above {hi}",
                    w.node, w.token
                ),
            });
        }
        // A malformed batch (first > last) hands out nothing; it can still be a
        // non-increasing step above, but it covers no numbers.
        if first <= last {
            for (a, b) in self.seen.covered(first, last) {
                self.reused.insert(a, b);
            }
            self.seen.insert(first, last);
            self.highest = Some(self.highest.map_or(last, |hi| hi.max(last)));
        }
    }

    /// Appends the violations (with the client's own count of reuse, at the run's end
    /// `end_ms`); returns the summary.
    pub fn finish(
        self,
        client: &crate::checker::client_stats::ClientStats,
        end_ms: f64,
        out: &mut Vec<Violation>,
    ) -> SequenceSummary {
        out.extend(self.violations);
        let summary = SequenceSummary {
            refused_late: self.refused_late,
            non_increasing_steps: self.non_increasing_steps,
            reused: u64::try_from(self.reused.len()).unwrap_or(u64::MAX),
            client_reused: client.reused,
        };
        if client.reused > 0 {
            out.push(Violation {
                property: Property::SequenceReused,
                at_ms: end_ms,
                detail: format!(
                    "the client received {} replies with a sequence number handed out before",
                    client.reused
                ),
            });
        }
        summary
    }
}

#[derive(Default)]
struct IntervalSet {
    ranges: BTreeMap<u64, u64>,
}

impl IntervalSet {
    /// The parts of `a..=b` already in the set, in order.
    fn covered(&self, a: u64, b: u64) -> Vec<(u64, u64)> {
        let before = self.ranges.range(..a).next_back();
        let inside = self.ranges.range(a..=b);
        before
            .into_iter()
            .chain(inside)
            .filter_map(|(&s, &e)| {
                let (lo, hi) = (s.max(a), e.min(b));
                (lo <= hi).then_some((lo, hi))
            })
            .collect()
    }

    /// Adds `a..=b`, merging with overlapping and adjacent ranges.
    fn insert(&mut self, mut a: u64, mut b: u64) {
        if let Some((&s, &e)) = self.ranges.range(..=a).next_back() {
            if e.saturating_add(1) >= a {
                a = s;
                b = b.max(e);
            }
        }
        let absorbed: Vec<(u64, u64)> = self
            .ranges
            .range(a..)
            .take_while(|(&s, _)| s <= b.saturating_add(1))
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in absorbed {
            self.ranges.remove(&s);
            b = b.max(e);
        }
        self.ranges.insert(a, b);
    }

    /// How many values the set holds (up to 2^64, hence `u128`).
    fn len(&self) -> u128 {
        self.ranges
            .iter()
            .map(|(&s, &e)| u128::from(e - s) + 1)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built timelines of `Seq` batches. Canaries: a batch that
    //! overlaps earlier ones (non-increasing and reused, with huge ranges to prove no
    //! per-value sets), and a client that saw a reuse. Quiet: strictly increasing
    //! batches across a failover, with a gap (gaps are allowed; reuse is not).
    use super::super::testing::*;
    use super::*;
    use crate::scenario::Resolved;
    use crate::timeline::Entry;

    fn seq(at_ms: i64, node: &str, token: u64, first: u64, last: u64) -> Entry {
        accepted(at_ms, node, token, token, WriteOp::Seq { first, last })
    }

    fn run(r: &Resolved, entries: &[Entry]) -> (SequenceSummary, Vec<Violation>) {
        let mut v = vec![];
        let s = check(&input(r, entries, 10_000), &mut v);
        (s, v)
    }

    #[test]
    fn overlapping_batches_fire() {
        let r = resolved();
        let entries = vec![
            seq(100, "n1", 1, 1, 10),
            seq(200, "n1", 1, 11, 20),
            // n1 paused before its last batch landed, n2 read seq 20 and went on.
            seq(300, "n2", 2, 21, 30),
            seq(301, "n1", 1, 21, 25),
            // Overlaps 21..=25 a third time: each value still counts once.
            seq(302, "n1", 1, 24, 40),
            seq(400, "n2", 2, 41, 50),
        ];
        let (s, v) = run(&r, &entries);
        assert_eq!(s.non_increasing_steps, 2);
        // 21..=25 (5) from the first overlap, 26..=30 (5) from the second.
        assert_eq!(s.reused, 10);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].property, Property::SequenceNotIncreasing);
        assert_eq!(v[0].at_ms, 301.0);
    }

    #[test]
    fn restarting_at_the_highest_number_fires() {
        let r = resolved();
        let entries = vec![seq(100, "n1", 1, 1, 10), seq(200, "n2", 2, 10, 20)];
        let (s, v) = run(&r, &entries);
        assert_eq!((s.non_increasing_steps, s.reused), (1, 1));
        assert!(v[0].detail.contains("10..=20, not above 10"), "{v:?}");
    }

    #[test]
    fn huge_ranges_use_intervals() {
        let r = resolved();
        let entries = vec![
            seq(100, "n1", 1, 0, u64::MAX - 1),
            seq(200, "n2", 2, 1, u64::MAX),
        ];
        let (s, v) = run(&r, &entries);
        assert_eq!(s.non_increasing_steps, 1);
        assert_eq!(s.reused, u64::MAX - 1);
        assert_eq!(v.len(), 1);
    }

    #[test]
    fn client_reuse_fires_once() {
        let r = resolved();
        let mut inp = input(&r, &[], 8000);
        inp.client.reused = 3;
        let mut v = vec![];
        let s = check(&inp, &mut v);
        assert_eq!(s.client_reused, 3);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].property, Property::SequenceReused);
        assert_eq!(v[0].at_ms, 8000.0);
    }

    #[test]
    fn increasing_batches_are_quiet() {
        let r = resolved();
        let entries = vec![
            seq(100, "n1", 1, 1, 10),
            seq(200, "n1", 1, 11, 20),
            seq(300, "n2", 2, 100, 100),
            seq(400, "n2", 2, 101, 150),
        ];
        let (s, v) = run(&r, &entries);
        assert_eq!(s, SequenceSummary::default());
        assert!(v.is_empty());
    }

    #[test]
    fn interval_set_merges() {
        let mut set = IntervalSet::default();
        set.insert(10, 20);
        set.insert(30, 40);
        set.insert(21, 29);
        assert_eq!(set.ranges.len(), 1);
        assert_eq!(set.len(), 31);
        assert_eq!(set.covered(5, 12), vec![(10, 12)]);
        set.insert(50, 60);
        assert_eq!(set.covered(35, 55), vec![(35, 40), (50, 55)]);
        assert_eq!(set.covered(41, 49), vec![]);
    }
}
