//! The conformance report of `conform` ([`crate::contract::conform`]): `conformance.json` (the
//! [`Report`], serialized) and `conformance.md`, rendered from it.
//!
//! Per experiment: its verdict (pass when every trial passed; not applicable for a
//! step-down when the nodes do not serve `POST /resign`), the failovers and election
//! latencies pooled over its trials (median, min and max, nearest rank), fencing
//! rejections and double-leader incidents summed, the most nodes that believed they led
//! at once as the polls saw it, and protocol safety's outcome per trial. Then a verdict
//! table with one row per failed trial: the properties that failed, the first
//! violation, and the command that reproduces the trial. The churn and step-down
//! experiments add the spec's own criteria and figures ([`crate::contract::conform::spec`]):
//! a trial that breaks one fails, and the criterion is listed with the properties.

use crate::contract::backends::ContractBackend;
use crate::contract::conform::spec::{self, SpecCheck, SpecFailure};
use crate::trial::{Trial, TrialSpec};
use baton_model::checker::failover::nearest_rank;
use baton_model::checker::wins::STARVED_MIN_ELECTIONS;
use baton_model::checker::Violation;
use serde::Serialize;
use std::fmt::Write;
use std::path::Path;

/// An experiment's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every trial passed.
    Pass,
    /// A trial failed.
    Fail,
    /// The node cannot take part (a step-down without `POST /resign`).
    NotApplicable,
}

impl Verdict {
    fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::NotApplicable => "n/a",
        }
    }
}

/// One trial's figures.
#[derive(Clone, Debug, Serialize)]
pub struct TrialResult {
    /// Which trial (1-based).
    pub trial: usize,
    /// Its seed.
    pub seed: u64,
    /// `pass` or `fail`.
    pub verdict: &'static str,
    /// Each failover, ms.
    pub failover_ms: Vec<f64>,
    /// Each election's latency, ms.
    pub election_latencies_ms: Vec<f64>,
    /// Writes the fence rejected.
    pub fencing_rejections: usize,
    /// Double-leader-acting incidents.
    pub double_leader_acting_incidents: u64,
    /// The most nodes believing they led at once (as polled).
    pub leaders_by_belief_max: u32,
    /// protocol-safe, fence-saved or unsafe.
    pub protocol_safety: &'static str,
    /// What failed.
    pub violations: Vec<Violation>,
    /// The spec's criteria it broke beyond the checkers' (see [`spec`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub spec_failures: Vec<SpecFailure>,
    /// Each handover's gap, old leader's stop to new leader's first write, ms.
    pub handoff_gaps_ms: Vec<f64>,
    /// How often leadership changed hands (wins after the first).
    pub leader_changes: u64,
    /// `election_safety` violations: two winners of one round.
    pub election_safety_violations: usize,
    /// Nodes that never won although running through 10+ elections.
    pub starved: Vec<String>,
    /// Whether the nodes serve the optional `POST /resign` (the preflight's answer).
    pub resign_served: bool,
    /// Its summary, relative to the report's directory.
    pub summary: String,
    /// Its timeline page, relative to the report's directory, when it was kept.
    pub timeline: Option<String>,
    /// The command that runs it again.
    pub reproduce: String,
    /// Its wall time.
    pub wall_ms: u64,
}

