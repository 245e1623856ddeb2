//! The report of one run: `report.json` (stable keys for scripts), `summary.txt` (for a
//! person), and the reproduce command both end with.

use crate::checker::failover::{HandoffGap, LatencyStats};
use crate::checker::stale_token::Rejection;
use crate::checker::wins::WinsSummary;
use crate::checker::{us_to_ms, Findings, ViolationRecord};
use crate::client_stats::ClientStats;
use crate::outcome::RunOutput;
use crate::protocol::Bound;
use crate::real_run::{LedgerCheck, RealRun};
use crate::scenario::Resolved;
use serde::Serialize;
use std::fmt::Write;

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
    let bucket_us = crate::outcome::BUCKET_US;
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
        .filter(|r| r.kind == "kill")
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
    #[serde(skip_serializing_if = "Option::is_none")]
    lease_ttl_granted_ms: Option<crate::checker::lease_ttl::LeaseTtlGranted>,
    leaders_acting: LeadersActing,
    double_leader_acting_incidents: u64,
    stale_token_accepts: u64,
    fencing: Fencing,
    sequence: Sequence,
    reads: &'a crate::checker::stale_read::StaleReadSummary,
    handoff_gaps: &'a [HandoffGap],
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
    violations: Vec<ViolationRecord>,
    reproduce: String,
}

/// The command that reproduces a run, shell-quoted: the scenario path as
/// [`crate::scenario::display_path`] writes it (so that it does not depend on how it was
/// typed), the seed, and every override.
pub fn reproduce_command(r: &Resolved, seed: u64) -> String {
    let seed = seed.to_string();
    let mut words = vec!["sim", "run", r.path.as_str(), "--seed", seed.as_str()];
    for set in &r.overrides {
        words.extend(["--set", set.as_str()]);
    }
    crate::shell::join(words)
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
pub fn json_with(r: &Resolved, seed: u64, out: &RunOutput, real: Option<&RealRun>) -> String {
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
        lease_ttl_granted_ms: f.lease_ttl_granted_ms,
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
        violations: f.violation_records(),
        reproduce: match real {
            Some(x) => x.command.clone(),
            None => reproduce_command(r, seed),
        },
    };
    let mut s = serde_json::to_string_pretty(&report).expect("a report always serializes");
    s.push('\n');
    s
}

fn ms(v: f64) -> String {
    format!("{v:.1} ms")
}

/// One line per fault as it happened: applied (and healed), or skipped and why.
fn fault_lines(f: &Findings) -> Vec<String> {
    let mut lines: Vec<String> = vec![];
    for r in &f.faults {
        let mut line = if r.skipped {
            format!(
                "fault {}: SKIPPED at {}: {}",
                r.index,
                ms(us_to_ms(r.at_us)),
                r.target
            )
        } else {
            format!(
                "fault {}: {} {} at {}",
                r.index,
                r.kind,
                r.target,
                ms(us_to_ms(r.at_us))
            )
        };
        for h in &r.summary_heals_us {
            let _ = write!(line, ", ended at {}", ms(us_to_ms(*h)));
        }
        lines.push(line);
    }
    if lines.is_empty() {
        lines.push("faults: none fired".into());
    }
    lines
}

/// summary.txt for a run.
pub fn summary(r: &Resolved, seed: u64, out: &RunOutput) -> String {
    summary_with(r, seed, out, None)
}

