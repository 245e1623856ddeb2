//! The spec's acceptance criteria (its section 12), checked one by one over a
//! conformance run: the opening of `conformance.md`.
//!
//! Each criterion is a row of [`CRITERIA`]: what the spec says and the function that
//! judges it from the [`Report`], with the evidence in words. A criterion is *met*,
//! *not met* (the run shows it broken), or *not shown* (this run cannot show it either
//! way: its experiment did not run, or no trial produced what it asks to see). "Across
//! all chaos runs" reads as the fenced experiments: the runs with fencing off are the
//! counterfactual, judged by their own criterion.

use crate::contract::conform::report::{ExperimentResult, Report, Verdict};
use baton_model::checker::failover::nearest_rank;
use std::fmt::Write;

/// How a criterion stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The run shows it holds.
    Met,
    /// The run shows it broken.
    NotMet,
    /// The run cannot show it either way.
    NotShown,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Met => "met",
            Status::NotMet => "**not met**",
            Status::NotShown => "not shown",
        }
    }
}

/// One criterion of the spec and its judge.
pub struct Criterion {
    /// What the spec asks, in its words.
    pub says: &'static str,
    /// How the report stands on it, and the evidence.
    pub judge: fn(&Report) -> (Status, String),
}

/// The spec's acceptance criteria that a conformance run can judge, in its order.
pub const CRITERIA: &[Criterion] = &[
    Criterion {
        says: "leaders acting by effect always 1 and 0 double-leader-acting incidents (with the fencing-rejection log)",
        judge: one_leader_by_effect,
    },
    Criterion {
        says: "the GC-pause run passes: the woken stale leader's write is fenced out, the rejected token shown",
        judge: pause_fenced,
    },
    Criterion {
        says: "failover reported, plotted against TTL, with its bound named (TTL + an election round for a lease)",
        judge: failover_reported,
    },
    Criterion {
        says: "the sequence strictly increasing across every failover (a SQL `lag()` check over the ledger finds 0 non-increasing steps)",
        judge: sequence_increasing,
    },
    Criterion {
        says: "the run with fencing off reproduces the bug: the token is load-bearing, not decoration",
        judge: bug_reproduced,
    },
    Criterion {
        says: "every number reproducible from a committed command, scenario and seed",
        judge: reproducible,
    },
];

/// The most rejections the log lists; the rest are counted.
const LOG_ROWS: usize = 20;

/// The section, markdown.
pub fn section(r: &Report) -> String {
    let mut w = String::new();
    let _ = writeln!(w, "## The spec's acceptance criteria\n");
    let _ = writeln!(w, "Checked one by one (the spec's section 12) over the experiments below; \"across all chaos runs\" reads as the fenced experiments, since the runs with fencing off are the counterfactual.\n");
    for (i, c) in CRITERIA.iter().enumerate() {
        let (status, evidence) = (c.judge)(r);
        let _ = writeln!(w, "{}. {}: {}. {evidence}", i + 1, c.says, status.word());
    }
    rejection_log(r, &mut w);
    if let Some(s) = &r.ttl_sweep {
        let _ = writeln!(w, "\n### The TTL to pick\n\n{} (The TTL sweep, below, gives each TTL's figures and the plot.)", s.finding);
    }
    w.push('\n');
    w
}

fn fenced(r: &Report) -> impl Iterator<Item = &ExperimentResult> {
    r.experiments.iter().filter(|e| e.fencing)
}

fn experiment<'a>(r: &'a Report, name: &str) -> Option<&'a ExperimentResult> {
    r.experiments.iter().find(|e| e.name == name)
}

fn one_leader_by_effect(r: &Report) -> (Status, String) {
    let trials: Vec<_> = fenced(r).flat_map(|e| &e.trials).collect();
    if trials.is_empty() {
        return (Status::NotShown, "No fenced experiment ran.".into());
    }
    let max = trials
        .iter()
        .map(|t| t.leaders_by_effect_max)
        .max()
        .unwrap_or(0);
    let incidents: u64 = trials
        .iter()
        .map(|t| t.double_leader_acting_incidents)
        .sum();
    let rejected: usize = trials.iter().map(|t| t.fencing_rejections).sum();
    let status = if max <= 1 && incidents == 0 {
        Status::Met
    } else {
        Status::NotMet
    };
    (
        status,
        format!(
            "Over {} fenced trials: at most {max} leader(s) acting at once by effect, {incidents} double-leader-acting incident(s), {rejected} write(s) the fence rejected (the log below).",
            trials.len()
        ),
    )
}

fn pause_fenced(r: &Report) -> (Status, String) {
    let Some(e) = experiment(r, "gc-pause") else {
        return (
            Status::NotShown,
            "The gc-pause experiment did not run.".into(),
        );
    };
    let n = e.trials.len();
    if e.verdict == Verdict::Fail {
        return (
            Status::NotMet,
            format!(
                "gc-pause failed in {} of {n} trials (see what failed, below).",
                n - e.passed()
            ),
        );
    }
    let shown: Vec<String> = e
        .trials
        .iter()
        .filter_map(|t| {
            let j = t.rejections.first()?;
            Some(format!(
                "trial {}: {}'s token {} rejected below max_token {} at {:.1} ms",
                t.trial, j.node, j.token, j.max_token, j.at_ms
            ))
        })
        .collect();
    if shown.is_empty() {
        return (Status::NotShown, format!("gc-pause passed {n} of {n} trials, but in none did the woken leader write before it knew it had lost: there was nothing to fence out."));
    }
    (
        Status::Met,
        format!(
            "gc-pause passed {n} of {n} trials; the woken leader's write was fenced out in {} ({}).",
            shown.len(),
            shown.join("; ")
        ),
    )
}

