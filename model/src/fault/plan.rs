//! The fault plan: when each of a scenario's faults fires, whom it hits, what it repeats
//! and how it heals, decided once for both worlds.
//!
//! Policy apart from mechanism. The plan is pure: from the resolved faults, the seed and
//! what the world reports (who leads, what the timeline holds), it decides the moment
//! each fault fires and turns it into [`Step`]s: events to record and [`Verb`]s for the
//! world to carry out. A world (the simulator's madsim runtime, real mode's supervisor)
//! implements [`FaultWorld`](super::world::FaultWorld), a small set of verbs plus a clock and its observations,
//! and decides nothing. [`drive`](super::world::drive) is the one loop that joins them.
//!
//! The rules, in one place:
//! - Faults fire in order, each at `at_ms` or `delay_ms` after its trigger, plus a seeded
//!   jitter drawn from `seed::fork(seed, "fault/<index>")`: one generator per firing, so
//!   that jitter on one fault never shifts another's, and a seed lands each fault at the
//!   same offset in both worlds. Jitter never reorders faults.
//! - `leader-elected` waits for a node to become leader after the previous fault fired;
//!   `previous-fault-ended` waits for the previous fault to end: its `fault_healed` or
//!   `fault_skipped`, or its `fault_applied` when its kind does not last
//!   ([`FaultKind::lasts`]).
//! - Targets resolve when the fault fires: `leader` (the world's answer), `follower`,
//!   `etcd-leader` (the etcd member that leads), `previous` (the node an earlier fault
//!   hit), or a name. A fault whose target cannot be
//!   resolved is skipped, with the reason recorded.
//! - A fault with a duration heals after it (a kill's `restart_after_ms` restarts the
//!   node). A partition ends at its duration or at the next `heal`, whichever is first;
//!   `heal` ends every partition in force.
//! - Only a node can be a later fault's `previous`: a link's node end, when it has one.

use crate::fault::{Fault, FaultKind, Firing, PausePoint, Trigger, Unresolved, When};
use crate::timeline::{Event, Role};
use rand::Rng;
use std::collections::BTreeMap;

pub use crate::clock_model::ClockChange;

/// What a world must do: its verbs, paired where one undoes another (cut/mend,
/// pause/resume, kill/restart). Each names what it acts on; the world maps names onto
/// its own machinery (madsim nodes and links, processes and proxies).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verb {
    /// Kill a node: its process (or tasks) gone, its memory lost.
    Kill(String),
    /// Start a killed node again from scratch.
    Restart(String),
    /// Stop the world on a node (its clock runs on). `index` keys what resume needs.
    Pause {
        /// The node.
        node: String,
        /// The fault's index.
        index: usize,
    },
    /// End the pause of fault `index` on a node.
    Resume {
        /// The node.
        node: String,
        /// The fault's index.
        index: usize,
    },
    /// Arm a pause that strikes at the node's next protected write, after its lease
    /// check: the world records `fault_applied` when it strikes and heals it itself.
    ArmPauseBeforeWrite {
        /// The node.
        node: String,
        /// The fault's index.
        index: usize,
        /// How long it lasts once it strikes.
        duration_ms: u64,
    },
    /// Ask a node to step down gracefully.
    Resign(String),
    /// Ask a node that leads to hand leadership to `to`, a node of the fleet.
    Transfer {
        /// The leader.
        node: String,
        /// The designated successor.
        to: String,
    },
    /// Stop messages `from -> to` (both ways unless `one_way`), holding nothing open.
    Cut {
        /// One end.
        from: String,
        /// The other end.
        to: String,
        /// Only `from -> to`.
        one_way: bool,
    },
    /// Undo a [`Verb::Cut`].
    Mend {
        /// One end.
        from: String,
        /// The other end.
        to: String,
        /// Only `from -> to`.
        one_way: bool,
    },
    /// Mend every cut link.
    MendAll,
    /// Give `from -> to` its own latency range, or (`None`) the network's again.
    Slow {
        /// The sending end.
        from: String,
        /// The receiving end.
        to: String,
        /// Lowest and highest one-way latency, ms.
        latency_ms: Option<(u64, u64)>,
    },
    /// Set every link's latency and loss.
    Network {
        /// Lowest one-way latency, ms.
        latency_ms_min: u64,
        /// Highest one-way latency, ms.
        latency_ms_max: u64,
        /// Loss in parts per million.
        loss_ppm: u64,
    },
    /// Change a node's (or the backend's, or an etcd member's) clock.
    Clock(String, ClockChange),
    /// Stall (`true`) an etcd member's disk, or end the stall (`false`).
    StallDisk(String, bool),
}

