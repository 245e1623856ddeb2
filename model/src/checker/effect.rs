//! `leaders_acting` by effect: how many leaderships the resource accepted interleaved.
//!
//! Each token's effect interval runs from its first accepted write to its last. The
//! series counts the tokens whose interval contains the moment; `max` is its highest
//! value over the run. Intervals are taken in timeline order, not by timestamp, so an
//! old token's last write and a new token's first write in the same microsecond do not
//! count as overlap: the resource saw them one after the other.
//!
//! With fencing working the count never exceeds 1: once a newer token is accepted,
//! older ones are rejected, so their intervals end before it starts. A stale leader's
//! write accepted after a newer token's writes stretches its interval over the newer one
//! and the count becomes 2. The per-incident violations are in [`super::double_leader`]
//! and [`super::stale_token`]; this file measures.

use super::{accepted_writes, Accepted, CheckInput, LeadershipKey};
use crate::NodeId;
use serde::Serialize;
use std::collections::BTreeMap;

/// The span of one token's accepted writes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TokenInterval {
    /// The leader.
    pub node: NodeId,
    /// The fencing token.
    pub token: u64,
    /// Its first accepted write.
    pub first_at_us: i64,
    /// Its last accepted write.
    pub last_at_us: i64,
    /// How many of its writes were accepted.
    pub writes: u64,
}

/// Leaders by effect over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EffectSummary {
    /// The most tokens with interleaved accepted writes at once.
    pub max: u32,
    /// `(at_us, count)` at every change, starting with `(0, 0)`.
    pub series: Vec<(i64, u32)>,
    /// Each token's interval, by token.
    pub intervals: Vec<TokenInterval>,
}

/// Computes the by-effect series of the run.
pub fn check(input: &CheckInput) -> EffectSummary {
    let mut e = Effect::default();
    for w in accepted_writes(input.entries) {
        e.write(&w);
    }
    e.finish()
}

/// The by-effect series, read one accepted write at a time.
#[derive(Default)]
pub(crate) struct Effect {
    /// Each leadership's (first idx, first at, last idx, last at, writes).
    spans: BTreeMap<LeadershipKey, (usize, i64, usize, i64, u64)>,
}

impl Effect {
    /// Reads the next accepted write.
    pub fn write(&mut self, w: &Accepted) {
        match self.spans.get_mut(&w.leadership) {
            Some(s) => {
                s.2 = w.idx;
                s.3 = w.at_us;
                s.4 += 1;
            }
            None => {
                self.spans
                    .insert(w.leadership.clone(), (w.idx, w.at_us, w.idx, w.at_us, 1));
            }
        }
    }

    /// The series over the run.
    pub fn finish(self) -> EffectSummary {
        let spans = self.spans;
        // Sweep over timeline positions. At one position a start sorts before an end,
        // because the write at that position belongs to its own interval.
        let mut marks: Vec<(usize, u8, i64)> = vec![];
        for &(first_idx, first_at, last_idx, last_at, _) in spans.values() {
            marks.push((first_idx, 0, first_at));
            marks.push((last_idx, 1, last_at));
        }
        marks.sort();
        let mut out = EffectSummary {
            max: 0,
            series: vec![(0, 0)],
            intervals: spans
                .iter()
                .map(
                    |(key, &(_, first_at_us, _, last_at_us, writes))| TokenInterval {
                        node: NodeId::from(&*key.node),
                        token: key.token,
                        first_at_us,
                        last_at_us,
                        writes,
                    },
                )
                .collect(),
        };
        let mut count: u32 = 0;
        for (_, kind, at_us) in marks {
            if kind == 0 {
                count += 1;
            } else {
                count -= 1;
            }
            out.series.push((at_us, count));
            out.max = out.max.max(count);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built timelines. The canary accepts a stale token's write after
    //! the newer token's first write (fencing off); the quiet case is a clean handoff,
    //! including one where both writes share a microsecond.
    use super::super::testing::*;
    use super::*;
    use crate::timeline::WriteOp;

    #[test]
    fn stale_write_after_newer_token_counts_two() {
        let r = resolved();
        let entries = vec![
            tick(100, "n1", 1),
            tick(200, "n2", 2),
            accepted(300, "n1", 1, 2, WriteOp::Tick { n: 1 }),
            tick(400, "n2", 2),
        ];
        let s = check(&input(&r, &entries, 1000));
        assert_eq!(s.max, 2);
        assert_eq!(
            s.series,
            vec![
                (0, 0),
                (100_000, 1),
                (200_000, 2),
                (300_000, 1),
                (400_000, 0)
            ]
        );
        assert_eq!(s.intervals[0].writes, 2);
    }

    #[test]
    fn clean_handoff_stays_at_one() {
        let r = resolved();
        let entries = clean_failover();
        let s = check(&input(&r, &entries, 6000));
        assert_eq!(s.max, 1);
        assert_eq!(s.intervals.len(), 2);
        assert_eq!(s.intervals[1].first_at_us, 4_100_000);
    }

    #[test]
    fn same_microsecond_handoff_is_not_overlap() {
        let r = resolved();
        let entries = vec![tick(100, "n1", 1), tick(100, "n2", 2), tick(100, "n2", 2)];
        let s = check(&input(&r, &entries, 1000));
        assert_eq!(s.max, 1);
    }

    #[test]
    fn no_writes_no_effect() {
        let r = resolved();
        let s = check(&input(&r, &[], 1000));
        assert_eq!(s.max, 0);
        assert_eq!(s.series, vec![(0, 0)]);
    }
}
