//! `sim matrix`: every protocol on every scenario, over a range of seeds, side by side.
//!
//! Each (scenario, protocol, seed) is one ordinary run. Runs are spread over `--jobs`
//! worker threads; each still gets its own thread and runtime, and results are put back
//! in (scenario, protocol, seed) order, so the table does not depend on `--jobs`.
//!
//! A Ctrl-C stops starting runs ([`crate::cmd::interrupt`]); the cells then sum the seeds that
//! finished, and matrix.md and matrix.json say "interrupted after N of M runs".

use crate::run::{self, RunError};
use crate::world::protocol::ProtocolName;
use baton_model::checker::failover::LatencyStats;
use baton_model::checker::Property;
use baton_model::scenario::{self, Resolved};
use serde::Serialize;
use std::fmt::Write;
use std::ops::Range;
use std::path::PathBuf;

/// What one run contributes to its cell.
#[derive(Clone, Debug)]
struct RunFacts {
    seed: u64,
    passed: bool,
    violations: Vec<Property>,
    failover_ms: Vec<f64>,
    election_latency_ms: Vec<f64>,
    overlaps: usize,
    longest_overlap_ms: f64,
    incidents: u64,
    reused: u64,
    rejections: usize,
    backend_requests: u64,
    simulated_ms: u64,
    safety: baton_model::checker::protocol_safety::Outcome,
}

/// One cell of the matrix: a protocol on a scenario, over all seeds.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// The scenario's name.
    pub scenario: String,
    /// The protocol.
    pub protocol: &'static str,
    /// Seeds run.
    pub seeds: u64,
    /// Seeds whose verdict was pass.
    pub passed: u64,
    /// Properties that failed, with the number of seeds each failed in.
    pub failed_properties: Vec<(String, u64)>,
    /// Every seed run: its verdict and failed properties.
    pub runs: Vec<SeedRun>,
    /// The command that reruns the first failing seed with its full report (none when
    /// every seed passed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerun: Option<String>,
    /// Failover over every seed's failovers.
    pub failover_ms: LatencyStats,
    /// Election latency over every seed's elections.
    pub election_latency_ms: LatencyStats,
    /// By-belief overlap windows, summed over seeds.
    pub belief_overlaps: usize,
    /// The longest by-belief overlap window.
    pub longest_belief_overlap_ms: f64,
    /// Double-leader-acting incidents, summed over seeds.
    pub by_effect_incidents: u64,
    /// Seeds with at least one incident or reused sequence number.
    pub seeds_with_incidents: u64,
    /// Fencing rejections, summed over seeds.
    pub fencing_rejections: usize,
    /// Backend requests per simulated second, over all seeds.
    pub backend_requests_per_s: f64,
    /// The protocol's failover bound for this scenario.
    pub failover_bound: String,
    /// Seeds by protocol-safety outcome: protocol-safe, fence-saved, unsafe.
    pub safety_outcomes: [u64; 3],
}

/// One seed of a cell.
#[derive(Clone, Debug, Serialize)]
pub struct SeedRun {
    /// The seed.
    pub seed: u64,
    /// "pass" or "fail".
    pub verdict: &'static str,
    /// The properties that failed, sorted (empty for a pass).
    pub failed: Vec<Property>,
}

/// What a matrix run gave: the cells and how many of the planned runs finished.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// One per (scenario, protocol), in that order; a cell may hold fewer seeds than
    /// planned (or none) after an interrupt.
    pub cells: Vec<Cell>,
    /// Runs that finished.
    pub runs_done: u64,
    /// Runs planned.
    pub runs_planned: u64,
}

impl Outcome {
    /// True when a Ctrl-C left runs out.
    pub fn interrupted(&self) -> bool {
        self.runs_done < self.runs_planned
    }
}

/// Everything `sim matrix` was asked to do.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Scenario files.
    pub scenarios: Vec<PathBuf>,
    /// Protocols, in report order.
    pub protocols: Vec<ProtocolName>,
    /// Seeds.
    pub seeds: Range<u64>,
    /// Overrides applied to every run.
    pub set: Vec<String>,
    /// Worker threads.
    pub jobs: usize,
}

/// matrix.json: the command, the seeds, how many runs were planned and done, and every
/// cell with its per-seed verdicts.
pub fn json(plan: &Plan, command: &str, outcome: &Outcome) -> String {
    let json = serde_json::json!({
        "command": command,
        "seeds": [plan.seeds.start, plan.seeds.end],
        "runs_planned": outcome.runs_planned,
        "runs_done": outcome.runs_done,
        "interrupted": outcome.interrupted(),
        "cells": outcome.cells,
    });
    serde_json::to_string_pretty(&json).expect("cells serialize") + "\n"
}