/// What the plan asks of a world, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Record this event on the world's timeline.
    Record(Event),
    /// Carry out this verb for fault `index`.
    Act(usize, Verb),
    /// Call [`FaultPlan::heal`] for fault `index` this long from now.
    HealLater {
        /// The fault.
        index: usize,
        /// How long from now.
        after_ms: u64,
    },
}

/// How a world carried out a verb.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Acted {
    /// It did (or, for a node that was not there to act on, it noted why and the fault
    /// stays applied, as a stopped process cannot resign).
    Done,
    /// It could not, and the fault is skipped for this reason (recorded).
    Skipped(String),
}

/// What the plan waits for before the next fault fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Until this moment of the run, µs.
    Until(i64),
    /// Until `trigger` is seen, polling every [`POLL_MS`](super::world::POLL_MS), then this many ms more.
    Trigger(Trigger, u64),
}

/// A partition in force.
#[derive(Clone, Debug)]
struct Open {
    label: String,
    from: String,
    to: String,
    one_way: bool,
}

/// One run's faults and what the plan has decided so far.
#[derive(Debug)]
pub struct FaultPlan {
    firings: Vec<Firing>,
    seed: u64,
    /// The scenario's own network, which a `network` fault's end restores.
    base_network: (u64, u64, u64),
    nodes: Vec<String>,
    /// The next firing.
    next: usize,
    /// When the previous fault fired, µs.
    prev_fired_us: i64,
    /// The node the previous faults hit last.
    prev_target: Option<String>,
    /// Each fired fault, kept until it heals: what its heal undoes.
    fired: BTreeMap<usize, Fault>,
    /// Resolved ends of the fired faults that have any.
    targets: BTreeMap<usize, Vec<String>>,
    open: BTreeMap<usize, Open>,
}

impl FaultPlan {
    /// The plan of `firings` under `seed`, for a fleet of `nodes`, whose network is
    /// `base_network` (latency min, max, loss ppm).
    pub fn new(
        firings: Vec<Firing>,
        seed: u64,
        base_network: (u64, u64, u64),
        nodes: Vec<String>,
    ) -> FaultPlan {
        FaultPlan {
            firings,
            seed,
            base_network,
            nodes,
            next: 0,
            prev_fired_us: 0,
            prev_target: None,
            fired: BTreeMap::new(),
            targets: BTreeMap::new(),
            open: BTreeMap::new(),
        }
    }

    /// The next fault's index and what it waits for, jitter included; `None` when every
    /// fault has fired.
    pub fn next_wait(&self) -> Option<(usize, Wait)> {
        let index = self.next;
        let firing = self.firings.get(index)?;
        let jitter_ms = if firing.jitter_ms > 0 {
            crate::seed::fork(self.seed, &format!("fault/{index}")).gen_range(0..=firing.jitter_ms)
        } else {
            0
        };
        Some((
            index,
            match firing.when {
                When::At(t_ms) => Wait::Until((t_ms + jitter_ms) as i64 * 1000),
                When::After(trigger, delay_ms) => Wait::Trigger(trigger, delay_ms + jitter_ms),
            },
        ))
    }

    /// Whether `trigger` holds for the next fault, by what `seen` says the timeline
    /// holds since a moment (µs).
    pub fn triggered(
        &self,
        trigger: Trigger,
        mut seen: impl FnMut(i64, &dyn Fn(&Event) -> bool) -> bool,
    ) -> bool {
        let since = self.prev_fired_us;
        match trigger {
            Trigger::LeaderElected => seen(since, &|e| {
                matches!(
                    e,
                    Event::RoleChanged {
                        role: Role::Leader,
                        ..
                    }
                )
            }),
            Trigger::PreviousFaultEnded => {
                let Some(prev) = self.next.checked_sub(1) else {
                    return true;
                };
                seen(since, &|e| match e {
                    Event::FaultHealed { index, .. } | Event::FaultSkipped { index, .. } => {
                        *index == prev
                    }
                    Event::FaultApplied { index, kind, .. } => *index == prev && !kind.lasts(),
                    _ => false,
                })
            }
        }
    }

    /// The ends the next fault names, in order (a target, or a link's two ends).
    pub fn ends(&self) -> Vec<String> {
        match self.firings.get(self.next).map(|f| &f.fault) {
            Some(
                Fault::Kill { target, .. }
                | Fault::Restart { target }
                | Fault::Resign { target }
                | Fault::Pause { target, .. }
                | Fault::ClockOffset { target, .. }
                | Fault::ClockDrift { target, .. }
                | Fault::ClockStep { target, .. }
                | Fault::SlowDisk { target, .. },
            ) => vec![target.clone()],
            Some(
                Fault::Partition { from, to, .. }
                | Fault::SlowLink { from, to, .. }
                | Fault::Transfer {
                    target: from, to, ..
                },
            ) => {
                vec![from.clone(), to.clone()]
            }
            Some(Fault::Heal | Fault::Network { .. }) | None => vec![],
        }
    }

