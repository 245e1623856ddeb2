//! Liveness: after the last fault ends, a leader's write is accepted within a bound.
//!
//! Safety alone is cheap (a fleet that never elects anybody never has two leaders), so
//! every run also has a liveness phase, as in TigerBeetle's VOPR: once faults stop, the
//! system must make progress.
//!
//! When each fault ends:
//! - a fault with a matching `FaultHealed` (same index) ends there;
//! - an instantaneous fault (kill, restart, clock-*, resign, heal) ends when applied;
//!   so does a `network` change without a duration, which becomes the new normal;
//! - a fault with a duration whose heal was never recorded ends when its duration would
//!   have run out (the run stopped first);
//! - a partition without a duration that is never healed lasts to the end of the run:
//!   liveness cannot be shown after it, which is itself a [`Property::NoProgress`],
//!   because a scenario that never heals cannot prove the system recovers.
//!
//! With no faults the last end is 0. Then an accepted write (any op) must come in
//! `(last_end, last_end + expect.liveness_bound_ms]`. A run that stopped before that
//! window closed without such a write is also a violation: it was too short to show
//! liveness.
//!
//! One write is not recovery: a write already in flight when the network died can land
//! just after. So progress must also be sustained: the run must go on for at least one
//! bound after the last fault ended, and no gap between accepted writes after it, nor
//! from the last one to the end of the run, may exceed the bound.

use super::{accepted_writes, us_to_ms, Accepted, CheckInput, Property, Violation};
use crate::fault::FaultKind;
use crate::scenario::Resolved;
use crate::timeline::{Entry, Event};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

/// When work resumed after the faults.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LivenessSummary {
    /// When the last fault ended (0 without faults; the run's end if one never healed).
    pub last_fault_end_ms: f64,
    /// The bound the scenario gave (`expect.liveness_bound_ms`).
    pub bound_ms: u64,
    /// The first accepted write after the last fault ended, if any.
    pub first_write_after_ms: Option<f64>,
    /// The longest time without an accepted write after that first one (to the run's
    /// end included).
    pub longest_stall_after_ms: f64,
}

/// Appends a [`Property::NoProgress`] if liveness failed or cannot be shown.
pub fn check(input: &CheckInput, out: &mut Vec<Violation>) -> LivenessSummary {
    let mut l = Liveness::default();
    for e in input.entries {
        l.entry(e, input.resolved);
    }
    for w in accepted_writes(input.entries) {
        l.write(&w);
    }
    l.finish(input.resolved, input.end_us, out)
}

/// Liveness, read one event and one accepted write at a time. The last fault's end is
/// known only at the end, so the writes after the end as it stands so far are tracked,
/// and tracking starts again whenever that end moves: it only moves at a fault event, to
/// a time at or after that event, so no write before it can count.
#[derive(Default)]
pub(crate) struct Liveness {
    /// Applications not healed yet, by fault index, oldest first: (time, kind, planned
    /// end if it has a duration, or None).
    open: BTreeMap<usize, VecDeque<(i64, FaultKind, Option<i64>)>>,
    /// The latest heal.
    healed_end_us: i64,
    /// The last fault's end as it stands (`i64::MAX`: a partition that may never heal).
    end_us: i64,
    first_after_us: Option<i64>,
    prev_us: Option<i64>,
    stall: (i64, i64),
}