impl TrialResult {
    /// The figures of trial `t` of `spec`, whose report is in `tdir` under `dir`, with the
    /// spec's criteria `check` judged.
    pub fn of(
        spec: &TrialSpec,
        t: &Trial,
        dir: &Path,
        tdir: &Path,
        check: SpecCheck,
    ) -> TrialResult {
        let f = &t.artifacts.findings;
        let spec_failures = check.failures(f);
        let rel = |file: &str| {
            tdir.join(file)
                .strip_prefix(dir)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| tdir.join(file).display().to_string())
        };
        TrialResult {
            trial: spec.trial,
            seed: spec.seed,
            verdict: if t.artifacts.passed && spec_failures.is_empty() {
                "pass"
            } else {
                "fail"
            },
            failover_ms: f.failover_ms.clone(),
            election_latencies_ms: f.election_latencies_ms.clone(),
            fencing_rejections: f.rejections.len(),
            double_leader_acting_incidents: f.double_leader_acting_incidents,
            leaders_by_belief_max: f.belief.max,
            protocol_safety: f.protocol_safety.outcome.name(),
            violations: f.violations.clone(),
            spec_failures,
            handoff_gaps_ms: f.handoff_gaps.iter().map(|g| g.gap_ms).collect(),
            leader_changes: f.elections.leader_changes,
            election_safety_violations: spec::election_safety_violations(f),
            starved: f
                .elections
                .starved
                .iter()
                .map(ToString::to_string)
                .collect(),
            resign_served: t.preflight.as_ref().is_some_and(|p| p.resign_served),
            summary: rel("summary.txt"),
            timeline: tdir
                .join("timeline.html")
                .is_file()
                .then(|| rel("timeline.html")),
            reproduce: spec.command.clone(),
            wall_ms: t.wall_ms,
        }
    }

    /// One line for the terminal.
    pub fn line(&self, experiment: &str) -> String {
        let failover: Vec<String> = self.failover_ms.iter().map(|f| format!("{f:.0}")).collect();
        let mut l = format!(
            "{experiment} trial {} (seed {}): {}, failover {} ms, {} fencing rejections, {} double-leader incidents, {}",
            self.trial,
            self.seed,
            self.verdict.to_uppercase(),
            if failover.is_empty() { "none".into() } else { failover.join(", ") },
            self.fencing_rejections,
            self.double_leader_acting_incidents,
            self.protocol_safety
        );
        if !self.violations.is_empty() || !self.spec_failures.is_empty() {
            let _ = write!(l, "; failed: {}", self.properties().join(", "));
        }
        l
    }

    /// The properties and the spec's criteria that failed, each once.
    fn properties(&self) -> Vec<&'static str> {
        let mut p: Vec<&'static str> = self
            .violations
            .iter()
            .map(|v| v.property.name())
            .chain(self.spec_failures.iter().map(|s| s.criterion))
            .collect();
        p.sort();
        p.dedup();
        p
    }
}

/// One experiment's trials and verdict.
#[derive(Clone, Debug, Serialize)]
pub struct ExperimentResult {
    /// `clean-kill`, `clean-kill-unfenced`, ...
    pub name: String,
    /// Its scenario file.
    pub file: String,
    /// What it does.
    pub does: String,
    /// Whether the fence was on.
    pub fencing: bool,
    /// The spec's criteria and figures it adds.
    #[serde(skip)]
    pub check: SpecCheck,
    /// Its verdict.
    pub verdict: Verdict,
    /// Its trials.
    pub trials: Vec<TrialResult>,
}

impl ExperimentResult {
    /// Sets the verdict from the trials (see the module doc).
    pub fn judge(&mut self, needs_resign: bool) {
        self.verdict = if needs_resign && self.trials.iter().any(|t| !t.resign_served) {
            Verdict::NotApplicable
        } else if self.trials.iter().all(|t| t.verdict == "pass") {
            Verdict::Pass
        } else {
            Verdict::Fail
        };
    }

    fn pooled(&self, each: impl Fn(&TrialResult) -> &[f64]) -> String {
        let mut all: Vec<f64> = self.trials.iter().flat_map(|t| each(t).to_vec()).collect();
        if all.is_empty() {
            return "none".into();
        }
        all.sort_by(f64::total_cmp);
        format!(
            "{:.0} ({:.0}-{:.0}, {})",
            nearest_rank(&all, 50),
            all[0],
            all[all.len() - 1],
            all.len()
        )
    }

    fn safety(&self) -> String {
        let mut counts: Vec<(&str, usize)> = vec![];
        for t in &self.trials {
            match counts.iter_mut().find(|(n, _)| *n == t.protocol_safety) {
                Some((_, c)) => *c += 1,
                None => counts.push((t.protocol_safety, 1)),
            }
        }
        counts
            .iter()
            .map(|(n, c)| format!("{c} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn passed(&self) -> usize {
        self.trials.iter().filter(|t| t.verdict == "pass").count()
    }
}

/// The whole report (`conformance.json`).
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The command that made it.
    pub command: String,
    /// The node's command template.
    pub node_cmd: String,
    /// The backend the nodes elected on (`etcd`, `redis`, `zookeeper`, `postgres`).
    pub backend: String,
    /// Baton's commit (with "plus uncommitted changes" when the code differs from it).
    pub commit: String,
    /// The way from the report's directory to the source tree, for links.
    #[serde(skip)]
    pub root: String,
    /// Trials per experiment.
    pub trials_per_experiment: u64,
    /// Wall time so far.
    pub wall_ms: u64,
    /// Each experiment run so far.
    pub experiments: Vec<ExperimentResult>,
    /// Ctrl-C stopped it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// The TTL sweep's figures, when it ran ([`crate::contract::conform::sweep`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_sweep: Option<super::sweep_report::Sweep>,
}

impl Report {
    /// `PASS: ...` or `FAIL: ...`, one line.
    pub fn overall(&self) -> String {
        let failed: Vec<&str> = self
            .experiments
            .iter()
            .filter(|e| e.verdict == Verdict::Fail)
            .map(|e| e.name.as_str())
            .collect();
        let na = self
            .experiments
            .iter()
            .filter(|e| e.verdict == Verdict::NotApplicable)
            .count();
        let n = self.experiments.len();
        let passed = n - failed.len() - na;
        let na = if na > 0 {
            format!(", {na} not applicable")
        } else {
            String::new()
        };
        if failed.is_empty() {
            format!("PASS: {passed} of {n} experiments passed{na}")
        } else {
            format!(
                "FAIL: {} of {n} experiments failed ({}){na}",
                failed.len(),
                failed.join(", ")
            )
        }
    }