    /// Resolves one end of the next fault: `leader` and `follower` (and a transfer's
    /// `next`, passed as `follower`) by what the world answered, `previous` by the plan,
    /// a name as it is. An error says why it cannot.
    pub fn resolve(
        &self,
        end: &str,
        leader: Option<String>,
        follower: Option<String>,
    ) -> Result<String, Unresolved> {
        match end {
            "leader" => leader.ok_or(Unresolved::Leader),
            crate::scenario::etcd_cluster::ETCD_LEADER => leader.ok_or(Unresolved::EtcdLeader),
            crate::scenario::etcd_cluster::LEADER_MEMBER => leader.ok_or(Unresolved::LeaderMember),
            "follower" => follower.ok_or(Unresolved::Follower),
            crate::fault::NEXT => follower.ok_or(Unresolved::Next),
            "previous" => self.prev_target.clone().ok_or(Unresolved::Previous),
            other => Ok(other.to_string()),
        }
    }

    /// Fires the next fault at `now_us` with its ends resolved (or the reason one could
    /// not be): the steps to carry out, in order.
    pub fn fire(&mut self, now_us: i64, ends: Result<Vec<String>, Unresolved>) -> Vec<Step> {
        let index = self.next;
        let fault = self.firings[index].fault.clone();
        self.next += 1;
        self.prev_fired_us = now_us;
        let ends = match ends {
            Ok(e) => e,
            Err(why) => {
                let reason = why.to_string();
                return vec![Step::Record(Event::FaultSkipped { index, reason })];
            }
        };
        let (steps, hit) = self.steps(index, &fault, &ends);
        // Only a node can be a later fault's `previous`.
        if let Some(h) = hit.filter(|h| self.nodes.contains(h)) {
            self.prev_target = Some(h);
        }
        self.fired.insert(index, fault);
        self.targets.insert(index, ends);
        steps
    }

    /// The steps of fault `index` hitting `ends`, and the node it hit.
    fn steps(
        &mut self,
        index: usize,
        fault: &Fault,
        ends: &[String],
    ) -> (Vec<Step>, Option<String>) {
        let node = ends.first().cloned().unwrap_or_default();
        match fault {
            Fault::Pause {
                duration_ms,
                point: PausePoint::BeforeWrite,
                ..
            } => {
                // Recorded as applied by the node when it strikes, and healed there.
                let arm = Verb::ArmPauseBeforeWrite {
                    node: node.clone(),
                    index,
                    duration_ms: *duration_ms,
                };
                (vec![Step::Act(index, arm)], Some(node))
            }
            Fault::Heal => (self.heal_all(index), None),
            _ => {
                let (target, verb, hit) = self.applied(index, fault, ends);
                let mut out = vec![
                    Step::Record(Event::FaultApplied {
                        index,
                        kind: fault.kind(),
                        target,
                    }),
                    Step::Act(index, verb),
                ];
                if let Some(after_ms) = heal_after(fault) {
                    out.push(Step::HealLater { index, after_ms });
                }
                (out, hit)
            }
        }
    }

    /// What fault `index` hits (as its `fault_applied` names it), the verb that applies
    /// it, and the node it hit. A partition is kept open until it heals.
    fn applied(
        &mut self,
        index: usize,
        fault: &Fault,
        ends: &[String],
    ) -> (String, Verb, Option<String>) {
        let node = ends.first().cloned().unwrap_or_default();
        let on_node = |v: Verb| (node.clone(), v, Some(node.clone()));
        match fault {
            Fault::Kill { .. } => on_node(Verb::Kill(node.clone())),
            Fault::Restart { .. } => on_node(Verb::Restart(node.clone())),
            Fault::Resign { .. } => on_node(Verb::Resign(node.clone())),
            Fault::Transfer { .. } => on_node(Verb::Transfer {
                node: node.clone(),
                to: ends[1].clone(),
            }),
            Fault::Pause { .. } => on_node(Verb::Pause {
                node: node.clone(),
                index,
            }),
            Fault::SlowDisk { .. } => on_node(Verb::StallDisk(node.clone(), true)),
            Fault::ClockOffset { .. } | Fault::ClockDrift { .. } | Fault::ClockStep { .. } => {
                let change = fault.clock_change().expect("a clock fault");
                on_node(Verb::Clock(node.clone(), change))
            }
            Fault::Partition { one_way, .. } => self.open_partition(index, ends, *one_way),
            Fault::SlowLink {
                latency_ms_min,
                latency_ms_max,
                ..
            } => {
                let (from, to) = (ends[0].clone(), ends[1].clone());
                let hit = self.node_end(&from, &to);
                let label = format!("{from}->{to}");
                let latency_ms = Some((*latency_ms_min, *latency_ms_max));
                (
                    label,
                    Verb::Slow {
                        from,
                        to,
                        latency_ms,
                    },
                    hit,
                )
            }
            Fault::Network {
                latency_ms_min,
                latency_ms_max,
                loss_ppm,
                ..
            } => {
                let verb = Verb::Network {
                    latency_ms_min: *latency_ms_min,
                    latency_ms_max: *latency_ms_max,
                    loss_ppm: *loss_ppm,
                };
                ("all".into(), verb, None)
            }
            Fault::Heal => unreachable!("a heal has steps of its own"),
        }
    }