impl Liveness {
    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry, resolved: &Resolved) {
        match &e.event {
            Event::FaultApplied { index, kind, .. } => {
                let typed = resolved.faults.get(*index).map(|f| &f.fault);
                // Without a typed fault (a hand-built timeline), fall back on the kind.
                let duration_ms = match typed {
                    Some(f) => f.duration_ms(),
                    None if *kind == FaultKind::Partition => None,
                    None => Some(0),
                };
                let planned =
                    duration_ms.map(|d| e.at_us.saturating_add((d as i64).saturating_mul(1000)));
                self.open
                    .entry(*index)
                    .or_default()
                    .push_back((e.at_us, *kind, planned));
            }
            Event::FaultHealed { index, .. } => {
                if let Some(queue) = self.open.get_mut(index) {
                    if queue.pop_front().is_some() {
                        self.healed_end_us = self.healed_end_us.max(e.at_us);
                    }
                }
            }
            _ => return,
        }
        let end_us = self.end_so_far();
        if end_us != self.end_us {
            self.end_us = end_us;
            self.first_after_us = None;
            self.prev_us = None;
            self.stall = (0, 0);
        }
    }

    /// The last fault's end if the run stopped now; `i64::MAX` if a partition without a
    /// duration is still open.
    fn end_so_far(&self) -> i64 {
        let mut end_us = self.healed_end_us;
        for (at_us, kind, planned) in self.open.values().flatten() {
            end_us = end_us.max(match planned {
                Some(p) => *p,
                None if *kind == FaultKind::Partition => i64::MAX,
                None => *at_us,
            });
        }
        end_us
    }

    /// Reads the next accepted write.
    pub fn write(&mut self, w: &Accepted) {
        if w.at_us <= self.end_us {
            return;
        }
        self.first_after_us.get_or_insert(w.at_us);
        if let Some(p) = self.prev_us {
            if w.at_us - p > self.stall.0 {
                self.stall = (w.at_us - p, p);
            }
        }
        self.prev_us = Some(w.at_us);
    }

    /// Appends a [`Property::NoProgress`] if liveness failed or cannot be shown in a
    /// run that stopped at `end_us`.
    pub fn finish(
        self,
        resolved: &Resolved,
        end_us: i64,
        out: &mut Vec<Violation>,
    ) -> LivenessSummary {
        let bound_ms = resolved
            .scenario
            .expect
            .liveness_bound_ms
            .expect("a resolved scenario always has a liveness bound");
        if let Some(v) = self.never_healed(end_us) {
            out.push(v);
            return LivenessSummary {
                last_fault_end_ms: us_to_ms(end_us),
                bound_ms,
                first_write_after_ms: None,
                longest_stall_after_ms: 0.0,
            };
        }
        let (stall_us, stall_from_us) = self.longest_stall(end_us);
        let w = Window {
            last_end_us: self.end_us,
            first_after_us: self.first_after_us,
            bound_ms,
            end_us,
        };
        out.extend(w.not_sustained(stall_us, stall_from_us));
        out.extend(w.no_write_in_time());
        LivenessSummary {
            last_fault_end_ms: us_to_ms(w.last_end_us),
            bound_ms,
            first_write_after_ms: w.first_after_us.map(us_to_ms),
            longest_stall_after_ms: us_to_ms(stall_us),
        }
    }

    /// A partition without a duration that never healed: liveness cannot be checked after
    /// it, which is itself a violation.
    fn never_healed(&self, end_us: i64) -> Option<Violation> {
        let never_healed: Vec<(usize, i64)> = self
            .open
            .iter()
            .flat_map(|(&i, q)| {
                q.iter()
                    .filter(|(_, kind, planned)| planned.is_none() && *kind == FaultKind::Partition)
                    .map(move |(at, _, _)| (i, *at))
            })
            .collect();
        if never_healed.is_empty() {
            return None;
        }
        let list: Vec<String> = never_healed
            .iter()
            .map(|(i, at_us)| format!("fault {i} (partition, applied at {} ms)", us_to_ms(*at_us)))
            .collect();
        Some(Violation {
            property: Property::NoProgress,
            at_ms: us_to_ms(end_us),
            detail: format!(
                "{} never healed: liveness cannot be checked after it",
                list.join(", ")
            ),
        })
    }

    /// The longest gap between accepted writes after the last fault ended, and where it
    /// began. The gap from the last write after the fault to the end of the run counts
    /// too.
    fn longest_stall(&self, end_us: i64) -> (i64, i64) {
        let (mut stall_us, mut stall_from_us) = self.stall;
        if let Some(p) = self.prev_us {
            if end_us - p > stall_us {
                (stall_us, stall_from_us) = (end_us - p, p);
            }
        }
        (stall_us, stall_from_us)
    }
}

/// The window liveness is judged in: from the last fault's end, one bound long, in a run
/// that stopped at `end_us`.
struct Window {
    last_end_us: i64,
    first_after_us: Option<i64>,
    bound_ms: u64,
    end_us: i64,
}

impl Window {
    /// When the window closes.
    fn deadline_us(&self) -> i64 {
        self.last_end_us
            .saturating_add((self.bound_ms as i64).saturating_mul(1000))
    }

