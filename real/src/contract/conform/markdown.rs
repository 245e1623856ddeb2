//! `conformance.md`, rendered from the [`Report`]: the acceptance criteria first
//! ([`crate::contract::conform::findings`]), then the experiments' table, what failed
//! and how to reproduce it, the double writes the runs with fencing off reproduced, the
//! spec's figures, the experiments, and what a run of a foreign node cannot see.

use crate::contract::backends::ContractBackend;
use crate::contract::conform::report::{ExperimentResult, Report, TrialResult};
use crate::contract::conform::spec::SpecCheck;
use baton_model::checker::failover::nearest_rank;
use baton_model::checker::wins::STARVED_MIN_ELECTIONS;
use std::fmt::Write;

impl Report {
    /// `conformance.md`.
    pub fn markdown(&self) -> String {
        let mut w = String::new();
        self.head(&mut w);
        w.push_str(&crate::contract::conform::findings::section(self));
        self.table(&mut w);
        self.failures(&mut w);
        self.spec_figures(&mut w);
        super::sweep_report::markdown(&mut w, self.ttl_sweep.as_ref());
        self.experiments_list(&mut w);
        let _ = writeln!(w, "\n## What a run of a foreign node cannot see\n");
        for n in crate::contract::outside_view::NOTES {
            let _ = writeln!(w, "- {}.", capitalize(n));
        }
        w
    }

    fn head(&self, w: &mut String) {
        let _ = writeln!(
            w,
            "# Conformance to Baton's node contract v{}\n",
            crate::contract::rules::VERSION
        );
        let _ = writeln!(
            w,
            "- node: `--node-cmd {}`",
            baton_model::render::shell::quote(&self.node_cmd)
        );
        let _ = writeln!(w, "- command: `{}`", self.command);
        let _ = writeln!(
            w,
            "- Baton commit: {} (the source tree the command ran from)",
            self.commit
        );
        let _ = writeln!(
            w,
            "- contract: [docs/src/node-contract.md]({}docs/src/node-contract.md); backend: {} on 127.0.0.1, started and removed per trial",
            self.root,
            ContractBackend::parse(&self.backend)
                .map(ContractBackend::server)
                .unwrap_or(&self.backend)
        );
        let _ = writeln!(
            w,
            "- {} trial(s) per experiment, {} at a time (each with its own backend, ports and directories); wall time {:.1} min{}",
            self.trials_per_experiment,
            self.jobs,
            self.wall_ms as f64 / 60_000.0,
            if self.interrupted {
                " (interrupted: the experiments below finished)"
            } else {
                ""
            }
        );
        let _ = writeln!(w, "\n**{}**\n", self.overall());
    }

    fn table(&self, w: &mut String) {
        let _ = writeln!(w, "## Experiments\n");
        let _ = writeln!(w, "Failover and election latency: median (min-max, count) over every trial's, in ms. Beliefs: the most nodes the polls saw believing they led at once. Trials: each one's summary, and its timeline where it was kept (the first trial of each experiment, and every trial that failed).\n");
        let _ = writeln!(w, "| experiment | fencing | verdict | trials | failover | election latency | fencing rejections | double-leader incidents | beliefs max | protocol safety | trials |");
        let _ = writeln!(w, "|---|---|---|---|---|---|---|---|---|---|---|");
        for e in &self.experiments {
            let links: Vec<String> = e
                .trials
                .iter()
                .map(|t| match &t.timeline {
                    Some(page) => format!("[{}]({}) ([timeline]({page}))", t.trial, t.summary),
                    None => format!("[{}]({})", t.trial, t.summary),
                })
                .collect();
            let _ = writeln!(
                w,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                e.name,
                if e.fencing { "on" } else { "off" },
                e.verdict.word(),
                e.trials_word(),
                e.pooled(|t| &t.failover_ms),
                e.pooled(|t| &t.election_latencies_ms),
                e.trials.iter().map(|t| t.fencing_rejections).sum::<usize>(),
                e.trials
                    .iter()
                    .map(|t| t.double_leader_acting_incidents)
                    .sum::<u64>(),
                e.trials
                    .iter()
                    .map(|t| t.leaders_by_belief_max)
                    .max()
                    .unwrap_or(0),
                e.safety(),
                links.join(", ")
            );
        }
    }

    fn failures(&self, w: &mut String) {
        let _ = writeln!(w, "\n## What failed, and how to reproduce it\n");
        let failed = self.trials_where("fail");
        if failed.is_empty() {
            let _ = writeln!(w, "Nothing failed.");
        } else {
            let _ = writeln!(w, "One row per failed trial (a live run does not repeat exactly: the command runs the same experiment again, with the same seed).\n");
            trial_rows(w, &failed);
        }
        if !self.experiments.iter().any(|e| e.reproduces) {
            return;
        }
        let _ = writeln!(w, "\n## What the runs with fencing off reproduced\n");
        let shown = self.trials_where("reproduced");
        if shown.is_empty() {
            let _ = writeln!(
                w,
                "No trial with the fence off let a stale leader's write land (see criterion 5)."
            );
            return;
        }
        let _ = writeln!(w, "The damage the fence exists to stop, shown by a trial with the fence off (the spec's experiment 5): expected of any lease, not a failure of the node. The same experiment with the fence on turned those writes away.\n");
        trial_rows(w, &shown);
    }

