//! What excuses a leadership's act past its grant: a pause longer than the protocol's
//! `pause_ms`, a clock fault beyond `offset_ms` or `drift_ppm` (on the node, or on the
//! backend or, where the peers judge the grant, any node), or the backend restarted
//! without its data. Each is an [`Excuse`] over the span its cause lasted.

use crate::checker::us_to_ms;
use crate::clock_model::{ClockChange, Skew};
use crate::scenario::Resolved;
use crate::NodeId;
use baton_protocols::SafetyBounds;
use std::collections::BTreeMap;

/// An excuse: from `start_us`, for a node (`None`: every node), while its cause lasted
/// over `[start_us, end_us]` (`None`: for good).
pub(super) struct Excuse {
    node: Option<NodeId>,
    start_us: i64,
    end_us: Option<i64>,
    /// What it was: report.json's terse form.
    pub what: String,
    /// The same for the summary: the cause and the limit it went beyond.
    pub plain: String,
}

/// A length of time as a person reads it: `3.5 s`, `9 s`, `120.4 ms`.
fn plain_ms(ms: f64) -> String {
    if ms.abs() >= 1000.0 {
        format!("{} s", (ms / 100.0).round() / 10.0)
    } else {
        format!("{ms:.1} ms")
    }
}

/// The excuses of a run, gathered one event at a time.
pub(super) struct Excuses {
    bounds: SafetyBounds,
    protocol: &'static str,
    nodes: Vec<NodeId>,
    /// Clock faults by fault index.
    clock_faults: BTreeMap<usize, ClockChange>,
    /// Every clock a clock fault touched, by target, as the world keeps it.
    clocks: BTreeMap<String, Skew>,
    /// The backend's server loses its data when it restarts.
    server_forgets: bool,
    list: Vec<Excuse>,
    /// Pauses under way: node -> (start of the first, pauses in force). A pause may
    /// land on a node already paused (two scripted pauses, or GC during one); the node
    /// runs again only when the last ends, and the whole stretch is one pause.
    paused: BTreeMap<NodeId, (i64, u32)>,
}

impl Excuses {
    /// No excuses yet, for a run of `r`.
    pub fn new(r: &Resolved) -> Self {
        let clock_faults = r
            .faults
            .iter()
            .enumerate()
            .filter_map(|(i, f)| Some((i, f.fault.clock_change()?)))
            .collect();
        Excuses {
            bounds: r.protocol.safety_bounds(),
            protocol: r.scenario.protocol.name(),
            nodes: r.node_names(),
            clock_faults,
            clocks: BTreeMap::new(),
            server_forgets: r
                .scenario
                .protocol
                .server_faults(r.scenario.etcd_cluster().is_cluster())
                .is_some_and(|f| !f.keeps_data),
            list: vec![],
            paused: BTreeMap::new(),
        }
    }

    /// A pause began on `node` (scripted or GC noise).
    pub fn paused(&mut self, node: &NodeId, at_us: i64) {
        self.paused.entry(node.clone()).or_insert((at_us, 0)).1 += 1;
    }

    /// One pause on `node` ended: the node runs again when it was the last in force.
    pub fn resumed(&mut self, node: &NodeId, at_us: i64) {
        if let Some((_, depth)) = self.paused.get_mut(node) {
            *depth = depth.saturating_sub(1);
            if *depth == 0 {
                self.pause_ended(node, at_us);
            }
        }
    }

    /// Every pause on `node` ended at `at_us` (the last one, or the node was killed):
    /// an excuse if the whole stretch was longer than the protocol's bound.
    pub fn pause_ended(&mut self, node: &NodeId, at_us: i64) {
        if let Some((start, _)) = self.paused.remove(node) {
            let ms = us_to_ms(at_us - start);
            if ms > self.bounds.pause_ms as f64 {
                self.list.push(Excuse {
                    node: Some(node.clone()),
                    start_us: start,
                    end_us: Some(at_us),
                    what: format!("paused {ms} ms from {} ms", us_to_ms(start)),
                    plain: format!(
                        "{node} was paused for {} from {:.1} ms, longer than {} tolerates ({} ms)",
                        plain_ms(ms),
                        us_to_ms(start),
                        self.protocol,
                        self.bounds.pause_ms
                    ),
                });
            }
        }
    }

