//! Checkers: read a run's timeline and say what held and what did not.
//!
//! Each property lives in its own file as a checker that reads one event at a time (and,
//! from the accepted-write tracker, one accepted write at a time), so that a run is checked as it
//! goes and never holds its timeline in memory. A broken property is a [`Violation`]
//! (of one [`Property`]), which is data: checkers collect, they never panic, so one run reports every broken
//! property at once. [`Checks`] runs them all and gathers the summaries into
//! [`Findings`], from which the report writer and the plot draw; [`check`] does the same
//! over a timeline held in memory ([`CheckInput`], as the unit tests build them).
//!
//! Every checker judges "before" and "after" by timeline order (the order the
//! single-threaded simulation recorded events), not by comparing timestamps, because
//! several events often share one microsecond and their order is still meaningful.
//!
//! The checkers do not trust the fenced resource's own bookkeeping: "the highest token
//! accepted before this write" is recomputed from the accepted writes, so a resource
//! that mislabels `max_token` cannot hide a stale accept.

mod accepted;
pub mod belief;
pub mod client_stats;
pub mod double_leader;
pub mod effect;
pub mod election_safety;
pub mod failover;
pub mod false_failover;
pub mod faults;
pub mod job;
pub mod lease_service;
pub mod lease_ttl;
pub mod liveness;
pub mod load;
pub mod node_contract;
pub mod protocol_safety;
pub mod sequence;
pub mod shards;
pub mod sometimes;
pub mod stale_read;
pub mod stale_token;
pub mod swim;
pub mod transfer;
mod violation;
pub mod wins;

use crate::scenario::Resolved;
use crate::timeline::Entry;
pub(crate) use accepted::{
    accepted_writes, Accepted, AcceptedTracker, LeadershipKey, Step, Succession,
};
use serde::Serialize;

pub use crate::checker::client_stats::ClientStats;
pub use violation::{Property, Violation};

/// Everything the checkers read about one finished run.
pub struct CheckInput<'a> {
    /// The scenario with every default filled in (expectations, fencing, duration, TTL).
    pub resolved: &'a Resolved,
    /// The whole timeline, in recording order.
    pub entries: &'a [Entry],
    /// When the run stopped, in global simulated microseconds.
    pub end_us: i64,
    /// The client's own account of the sequencer replies.
    pub client: ClientStats,
}

impl CheckInput<'_> {
    /// When the run stopped, in milliseconds.
    pub fn end_ms(&self) -> f64 {
        us_to_ms(self.end_us)
    }
}

/// Everything the checkers found in one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Findings {
    /// Every violation, sorted by time then property name (stable for equal keys).
    pub violations: Vec<Violation>,
    /// How many nodes believed they led, over time (`leaders_acting.by_belief_max`).
    pub belief: belief::BeliefSummary,
    /// How many tokens' writes the resource accepted interleaved
    /// (`leaders_acting.by_effect_max`).
    pub effect: effect::EffectSummary,
    /// Double-leader-acting incidents (`double_leader_acting_incidents`).
    pub double_leader_acting_incidents: u64,
    /// Accepted writes whose token was below one already accepted.
    pub stale_accepts: u64,
    /// Every write the resource rejected (`fencing.rejections`).
    pub rejections: Vec<stale_token::Rejection>,
    /// Sequence continuity (`sequence.non_increasing_steps`).
    pub sequence: sequence::SequenceSummary,
    /// Each failover, last old-token write to first new-token write (`failover_ms`).
    pub failover_ms: Vec<f64>,
    /// Campaign start (or seat vacated) to win (`election_latency_ms`).
    pub election_latency_ms: failover::LatencyStats,
    /// Each election's latency, in order of the wins.
    pub election_latencies_ms: Vec<f64>,
    /// The same, split by what each was timed from (`election_latencies_by_start`).
    pub election_latencies_by_start: failover::ElectionsByStart,
    /// For each leadership change, old leader's stop to new leader's first write.
    pub handoff_gaps: Vec<failover::HandoffGap>,
    /// The long-running job's handoffs (`job`).
    pub job: job::JobSummary,
    /// Leadership changes no scripted fault explains (`false_failovers`).
    pub false_failovers: false_failover::FalseFailoverSummary,
    /// Each of the scenario's "sometimes" expectations and whether it held.
    pub sometimes: Vec<sometimes::SometimesResult>,
    /// When the last fault ended and when work resumed after it.
    pub liveness: liveness::LivenessSummary,
    /// Leased reads and how many were stale (`reads`).
    pub reads: stale_read::StaleReadSummary,
    /// The share of the load served outside fault windows (`load`).
    pub load: load::LoadSummary,
    /// Each fault as it happened (applied, healed, skipped), for the summary and plot.
    #[serde(skip)]
    pub faults: Vec<faults::FaultRecord>,
    /// Events in the timeline.
    #[serde(skip)]
    pub events: usize,
    /// Wins by node, starved nodes and leaderless spans (`elections`).
    pub elections: wins::WinsSummary,
    /// The lease TTLs the backend granted (`lease_ttl_granted_ms`; `None` when the
    /// protocol grants no leases).
    pub lease_ttl_granted_ms: Option<lease_ttl::LeaseTtlGranted>,
    /// The lease service's leader changes and lease overruns (`lease_service`; `None`
    /// when the service is not a cluster).
    pub lease_service: Option<lease_service::LeaseServiceSummary>,
    /// Whether the protocol kept its leaders inside their grants by itself, or the
    /// fence had to (`protocol_safety`).
    pub protocol_safety: protocol_safety::ProtocolSafetySummary,
    /// Leadership transfers: each handover, its gap and winner (`transfer`).
    pub transfer: transfer::TransferSummary,
    /// The SWIM detector's detections, mistakes and traffic (`swim`).
    pub swim: swim::SwimSummary,
    /// A sharded fleet's partitions and membership changes (`partitions`; empty when the
    /// fleet has one global leader).
    pub shards: shards::ShardsSummary,
}

