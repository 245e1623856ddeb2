//! Leadership transfer: each handover to a designated successor, the gap it left at the
//! resource, and whether the successor is who took over.
//!
//! For each `handed_over` (a leader that stopped its writes to hand over to `to`), the
//! **gap** runs from the old leadership's last accepted write to the first accepted
//! write of a newer token (the spec's "old leader's last accepted write -> successor's
//! first"), measured at the resource as [`failover`](super::failover) measures every
//! change. A write of the old leadership accepted after the successor's first makes the
//! gap negative: the two overlapped by effect (that case is also a
//! `negative_handoff_gap` of the failover checker, so it is not reported twice).
//!
//! Properties:
//! - [`Property::TransferMissed`]: the first newer leadership to write after a
//!   handover is not the designated successor's, although the successor was not killed
//!   in between (a transfer that handed the seat to the queue's head, say, or to whoever
//!   retried first).
//! - [`Property::TransferTooSlow`]: with `expect.transfer_gap_ms_max`, a gap above it.
//!
//! Figures (`transfer` in report.json): every handover with its gap and winner, the
//! gaps' statistics, and the transfers aborted (`transfer_aborted`: the backend was not
//! ready in time, and the leader led on).

use super::failover::LatencyStats;
use super::{us_to_ms, Accepted, Property, Violation};
use crate::scenario::Resolved;
use crate::timeline::{Entry, Event};
use crate::NodeId;
use serde::Serialize;
use std::collections::BTreeMap;

/// One handover.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Handover {
    /// When the old leader handed over.
    pub at_ms: f64,
    /// The old leader.
    pub from: NodeId,
    /// Its token.
    pub old_token: u64,
    /// The designated successor.
    pub to: NodeId,
    /// Who wrote first under a newer token, if anyone did.
    pub winner: Option<NodeId>,
    /// Its token.
    pub new_token: Option<u64>,
    /// The old leadership's last accepted write to the winner's first (negative: they
    /// overlapped); `None` until a newer leadership wrote.
    pub gap_ms: Option<f64>,
    /// The successor was killed after the handover, before anyone took over: a missed
    /// transfer is then no fault of the protocol.
    pub successor_died: bool,
}

/// `transfer` in report.json.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TransferSummary {
    /// Every handover, in order.
    pub handovers: Vec<Handover>,
    /// Statistics of the gaps of the handovers whose successor wrote.
    pub gap_ms: LatencyStats,
    /// Those gaps, in order (for pooling over runs).
    pub gaps_ms: Vec<f64>,
    /// Handovers taken over by their designated successor.
    pub honoured: u64,
    /// Transfers given up before a handover (`transfer_aborted`).
    pub aborted: u64,
}

/// Transfers, read one event and one accepted write at a time.
#[derive(Default)]
pub(crate) struct Transfer {
    /// Each leadership's last accepted write (µs), by (node, token): grows with
    /// leaderships, not writes.
    last_write: BTreeMap<(NodeId, u64), i64>,
    handovers: Vec<Handover>,
    /// Per handover: (old leadership's last write µs, the winner's first write µs).
    times: Vec<(Option<i64>, Option<i64>)>,
    aborted: u64,
}