    /// `node`'s role changed to something other than leader: it runs, so a pause under
    /// way is forgotten without excusing anything.
    pub fn forget_pause(&mut self, node: &NodeId) {
        self.paused.remove(node);
    }

    /// A fault fired: if it is a clock fault beyond the bounds (a jump of the reading, or
    /// a drift), it excuses its target from then on (every node, when it hit the backend).
    pub fn clock_fault(&mut self, index: usize, target: &str, t: i64) {
        let Some(&change) = self.clock_faults.get(&index) else {
            return;
        };
        let jump_us = self
            .clocks
            .entry(target.to_string())
            .or_default()
            .apply(t, change);
        let drift_ppm = match change {
            ClockChange::Drift(ppm) => ppm,
            _ => 0,
        };
        let b = &self.bounds;
        if jump_us.unsigned_abs() > b.offset_ms * 1000 || drift_ppm.unsigned_abs() > b.drift_ppm {
            let limit = match change {
                ClockChange::Drift(_) => format!("{} ppm drift", b.drift_ppm),
                _ => format!("{} ms jump", b.offset_ms),
            };
            let plain = match change {
                ClockChange::Drift(_) => {
                    format!("drifted {drift_ppm} ppm from {:.1} ms", us_to_ms(t))
                }
                ClockChange::Offset(ms) if jump_us != ms * 1000 => format!(
                    "was set {ms} ms off at {:.1} ms, a jump of {}",
                    us_to_ms(t),
                    plain_ms(us_to_ms(jump_us))
                ),
                _ => format!(
                    "jumped {} at {:.1} ms",
                    plain_ms(us_to_ms(jump_us)),
                    us_to_ms(t)
                ),
            };
            // Where the peers' clocks judge the grant, any node's clock counts.
            let whose = if b.peers_judge && self.nodes.iter().any(|n| n == target) {
                format!(
                    ", and {}'s peers time a leader's grant on their own clocks",
                    self.protocol
                )
            } else {
                String::new()
            };
            let plain = format!(
                "{target}'s clock {plain}, beyond the {limit} {} tolerates{whose}",
                self.protocol
            );
            let what = match change {
                ClockChange::Drift(_) => {
                    format!("its clock drifting {drift_ppm} ppm from {} ms", us_to_ms(t))
                }
                ClockChange::Offset(ms) if jump_us != ms * 1000 => format!(
                    "its clock set to {ms} ms off at {} ms, a jump of {} ms",
                    us_to_ms(t),
                    us_to_ms(jump_us)
                ),
                _ => format!(
                    "its clock moved {} ms at {} ms",
                    us_to_ms(jump_us),
                    us_to_ms(t)
                ),
            };
            // A node's own clock excuses that node, unless the peers' clocks judge the
            // grant (raft): then, like the backend's clock, it excuses every node.
            let node = (self.nodes.iter().any(|n| n == target) && !b.peers_judge)
                .then(|| NodeId::from(target));
            self.list.push(Excuse {
                what: match &node {
                    Some(_) => what,
                    None => format!("{target}: {}", what.replacen("its", "the", 1)),
                },
                plain,
                node,
                start_us: t,
                end_us: None,
            });
        }
    }

    /// The backend's server restarted at `t`: if it keeps no data, every leader is
    /// excused from then on.
    pub fn backend_restarted(&mut self, t: i64) {
        if self.server_forgets {
            self.list.push(Excuse {
                node: None,
                start_us: t,
                end_us: None,
                what: format!(
                    "backend: restarted without its data at {} ms (its locks and token counter gone)",
                    us_to_ms(t)
                ),
                plain: format!(
                    "the backend restarted without its data at {:.1} ms, forgetting its locks and its token counter, which no protocol on top of it can survive",
                    us_to_ms(t)
                ),
            });
        }
    }

    /// The run ended at `end_us`: every pause still under way ends there.
    pub fn finish(&mut self, end_us: i64) {
        let open: Vec<NodeId> = self.paused.keys().cloned().collect();
        for node in open {
            self.pause_ended(&node, end_us);
        }
    }

    /// The excuse for an act at `act_us` of `node`'s leadership won at `win_us`, if there
    /// is one.
    pub fn of(&self, node: &NodeId, win_us: i64, act_us: i64) -> Option<&Excuse> {
        self.list.iter().find(|x| {
            x.node.as_ref().is_none_or(|n| n == node)
                && x.start_us <= act_us
                && x.end_us.is_none_or(|end| end >= win_us)
        })
    }
}