    /// Every trial whose verdict is `verdict`, with its experiment.
    fn trials_where(&self, verdict: &str) -> Vec<(&ExperimentResult, &TrialResult)> {
        self.experiments
            .iter()
            .flat_map(|e| {
                e.trials
                    .iter()
                    .filter(move |t| t.verdict == verdict)
                    .map(move |t| (e, t))
            })
            .collect()
    }

    fn spec_figures(&self, w: &mut String) {
        let items: Vec<String> = self
            .experiments
            .iter()
            .filter_map(|e| figures(e.check, e))
            .collect();
        if items.is_empty() {
            return;
        }
        let _ = writeln!(w, "\n## The spec's figures\n");
        for i in items {
            let _ = writeln!(w, "{i}");
        }
    }

    fn experiments_list(&self, w: &mut String) {
        let _ = writeln!(w, "\n## The experiments\n");
        for e in &self.experiments {
            let _ = writeln!(
                w,
                "- **{}** ([{}]({}{})){}: {}.",
                e.name,
                e.file,
                self.root,
                e.file,
                if e.fencing { "" } else { ", fencing off" },
                e.does
            );
        }
    }
}

/// Every trial's values of `each`, pooled and sorted.
fn pooled_sorted(e: &ExperimentResult, each: impl Fn(&TrialResult) -> &[f64]) -> Vec<f64> {
    let mut all: Vec<f64> = e.trials.iter().flat_map(|t| each(t).to_vec()).collect();
    all.sort_by(f64::total_cmp);
    all
}

/// The spec's figures of experiment `e`, a markdown list item; `None` when it has none.
fn figures(check: SpecCheck, e: &ExperimentResult) -> Option<String> {
    let mut w = String::new();
    match check {
        SpecCheck::None => return None,
        SpecCheck::Churn => {
            let lat = pooled_sorted(e, |t| &t.election_latencies_ms);
            let p99 = if lat.is_empty() {
                "none (no election)".to_string()
            } else {
                format!(
                    "{:.1} ms over {} elections",
                    nearest_rank(&lat, 99),
                    lat.len()
                )
            };
            let changes: Vec<String> = e
                .trials
                .iter()
                .map(|t| t.leader_changes.to_string())
                .collect();
            let starved: Vec<&str> = e
                .trials
                .iter()
                .flat_map(|t| t.starved.iter().map(String::as_str))
                .collect();
            let _ = write!(
                w,
                "- **{}**: leader changes per trial {}; election latency p99 {p99}; backend requests per second during the storm: not measured (real mode counts no backend's requests, on any backend); one winner per round: {} election_safety violations, at most {} node(s) believing they led at once; starved nodes (no win in {STARVED_MIN_ELECTIONS}+ elections): {}.",
                e.name,
                changes.join(", "),
                e.trials.iter().map(|t| t.election_safety_violations).sum::<usize>(),
                e.trials.iter().map(|t| t.leaders_by_belief_max).max().unwrap_or(0),
                if starved.is_empty() { "none".to_string() } else { starved.join(", ") },
            );
        }
        SpecCheck::StepDown => {
            let gaps = pooled_sorted(e, |t| &t.handoff_gaps_ms);
            let range = match (gaps.first(), gaps.last()) {
                (Some(lo), Some(hi)) => {
                    format!("{lo:.1} to {hi:.1} ms over {} handover(s)", gaps.len())
                }
                _ => "none (no handover)".to_string(),
            };
            let negative = gaps.iter().filter(|g| **g < 0.0).count();
            let _ = write!(
                w,
                "- **{}**: gap from the old leader's stop to the new leader's first write {range}; negative (the spec: never): {negative}.",
                e.name
            );
        }
    }
    Some(w)
}

/// A table of `trials`: what broke, the first violation, the timeline and the command.
fn trial_rows(w: &mut String, trials: &[(&ExperimentResult, &TrialResult)]) {
    let _ = writeln!(
        w,
        "| experiment | trial (seed) | properties | first violation | timeline | reproduce |"
    );
    let _ = writeln!(w, "|---|---|---|---|---|---|");
    for (e, t) in trials {
        let first = t
            .violations
            .first()
            .map(|v| format!("{} at {:.1} ms: {}", v.property, v.at_ms, v.detail))
            .or_else(|| {
                let s = t.spec_failures.first()?;
                Some(format!("{}: {}", s.criterion, s.detail))
            })
            .unwrap_or_default();
        let page = t
            .timeline
            .as_ref()
            .map(|p| format!("[timeline.html]({p})"))
            .unwrap_or_else(|| "not kept".into());
        let _ = writeln!(
            w,
            "| {} | {} ({}) | {} | {} | {page} | `{}` |",
            e.name,
            t.trial,
            t.seed,
            t.properties().join(", "),
            first.replace('|', "\\|"),
            t.reproduce.replace('|', "\\|")
        );
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