    /// The experiments' verdicts, one line each, for the terminal.
    pub fn verdict_lines(&self) -> String {
        let mut out = String::new();
        for e in &self.experiments {
            let _ = writeln!(
                out,
                "{:<28} {:<4} {}/{} trials passed, failover ms {}, {}",
                e.name,
                e.verdict.word(),
                e.passed(),
                e.trials.len(),
                e.pooled(|t| &t.failover_ms),
                e.safety()
            );
        }
        out
    }

    /// `conformance.md`.
    pub fn markdown(&self) -> String {
        let mut w = String::new();
        self.head(&mut w);
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
            "- {} trial(s) per experiment; wall time {:.1} min{}",
            self.trials_per_experiment,
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
        let _ = writeln!(w, "| experiment | fencing | verdict | trials passed | failover | election latency | fencing rejections | double-leader incidents | beliefs max | protocol safety | trials |");
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
                "| {} | {} | {} | {}/{} | {} | {} | {} | {} | {} | {} | {} |",
                e.name,
                if e.fencing { "on" } else { "off" },
                e.verdict.word(),
                e.passed(),
                e.trials.len(),
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
        let failed: Vec<(&ExperimentResult, &TrialResult)> = self
            .experiments
            .iter()
            .filter(|e| e.verdict == Verdict::Fail)
            .flat_map(|e| {
                e.trials
                    .iter()
                    .filter(|t| t.verdict == "fail")
                    .map(move |t| (e, t))
            })
            .collect();
        if failed.is_empty() {
            let _ = writeln!(w, "Nothing failed.");
            return;
        }
        let _ = writeln!(w, "One row per failed trial (a live run does not repeat exactly: the command runs the same experiment again, with the same seed).\n");
        let _ = writeln!(
            w,
            "| experiment | trial (seed) | properties that failed | first violation | reproduce |"
        );
        let _ = writeln!(w, "|---|---|---|---|---|");
        for (e, t) in failed {
            let first = t
                .violations
                .first()
                .map(|v| format!("{} at {:.1} ms: {}", v.property, v.at_ms, v.detail))
                .or_else(|| {
                    let s = t.spec_failures.first()?;
                    Some(format!("{}: {}", s.criterion, s.detail))
                })
                .unwrap_or_default();
            let _ = writeln!(
                w,
                "| {} | {} ({}) | {} | {} | `{}` |",
                e.name,
                t.trial,
                t.seed,
                t.properties().join(", "),
                first.replace('|', "\\|"),
                t.reproduce.replace('|', "\\|")
            );
        }
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

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: a report built by hand; its verdicts follow the trials (a step-down
    //! without `POST /resign` is not applicable), and its markdown names every failed
    //! trial's property and reproduce command.
    use super::*;

    fn trial(verdict: &'static str, resign_served: bool) -> TrialResult {
        TrialResult {
            trial: 1,
            seed: 0,
            verdict,
            failover_ms: vec![2100.0],
            election_latencies_ms: vec![12.0],
            fencing_rejections: 1,
            double_leader_acting_incidents: u64::from(verdict == "fail"),
            leaders_by_belief_max: 2,
            protocol_safety: if verdict == "fail" { "unsafe" } else { "fence-saved" },
            violations: if verdict == "fail" {
                vec![Violation {
                    property: baton_model::checker::Property::DoubleLeaderActing,
                    at_ms: 8512.3,
                    detail: "n1 acted with stale token 5 after token 7 was accepted".into(),
                }]
            } else {
                vec![]
            },
            spec_failures: vec![],
            handoff_gaps_ms: vec![25.0],
            leader_changes: 1,
            election_safety_violations: 0,
            starved: vec![],
            resign_served,
            summary: "x/trial-1/summary.txt".into(),
            timeline: Some("x/trial-1/timeline.html".into()),
            reproduce: "sim real scenarios/conform/gc-pause.toml --seed 0 --set fencing=false --node-cmd 'n --id {id}'".into(),
            wall_ms: 20_000,
        }
    }

    fn experiment(name: &str, trials: Vec<TrialResult>, needs_resign: bool) -> ExperimentResult {
        let mut e = ExperimentResult {
            name: name.into(),
            file: "scenarios/conform/x.toml".into(),
            does: "something".into(),
            fencing: !name.ends_with("unfenced"),
            check: SpecCheck::None,
            verdict: Verdict::Pass,
            trials,
        };
        e.judge(needs_resign);
        e
    }

    #[test]
    fn verdicts_follow_the_trials_and_failures_are_reproducible() {
        let r = Report {
            command: "sim conform --node-cmd 'n --id {id}'".into(),
            node_cmd: "n --id {id}".into(),
            backend: "redis".into(),
            commit: "abc1234".into(),
            root: "../../".into(),
            trials_per_experiment: 1,
            wall_ms: 60_000,
            experiments: vec![
                experiment("gc-pause", vec![trial("pass", true)], false),
                experiment("gc-pause-unfenced", vec![trial("fail", true)], false),
                experiment("graceful-stepdown", vec![trial("fail", false)], true),
            ],
            interrupted: false,
            ttl_sweep: None,
        };
        let v: Vec<Verdict> = r.experiments.iter().map(|e| e.verdict).collect();
        assert_eq!(v, [Verdict::Pass, Verdict::Fail, Verdict::NotApplicable]);
        assert_eq!(
            r.overall(),
            "FAIL: 1 of 3 experiments failed (gc-pause-unfenced), 1 not applicable"
        );
        let md = r.markdown();
        assert!(md.contains("| gc-pause-unfenced | 1 (0) | double_leader_acting | double_leader_acting at 8512.3 ms"), "{md}");
        assert!(md.contains("`sim real scenarios/conform/gc-pause.toml --seed 0 --set fencing=false --node-cmd 'n --id {id}'`"), "{md}");
        assert!(md.contains("- Baton commit: abc1234"), "{md}");
        assert!(
            md.contains("backend: a live Redis (Debian's redis-server) on 127.0.0.1"),
            "{md}"
        );
        let json: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert_eq!(json["experiments"][2]["verdict"], "not_applicable");
    }

    #[test]
    fn the_spec_s_figures_and_criteria_are_reported() {
        let mut starved = trial("pass", true);
        starved.verdict = "fail";
        starved.leader_changes = 20;
        starved.election_latencies_ms = (1..=100).map(f64::from).collect();
        starved.starved = vec!["n7".into()];
        starved.spec_failures = vec![SpecFailure {
            criterion: "starved_node",
            detail: "n7 ran through 14 elections without a win (the spec: no starved node)".into(),
        }];
        let mut churn = experiment("churn", vec![starved], false);
        churn.check = SpecCheck::Churn;
        let mut stepdown = experiment("graceful-stepdown", vec![trial("pass", true)], true);
        stepdown.check = SpecCheck::StepDown;
        let r = Report {
            command: "sim conform --node-cmd n".into(),
            node_cmd: "n".into(),
            backend: "etcd".into(),
            commit: "abc1234".into(),
            root: String::new(),
            trials_per_experiment: 1,
            wall_ms: 1,
            experiments: vec![churn, stepdown],
            interrupted: false,
            ttl_sweep: None,
        };
        assert_eq!(r.experiments[0].verdict, Verdict::Fail);
        let md = r.markdown();
        assert!(
            md.contains(
                "| churn | 1 (0) | starved_node | starved_node: n7 ran through 14 elections"
            ),
            "{md}"
        );
        assert!(md.contains("- **churn**: leader changes per trial 20; election latency p99 99.0 ms over 100 elections; backend requests per second during the storm: not measured"), "{md}");
        assert!(
            md.contains("starved nodes (no win in 10+ elections): n7."),
            "{md}"
        );
        assert!(md.contains("- **graceful-stepdown**: gap from the old leader's stop to the new leader's first write 25.0 to 25.0 ms over 1 handover(s); negative (the spec: never): 0."), "{md}");
    }
}
