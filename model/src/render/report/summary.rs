//! `summary.txt`: the report of one run for a person, one section after another in the
//! order [`SECTIONS`] gives. Each section writes its own lines, or none when it has
//! nothing to say for this run (a job's section without a job, a real run's SQL check in
//! a simulated one).

use super::section::{ms, percentiles, Run, Section};
use super::{backend_load, failover_bound, reproduce_command};
use super::{feature_sections, safety_sections};
use crate::checker::{us_to_ms, Findings};
use crate::run_output::RunOutput;
use crate::scenario::Resolved;
use crate::trial::TrialReport;
use std::fmt::Write;

/// summary.txt for a run.
pub fn summary(r: &Resolved, seed: u64, out: &RunOutput) -> String {
    summary_with(r, seed, out, None)
}

/// summary.txt for a run, with what a real run adds (its trial, the SQL check over the
/// ledger, the lease TTL granted, its notes and the command that runs it again) when
/// `real` is given.
pub fn summary_with(
    r: &Resolved,
    seed: u64,
    out: &RunOutput,
    real: Option<&TrialReport>,
) -> String {
    let run = Run {
        r,
        seed,
        out,
        f: &out.findings,
        real,
    };
    let mut t = String::new();
    for section in SECTIONS {
        section(&mut t, &run);
    }
    t
}

/// The sections of summary.txt, in the order they are written.
const SECTIONS: [Section; 26] = [
    header,
    faults,
    safety_sections::leaders_acting,
    safety_sections::protocol_safety,
    safety_sections::fencing,
    safety_sections::sequence,
    safety_sections::reads,
    failover,
    election_latency,
    step_down,
    elections,
    handoffs,
    feature_sections::transfers,
    feature_sections::swim,
    feature_sections::partitions,
    false_failovers,
    job,
    gc_noise,
    liveness,
    lease_service,
    backend,
    client,
    violations,
    see_timeline,
    real_notes,
    reproduce,
];

/// What ran (scenario, seed, protocol, nodes, fencing, length; a real run's trial), the
/// verdict, then a blank line.
fn header(w: &mut String, run: &Run) {
    let (s, seed) = (&run.r.scenario, run.seed);
    match run.real {
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
                "Baton real run: {} (trial {}, seed {seed}), protocol {} against {}, {} node processes, fencing {}, {} of real time",
                s.name,
                x.trial,
                s.protocol.name(),
                x.backend,
                s.nodes,
                if s.fencing { "on" } else { "OFF" },
                ms(s.duration_ms as f64)
            );
            if let Some(cmd) = &x.node_cmd {
                let _ = writeln!(
                    w,
                    "nodes: --node-cmd {} (node contract v2; {}'s table gave their settings), seen from outside",
                    crate::render::shell::quote(cmd),
                    s.protocol.name()
                );
            }
        }
    }
    let _ = writeln!(
        w,
        "verdict: {}",
        if run.f.passed() { "PASS" } else { "FAIL" }
    );
    let _ = writeln!(w);
}

/// The faults, one line each ([`fault_lines`]).
fn faults(w: &mut String, run: &Run) {
    for line in fault_lines(run.f) {
        let _ = writeln!(w, "{line}");
    }
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
                r.kind.map_or("skipped", |k| k.name()),
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

/// Each failover, the protocol's bound, and the scenario's expectation if it set one.
fn failover(w: &mut String, run: &Run) {
    let bound = failover_bound(run.r);
    let fo: Vec<String> = run.f.failover_ms.iter().map(|v| ms(*v)).collect();
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
    if let Some(max) = run.r.scenario.expect.failover_ms_max {
        let _ = writeln!(w, "  checked against expect.failover_ms_max = {max} ms");
    }
}

/// Election latency, and in a real run the lease TTL etcd granted.
fn election_latency(w: &mut String, run: &Run) {
    let f = run.f;
    let el = &f.election_latency_ms;
    let _ = writeln!(
        w,
        "election latency (seat vacant or campaign start -> won): {}",
        percentiles(el)
    );
    if run.real.is_some() {
        let _ = writeln!(
            w,
            "lease TTL granted: {}",
            match f.lease_ttl_granted_ms {
                Some(g) if g.min == g.max => format!("{} ms on {} leases", g.min, g.count),
                Some(g) => format!("{} to {} ms on {} leases", g.min, g.max, g.count),
                None if run.real.is_some_and(|x| x.node_cmd.is_some()) => {
                    "not seen (a --node-cmd node logs no lease grants)".to_string()
                }
                None => "no lease granted".to_string(),
            }
        );
    }
}

/// How the protocol steps down, when the scenario makes a leader resign.
fn step_down(w: &mut String, run: &Run) {
    let resigns = run.r.scenario.has_fault(crate::fault::FaultKind::Resign);
    if let (true, Some(how)) = (resigns, run.r.protocol.stepdown_method()) {
        let _ = writeln!(w, "step-down: {how}");
    }
}

/// Wins by node, starved nodes, leaderless stretches and leader changes.
fn elections(w: &mut String, run: &Run) {
    let ew = &run.f.elections;
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
        "leaderless (last leader gone -> next win): {}; leader changes {}",
        percentiles(lm),
        ew.leader_changes
    );
}

