//! The faults as they happened: applied, healed or skipped, read from the timeline for
//! the summary, the plot and the fault windows other figures leave out. A record, not a
//! property: no violation comes from it.

use super::Entry;
use crate::fault::FaultKind;
use crate::scenario::Resolved;
use crate::timeline::Event;
use std::collections::{BTreeMap, VecDeque};

/// One fault as it happened.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultRecord {
    /// Its index in the scenario's `faults`.
    pub index: usize,
    /// Its kind (`None` for one that could not be applied).
    pub kind: Option<FaultKind>,
    /// What it hit, or why it was skipped.
    pub target: String,
    /// When it was applied (or skipped).
    pub at_us: i64,
    /// When it was healed, matched to its application (the oldest open one of its
    /// index): `None` for an instant, or a fault whose heal never came.
    pub healed_us: Option<i64>,
    /// The heals the summary prints after it: every heal of its index that came while
    /// it was that index's latest record.
    pub summary_heals_us: Vec<i64>,
    /// Skipped rather than applied.
    pub skipped: bool,
}

/// The faults of a run, read one event at a time.
#[derive(Default)]
pub(crate) struct Faults {
    records: Vec<FaultRecord>,
    /// Open applications by fault index, oldest first (positions in `records`).
    open: BTreeMap<usize, VecDeque<usize>>,
}

impl Faults {
    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        match &e.event {
            Event::FaultApplied {
                index,
                kind,
                target,
            } => {
                self.open
                    .entry(*index)
                    .or_default()
                    .push_back(self.records.len());
                self.records.push(FaultRecord {
                    index: *index,
                    kind: Some(*kind),
                    target: target.clone(),
                    at_us: e.at_us,
                    healed_us: None,
                    summary_heals_us: vec![],
                    skipped: false,
                });
            }
            Event::FaultHealed { index, .. } => {
                if let Some(i) = self.open.get_mut(index).and_then(VecDeque::pop_front) {
                    self.records[i].healed_us = Some(e.at_us);
                }
                if let Some(r) = self.records.iter_mut().rev().find(|r| r.index == *index) {
                    r.summary_heals_us.push(e.at_us);
                }
            }
            Event::FaultSkipped { index, reason } => {
                self.records.push(FaultRecord {
                    index: *index,
                    kind: None,
                    target: reason.clone(),
                    at_us: e.at_us,
                    healed_us: None,
                    summary_heals_us: vec![],
                    skipped: true,
                });
            }
            _ => {}
        }
    }

    /// Each applied fault's window `[applied, ended]` in a run that stopped at `end_us`:
    /// ended at its heal, else when its duration ran out, else at the run's end for a
    /// partition without a duration, else (an instant) when applied.
    pub fn windows(&self, resolved: &Resolved, end_us: i64) -> Vec<(i64, i64)> {
        self.records
            .iter()
            .filter(|r| !r.skipped)
            .map(|r| {
                let end = r.healed_us.unwrap_or_else(|| {
                    let duration_ms = resolved
                        .faults
                        .get(r.index)
                        .and_then(|f| f.fault.duration_ms());
                    match duration_ms {
                        Some(d) => r.at_us.saturating_add(d as i64 * 1000),
                        None if r.kind == Some(FaultKind::Partition) => end_us,
                        None => r.at_us,
                    }
                });
                (r.at_us, end)
            })
            .collect()
    }

    /// Every fault, in the order it happened.
    pub fn finish(self) -> Vec<FaultRecord> {
        self.records
    }
}
