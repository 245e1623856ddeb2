//! False failovers: leadership that changed although nothing scripted made it change.
//! A figure, not a property: no violation comes from it.
//!
//! A leadership change is a failover as [`failover`](super::failover) measures it: the
//! first accepted write of a token newer than every earlier one. It is **false** when the
//! old leader was alive and no scripted fault could explain the change, that is when
//! - the old leader's node had not been killed, and
//! - no scripted fault (`[[faults]]`, any kind, any target) was in force at any moment
//!   from one resource timeout before the old leadership's last accepted write (a write
//!   in flight may land after the fault that ends its leadership) to the new
//!   leadership's first. A clock fault stays in force to the end of the run, as does a
//!   partition or network change nothing ended. A transfer is in force until its
//!   leader hands over (`handed_over`), which may come a job step after it fired.
//!
//! So under scripted faults it is conservative: a change during a scripted fault is
//! never called false. What is left is what a fleet sees in production with nothing
//! broken: a GC pause (`[noise.gc]`) or a latency spike that outlived the lease. Each
//! false failover names the old leader's GC-noise pause that covered the handover, if
//! one did.

use super::{us_to_ms, Accepted, Step, Succession};
use crate::scenario::Resolved;
use crate::timeline::{Entry, Event};
use crate::NodeId;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One false failover.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FalseFailover {
    /// When the new leadership's first write was accepted.
    pub at_ms: f64,
    /// The old leader.
    pub old_node: NodeId,
    /// Its token.
    pub old_token: u64,
    /// The new leader.
    pub new_node: NodeId,
    /// Its token.
    pub new_token: u64,
    /// The failover: the old leadership's last accepted write to the new one's first.
    pub failover_ms: f64,
    /// The old leader's GC-noise pause over the handover, if one: (start ms, length ms).
    pub gc_pause_ms: Option<(f64, u64)>,
}

/// `false_failovers` in report.json.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FalseFailoverSummary {
    /// How many.
    pub count: u64,
    /// `count` per simulated hour of the run.
    pub per_hour: f64,
    /// Each, in order.
    pub each: Vec<FalseFailover>,
}

/// False failovers, read one event and one accepted write at a time.
#[derive(Default)]
pub(crate) struct FalseFailovers {
    succession: Succession,
    prev_write_us: Option<i64>,
    /// Lasting scripted faults in force: fault index -> applications not yet ended.
    open: BTreeMap<usize, u32>,
    /// A clock fault fired: every later change is explained.
    for_good: bool,
    /// The last time a scripted fault was applied, ended or skipped.
    last_scripted_us: Option<i64>,
    /// Nodes killed and not restarted.
    dead: BTreeSet<NodeId>,
    /// Each node's latest GC-noise pause: (start µs, length ms).
    gc: BTreeMap<NodeId, (i64, u64)>,
    each: Vec<FalseFailover>,
}

impl FalseFailovers {
    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        match &e.event {
            Event::FaultApplied { index, kind, .. } => {
                self.last_scripted_us = Some(e.at_us);
                if kind.lasts() {
                    *self.open.entry(*index).or_default() += 1;
                } else if kind.is_clock() {
                    self.for_good = true;
                }
            }
            Event::FaultHealed { index, .. } => {
                self.last_scripted_us = Some(e.at_us);
                if let Some(n) = self.open.get_mut(index) {
                    *n -= 1;
                    if *n == 0 {
                        self.open.remove(index);
                    }
                }
            }
            // A transfer's handover is its fault taking effect, however long the leader
            // prepared it (a job step to checkpoint first).
            Event::FaultSkipped { .. } | Event::HandedOver { .. } => {
                self.last_scripted_us = Some(e.at_us)
            }
            Event::NodeKilled { node } => {
                self.dead.insert(node.clone());
            }
            Event::NodeRestarted { node } => {
                self.dead.remove(node);
            }
            Event::GcPaused { node, duration_ms } => {
                self.gc.insert(node.clone(), (e.at_us, *duration_ms));
            }
            _ => {}
        }
    }

    /// Reads the next accepted write.
    pub fn write(&mut self, w: &Accepted, resolved: &Resolved) {
        let prev = self.prev_write_us.replace(w.at_us);
        let (
            Step::Newer {
                previous: Some(old),
            },
            Some(last_old_us),
        ) = (self.succession.step(w), prev)
        else {
            return;
        };
        let lookback_us = resolved.scenario.work.resource_timeout_ms as i64 * 1000;
        let explained = self.for_good
            || !self.open.is_empty()
            || self.dead.contains(&*old.node)
            || self
                .last_scripted_us
                .is_some_and(|t| t >= last_old_us - lookback_us);
        if explained {
            return;
        }
        let gc_pause_ms = self
            .gc
            .get(&*old.node)
            .filter(|(start, len_ms)| {
                *start <= w.at_us && start + *len_ms as i64 * 1000 >= last_old_us
            })
            .map(|(start, len_ms)| (us_to_ms(*start), *len_ms));
        self.each.push(FalseFailover {
            at_ms: us_to_ms(w.at_us),
            old_node: NodeId::from(&*old.node),
            old_token: old.token,
            new_node: NodeId::from(&*w.node),
            new_token: w.token,
            failover_ms: us_to_ms(w.at_us - last_old_us),
            gc_pause_ms,
        });
    }

    /// The false failovers of a run of `duration_ms`.
    pub fn finish(self, duration_ms: u64) -> FalseFailoverSummary {
        let count = self.each.len() as u64;
        FalseFailoverSummary {
            count,
            per_hour: count as f64 * 3_600_000.0 / duration_ms.max(1) as f64,
            each: self.each,
        }
    }
}