/// Each handoff between leaders, with its gap.
fn handoffs(w: &mut String, run: &Run) {
    for g in &run.f.handoff_gaps {
        let mut notes = vec![];
        // A negative gap reads as a typo unless it says what it means.
        if g.gap_ms < 0.0 {
            notes.push(format!(
                "negative: {}'s last write came {} after {}'s first",
                g.old_node,
                ms(-g.gap_ms),
                g.new_node
            ));
        }
        match (g.overlap, g.in_flight_sent_ms) {
            (true, Some(sent)) => notes.push(format!(
                "the old leader had not stopped by then: its write sent at {} was still in flight",
                ms(sent)
            )),
            // A node run by --node-cmd is seen only by its /status polls: they say when
            // its step-down was first seen, not when it happened.
            (true, None) if run.real.is_some_and(|r| r.node_cmd.is_some()) => notes.push(
                "the old leader had not stopped by then: no poll of its /status had yet seen it stop"
                    .into(),
            ),
            (true, None) => notes
                .push("the old leader had not stopped by then: it still believed it led".into()),
            (false, _) => {}
        }
        let _ = writeln!(
            w,
            "handoff {} (token {}) -> {} (token {}): gap {}{}",
            g.old_node,
            g.old_token,
            g.new_node,
            g.new_token,
            ms(g.gap_ms),
            if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join("; "))
            }
        );
    }
}

/// False failovers (the first ten, each with its cause), when GC noise runs or one
/// happened.
fn false_failovers(w: &mut String, run: &Run) {
    let f = run.f;
    if run.r.scenario.noise.gc.is_none() && f.false_failovers.count == 0 {
        return;
    }
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

/// The job's steps and cursor, and its handoffs (the first ten), when the scenario runs
/// a job.
fn job(w: &mut String, run: &Run) {
    let Some(cfg) = &run.r.scenario.work.job else {
        return;
    };
    let j = &run.f.job;
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

/// The GC noise the scenario asked for, if any.
fn gc_noise(w: &mut String, run: &Run) {
    if let Some(gc) = &run.r.scenario.noise.gc {
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
}

/// Liveness after the last fault, then whether each "sometimes" property was met.
fn liveness(w: &mut String, run: &Run) {
    if run.r.scenario.partitions > 0 {
        let _ = writeln!(w, "liveness: judged per partition (see `partitions` above)");
        return;
    }
    let l = &run.f.liveness;
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
    for so in &run.f.sometimes {
        let _ = writeln!(
            w,
            "sometimes {}: {}",
            so.name,
            if so.met { "met" } else { "NEVER MET" }
        );
    }
}

/// The lease service's leader changes and lease overruns, when it is a cluster.
fn lease_service(w: &mut String, run: &Run) {
    let Some(s) = &run.f.lease_service else {
        return;
    };
    let who: Vec<String> = s
        .leaders
        .iter()
        .map(|(at, m, term)| format!("{m} (term {term}) at {at:.1} ms"))
        .collect();
    let _ = writeln!(
        w,
        "lease service: {} etcd leader changes; led by {}",
        s.leader_changes,
        who.join(", ")
    );
    let o = &s.lease_overrun_ms;
    if o.count > 0 {
        let _ = writeln!(
            w,
            "lease overrun (expired after last renewal + TTL): {} expired leases",
            percentiles(o)
        );
    }
}

/// The backend's request rate over the run, while faults fired and after kills, when the
/// backend counted any.
fn backend(w: &mut String, run: &Run) {
    let out = run.out;
    if out.backend_requests == 0 {
        return;
    }
    let mut line = format!(
        "backend requests: {:.1}/s over the run",
        out.backend_requests as f64 * 1000.0 / run.r.scenario.duration_ms as f64
    );
    if let Some(b) = backend_load(run.f, &out.backend_requests_by_100ms) {
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

/// The client's requests, and the load served outside start-up and fault windows when it
/// sent any.
fn client(w: &mut String, run: &Run) {
    let c = &run.out.client;
    let _ = writeln!(
        w,
        "client: {} sent, {} ok, {} not-leader, {} timed out",
        c.sent, c.ok, c.not_leader, c.timeouts
    );
    if c.sent > 0 {
        let l = &run.f.load;
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
}

/// How many violations, and the first twenty.
fn violations(w: &mut String, run: &Run) {
    let v = &run.f.violations;
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
}

/// Where to look next, when the run has something a picture shows better than lines: a
/// belief overlap, a leadership past its grant, a refused write or a violation. Every
/// report directory that holds summary.txt holds timeline.html beside it.
fn see_timeline(w: &mut String, run: &Run) {
    let f = run.f;
    let p = &f.protocol_safety;
    let worth = !f.belief.overlaps.is_empty()
        || p.past_grant_in_bounds + p.past_grant_fence_saved > 0
        || !f.rejections.is_empty()
        || !f.passed();
    if worth {
        let _ = writeln!(
            w,
            "see timeline.html in the report's directory: a lane per node shows when it believed it led, its writes and what hit it (pauses, kills, cuts); the violations and overlaps are links to their moments"
        );
    }
}

/// What a real run did differently from the scenario, or did not count.
fn real_notes(w: &mut String, run: &Run) {
    if let Some(x) = run.real {
        for n in &x.notes {
            let _ = writeln!(w, "real mode: {n}");
        }
    }
}

/// After a blank line, the command that reproduces the run (or, for a real run, runs it
/// again).
fn reproduce(w: &mut String, run: &Run) {
    let _ = writeln!(w);
    match run.real {
        None => {
            let _ = writeln!(w, "reproduce: {}", reproduce_command(run.r, run.seed));
        }
        Some(x) => {
            let _ = writeln!(
                w,
                "run again (a real run does not repeat exactly): {}",
                x.command
            );
        }
    }
}