/// summary.txt for a run, with what a real run adds (its trial, the SQL check over the
/// ledger, the lease TTL granted, its notes and the command that runs it again) when
/// `real` is given.
pub fn summary_with(r: &Resolved, seed: u64, out: &RunOutput, real: Option<&RealRun>) -> String {
    let f = &out.findings;
    let s = &r.scenario;
    let mut t = String::new();
    let w = &mut t;
    match real {
        None => {
            let _ = writeln!(
                w,
                "Baton run: {} (seed {seed}), protocol {}, {} nodes, fencing {}, {} simulated",
                s.name,
                s.protocol.name(),
                s.nodes,
                if s.fencing { "on" } else { "OFF" },
                ms(s.duration_ms as f64)
            );
        }
        Some(x) => {
            let _ = writeln!(
                w,
                "Baton real run: {} (trial {}, seed {seed}), protocol {} against a live etcd, {} node processes, fencing {}, {} of real time",
                s.name,
                x.trial,
                s.protocol.name(),
                s.nodes,
                if s.fencing { "on" } else { "OFF" },
                ms(s.duration_ms as f64)
            );
        }
    }
    let _ = writeln!(w, "verdict: {}", if f.passed() { "PASS" } else { "FAIL" });
    let _ = writeln!(w);
    for line in fault_lines(f) {
        let _ = writeln!(w, "{line}");
    }
    let _ = writeln!(w, "leaders acting by belief: max {}", f.belief.max);
    for o in &f.belief.overlaps {
        let _ = writeln!(
            w,
            "  overlap {} .. {} ({}): {}",
            ms(o.from_ms),
            ms(o.to_ms),
            ms(o.to_ms - o.from_ms),
            o.nodes.join(", ")
        );
    }
    let _ = writeln!(w, "leaders acting by effect: max {}", f.effect.max);
    let _ = writeln!(
        w,
        "double-leader-acting incidents: {}",
        f.double_leader_acting_incidents
    );
    let _ = writeln!(w, "stale-token writes accepted: {}", f.stale_accepts);
    let _ = writeln!(w, "fencing rejections: {}", f.rejections.len());
    for rej in f.rejections.iter().take(10) {
        let _ = writeln!(
            w,
            "  at {}: {} wrote with token {} < max_token {} -> rejected",
            ms(rej.at_ms),
            rej.node,
            rej.token,
            rej.max_token
        );
    }
    if f.rejections.len() > 10 {
        let _ = writeln!(w, "  ... {} more in report.json", f.rejections.len() - 10);
    }
    let _ = writeln!(
        w,
        "sequence: {} non-increasing steps, {} numbers accepted twice (at the resource, or committed in the log); client saw {} reused of {} handed out",
        f.sequence.non_increasing_steps, f.sequence.reused, f.sequence.client_reused, out.client.ok
    );
    if f.sequence.refused_late > 0 {
        let _ = writeln!(
            w,
            "  the sequence row refused {} late batches (a leader's own batch, timed out, then overtaken by its next one)",
            f.sequence.refused_late
        );
    }
    if let Some(x) = real {
        let l = &x.ledger;
        let _ = writeln!(
            w,
            "SQL check (lag() over the ledger's sequence): {} non-increasing steps; ledger.db holds {} sequencer batches, {} ticks, {} rejected writes, max_token {}, last_seq {}",
            l.non_increasing_steps, l.seq_batches, l.ticks, l.rejections, l.max_token, l.last_seq
        );
    }
    if s.work.read_rate_per_s > 0 || f.reads.served > 0 {
        let _ = writeln!(
            w,
            "reads: {} answered from leader leases, {} stale (up to {} numbers behind); client sent {}, {} answered",
            f.reads.served,
            f.reads.stale,
            f.reads.max_numbers_behind,
            out.client.reads_sent,
            out.client.reads_ok
        );
        if let Some(b) = r.protocol.read_lease_bound() {
            let _ = writeln!(w, "  bound: {b}");
        }
    }
    let bound = failover_bound(r);
    let fo: Vec<String> = f.failover_ms.iter().map(|v| ms(*v)).collect();
    let _ = writeln!(
        w,
        "failover (last old-leader write -> first new-leader write): {}",
        if fo.is_empty() {
            "none".into()
        } else {
            fo.join(", ")
        }
    );
    let _ = writeln!(w, "  bound: {} = {} ms", bound.formula, bound.ms);
    if let Some(max) = s.expect.failover_ms_max {
        let _ = writeln!(w, "  checked against expect.failover_ms_max = {max} ms");
    }
    let el = &f.election_latency_ms;
    let _ = writeln!(
        w,
        "election latency (seat vacant or campaign start -> won): p50 {} p99 {} max {} over {}",
        ms(el.p50),
        ms(el.p99),
        ms(el.max),
        el.count
    );
    if real.is_some() {
        let _ = writeln!(
            w,
            "lease TTL granted: {}",
            match f.lease_ttl_granted_ms {
                Some(g) if g.min == g.max => format!("{} ms on {} leases", g.min, g.count),
                Some(g) => format!("{} to {} ms on {} leases", g.min, g.max, g.count),
                None => "no lease granted".to_string(),
            }
        );
    }
    let resigns = s
        .faults
        .iter()
        .any(|x| x.kind == crate::fault::FaultKind::Resign);
    if let (true, Some(how)) = (resigns, r.protocol.stepdown_method()) {
        let _ = writeln!(w, "step-down: {how}");
    }
    let ew = &f.elections;
    let wins: Vec<String> = ew
        .wins_by_node
        .iter()
        .map(|(n, w)| format!("{n} {}/{}", w.wins, w.elections_running))
        .collect();
    let _ = writeln!(
        w,
        "wins by node (won / elections while running): {}; starved (no win in {}+): {}",
        wins.join(", "),
        crate::checker::wins::STARVED_MIN_ELECTIONS,
        if ew.starved.is_empty() {
            "none".to_string()
        } else {
            ew.starved.join(", ")
        }
    );
    let lm = &ew.leaderless_ms;
    let _ = writeln!(
        w,
        "leaderless (last leader gone -> next win): p50 {} p99 {} max {} over {}; leader changes {}",
        ms(lm.p50),
        ms(lm.p99),
        ms(lm.max),
        lm.count,
        ew.leader_changes
    );
    for g in &f.handoff_gaps {
        let _ = writeln!(
            w,
            "handoff {} (token {}) -> {} (token {}): gap {}{}",
            g.old_node,
            g.old_token,
            g.new_node,
            g.new_token,
            ms(g.gap_ms),
            if g.overlap {
                " (the old leader had not stopped by then: it still believed it led)"
            } else {
                ""
            }
        );
    }
    if s.noise.gc.is_some() || f.false_failovers.count > 0 {
        let ff = &f.false_failovers;
        let _ = writeln!(
            w,
            "false failovers (leadership changed with the old leader alive and no scripted fault in force): {} ({:.1} per hour)",
            ff.count, ff.per_hour
        );
        for x in ff.each.iter().take(10) {
            let cause = match x.gc_pause_ms {
                Some((from, len)) => format!(
                    "{} was in a {len} ms GC-noise pause from {}",
                    x.old_node,
                    ms(from)
                ),
                None => format!("no GC-noise pause of {} covered it", x.old_node),
            };
            let _ = writeln!(
                w,
                "  at {}: {} (token {}) -> {} (token {}); {cause}",
                ms(x.at_ms),
                x.old_node,
                x.old_token,
                x.new_node,
                x.new_token
            );
        }
        if ff.each.len() > 10 {
            let _ = writeln!(w, "  ... {} more in report.json", ff.each.len() - 10);
        }
    }
    if let Some(cfg) = &s.work.job {
        let j = &f.job;
        let _ = writeln!(
            w,
            "job (steps of {}-{} ms, cursor checkpointed after each): {} steps done, {} redone, {} segments skipped, {} abandoned ({} ms of work thrown away); cursor at {}",
            cfg.step_ms_min, cfg.step_ms_max, j.steps_done, j.steps_redone, j.segments_skipped, j.steps_abandoned, j.abandoned_ms, j.cursor
        );
        for h in j.handoffs.iter().take(10) {
            let _ = writeln!(
                w,
                "  handoff {} (token {}) -> {} (token {}) at {}: cursor still for {}, {} ms of {}'s step thrown away",
                h.old_node,
                h.old_token,
                h.new_node,
                h.new_token,
                ms(h.at_ms),
                ms(h.cursor_still_ms),
                h.abandoned_ms,
                h.old_node
            );
        }
        if j.handoffs.len() > 10 {
            let _ = writeln!(w, "  ... {} more in report.json", j.handoffs.len() - 10);
        }
    }
    if let Some(gc) = &s.noise.gc {
        let _ = writeln!(
            w,
            "GC noise: a pause every {} ms on average per node (p50 {} ms, p99 {} ms, at most {} ms), on {}",
            gc.mean_interval_ms,
            gc.pause_p50_ms,
            gc.pause_p99_ms,
            gc.pause_max_ms,
            if gc.nodes.is_empty() {
                "every node".to_string()
            } else {
                gc.nodes.join(", ")
            }
        );
    }
    let l = &f.liveness;
    let _ = writeln!(
        w,
        "liveness: last fault ended at {}; first accepted write after it: {}; longest stall after: {} (bound {} ms)",
        ms(l.last_fault_end_ms),
        l.first_write_after_ms
            .map(ms)
            .unwrap_or_else(|| "none".into()),
        ms(l.longest_stall_after_ms),
        l.bound_ms
    );
    for so in &f.sometimes {
        let _ = writeln!(
            w,
            "sometimes {}: {}",
            so.name,
            if so.met { "met" } else { "NEVER MET" }
        );
    }
    if out.backend_requests > 0 {
        let mut line = format!(
            "backend requests: {:.1}/s over the run",
            out.backend_requests as f64 * 1000.0 / s.duration_ms as f64
        );
        if let Some(b) = backend_load(f, &out.backend_requests_by_100ms) {
            let _ = write!(line, ", {:.1}/s while faults fired", b.per_s_during_faults);
            if b.kills > 0 {
                let _ = write!(
                    line,
                    "; in the second after each of {} kills: {:.1}/s on average, {:.0}/s at most",
                    b.kills, b.per_s_after_kill_mean, b.per_s_after_kill_max
                );
            }
        }
        let _ = writeln!(w, "{line}");
    }
    let c = &out.client;
    let _ = writeln!(
        w,
        "client: {} sent, {} ok, {} not-leader, {} timed out",
        c.sent, c.ok, c.not_leader, c.timeouts
    );
    if c.sent > 0 {
        let l = &f.load;
        let windows: Vec<String> = l
            .fault_windows_ms
            .iter()
            .map(|(a, b)| format!("{a:.0}..{b:.0} ms"))
            .collect();
        let _ = writeln!(
            w,
            "load served outside start-up and fault windows: {:.2}% ({} of {} requests got a number; windows: start-up, then fault + liveness bound + client timeout{})",
            l.ok_share_outside_faults * 100.0,
            l.ok_outside_faults,
            l.sent_outside_faults,
            if windows.is_empty() {
                ", none".to_string()
            } else {
                format!(": {}", windows.join(", "))
            }
        );
    }
    let v = f.violation_records();
    let _ = writeln!(
        w,
        "violations: {}",
        if v.is_empty() {
            "none".to_string()
        } else {
            v.len().to_string()
        }
    );
    for x in v.iter().take(20) {
        let _ = writeln!(w, "  {} at {}: {}", x.property, ms(x.at_ms), x.detail);
    }
    if v.len() > 20 {
        let _ = writeln!(w, "  ... {} more in report.json", v.len() - 20);
    }
    if let Some(x) = real {
        for n in &x.notes {
            let _ = writeln!(w, "real mode: {n}");
        }
    }
    let _ = writeln!(w);
    match real {
        None => {
            let _ = writeln!(w, "reproduce: {}", reproduce_command(r, seed));
        }
        Some(x) => {
            let _ = writeln!(
                w,
                "run again (a real run does not repeat exactly): {}",
                x.command
            );
        }
    }
    t
}