impl Findings {
    /// True when no property was broken.
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// The properties that failed, sorted by name, each once: a failure's signature
    /// (what `sim search` groups by and `sim shrink` must keep).
    pub fn signature(&self) -> Vec<Property> {
        let mut s: Vec<Property> = self.violations.iter().map(|v| v.property).collect();
        s.sort();
        s.dedup();
        s
    }
}

/// Runs every checker over one finished timeline (in memory).
pub fn check(input: &CheckInput) -> Findings {
    let mut checks = Checks::new(input.resolved);
    for e in input.entries {
        checks.observe(e);
    }
    checks.finish(input.end_us, &input.client)
}

/// Every checker, fed one event at a time as the run records them, so that a run never
/// holds its timeline in memory: what each checker keeps grows with leaderships, faults
/// and violations, not with writes. (The one exception: with the sequencer in a Raft log
/// and reads, the stale-read check keeps one entry per committed batch.)
pub struct Checks {
    resolved: Resolved,
    next_idx: usize,
    accepted: AcceptedTracker,
    belief: belief::Belief,
    effect: effect::Effect,
    double_leader: double_leader::DoubleLeader,
    stale_token: stale_token::StaleToken,
    sequence: sequence::Sequence,
    liveness: liveness::Liveness,
    sometimes: sometimes::Sometimes,
    failover: failover::Failover,
    false_failovers: false_failover::FalseFailovers,
    job: job::Job,
    election_safety: election_safety::ElectionSafety,
    stale_read: stale_read::StaleRead,
    load: load::Load,
    wins: wins::Wins,
    faults: faults::Faults,
    lease_ttl: lease_ttl::LeaseTtl,
    lease_service: lease_service::LeaseService,
    protocol_safety: protocol_safety::ProtocolSafety,
    transfer: transfer::Transfer,
    swim: swim::Swim,
    /// Per-partition checkers, for a sharded fleet.
    shards: Option<Box<shards::Shards>>,
    node_contract: node_contract::NodeContract,
}

