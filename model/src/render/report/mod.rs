//! The report of one run: `report.json` (stable keys for scripts), `summary.txt` (for a
//! person), and the reproduce command both end with. This file is report.json; each
//! section of summary.txt is a function of `summary.rs` (those on safety, of
//! `safety_sections.rs`; those of the features a scenario turns on, of
//! `feature_sections.rs`), and what every section reads is `section.rs`.

mod feature_sections;
mod safety_sections;
mod section;
mod summary;

pub use summary::{summary, summary_with};

use crate::checker::client_stats::ClientStats;
use crate::checker::failover::{HandoffGap, LatencyStats};
use crate::checker::stale_token::Rejection;
use crate::checker::wins::WinsSummary;
use crate::checker::{Findings, Violation};
use crate::protocol::Bound;
use crate::run_output::RunOutput;
use crate::scenario::Resolved;
use crate::trial::{LedgerCheck, TrialReport};
use serde::Serialize;

/// The failover bound of the run's protocol.
pub fn failover_bound(r: &Resolved) -> Bound {
    r.protocol.failover_bound()
}

/// `leaders_acting` in report.json.
#[derive(Serialize)]
struct LeadersActing {
    by_belief_max: u32,
    by_effect_max: u32,
    by_belief_overlaps: Vec<crate::checker::belief::OverlapWindow>,
}

/// `fencing` in report.json.
#[derive(Serialize)]
struct Fencing {
    enabled: bool,
    rejections: Vec<Rejection>,
}

/// `sequence` in report.json.
#[derive(Serialize)]
struct Sequence {
    non_increasing_steps: u64,
    reused: u64,
    client_reused: u64,
    #[serde(skip_serializing_if = "is_zero")]
    refused_late: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Serialize)]
struct Sometimes {
    name: &'static str,
    met: bool,
}

#[derive(Serialize)]
struct Liveness {
    last_fault_end_ms: f64,
    bound_ms: u64,
    first_write_after_ms: Option<f64>,
    longest_stall_after_ms: f64,
}

/// `backend_load` in report.json: the protocol's backend requests over time, to show a
/// thundering herd after a leader's death.
#[derive(Serialize)]
struct BackendLoad {
    /// Requests per simulated second while faults fired: from the first fault applied to
    /// the last one applied or ended.
    per_s_during_faults: f64,
    /// Requests per second in the second after each kill, averaged over kills.
    per_s_after_kill_mean: f64,
    /// The busiest such second.
    per_s_after_kill_max: f64,
    /// How many kills.
    kills: u64,
}

fn backend_load(f: &Findings, buckets: &[u64]) -> Option<BackendLoad> {
    let bucket_us = crate::run_output::BUCKET_US;
    let count = |from_us: i64, to_us: i64| -> u64 {
        let (a, b) = (
            (from_us / bucket_us).max(0) as usize,
            (to_us / bucket_us).max(0) as usize,
        );
        buckets.iter().skip(a).take(b.saturating_sub(a)).sum()
    };
    let applied: Vec<&crate::checker::faults::FaultRecord> =
        f.faults.iter().filter(|r| !r.skipped).collect();
    let first = applied.iter().map(|r| r.at_us).min()?;
    let last = applied
        .iter()
        .map(|r| r.healed_us.unwrap_or(r.at_us))
        .max()?
        .max(first + bucket_us);
    let kills: Vec<u64> = applied
        .iter()
        .filter(|r| r.kind == Some(crate::fault::FaultKind::Kill))
        .map(|r| count(r.at_us, r.at_us + 1_000_000))
        .collect();
    Some(BackendLoad {
        per_s_during_faults: count(first, last) as f64 * 1e6 / (last - first) as f64,
        per_s_after_kill_mean: if kills.is_empty() {
            0.0
        } else {
            kills.iter().sum::<u64>() as f64 / kills.len() as f64
        },
        per_s_after_kill_max: kills.iter().copied().max().unwrap_or(0) as f64,
        kills: kills.len() as u64,
    })
}

/// report.json. The keys listed in DESIGN.md are stable; others may be added.
#[derive(Serialize)]
struct Report<'a> {
    verdict: &'static str,
    seed: u64,
    scenario: &'a str,
    protocol: &'static str,
    /// `real` for a run in the real world (absent from the simulator's reports).
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trial: Option<usize>,
    simulated_ms: u64,
    failover_ms: &'a [f64],
    failover_bound: Bound,
    election_latency_ms: &'a LatencyStats,
    election_latencies_ms: &'a [f64],
    election_latencies_by_start: &'a crate::checker::failover::ElectionsByStart,
    #[serde(skip_serializing_if = "Option::is_none")]
    lease_ttl_granted_ms: Option<crate::checker::lease_ttl::LeaseTtlGranted>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lease_service: Option<&'a crate::checker::lease_service::LeaseServiceSummary>,
    protocol_safety: &'a crate::checker::protocol_safety::ProtocolSafetySummary,
    leaders_acting: LeadersActing,
    double_leader_acting_incidents: u64,
    stale_token_accepts: u64,
    fencing: Fencing,
    sequence: Sequence,
    reads: &'a crate::checker::stale_read::StaleReadSummary,
    handoff_gaps: &'a [HandoffGap],
    #[serde(skip_serializing_if = "Option::is_none")]
    transfer: Option<&'a crate::checker::transfer::TransferSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    swim: Option<&'a crate::checker::swim::SwimSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    partitions: Option<&'a crate::checker::shards::ShardsSummary>,
    false_failovers: &'a crate::checker::false_failover::FalseFailoverSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    job: Option<&'a crate::checker::job::JobSummary>,
    elections: &'a WinsSummary,
    liveness: Liveness,
    sometimes: Vec<Sometimes>,
    client: &'a ClientStats,
    load: &'a crate::checker::load::LoadSummary,
    network_messages: u64,
    backend_requests: u64,
    backend_requests_per_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    backend_load: Option<BackendLoad>,
    timeline_events: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    ledger: Option<&'a LedgerCheck>,
    #[serde(skip_serializing_if = "Option::is_none")]
    notes: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    node_cmd: Option<&'a str>,
    violations: &'a [Violation],
    reproduce: String,
}