    /// A partition of `ends`, kept open until its duration or a `heal` ends it.
    fn open_partition(
        &mut self,
        index: usize,
        ends: &[String],
        one_way: bool,
    ) -> (String, Verb, Option<String>) {
        let (from, to) = (ends[0].clone(), ends[1].clone());
        let label = if one_way {
            format!("{from}->{to}")
        } else {
            format!("{from}<->{to}")
        };
        let hit = self.node_end(&from, &to);
        let open = Open {
            label: label.clone(),
            from: from.clone(),
            to: to.clone(),
            one_way,
        };
        self.open.insert(index, open);
        (label, Verb::Cut { from, to, one_way }, hit)
    }

    /// `heal`: every partition in force ends (each recorded), and every cut link mends.
    fn heal_all(&mut self, index: usize) -> Vec<Step> {
        let mut out = vec![Step::Record(Event::FaultApplied {
            index,
            kind: FaultKind::Heal,
            target: "all".into(),
        })];
        for (i, o) in std::mem::take(&mut self.open) {
            out.push(Step::Record(Event::FaultHealed {
                index: i,
                kind: FaultKind::Partition,
                target: o.label,
            }));
        }
        out.push(Step::Act(index, Verb::MendAll));
        out
    }

    /// A link's node end (the first, if both are nodes).
    fn node_end(&self, from: &str, to: &str) -> Option<String> {
        if self.nodes.iter().any(|n| n == from) {
            Some(from.to_string())
        } else {
            Some(to.to_string())
        }
    }

    /// The end of fault `index`, now that its duration ran out: the verbs that undo it
    /// and its `fault_healed`, or nothing when it already ended (a partition a `heal`
    /// ended first).
    pub fn heal(&mut self, index: usize) -> Vec<Step> {
        let Some(fault) = self.fired.get(&index) else {
            return vec![];
        };
        let ends = self.targets.get(&index).cloned().unwrap_or_default();
        let node = ends.first().cloned().unwrap_or_default();
        let healed = |kind: FaultKind, target: String| {
            Step::Record(Event::FaultHealed {
                index,
                kind,
                target,
            })
        };
        let act = |v: Verb| Step::Act(index, v);
        match fault {
            Fault::Kill { .. } => vec![
                act(Verb::Restart(node.clone())),
                healed(FaultKind::Kill, node),
            ],
            Fault::Pause { .. } => vec![
                act(Verb::Resume {
                    node: node.clone(),
                    index,
                }),
                healed(FaultKind::Pause, node),
            ],
            Fault::SlowDisk { .. } => vec![
                act(Verb::StallDisk(node.clone(), false)),
                healed(FaultKind::SlowDisk, node),
            ],
            Fault::Partition { .. } => match self.open.remove(&index) {
                Some(o) => vec![
                    act(Verb::Mend {
                        from: o.from,
                        to: o.to,
                        one_way: o.one_way,
                    }),
                    healed(FaultKind::Partition, o.label),
                ],
                None => vec![],
            },
            Fault::SlowLink { .. } => {
                let (from, to) = (ends[0].clone(), ends[1].clone());
                let label = format!("{from}->{to}");
                vec![
                    act(Verb::Slow {
                        from,
                        to,
                        latency_ms: None,
                    }),
                    healed(FaultKind::SlowLink, label),
                ]
            }
            Fault::Network { .. } => {
                let (min, max, loss) = self.base_network;
                vec![
                    act(Verb::Network {
                        latency_ms_min: min,
                        latency_ms_max: max,
                        loss_ppm: loss,
                    }),
                    healed(FaultKind::Network, "all".into()),
                ]
            }
            _ => vec![],
        }
    }
}

/// How long after it fires a fault heals by itself, if it does: a kill's restart, a
/// pause's end, a partition's, slow link's or network change's duration.
fn heal_after(fault: &Fault) -> Option<u64> {
    match fault {
        Fault::Kill {
            restart_after_ms, ..
        } => *restart_after_ms,
        Fault::Pause { duration_ms, .. } | Fault::SlowDisk { duration_ms, .. } => {
            Some(*duration_ms)
        }
        Fault::Partition { duration_ms, .. }
        | Fault::SlowLink { duration_ms, .. }
        | Fault::Network { duration_ms, .. } => *duration_ms,
        _ => None,
    }
}
