//! Sharded leadership (`partitions = P`): every partition judged as a run of its own, and
//! what the fleet's rendezvous assignment did when its membership changed.
//!
//! **Per partition.** A partition's events come wrapped (`Event::Shard`); each partition
//! has its own [`Checks`], fed its own events unwrapped plus every event that belongs to
//! no partition (kills, restarts, pauses, faults, the lease service's deletions and
//! expiries), so that every property of a single-leader run holds per partition: leaders
//! acting by effect at most 1 (double-leader incidents, stale tokens), sequence
//! continuity, handoff, protocol safety and liveness after the last fault. A partition's
//! violations are the run's, each naming its partition. The scenario's `sometimes`
//! expectations hold for the fleet when they hold in any partition.
//!
//! **Membership.** Each `node_killed` and `node_restarted` is a membership change. The
//! partitions it **moved** are those whose leader (by belief) just before it differs from
//! their leader just before the next change (or the run's end): the assignment settled in
//! between. The **minimum** is what any assignment must move: a dead node's partitions,
//! or, when a node joins, the partitions it leads once settled. **Balance** is the most
//! partitions one node leads over the mean per live node (`P / live`), at each settled
//! point.

use super::{Checks, Findings, Violation};
use crate::scenario::Resolved;
use crate::timeline::{Entry, Event, Role};
use crate::NodeId;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One partition's verdict, as report.json's `partitions.each` lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartitionReport {
    /// The partition.
    pub partition: u32,
    /// Its properties that failed, sorted, each once.
    pub failed: Vec<String>,
    /// How many of its tokens' writes were accepted interleaved, at most.
    pub by_effect_max: u64,
    /// Its double-leader-acting incidents.
    pub double_leader_acting_incidents: u64,
    /// Its non-increasing sequence steps.
    pub non_increasing_steps: u64,
    /// Its failovers: old leader's last accepted write to the new one's first.
    pub failover_ms: Vec<f64>,
}

/// One membership change and what the assignment did about it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MembershipChange {
    /// When.
    pub at_ms: f64,
    /// The node that left (`kill`) or joined (`restart`).
    pub node: NodeId,
    /// `kill` or `restart`.
    pub kind: &'static str,
    /// Partitions whose leader changed between this change and the next.
    pub moved: u64,
    /// The fewest any assignment must move.
    pub minimum: u64,
    /// Most partitions one node led, over the mean per live node, once settled.
    pub balance: f64,
}

/// `partitions` in report.json.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ShardsSummary {
    /// How many partitions.
    pub count: u32,
    /// Each partition's verdict and figures.
    pub each: Vec<PartitionReport>,
    /// Every partition's failovers, pooled.
    pub failover_ms: Vec<f64>,
    /// Each membership change.
    pub changes: Vec<MembershipChange>,
    /// Partitions moved over all changes.
    pub moved: u64,
    /// The minimum over all changes.
    pub minimum: u64,
    /// The worst balance once settled (most partitions on one node over the mean).
    pub balance_max: f64,
    /// Partitions each node led, over time: (ms, node, count) at each change of a count.
    pub led_over_time: Vec<(f64, NodeId, u64)>,
    /// The fleet's safety figures, folded from its partitions' (see [`Fleet`]).
    #[serde(skip)]
    pub fleet: Fleet,
}

/// What the run's own keys report for a sharded fleet, folded from its partitions:
/// the most nodes believing they led one partition at once, the most leaderships acting
/// in one partition by effect, and the sums of incidents, stale accepts, rejections and
/// non-increasing sequence steps.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fleet {
    /// The most nodes that believed they led one partition at once.
    pub by_belief_max: u32,
    /// The most leaderships whose writes one partition accepted interleaved.
    pub by_effect_max: u32,
    /// Double-leader-acting incidents, summed.
    pub double_leader_acting_incidents: u64,
    /// Stale-token writes accepted, summed.
    pub stale_accepts: u64,
    /// Every partition's rejected writes.
    pub rejections: Vec<super::stale_token::Rejection>,
    /// Non-increasing sequence steps, summed.
    pub non_increasing_steps: u64,
}

impl Fleet {
    fn add(&mut self, f: &Findings) {
        self.by_belief_max = self.by_belief_max.max(f.belief.max);
        self.by_effect_max = self.by_effect_max.max(f.effect.max);
        self.double_leader_acting_incidents += f.double_leader_acting_incidents;
        self.stale_accepts += f.stale_accepts;
        self.rejections.extend(f.rejections.iter().cloned());
        self.non_increasing_steps += f.sequence.non_increasing_steps;
    }

    /// Writes these figures into the run's `findings`, with `failover_ms` the
    /// partitions' pooled failovers.
    pub fn fold_into(&self, findings: &mut Findings, failover_ms: &[f64]) {
        findings.belief.max = self.by_belief_max;
        findings.effect.max = self.by_effect_max;
        findings.double_leader_acting_incidents = self.double_leader_acting_incidents;
        findings.stale_accepts = self.stale_accepts;
        findings.rejections = self.rejections.clone();
        findings.sequence.non_increasing_steps = self.non_increasing_steps;
        findings.failover_ms = failover_ms.to_vec();
    }
}

/// The partitions' checkers and the fleet's assignment, read one event at a time.
pub(crate) struct Shards {
    count: u32,
    nodes: Vec<NodeId>,
    per: BTreeMap<u32, Checks>,
    /// Partition -> the node that believes it leads it.
    leader: BTreeMap<u32, NodeId>,
    /// Nodes killed and not restarted.
    dead: BTreeSet<NodeId>,
    /// The change in progress: its record, and the assignment just before it.
    open: Option<(MembershipChange, BTreeMap<u32, NodeId>)>,
    changes: Vec<MembershipChange>,
    led_over_time: Vec<(f64, NodeId, u64)>,
}