/// Loads every (scenario, protocol) pair; the first bad one is returned as an error.
pub fn resolve(plan: &Plan) -> Result<Vec<Resolved>, scenario::ScenarioError> {
    let mut out = vec![];
    for path in &plan.scenarios {
        for p in &plan.protocols {
            let mut set = vec![format!("protocol={}", p.name())];
            set.extend(plan.set.iter().cloned());
            out.push(scenario::load(path, &set)?);
        }
    }
    Ok(out)
}

fn facts(r: &Resolved, seed: u64) -> Result<RunFacts, RunError> {
    let a = run::run_unrecorded(r, seed)?;
    let f = &a.findings;
    let violations = f.signature();
    let report: serde_json::Value = serde_json::from_str(&a.report_json).expect("our own JSON");
    Ok(RunFacts {
        seed,
        passed: a.passed,
        violations,
        failover_ms: f.failover_ms.clone(),
        election_latency_ms: f.election_latencies_ms.clone(),
        overlaps: f.belief.overlaps.len(),
        longest_overlap_ms: f
            .belief
            .overlaps
            .iter()
            .map(|o| o.to_ms - o.from_ms)
            .fold(0.0, f64::max),
        incidents: f.double_leader_acting_incidents,
        reused: f.sequence.reused + f.sequence.client_reused,
        rejections: f.rejections.len(),
        backend_requests: report["backend_requests"].as_u64().unwrap_or(0),
        simulated_ms: r.scenario.duration_ms,
        safety: f.protocol_safety.outcome,
    })
}

/// Runs the plan; cells come back in (scenario, protocol) order. Each finished run is
/// reported to `progress`; after a Ctrl-C no run starts, and the cells hold the seeds
/// that finished.
pub fn run(
    plan: &Plan,
    resolved: &[Resolved],
    progress: &dyn crate::cmd::progress::Progress,
) -> Result<Outcome, RunError> {
    let jobs: Vec<(usize, u64)> = (0..resolved.len())
        .flat_map(|i| plan.seeds.clone().map(move |s| (i, s)))
        .collect();
    let results = crate::cmd::pool::map_ordered_until(
        jobs.len(),
        plan.jobs,
        &crate::cmd::interrupt::stopping,
        |k| {
            let (i, seed) = jobs[k];
            let r = facts(&resolved[i], seed);
            if r.is_ok() || !crate::cmd::interrupt::abandoning() {
                progress.run_done(r.as_ref().is_ok_and(|f| f.passed));
            }
            r
        },
    );
    let per_pair = (plan.seeds.end - plan.seeds.start) as usize;
    let mut cells = vec![];
    let mut runs_done = 0;
    for (i, chunk) in results.chunks(per_pair).enumerate() {
        let r = &resolved[i];
        let mut runs: Vec<RunFacts> = vec![];
        for result in chunk.iter().flatten() {
            match result {
                Ok(f) => runs.push(f.clone()),
                // A run abandoned by a second Ctrl-C did not finish: it is not a result.
                Err(RunError::Abandoned) => {}
                Err(e) => return Err(e.clone()),
            }
        }
        runs_done += runs.len() as u64;
        cells.push(cell(r, &runs));
    }
    Ok(Outcome {
        cells,
        runs_done,
        runs_planned: jobs.len() as u64,
    })
}

fn cell(r: &Resolved, runs: &[RunFacts]) -> Cell {
    let mut failed: std::collections::BTreeMap<String, u64> = Default::default();
    for run in runs {
        for v in &run.violations {
            *failed.entry(v.to_string()).or_default() += 1;
        }
    }
    let all = |f: fn(&RunFacts) -> &Vec<f64>| {
        runs.iter()
            .flat_map(|x| f(x).iter().copied())
            .collect::<Vec<f64>>()
    };
    let simulated_ms: u64 = runs.iter().map(|x| x.simulated_ms).sum();
    Cell {
        scenario: r.scenario.name.clone(),
        protocol: r.scenario.protocol.name(),
        seeds: runs.len() as u64,
        passed: runs.iter().filter(|x| x.passed).count() as u64,
        failed_properties: failed.into_iter().collect(),
        runs: runs
            .iter()
            .map(|x| SeedRun {
                seed: x.seed,
                verdict: if x.passed { "pass" } else { "fail" },
                failed: x.violations.clone(),
            })
            .collect(),
        rerun: runs
            .iter()
            .find(|x| !x.passed)
            .map(|x| baton_model::render::report::reproduce_command(r, x.seed)),
        failover_ms: LatencyStats::of(&all(|x| &x.failover_ms)),
        election_latency_ms: LatencyStats::of(&all(|x| &x.election_latency_ms)),
        belief_overlaps: runs.iter().map(|x| x.overlaps).sum(),
        longest_belief_overlap_ms: runs
            .iter()
            .map(|x| x.longest_overlap_ms)
            .fold(0.0, f64::max),
        by_effect_incidents: runs.iter().map(|x| x.incidents).sum(),
        safety_outcomes: {
            use baton_model::checker::protocol_safety::Outcome as O;
            let n = |o: O| runs.iter().filter(|x| x.safety == o).count() as u64;
            [n(O::ProtocolSafe), n(O::FenceSaved), n(O::Unsafe)]
        },
        seeds_with_incidents: runs
            .iter()
            .filter(|x| x.incidents > 0 || x.reused > 0)
            .count() as u64,
        fencing_rejections: runs.iter().map(|x| x.rejections).sum(),
        backend_requests_per_s: runs.iter().map(|x| x.backend_requests).sum::<u64>() as f64
            * 1000.0
            / simulated_ms.max(1) as f64,
        failover_bound: {
            let b = r.protocol.failover_bound();
            format!("{} ms: {}", b.ms, b.formula)
        },
    }
}