impl Transfer {
    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        match &e.event {
            Event::HandedOver {
                node, token, to, ..
            } => {
                let last = self.last_write.get(&(node.clone(), *token)).copied();
                self.handovers.push(Handover {
                    at_ms: us_to_ms(e.at_us),
                    from: node.clone(),
                    old_token: *token,
                    to: to.clone(),
                    winner: None,
                    new_token: None,
                    gap_ms: None,
                    successor_died: false,
                });
                self.times.push((last, None));
            }
            Event::TransferAborted { .. } => self.aborted += 1,
            Event::NodeKilled { node } => {
                for h in self.handovers.iter_mut().filter(|h| h.winner.is_none()) {
                    h.successor_died |= h.to == *node;
                }
            }
            _ => {}
        }
    }

    /// Reads the next accepted write.
    pub fn write(&mut self, w: &Accepted) {
        let key = (NodeId::from(&*w.node), w.token);
        self.last_write.insert(key, w.at_us);
        for (h, (old_last, new_first)) in self.handovers.iter_mut().zip(&mut self.times) {
            let old = h.from == *w.node && w.token == h.old_token;
            if old {
                // A write of the old leadership landing after its handover.
                *old_last = Some(old_last.map_or(w.at_us, |t| t.max(w.at_us)));
            } else if h.winner.is_none() && w.token > h.old_token {
                h.winner = Some(NodeId::from(&*w.node));
                h.new_token = Some(w.token);
                *new_first = Some(w.at_us);
            }
            if let (Some(a), Some(b)) = (*old_last, *new_first) {
                h.gap_ms = Some(us_to_ms(b - a));
            }
        }
    }

    /// Appends the violations and returns the figures.
    pub fn finish(self, resolved: &Resolved, out: &mut Vec<Violation>) -> TransferSummary {
        let bound = resolved.scenario.expect.transfer_gap_ms_max;
        let mut gaps = vec![];
        let mut honoured = 0;
        for h in &self.handovers {
            let Some(winner) = &h.winner else { continue };
            let at_ms = h.at_ms;
            if *winner == h.to {
                honoured += 1;
            } else if !h.successor_died {
                out.push(Violation {
                    property: Property::TransferMissed,
                    at_ms,
                    detail: format!(
                        "{} (token {}) handed over to {}, but {} (token {}) took over",
                        h.from,
                        h.old_token,
                        h.to,
                        winner,
                        h.new_token.unwrap_or_default()
                    ),
                });
            }
            let Some(gap) = h.gap_ms else { continue };
            gaps.push(gap);
            if let Some(max) = bound.filter(|m| gap > *m as f64) {
                out.push(Violation {
property: Property::TransferTooSlow,
                    at_ms,
                    detail: format!(
                        "{} (token {}) -> {winner}: gap {gap:.1} ms, above expect.transfer_gap_ms_max {max} ms",
                        h.from, h.old_token
                    ),
                });
            }
        }
        TransferSummary {
            gap_ms: LatencyStats::of(&gaps),
            gaps_ms: gaps,
            handovers: self.handovers,
            honoured,
            aborted: self.aborted,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built timelines of one handover each (a clean one, one the
    //! queue's head took, one whose successor died, one too slow), run through every
    //! checker; each property fires exactly where it should.
    use super::super::testing::*;
    use super::super::{check, Property, Violation};
    use crate::timeline::{Entry, Event, WriteOp};

    /// n1 (token 1) writes, hands over to `to` at 5 s; `winner` (token 2) writes
    /// `gap_ms` after n1's last write; `killed` dies just after the handover.
    fn handover(to: &str, winner: &str, gap_ms: i64, killed: Option<&str>) -> Vec<Entry> {
        let mut e = vec![
            leader(0, "n1", 1),
            accepted(100, "n1", 1, 0, WriteOp::Claim),
            accepted(4990, "n1", 1, 1, WriteOp::Tick { n: 1 }),
            stopped(5000, "n1", 1, "transferred"),
            at(
                5000,
                Event::HandedOver {
                    node: "n1".into(),
                    token: 1,
                    to: to.into(),
                    cursor: 0,
                },
            ),
        ];
        e.extend(killed.map(|k| super::super::testing::killed(5001, k)));
        e.push(leader(4990 + gap_ms, winner, 2));
        e.push(accepted(4990 + gap_ms, winner, 2, 1, WriteOp::Claim));
        e.push(accepted(9000, winner, 2, 2, WriteOp::Tick { n: 1 }));
        e
    }

    fn props(v: &[Violation]) -> Vec<Property> {
        v.iter().map(|v| v.property).collect()
    }

    #[test]
    fn a_clean_handover_to_its_successor_passes_with_its_gap() {
        let mut r = resolved();
        r.scenario.expect.transfer_gap_ms_max = Some(50);
        let f = check(&input(&r, &handover("n3", "n3", 20, None), 12_000));
        assert!(!props(&f.violations).contains(&Property::TransferMissed));
        assert!(!props(&f.violations).contains(&Property::TransferTooSlow));
        assert_eq!(f.transfer.honoured, 1);
        assert_eq!(f.transfer.handovers[0].gap_ms, Some(20.0));
    }

    #[test]
    fn another_node_taking_over_is_a_missed_transfer_unless_the_successor_died() {
        let r = resolved();
        let f = check(&input(&r, &handover("n3", "n2", 20, None), 12_000));
        assert!(props(&f.violations).contains(&Property::TransferMissed));
        let f = check(&input(&r, &handover("n3", "n2", 20, Some("n3")), 12_000));
        assert!(!props(&f.violations).contains(&Property::TransferMissed));
    }

    #[test]
    fn a_gap_above_the_bound_is_too_slow() {
        let mut r = resolved();
        r.scenario.expect.transfer_gap_ms_max = Some(50);
        let f = check(&input(&r, &handover("n3", "n3", 300, None), 12_000));
        assert!(props(&f.violations).contains(&Property::TransferTooSlow));
    }
}