/// The command that reproduces a run, shell-quoted: the scenario path as
/// [`crate::scenario::display_path`] writes it (so that it does not depend on how it was
/// typed), the seed, and every override; or the resolved scenario's own `command`, for a
/// run that `sim run` does not repeat (a library run of a user's node).
pub fn reproduce_command(r: &Resolved, seed: u64) -> String {
    if let Some(command) = &r.command {
        return command.clone();
    }
    let seed = seed.to_string();
    let mut words = vec!["sim", "run", r.path.as_str(), "--seed", seed.as_str()];
    for set in &r.overrides {
        words.extend(["--set", set.as_str()]);
    }
    crate::render::shell::join(words)
}

/// The stable keys of every report.json, simulated or real, as JSON pointers: what
/// scripts and the comparison read, so a change that drops one breaks the tests of both
/// modes.
pub const STABLE_KEYS: &[&str] = &[
    "/verdict",
    "/seed",
    "/scenario",
    "/protocol",
    "/failover_ms",
    "/election_latency_ms/p50",
    "/election_latency_ms/p99",
    "/election_latency_ms/max",
    "/election_latency_ms/count",
    "/leaders_acting/by_belief_max",
    "/leaders_acting/by_effect_max",
    "/double_leader_acting_incidents",
    "/fencing/rejections",
    "/sequence/non_increasing_steps",
    "/violations",
];

/// report.json for a run.
pub fn json(r: &Resolved, seed: u64, out: &RunOutput) -> String {
    json_with(r, seed, out, None)
}

/// report.json for a run, with what a real run adds (`mode`, `trial`, `ledger`, `notes`,
/// and its command as `reproduce`) when `real` is given.
pub fn json_with(r: &Resolved, seed: u64, out: &RunOutput, real: Option<&TrialReport>) -> String {
    let f = &out.findings;
    let report = Report {
        verdict: if f.passed() { "pass" } else { "fail" },
        seed,
        scenario: &r.scenario.name,
        protocol: r.scenario.protocol.name(),
        mode: real.map(|_| "real"),
        trial: real.map(|x| x.trial),
        simulated_ms: r.scenario.duration_ms,
        failover_ms: &f.failover_ms,
        failover_bound: failover_bound(r),
        election_latency_ms: &f.election_latency_ms,
        election_latencies_ms: &f.election_latencies_ms,
        election_latencies_by_start: &f.election_latencies_by_start,
        lease_ttl_granted_ms: f.lease_ttl_granted_ms,
        lease_service: f.lease_service.as_ref(),
        protocol_safety: &f.protocol_safety,
        leaders_acting: LeadersActing {
            by_belief_max: f.belief.max,
            by_effect_max: f.effect.max,
            by_belief_overlaps: f.belief.overlaps.clone(),
        },
        double_leader_acting_incidents: f.double_leader_acting_incidents,
        stale_token_accepts: f.stale_accepts,
        fencing: Fencing {
            enabled: r.scenario.fencing,
            rejections: f.rejections.clone(),
        },
        sequence: Sequence {
            non_increasing_steps: f.sequence.non_increasing_steps,
            reused: f.sequence.reused,
            client_reused: f.sequence.client_reused,
            refused_late: f.sequence.refused_late,
        },
        reads: &f.reads,
        handoff_gaps: &f.handoff_gaps,
        transfer: r
            .scenario
            .has_fault(crate::fault::FaultKind::Transfer)
            .then_some(&f.transfer),
        swim: r.scenario.swim.as_ref().map(|_| &f.swim),
        partitions: (r.scenario.partitions > 0).then_some(&f.shards),
        false_failovers: &f.false_failovers,
        job: r.scenario.work.job.as_ref().map(|_| &f.job),
        elections: &f.elections,
        liveness: Liveness {
            last_fault_end_ms: f.liveness.last_fault_end_ms,
            bound_ms: f.liveness.bound_ms,
            first_write_after_ms: f.liveness.first_write_after_ms,
            longest_stall_after_ms: f.liveness.longest_stall_after_ms,
        },
        sometimes: f
            .sometimes
            .iter()
            .map(|s| Sometimes {
                name: s.name,
                met: s.met,
            })
            .collect(),
        client: &out.client,
        load: &f.load,
        network_messages: out.messages,
        backend_requests: out.backend_requests,
        backend_requests_per_s: out.backend_requests as f64 * 1000.0
            / r.scenario.duration_ms as f64,
        // A real run counts no backend requests: no load figures rather than zeros.
        backend_load: match real {
            None => backend_load(f, &out.backend_requests_by_100ms),
            Some(_) => None,
        },
        timeline_events: f.events,
        ledger: real.map(|x| &x.ledger),
        notes: real.map(|x| x.notes.as_slice()),
        node_cmd: real.and_then(|x| x.node_cmd.as_deref()),
        violations: &f.violations,
        reproduce: match real {
            Some(x) => x.command.clone(),
            None => reproduce_command(r, seed),
        },
    };
    let mut s = serde_json::to_string_pretty(&report).expect("a report always serializes");
    s.push('\n');
    s
}