    /// A write came in time, but progress was not shown to last: the run ended before
    /// the window closed, or a gap after recovery (`stall_us` from `stall_from_us`)
    /// exceeded the bound.
    fn not_sustained(&self, stall_us: i64, stall_from_us: i64) -> Option<Violation> {
        let (bound_ms, end_ms) = (self.bound_ms, us_to_ms(self.end_us));
        let deadline_us = self.deadline_us();
        let bound_us = (bound_ms as i64).saturating_mul(1000);
        let first_in_time = self.first_after_us.filter(|&at| at <= deadline_us);
        if let Some(first) = first_in_time.filter(|_| self.end_us < deadline_us) {
            // One write right after recovery can be a write that was already in flight; only
            // a run that lasts the whole window can show progress was sustained through it.
            Some(Violation {
property: Property::NoProgress,
                at_ms: end_ms,
                detail: format!(
                    "run too short to show sustained progress: one write came at {} ms, but the run ended at {} ms, before the window (last fault end {} ms + bound {bound_ms} ms) closed",
                    us_to_ms(first),
                    end_ms,
                    us_to_ms(self.last_end_us)
                ),
            })
        } else if first_in_time.is_some() && stall_us > bound_us {
            Some(Violation {
property: Property::NoProgress,
                at_ms: us_to_ms(stall_from_us.saturating_add(bound_us)),
                detail: format!(
                    "progress stalled after recovery: no accepted write for {} ms from {} ms (bound {bound_ms} ms)",
                    us_to_ms(stall_us),
                    us_to_ms(stall_from_us)
                ),
            })
        } else {
            None
        }
    }