impl Checks {
    /// Checkers for a run of `resolved`.
    pub fn new(resolved: &Resolved) -> Self {
        let nodes: Vec<String> = (1..=resolved.scenario.nodes)
            .map(|i| format!("n{i}"))
            .collect();
        Checks {
            resolved: resolved.clone(),
            next_idx: 0,
            accepted: AcceptedTracker::default(),
            belief: belief::Belief::default(),
            effect: effect::Effect::default(),
            double_leader: double_leader::DoubleLeader::default(),
            stale_token: stale_token::StaleToken::default(),
            sequence: sequence::Sequence::default(),
            liveness: liveness::Liveness::default(),
            sometimes: sometimes::Sometimes::default(),
            failover: failover::Failover::default(),
            false_failovers: false_failover::FalseFailovers::default(),
            job: job::Job::default(),
            election_safety: election_safety::ElectionSafety::new(
                resolved.protocol.token_is_term(),
            ),
            stale_read: stale_read::StaleRead::default(),
            load: load::Load::default(),
            wins: wins::Wins::new(&nodes),
            faults: faults::Faults::default(),
            lease_ttl: lease_ttl::LeaseTtl::default(),
            lease_service: lease_service::LeaseService::default(),
            protocol_safety: protocol_safety::ProtocolSafety::new(resolved),
            transfer: transfer::Transfer::default(),
            swim: swim::Swim::default(),
            shards: (resolved.scenario.partitions > 0)
                .then(|| Box::new(shards::Shards::new(resolved))),
            node_contract: node_contract::NodeContract::default(),
        }
    }

    /// Reads the next event of the run.
    pub fn observe(&mut self, e: &Entry) {
        let idx = self.next_idx;
        self.next_idx += 1;
        if let Some(s) = &mut self.shards {
            s.entry(e);
        }
        self.belief.entry(e);
        self.liveness.entry(e, &self.resolved);
        self.sometimes.entry(e);
        self.failover.entry(idx, e);
        self.false_failovers.entry(e);
        self.job.entry(e);
        self.election_safety.entry(e);
        self.stale_read.entry(e);
        self.load.entry(e);
        self.wins.entry(e);
        self.faults.entry(e);
        self.lease_ttl.entry(e);
        self.lease_service.entry(e);
        self.protocol_safety.entry(e);
        self.transfer.entry(e);
        self.swim.entry(e);
        self.node_contract.entry(e);
        self.stale_token.entry(e);
        self.sequence.entry(e);
        for w in self.accepted.entry(idx, e) {
            self.write(&w);
        }
    }

    fn write(&mut self, w: &Accepted) {
        self.effect.write(w);
        self.double_leader.write(w);
        self.stale_token.write(w);
        self.sequence.write(w);
        self.liveness.write(w);
        self.sometimes.write(w);
        self.failover.write(w, &self.resolved);
        self.false_failovers.write(w, &self.resolved);
        self.job.write(w);
        self.transfer.write(w);
    }

    /// Judges the run, which stopped at `end_us`, with what the client saw.
    pub fn finish(mut self, end_us: i64, client: &ClientStats) -> Findings {
        for w in self.accepted.finish() {
            self.write(&w);
        }
        let r = &self.resolved;
        let end_ms = us_to_ms(end_us);
        // Each checker's violations in the order the checkers ran before they streamed,
        // then one stable sort: ties keep each checker's own order.
        let mut violations = vec![];
        let double_leader_acting_incidents = self.double_leader.finish(&mut violations);
        let (stale_accepts, rejections) = self.stale_token.finish(&mut violations);
        let sequence = self.sequence.finish(client, end_ms, &mut violations);
        // A sharded fleet's work, and so its liveness and expectations, are its
        // partitions': the fleet-wide checkers see none of their writes.
        let mut fleet_wide = vec![];
        let sharded = self.shards.is_some();
        let own = if sharded {
            &mut fleet_wide
        } else {
            &mut violations
        };
        let liveness = self.liveness.finish(r, end_us, own);
        let belief = self.belief.finish(end_us);
        let mut sometimes = self.sometimes.finish(r, belief.max, end_ms, own);
        let shards = match self.shards.take() {
            Some(s) => {
                let summary = s.finish(end_us, client, &mut sometimes, &mut violations);
                for s in sometimes.iter().filter(|s| !s.met) {
                    violations.push(Violation::expectation_never_met(end_ms, s.name));
                }
                summary
            }
            None => shards::ShardsSummary::default(),
        };
        let failover = self.failover.finish(&mut violations);
        self.election_safety.finish(&mut violations);
        let reads = self.stale_read.finish(&mut violations);
        let transfer = self.transfer.finish(r, &mut violations);
        let swim = self.swim.finish(r, end_us, &mut violations);
        let mut protocol_safety = self.protocol_safety.finish(end_us, &mut violations);
        self.node_contract.finish(&mut violations);
        violations.sort_by(|a, b| {
            a.at_ms
                .total_cmp(&b.at_ms)
                .then_with(|| a.property.cmp(&b.property))
        });
        protocol_safety.judge(&violations);
        let fault_windows = self.faults.windows(r, end_us);
        let mut findings = Findings {
            violations,
            belief,
            effect: self.effect.finish(),
            double_leader_acting_incidents,
            stale_accepts,
            rejections,
            sequence,
            failover_ms: failover.failover_ms,
            election_latency_ms: failover.election_latency_ms,
            election_latencies_ms: failover.election_latencies_ms,
            election_latencies_by_start: failover.election_latencies_by_start,
            handoff_gaps: failover.handoff_gaps,
            false_failovers: self.false_failovers.finish(r.scenario.duration_ms),
            job: self.job.finish(),
            sometimes,
            liveness,
            reads,
            load: self.load.finish(r, end_us, client, &fault_windows),
            elections: self.wins.finish(),
            faults: self.faults.finish(),
            events: self.next_idx,
            lease_ttl_granted_ms: self.lease_ttl.finish(),
            lease_service: self.lease_service.finish(),
            protocol_safety,
            transfer,
            swim,
            shards,
        };
        if sharded {
            let (fleet, failovers) = (&findings.shards.fleet, &findings.shards.failover_ms);
            let (fleet, failovers) = (fleet.clone(), failovers.clone());
            fleet.fold_into(&mut findings, &failovers);
        }
        findings
    }
}

