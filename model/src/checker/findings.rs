//! What the checkers found in one run: every violation and every checker's summary,
//! from which the report writer and the plot draw.

use super::{
    belief, effect, failover, false_failover, faults, job, lease_service, lease_ttl, liveness,
    load, protocol_safety, sequence, shards, sometimes, stale_read, stale_token, swim, transfer,
    wins, Property, Violation,
};
use serde::Serialize;

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