fn ms(v: f64) -> String {
    format!("{v:.0}")
}

/// The failing seeds of a cell, for its row: the first few, then how many more.
fn failing_seeds(c: &Cell) -> String {
    const SHOWN: usize = 5;
    let failing: Vec<String> = c
        .runs
        .iter()
        .filter(|r| r.verdict != "pass")
        .map(|r| r.seed.to_string())
        .collect();
    if failing.is_empty() {
        return "-".into();
    }
    let mut s = failing
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if failing.len() > SHOWN {
        let _ = write!(s, " (+{} more)", failing.len() - SHOWN);
    }
    s
}

/// matrix.md: one table, a row per (scenario, protocol), then the command that reruns
/// each failing cell's first failing seed, then the bounds.
pub fn markdown(plan: &Plan, command: &str, outcome: &Outcome) -> String {
    let cells = &outcome.cells;
    let mut t = String::new();
    let _ = writeln!(t, "# Baton protocol matrix\n");
    if outcome.interrupted() {
        let _ = writeln!(
            t,
            "**Interrupted after {} of {} runs** (Ctrl-C): each cell sums the seeds that finished; a cell with none says `not run`.\n",
            outcome.runs_done, outcome.runs_planned
        );
    }
    let _ = writeln!(t, "Made by `{command}`.");
    let _ = writeln!(
        t,
        "Seeds {}..{} per cell. Times in simulated ms. Incidents: double-leader-acting incidents summed over seeds (seeds with an incident or a reused sequence number in brackets). See docs/src/matrix.md.\n",
        plan.seeds.start, plan.seeds.end
    );
    let _ = writeln!(t, "| scenario | protocol | pass | failover p50 | failover p99 | election p99 | belief overlaps (longest) | incidents (seeds) | fencing rejections | backend req/s | safe / fence-saved / unsafe | failed properties | failing seeds |");
    let _ = writeln!(t, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for c in cells {
        if c.seeds == 0 {
            let _ = writeln!(
                t,
                "| {} | {} | not run | - | - | - | - | - | - | - | - | - | - |",
                c.scenario, c.protocol
            );
            continue;
        }
        let failed: Vec<String> = c
            .failed_properties
            .iter()
            .map(|(p, n)| format!("{p} ({n})"))
            .collect();
        let _ = writeln!(
            t,
            "| {} | {} | {}/{} | {} | {} | {} | {} ({}) | {} ({}) | {} | {:.1} | {} / {} / {} | {} | {} |",
            c.scenario,
            c.protocol,
            c.passed,
            c.seeds,
            if c.failover_ms.count > 0 {
                ms(c.failover_ms.p50)
            } else {
                "-".into()
            },
            if c.failover_ms.count > 0 {
                ms(c.failover_ms.p99)
            } else {
                "-".into()
            },
            if c.election_latency_ms.count > 0 {
                ms(c.election_latency_ms.p99)
            } else {
                "-".into()
            },
            c.belief_overlaps,
            ms(c.longest_belief_overlap_ms),
            c.by_effect_incidents,
            c.seeds_with_incidents,
            c.fencing_rejections,
            c.backend_requests_per_s,
            c.safety_outcomes[0],
            c.safety_outcomes[1],
            c.safety_outcomes[2],
            if failed.is_empty() {
                "-".into()
            } else {
                failed.join(", ")
            },
            failing_seeds(c),
        );
    }
    let reruns: Vec<&String> = cells.iter().filter_map(|c| c.rerun.as_ref()).collect();
    if !reruns.is_empty() {
        let _ = writeln!(
            t,
            "\n## Rerun a failing seed\n\nEach failing cell's first failing seed, with its full report (`matrix.json` lists every seed's verdict and failed properties):\n"
        );
        for r in reruns {
            let _ = writeln!(t, "- `{r}`");
        }
    }
    let _ = writeln!(t, "\n## Failover bounds\n");
    let mut seen = std::collections::BTreeSet::new();
    for c in cells {
        if seen.insert((c.protocol, c.failover_bound.clone())) {
            let _ = writeln!(t, "- {} ({}): {}", c.protocol, c.scenario, c.failover_bound);
        }
    }
    t
}