/// Microseconds to milliseconds, as reports write time.
pub fn us_to_ms(at_us: i64) -> f64 {
    at_us as f64 / 1000.0
}

/// Builders for hand-made timelines in the checkers' unit tests.
#[cfg(test)]
pub(crate) mod testing;

#[cfg(test)]
mod tests {
    //! Methodology: run every checker together over a clean failover and over the same
    //! run with a stale write accepted (fencing off), and check the merged findings:
    //! quiet and passing for the first, sorted violations from several checkers for
    //! the second.
    use super::testing::*;
    use super::*;
    use crate::timeline::{Event, WriteOp};

    #[test]
    fn a_write_landing_after_its_leader_was_killed_is_no_new_leadership() {
        // n1's last write was in flight when it was killed; it lands just after. It is
        // n1's old leadership acting, not a failover to a new one.
        let r = resolved();
        let mut entries = clean_failover();
        let kill_at = entries
            .iter()
            .position(|e| matches!(e.event, Event::NodeKilled { .. }))
            .unwrap();
        entries.insert(kill_at + 1, tick(1501, "n1", 1));
        let f = check(&input(&r, &entries, 12_000));
        assert_eq!(f.failover_ms.len(), 1, "{:?}", f.failover_ms);
    }

    #[test]
    fn clean_run_passes() {
        let r = resolved();
        let entries = clean_failover();
        // The run goes on long enough after recovery (7.5 s default bound) to show it.
        let f = check(&input(&r, &entries, 12_000));
        assert!(f.passed(), "{:?}", f.violations);
        assert_eq!(f.belief.max, 1);
        assert_eq!(f.effect.max, 1);
        assert_eq!(f.failover_ms, vec![2900.0]);
    }

    #[test]
    fn stale_accept_fails_and_violations_are_sorted() {
        let r = resolved();
        let mut entries = clean_failover();
        // n1 was not killed but paused: it wakes and writes with its old token. (The
        // pause is what makes its belief past the grant the fence's to stop, not a
        // protocol bug: see `protocol_safety`.)
        entries.retain(|e| !matches!(e.event, Event::NodeKilled { .. }));
        let at_kill = entries.iter().position(|e| e.at_us >= 1_500_000).unwrap();
        entries.insert(at_kill, at(1500, Event::NodePaused { node: "n1".into() }));
        entries.push(at(5150, Event::NodeResumed { node: "n1".into() }));
        entries.push(accepted(5200, "n1", 1, 2, WriteOp::Tick { n: 2 }));
        let f = check(&input(&r, &entries, 12_000));
        let props: Vec<Property> = f.violations.iter().map(|v| v.property).collect();
        assert_eq!(
            props,
            vec![
                Property::DoubleLeaderActing,
                Property::NegativeHandoffGap,
                Property::StaleTokenAccepted
            ]
        );
        assert_eq!(f.effect.max, 2);
        assert_eq!(f.belief.max, 2);
        let json = serde_json::to_value(&f).unwrap();
        assert_eq!(json["violations"][0]["property"], "double_leader_acting");
        assert_eq!(json["violations"][0]["at_ms"], 5200.0);
    }
}