    /// No accepted write came within the window: none came at all, it came too late, or
    /// the run stopped before the window closed.
    fn no_write_in_time(&self) -> Option<Violation> {
        let (bound_ms, end_ms) = (self.bound_ms, us_to_ms(self.end_us));
        let deadline_us = self.deadline_us();
        if self.first_after_us.is_some_and(|at| at <= deadline_us) {
            return None;
        }
        let last_end_ms = us_to_ms(self.last_end_us);
        let detail = if self.end_us < deadline_us {
            format!(
                "run too short to show liveness: it ended at {} ms, before the bound of \
                 {bound_ms} ms after the last fault end ({last_end_ms} ms) ran out, with no \
                 accepted write after that fault",
                end_ms
            )
        } else {
            let first = match self.first_after_us {
                Some(at) => format!("the first came at {} ms", us_to_ms(at)),
                None => "none came".to_string(),
            };
            format!(
                "no accepted write within {bound_ms} ms after the last fault ended at \
                 {last_end_ms} ms; {first}"
            )
        };
        Some(Violation {
            property: Property::NoProgress,
            at_ms: us_to_ms(deadline_us.min(self.end_us)),
            detail,
        })
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built timelines against a bound of 5000 ms. Canaries: no write
    //! after a heal, a write that comes too late, a run too short, a partition never
    //! healed. Quiet: a write within the bound after a healed partition and after an
    //! instantaneous kill, and a fault-free run that writes early.
    use super::super::testing::*;
    use super::*;
    use crate::scenario::Resolved;
    use crate::timeline::Entry;

    fn resolved_bound() -> Resolved {
        let mut r = resolved();
        r.scenario.expect.liveness_bound_ms = Some(5000);
        r
    }

    fn run(entries: &[Entry], end_ms: i64) -> (LivenessSummary, Vec<Violation>) {
        let r = resolved_bound();
        let mut v = vec![];
        let s = check(&input(&r, entries, end_ms), &mut v);
        (s, v)
    }

    #[test]
    fn write_within_bound_after_heal_is_quiet() {
        let entries = vec![
            tick(100, "n1", 1),
            fault(1000, 0, "partition"),
            fault(1500, 1, "kill"),
            healed(3000, 0, "partition"),
            tick(7999, "n2", 2),
        ];
        let (s, v) = run(&entries, 12_999);
        assert!(v.is_empty(), "{v:?}");
        assert_eq!(s.last_fault_end_ms, 3000.0);
        assert_eq!(s.first_write_after_ms, Some(7999.0));
    }

    #[test]
    fn no_faults_needs_an_early_write() {
        let early = &clean_failover()[..4];
        let end_ms = early.last().unwrap().at_us / 1000 + 5000;
        let (s, v) = run(early, end_ms);
        assert!(v.is_empty(), "{v:?}");
        assert_eq!(s.last_fault_end_ms, 0.0);
        let (_, v) = run(&[tick(5001, "n1", 1)], 10_000);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].at_ms, 5000.0);
    }

    #[test]
    fn late_or_missing_write_fires() {
        let entries = vec![
            tick(100, "n1", 1),
            fault(1000, 0, "partition"),
            healed(3000, 0, "partition"),
            tick(8001, "n2", 2),
        ];
        let (s, v) = run(&entries, 20_000);
        assert_eq!(s.first_write_after_ms, Some(8001.0));
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].property, Property::NoProgress);
        assert_eq!(v[0].at_ms, 8000.0);
        assert!(v[0].detail.contains("the first came at 8001 ms"));

        let (_, v) = run(&entries[..3], 20_000);
        assert!(v[0].detail.contains("none came"));
    }

    #[test]
    fn bound_is_inclusive_to_the_microsecond() {
        let at_deadline = Entry {
            at_us: 5_000_000,
            ..tick(0, "n1", 1)
        };
        assert!(run(std::slice::from_ref(&at_deadline), 10_000).1.is_empty());
        let just_after = Entry {
            at_us: 5_000_001,
            ..at_deadline
        };
        assert_eq!(run(&[just_after], 10_000).1.len(), 1);
    }

    #[test]
    fn short_run_fires() {
        let entries = vec![fault(1000, 0, "kill"), tick(900, "n1", 1)];
        let (_, v) = run(&entries, 3000);
        assert_eq!(v.len(), 1);
        assert!(v[0].detail.starts_with("run too short"));
        assert_eq!(v[0].at_ms, 3000.0);
    }

    #[test]
    fn partition_never_healed_fires() {
        let entries = vec![fault(1000, 0, "partition"), tick(1500, "n2", 2)];
        let (s, v) = run(&entries, 20_000);
        assert_eq!(v.len(), 1);
        assert!(v[0].detail.contains("never healed"));
        assert_eq!(s.last_fault_end_ms, 20_000.0);
    }

    #[test]
    fn typed_fault_duration_sets_the_planned_end() {
        // A pause whose heal the run never recorded ends when its duration runs out.
        let mut r = crate::scenario::load_str(
            "t.toml",
            "t",
            "[expect]\nliveness_bound_ms = 5000\n\
             [[faults]]\nkind = \"pause\"\ntarget = \"n1\"\nat_ms = 1000\nduration_ms = 4000\n",
            &[],
        )
        .unwrap();
        r.scenario.duration_ms = 20_000;
        let entries = vec![fault(1000, 0, "pause"), tick(6000, "n2", 2)];
        let mut v = vec![];
        let s = check(&input(&r, &entries, 11_000), &mut v);
        assert_eq!(s.last_fault_end_ms, 5000.0);
        assert!(v.is_empty(), "{v:?}");
    }

    #[test]
    fn a_run_ending_soon_after_one_write_fires() {
        // A write in flight when the fault hit lands just after it; the run then ends
        // before a whole bound has passed, so recovery was never shown.
        let entries = vec![fault(1000, 0, "kill"), tick(1002, "n1", 1)];
        let (_, v) = run(&entries, 3000);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0]
            .detail
            .starts_with("run too short to show sustained progress"));
    }

    #[test]
    fn a_stall_after_recovery_fires() {
        // One write lands just after the heal (it was in flight), then nothing: that is
        // not recovery. Steady writes after the heal are.
        let entries = vec![
            fault(1000, 0, "kill"),
            tick(1002, "n1", 1),
            tick(2000, "n1", 1),
        ];
        let (s, v) = run(&entries, 9000);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.starts_with("progress stalled"));
        assert_eq!(s.longest_stall_after_ms, 7000.0);
        let steady: Vec<Entry> = (0..9).map(|i| tick(1002 + i * 1000, "n1", 1)).collect();
        let (_, v) = run(&[vec![fault(1000, 0, "kill")], steady].concat(), 9000);
        assert!(v.is_empty(), "{v:?}");
    }
}