/// The failovers of `all_ms` (a run's `failover_ms`) that a scripted fault caused:
/// `all_ms` without the false ones (`false_ms`), each removed once. What a TTL sweep
/// charges to a death (`sim sweep`, `sim conform`'s ttl-sweep).
pub fn scripted_failovers(all_ms: &[f64], false_ms: &[f64]) -> Vec<f64> {
    let mut scripted = all_ms.to_vec();
    for x in false_ms {
        if let Some(i) = scripted.iter().position(|y| y == x) {
            scripted.remove(i);
        }
    }
    scripted
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built timelines. Canary: a leader stalled by a GC-noise pause
    //! loses to another node with nothing scripted: one false failover, naming the
    //! pause. Quiet: the same change after a scripted kill, after a scripted pause, with
    //! the old leader's in-flight write landing just after its kill, and after a clock
    //! fault long before.
    use super::super::testing::*;
    use super::*;
    use crate::checker::check;

    fn gc_paused(at_ms: i64, node: &str, duration_ms: u64) -> Entry {
        at(
            at_ms,
            Event::GcPaused {
                node: node.into(),
                duration_ms,
            },
        )
    }

    /// n1 leads, is stalled by GC at 1300 for 3000 ms, n2 takes over at 4100.
    fn gc_failover() -> Vec<Entry> {
        vec![
            campaign(0, "n1"),
            leader(100, "n1", 1),
            tick(200, "n1", 1),
            tick(1200, "n1", 1),
            gc_paused(1300, "n1", 3000),
            key_deleted(4000, 1),
            leader(4010, "n2", 2),
            tick(4100, "n2", 2),
        ]
    }

    #[test]
    fn a_gc_noise_pause_that_outlives_the_lease_is_a_false_failover() {
        let r = resolved();
        let f = check(&input(&r, &gc_failover(), 36_000));
        let s = &f.false_failovers;
        assert_eq!(s.count, 1, "{s:?}");
        assert_eq!(s.per_hour, 1.0 * 3_600_000.0 / 60_000.0);
        let ff = &s.each[0];
        assert_eq!(
            (
                ff.old_node.as_str(),
                ff.old_token,
                ff.new_node.as_str(),
                ff.new_token
            ),
            ("n1", 1, "n2", 2)
        );
        assert_eq!(ff.at_ms, 4100.0);
        assert_eq!(ff.failover_ms, 2900.0);
        assert_eq!(ff.gc_pause_ms, Some((1300.0, 3000)));
    }

    #[test]
    fn changes_a_scripted_fault_explains_are_not_false() {
        let r = resolved();
        // A scripted kill: the clean failover.
        assert_eq!(
            check(&input(&r, &clean_failover(), 12_000))
                .false_failovers
                .count,
            0
        );
        // A scripted pause in force over the handover.
        let mut e = gc_failover();
        e[4] = fault(1300, 0, "pause");
        assert_eq!(check(&input(&r, &e, 12_000)).false_failovers.count, 0);
        // The old leader's last write lands 100 ms after its kill.
        let mut e = clean_failover();
        e.insert(7, tick(1600, "n1", 1));
        assert_eq!(check(&input(&r, &e, 12_000)).false_failovers.count, 0);
        // A clock fault long before stays in force.
        let mut e = gc_failover();
        e.insert(0, fault(0, 0, "clock-offset"));
        assert_eq!(check(&input(&r, &e, 12_000)).false_failovers.count, 0);
    }
}
