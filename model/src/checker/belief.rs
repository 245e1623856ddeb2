//! `leaders_acting` by belief: how many nodes believe they lead, over time.
//!
//! A node joins the count when it changes its role to leader and leaves it when it
//! changes to any other role or is killed (a killed node no longer believes anything).
//! The series has one point per change of the count, starting with `(0, 0)`.
//!
//! Two nodes believing they lead at once is normal for a lease protocol (an old leader
//! learns it lost its lease only when its own clock says so), so belief overlap is
//! reported with its windows, never a violation. The safety property is by effect: see
//! [`super::effect`] and [`super::double_leader`].

use super::{us_to_ms, CheckInput};
use crate::timeline::{Entry, Event, Role};
use crate::NodeId;
use serde::Serialize;
use std::collections::BTreeSet;

/// A time span during which two or more nodes believed they led.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OverlapWindow {
    /// When the second believer appeared.
    pub from_ms: f64,
    /// When fewer than two remained (or the run ended).
    pub to_ms: f64,
    /// Every node that believed it led at some point in the window, sorted.
    pub nodes: Vec<NodeId>,
}

/// Leaders by belief over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BeliefSummary {
    /// The most nodes believing at once.
    pub max: u32,
    /// `(at_us, count)` at every change, starting with `(0, 0)`.
    pub series: Vec<(i64, u32)>,
    /// Every window with two or more believers.
    pub overlaps: Vec<OverlapWindow>,
}

/// Computes the belief series of the run.
pub fn check(input: &CheckInput) -> BeliefSummary {
    summarize(input.entries, input.end_us)
}

/// As [`check`], from the timeline alone.
pub fn summarize(entries: &[Entry], end_us: i64) -> BeliefSummary {
    let mut b = Belief::default();
    for e in entries {
        b.entry(e);
    }
    b.finish(end_us)
}

/// The belief series, read one event at a time.
pub struct Belief {
    believers: BTreeSet<NodeId>,
    out: BeliefSummary,
    open: Option<(i64, BTreeSet<NodeId>)>,
}

impl Default for Belief {
    fn default() -> Self {
        Belief {
            believers: BTreeSet::new(),
            out: BeliefSummary {
                max: 0,
                series: vec![(0, 0)],
                overlaps: vec![],
            },
            open: None,
        }
    }
}

impl Belief {
    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        let changed = match &e.event {
            Event::RoleChanged {
                node,
                role: Role::Leader,
                ..
            } => self.believers.insert(node.clone()),
            Event::RoleChanged { node, .. } | Event::NodeKilled { node } => {
                self.believers.remove(node.as_str())
            }
            _ => false,
        };
        if !changed {
            return;
        }
        let count = self.believers.len() as u32;
        self.out.series.push((e.at_us, count));
        self.out.max = self.out.max.max(count);
        if count >= 2 {
            let window = self.open.get_or_insert_with(|| (e.at_us, BTreeSet::new()));
            window.1.extend(self.believers.iter().cloned());
        } else if let Some((from_us, nodes)) = self.open.take() {
            self.out.overlaps.push(window(from_us, e.at_us, nodes));
        }
    }

    /// The series of a run that stopped at `end_us`.
    pub fn finish(mut self, end_us: i64) -> BeliefSummary {
        if let Some((from_us, nodes)) = self.open.take() {
            self.out.overlaps.push(window(from_us, end_us, nodes));
        }
        self.out
    }
}

fn window(from_us: i64, to_us: i64, nodes: BTreeSet<NodeId>) -> OverlapWindow {
    OverlapWindow {
        from_ms: us_to_ms(from_us),
        to_ms: us_to_ms(to_us),
        nodes: nodes.into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built timelines. The canary has an old leader that keeps
    //! believing after a new one wins; the quiet case kills the old leader first.
    use super::super::testing::*;
    use super::*;

    #[test]
    fn overlap_fires_when_old_leader_keeps_believing() {
        let r = resolved();
        let entries = vec![
            leader(100, "n1", 1),
            leader(4000, "n2", 2),
            leader(4500, "n3", 3),
            follower(5000, "n1"),
            follower(5200, "n2"),
            leader(7000, "n1", 4),
        ];
        let s = check(&input(&r, &entries, 8000));
        assert_eq!(s.max, 3);
        assert_eq!(
            s.series,
            vec![
                (0, 0),
                (100_000, 1),
                (4_000_000, 2),
                (4_500_000, 3),
                (5_000_000, 2),
                (5_200_000, 1),
                (7_000_000, 2),
            ]
        );
        assert_eq!(
            s.overlaps,
            vec![
                OverlapWindow {
                    from_ms: 4000.0,
                    to_ms: 5200.0,
                    nodes: vec!["n1".into(), "n2".into(), "n3".into()],
                },
                // Still open when the run ends: it closes at the end.
                OverlapWindow {
                    from_ms: 7000.0,
                    to_ms: 8000.0,
                    nodes: vec!["n1".into(), "n3".into()],
                },
            ]
        );
    }

    #[test]
    fn quiet_when_old_leader_dies_first() {
        let r = resolved();
        let entries = clean_failover();
        let s = check(&input(&r, &entries, 6000));
        assert_eq!(s.max, 1);
        assert!(s.overlaps.is_empty());
        assert_eq!(
            s.series,
            vec![(0, 0), (100_000, 1), (1_500_000, 0), (4_010_000, 1)]
        );
    }

    #[test]
    fn repeated_belief_is_not_a_change() {
        let r = resolved();
        let entries = vec![
            leader(100, "n1", 1),
            leader(200, "n1", 1),
            killed(300, "n2"),
        ];
        let s = check(&input(&r, &entries, 1000));
        assert_eq!(s.series, vec![(0, 0), (100_000, 1)]);
    }
}