fn failover_reported(r: &Report) -> (Status, String) {
    let Some(e) = experiment(r, "clean-kill") else {
        return (
            Status::NotShown,
            "The clean-kill experiment did not run.".into(),
        );
    };
    let mut all: Vec<f64> = e
        .trials
        .iter()
        .flat_map(|t| t.failover_ms.iter().copied())
        .collect();
    if all.is_empty() {
        return (Status::NotMet, "clean-kill measured no failover.".into());
    }
    all.sort_by(f64::total_cmp);
    let ceiling = e
        .failover_max_ms
        .map(|m| format!("; the scenario fails a failover above {m} ms"))
        .unwrap_or_default();
    let reported = format!(
        "Clean-kill failover median {:.0} ms (min {:.0}, max {:.0}, {} failovers) against the bound TTL {} ms + an election round{ceiling}",
        nearest_rank(&all, 50),
        all[0],
        all[all.len() - 1],
        all.len(),
        e.ttl_ms
    );
    match r.ttl_sweep.as_ref().and_then(|s| s.plot.as_ref().map(|p| (s, p))) {
        Some((s, plot)) => (
            Status::Met,
            format!(
                "{reported}. Plotted against TTL in [{plot}]({plot}) from the sweep's kills at {} (see the TTL sweep).",
                granted(s)
            ),
        ),
        None => (
            Status::NotShown,
            format!("{reported}. Not plotted against TTL: the TTL sweep did not run (`--only ttl-sweep` runs it alone)."),
        ),
    }
}

/// The sweep's TTLs as granted, for a sentence: `2, 3, 10 and 30 s`.
fn granted(s: &super::sweep_report::Sweep) -> String {
    let ttls: Vec<String> = s
        .points
        .iter()
        .map(|p| format!("{}", p.ttl_granted_ms as f64 / 1000.0))
        .collect();
    match ttls.split_last() {
        Some((last, [])) => format!("{last} s"),
        Some((last, rest)) => format!("{} and {last} s", rest.join(", ")),
        None => "no TTL".into(),
    }
}

fn sequence_increasing(r: &Report) -> (Status, String) {
    let trials: Vec<_> = fenced(r).flat_map(|e| &e.trials).collect();
    let steps: u64 = trials.iter().map(|t| t.ledger_non_increasing_steps).sum();
    let batches: u64 = trials.iter().map(|t| t.ledger_seq_batches).sum();
    let status = if steps > 0 {
        Status::NotMet
    } else if batches == 0 {
        Status::NotShown
    } else {
        Status::Met
    };
    (
        status,
        format!(
            "Over {} fenced trials' SQLite ledgers: {steps} non-increasing step(s) among {batches} sequencer batches (each trial's summary gives its own).",
            trials.len()
        ),
    )
}

fn bug_reproduced(r: &Report) -> (Status, String) {
    let runs: Vec<&ExperimentResult> = r.experiments.iter().filter(|e| e.reproduces).collect();
    if runs.is_empty() {
        return (
            Status::NotShown,
            "No experiment with fencing off that leaves a stale leader ran.".into(),
        );
    }
    let each: Vec<(String, usize)> = runs
        .iter()
        .map(|e| {
            let damaged = e
                .trials
                .iter()
                .filter(|t| t.violations.iter().any(|v| v.property.fence_stops()))
                .count();
            (
                format!("{}: {damaged} of {} trials", e.name, e.trials.len()),
                damaged,
            )
        })
        .collect();
    let words: Vec<&str> = each.iter().map(|(w, _)| w.as_str()).collect();
    if each.iter().any(|(_, d)| *d > 0) {
        return (
            Status::Met,
            format!("A stale leader's write landed with the fence off ({}): the damage the fenced runs turned away.", words.join("; ")),
        );
    }
    (
        Status::NotShown,
        format!("No stale write landed ({}): no stale leader's write reached the resource after its successor's.", words.join("; ")),
    )
}

fn reproducible(r: &Report) -> (Status, String) {
    if r.commit == "unknown" || r.commit.contains("uncommitted") {
        return (
            Status::NotMet,
            format!("The source tree was not a clean commit ({}).", r.commit),
        );
    }
    (
        Status::Met,
        format!("Baton commit {}; each trial's command (scenario, `--set`s, seed, node) is in its summary and, for a failure, in the table below.", r.commit),
    )
}

/// The fenced experiments' rejections, up to [`LOG_ROWS`].
fn rejection_log(r: &Report, w: &mut String) {
    let rows: Vec<String> = fenced(r)
        .flat_map(|e| {
            e.trials.iter().flat_map(move |t| {
                t.rejections.iter().map(move |j| {
                    format!(
                        "| {} | {} | {:.1} | {} | {} | {} |",
                        e.name, t.trial, j.at_ms, j.node, j.token, j.max_token
                    )
                })
            })
        })
        .collect();
    let _ = writeln!(w, "\n### The fencing-rejection log\n");
    if rows.is_empty() {
        let _ = writeln!(w, "The fence rejected no write in a fenced experiment.");
        return;
    }
    let _ = writeln!(w, "Every write the fence turned away in the fenced experiments: its token, below the highest the resource had accepted.\n");
    let _ = writeln!(
        w,
        "| experiment | trial | at (ms) | node | token | max_token |"
    );
    let _ = writeln!(w, "|---|---|---|---|---|---|");
    for row in rows.iter().take(LOG_ROWS) {
        let _ = writeln!(w, "{row}");
    }
    if rows.len() > LOG_ROWS {
        let _ = writeln!(
            w,
            "\nand {} more (each trial's `report.json` lists its own).",
            rows.len() - LOG_ROWS
        );
    }
}