impl Shards {
    /// The checkers of `resolved`'s `partitions`.
    pub fn new(resolved: &Resolved) -> Shards {
        let mut one = resolved.clone();
        one.scenario.partitions = 0;
        one.scenario.expect.sometimes.clear();
        let count = resolved.scenario.partitions;
        Shards {
            count,
            nodes: resolved.node_names(),
            per: (0..count).map(|p| (p, Checks::new(&one))).collect(),
            leader: BTreeMap::new(),
            dead: BTreeSet::new(),
            open: None,
            changes: vec![],
            led_over_time: vec![],
        }
    }

    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        match &e.event {
            Event::Shard { partition, inner } => {
                let inner = Entry {
                    at_us: e.at_us,
                    event: (**inner).clone(),
                };
                self.belief(*partition, &inner);
                if let Some(c) = self.per.get_mut(partition) {
                    c.observe(&inner);
                }
            }
            other => {
                match other {
                    Event::NodeKilled { node } => self.change(e.at_us, node, "kill"),
                    Event::NodeRestarted { node } => self.change(e.at_us, node, "restart"),
                    _ => {}
                }
                for c in self.per.values_mut() {
                    c.observe(e);
                }
            }
        }
    }

    /// Follows who believes it leads partition `p`.
    fn belief(&mut self, p: u32, e: &Entry) {
        let Event::RoleChanged { node, role, .. } = &e.event else {
            return;
        };
        let before = self.leader.get(&p).cloned();
        match role {
            Role::Leader => {
                self.leader.insert(p, node.clone());
            }
            _ if before.as_ref() == Some(node) => {
                self.leader.remove(&p);
            }
            _ => return,
        }
        let touched: BTreeSet<NodeId> = before.into_iter().chain([node.clone()]).collect();
        for n in touched {
            let led = self.leader.values().filter(|l| **l == n).count() as u64;
            self.led_over_time.push((e.at_us as f64 / 1000.0, n, led));
        }
    }

    /// A membership change at `at_us`: closes the one before (its assignment settled).
    fn change(&mut self, at_us: i64, node: &NodeId, kind: &'static str) {
        self.settle();
        // A node killed leads nothing from now on, whatever it last believed.
        let minimum = match kind {
            "kill" => self.leader.values().filter(|l| *l == node).count() as u64,
            _ => 0,
        };
        if kind == "kill" {
            self.dead.insert(node.clone());
        } else {
            self.dead.remove(node);
        }
        let record = MembershipChange {
            at_ms: at_us as f64 / 1000.0,
            node: node.clone(),
            kind,
            moved: 0,
            minimum,
            balance: 0.0,
        };
        self.open = Some((record, self.leader.clone()));
    }

    /// Closes the change in progress against the assignment now.
    fn settle(&mut self) {
        let Some((mut c, before)) = self.open.take() else {
            return;
        };
        c.moved = (0..self.count)
            .filter(|p| before.get(p) != self.leader.get(p))
            .count() as u64;
        if c.kind == "restart" {
            c.minimum = self.leader.values().filter(|l| **l == c.node).count() as u64;
        }
        let live = self
            .nodes
            .iter()
            .filter(|n| !self.dead.contains(*n))
            .count();
        let most = self
            .nodes
            .iter()
            .map(|n| self.leader.values().filter(|l| *l == n).count())
            .max()
            .unwrap_or(0);
        let mean = self.count as f64 / live.max(1) as f64;
        c.balance = (most as f64 / mean * 100.0).round() / 100.0;
        self.changes.push(c);
    }

    /// Every partition's findings folded into the run's: their violations (each naming
    /// its partition) appended to `out`, and the figures.
    pub fn finish(
        mut self,
        end_us: i64,
        client: &super::ClientStats,
        sometimes: &mut [super::sometimes::SometimesResult],
        out: &mut Vec<Violation>,
    ) -> ShardsSummary {
        self.settle();
        let mut each = vec![];
        let mut failover_ms = vec![];
        let mut fleet = Fleet::default();
        for (p, c) in std::mem::take(&mut self.per) {
            let f: Findings = c.finish(end_us, client);
            let failed = f.signature().iter().map(|p| p.name().to_string()).collect();
            for v in &f.violations {
                out.push(v.clone().in_partition(p));
            }
            for s in sometimes.iter_mut() {
                s.met |= partition_met(s.name, &f);
            }
            failover_ms.extend(&f.failover_ms);
            fleet.add(&f);
            each.push(PartitionReport {
                partition: p,
                failed,
                by_effect_max: f.effect.max as u64,
                double_leader_acting_incidents: f.double_leader_acting_incidents,
                non_increasing_steps: f.sequence.non_increasing_steps,
                failover_ms: f.failover_ms,
            });
        }
        let balance_max = self.changes.iter().map(|c| c.balance).fold(0.0, f64::max);
        ShardsSummary {
            count: self.count,
            each,
            failover_ms,
            moved: self.changes.iter().map(|c| c.moved).sum(),
            minimum: self.changes.iter().map(|c| c.minimum).sum(),
            changes: self.changes,
            balance_max,
            led_over_time: self.led_over_time,
            fleet,
        }
    }
}

/// Whether the fleet-wide expectation `name` held in partition `f`.
fn partition_met(name: &str, f: &Findings) -> bool {
    match name {
        "leader-changed" => !f.failover_ms.is_empty(),
        "stale-write-rejected" => !f.rejections.is_empty(),
        "belief-overlap" => f.belief.max >= 2,
        _ => false,
    }
}
