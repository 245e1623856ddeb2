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

use crate::contract::conform::spec::{self, SpecCheck, SpecFailure};
use crate::trial::{Trial, TrialSpec};
use baton_model::checker::failover::nearest_rank;
use baton_model::checker::stale_token::Rejection;
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
    /// Fencing off, a trial reproduced the damage the fence exists to stop, and nothing
    /// else failed (see [`crate::contract::conform::Unfenced::Reproduces`]).
    Reproduced,
    /// Fencing off, no trial's stale leader wrote anything the fence would have had to
    /// stop, and nothing failed: the bug was not shown by these trials.
    NotReproduced,
}

impl Verdict {
    pub(super) fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::NotApplicable => "n/a",
            Verdict::Reproduced => "REPRODUCED",
            Verdict::NotReproduced => "NOT REPRODUCED",
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
    /// `pass`, `fail`, or (fencing off, see [`Verdict::Reproduced`]) `reproduced`.
    pub verdict: &'static str,
    /// Each failover, ms.
    pub failover_ms: Vec<f64>,
    /// Each election's latency, ms.
    pub election_latencies_ms: Vec<f64>,
    /// Writes the fence rejected.
    pub fencing_rejections: usize,
    /// Each of them: when, whose, its token and the highest accepted before it.
    pub rejections: Vec<Rejection>,
    /// The most leaders acting at once by effect (tokens with interleaved accepted
    /// writes).
    pub leaders_by_effect_max: u32,
    /// The SQL check over the trial's SQLite ledger: sequencer batches, in commit
    /// order, that did not go above the batch before them (the `lag()` query).
    pub ledger_non_increasing_steps: u64,
    /// The ledger's sequencer batches.
    pub ledger_seq_batches: u64,
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
    /// The figures of trial `t` of `spec`, whose report is in `tdir` under `dir`, with
    /// what its spec's criteria found (`SpecCheck::failures`).
    pub fn of(
        spec: &TrialSpec,
        t: &Trial,
        dir: &Path,
        tdir: &Path,
        spec_failures: Vec<SpecFailure>,
        reproduces: bool,
    ) -> TrialResult {
        let f = &t.artifacts.findings;
        let verdict = trial_verdict(&f.violations, &spec_failures, reproduces);
        let rel = |file: &str| {
            tdir.join(file)
                .strip_prefix(dir)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| tdir.join(file).display().to_string())
        };
        TrialResult {
            trial: spec.trial,
            seed: spec.seed,
            verdict,
            failover_ms: f.failover_ms.clone(),
            election_latencies_ms: f.election_latencies_ms.clone(),
            fencing_rejections: f.rejections.len(),
            rejections: f.rejections.clone(),
            leaders_by_effect_max: f.effect.max,
            ledger_non_increasing_steps: t.output.ledger.non_increasing_steps,
            ledger_seq_batches: t.output.ledger.seq_batches,
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
            let what = if self.verdict == "reproduced" {
                "reproduced"
            } else {
                "failed"
            };
            let _ = write!(l, "; {what}: {}", self.properties().join(", "));
        }
        l
    }

    /// The properties and the spec's criteria that failed, each once.
    pub(super) fn properties(&self) -> Vec<&'static str> {
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

/// A trial's verdict from what its checkers (`violations`) and the spec's criteria
/// (`spec`) found: `pass` when nothing; with fencing off in an experiment that
/// `reproduces`, `reproduced` when all of it is damage the fence stops; else `fail`.
pub fn trial_verdict(
    violations: &[Violation],
    spec: &[SpecFailure],
    reproduces: bool,
) -> &'static str {
    if violations.is_empty() && spec.is_empty() {
        "pass"
    } else if reproduces && spec.is_empty() && violations.iter().all(|v| v.property.fence_stops()) {
        "reproduced"
    } else {
        "fail"
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
    /// Fencing off, whether the run is expected to reproduce the damage the fence stops
    /// (see [`crate::contract::conform::Unfenced`]).
    pub reproduces: bool,
    /// The lease TTL the scenario asked for, ms.
    pub ttl_ms: u64,
    /// The scenario's ceiling on a failover (`expect.failover_ms_max`), ms.
    pub failover_max_ms: Option<u64>,
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
        } else if self.trials.iter().any(|t| t.verdict == "fail") {
            Verdict::Fail
        } else if !self.reproduces {
            Verdict::Pass
        } else if self.reproduced() > 0 {
            Verdict::Reproduced
        } else {
            Verdict::NotReproduced
        };
    }

    pub(super) fn pooled(&self, each: impl Fn(&TrialResult) -> &[f64]) -> String {
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

    pub(super) fn safety(&self) -> String {
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

    pub(super) fn passed(&self) -> usize {
        self.trials.iter().filter(|t| t.verdict != "fail").count()
    }

    /// Its trials that reproduced the damage the fence stops.
    pub(super) fn reproduced(&self) -> usize {
        self.trials
            .iter()
            .filter(|t| t.verdict == "reproduced")
            .count()
    }

    /// How its trials went, for the table: `3/3`, or `1/3 reproduced` with fencing off.
    pub(super) fn trials_word(&self) -> String {
        if self.reproduces && self.verdict != Verdict::Fail {
            format!("{}/{} reproduced", self.reproduced(), self.trials.len())
        } else {
            format!("{}/{}", self.passed(), self.trials.len())
        }
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
    /// Trials run at once (`--jobs`), each with its own backend, ports and directories.
    pub jobs: u64,
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
        let count = |v: Verdict| self.experiments.iter().filter(|e| e.verdict == v).count();
        let na = count(Verdict::NotApplicable);
        let shown: Vec<String> = self
            .experiments
            .iter()
            .filter_map(|e| match e.verdict {
                Verdict::Reproduced => Some(format!(
                    "{} reproduced the double write ({} of {} trials)",
                    e.name,
                    e.reproduced(),
                    e.trials.len()
                )),
                Verdict::NotReproduced => Some(format!("{} did not", e.name)),
                _ => None,
            })
            .collect();
        let n = self.experiments.len() - shown.len();
        let passed = n - failed.len() - na;
        let mut line = if failed.is_empty() {
            format!("PASS: {passed} of {n} experiments passed")
        } else {
            format!(
                "FAIL: {} of {n} experiments failed ({})",
                failed.len(),
                failed.join(", ")
            )
        };
        if na > 0 {
            let _ = write!(line, ", {na} not applicable");
        }
        if !shown.is_empty() {
            let _ = write!(line, "; fencing off, {}", shown.join(", "));
        }
        line
    }

    /// The experiments' verdicts, one line each, for the terminal.
    pub fn verdict_lines(&self) -> String {
        let mut out = String::new();
        for e in &self.experiments {
            let _ = writeln!(
                out,
                "{:<28} {:<14} {} trials, failover ms {}, {}",
                e.name,
                e.verdict.word(),
                e.trials_word(),
                e.pooled(|t| &t.failover_ms),
                e.safety()
            );
        }
        out
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
            rejections: vec![Rejection {
                at_ms: 8480.5,
                node: "n1".into(),
                token: 5,
                max_token: 7,
            }],
            leaders_by_effect_max: if verdict == "fail" { 2 } else { 1 },
            ledger_non_increasing_steps: u64::from(verdict == "fail"),
            ledger_seq_batches: 40,
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
            reproduces: false,
            ttl_ms: 2000,
            failover_max_ms: Some(5000),
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
            jobs: 1,
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
    fn fencing_off_the_damage_the_fence_stops_is_a_reproduction() {
        use baton_model::checker::Property;
        let v = |p| Violation {
            property: p,
            at_ms: 1.0,
            detail: String::new(),
        };
        let damage = [v(Property::DoubleLeaderActing), v(Property::SequenceReused)];
        assert_eq!(trial_verdict(&damage, &[], true), "reproduced");
        assert_eq!(trial_verdict(&damage, &[], false), "fail", "the fence on");
        let own = [v(Property::DoubleLeaderActing), v(Property::ActedPastGrant)];
        assert_eq!(trial_verdict(&own, &[], true), "fail", "the node's own bug");
        assert_eq!(trial_verdict(&[], &[], true), "pass");
        let mut shown = trial("fail", true);
        shown.verdict = "reproduced";
        let mut unfenced = ExperimentResult {
            reproduces: true,
            ..experiment("gc-pause-unfenced", vec![trial("pass", true), shown], false)
        };
        unfenced.judge(false);
        assert_eq!(unfenced.verdict, Verdict::Reproduced);
        let mut quiet = ExperimentResult {
            reproduces: true,
            ..experiment("partition-unfenced", vec![trial("pass", true)], false)
        };
        quiet.judge(false);
        assert_eq!(quiet.verdict, Verdict::NotReproduced);
        let r = Report {
            command: "sim conform --node-cmd n".into(),
            node_cmd: "n".into(),
            backend: "etcd".into(),
            commit: "abc1234".into(),
            root: String::new(),
            trials_per_experiment: 2,
            jobs: 1,
            wall_ms: 1,
            experiments: vec![
                experiment("gc-pause", vec![trial("pass", true)], false),
                unfenced,
                quiet,
            ],
            interrupted: false,
            ttl_sweep: None,
        };
        assert_eq!(r.overall(), "PASS: 1 of 1 experiments passed; fencing off, gc-pause-unfenced reproduced the double write (1 of 2 trials), partition-unfenced did not");
        let md = r.markdown();
        assert!(
            md.contains("| gc-pause-unfenced | off | REPRODUCED | 1/2 reproduced |"),
            "{md}"
        );
        assert!(
            md.contains("## What the runs with fencing off reproduced"),
            "{md}"
        );
        assert!(md.contains("1. leaders acting by effect always 1 and 0 double-leader-acting incidents (with the fencing-rejection log): met. Over 1 fenced trials"), "{md}");
        assert!(md.contains("2. the GC-pause run passes: the woken stale leader's write is fenced out, the rejected token shown: met. gc-pause passed 1 of 1 trials; the woken leader's write was fenced out in 1 (trial 1: n1's token 5 rejected below max_token 7 at 8480.5 ms)."), "{md}");
        assert!(md.contains("5. the run with fencing off reproduces the bug: the token is load-bearing, not decoration: met. A stale leader's write landed with the fence off (gc-pause-unfenced: 1 of 2 trials; partition-unfenced: 0 of 1 trials)"), "{md}");
        assert!(
            md.contains("| gc-pause | 1 | 8480.5 | n1 | 5 | 7 |"),
            "{md}"
        );
    }

    #[test]
    fn the_spec_s_criteria_fail_when_the_run_breaks_them() {
        let mut r = Report {
            command: "sim conform --node-cmd n".into(),
            node_cmd: "n".into(),
            backend: "etcd".into(),
            commit: "abc1234 plus uncommitted changes".into(),
            root: String::new(),
            trials_per_experiment: 1,
            jobs: 1,
            wall_ms: 1,
            experiments: vec![experiment("gc-pause", vec![trial("fail", true)], false)],
            interrupted: false,
            ttl_sweep: None,
        };
        let md = r.markdown();
        for broken in [
            "1. leaders acting by effect always 1 and 0 double-leader-acting incidents (with the fencing-rejection log): **not met**. Over 1 fenced trials: at most 2 leader(s) acting at once by effect, 1 double-leader-acting incident(s)",
            "2. the GC-pause run passes: the woken stale leader's write is fenced out, the rejected token shown: **not met**. gc-pause failed in 1 of 1 trials",
            "3. failover reported, plotted against TTL, with its bound named (TTL + an election round for a lease): not shown. The clean-kill experiment did not run.",
            "4. the sequence strictly increasing across every failover (a SQL `lag()` check over the ledger finds 0 non-increasing steps): **not met**. Over 1 fenced trials' SQLite ledgers: 1 non-increasing step(s) among 40 sequencer batches",
            "5. the run with fencing off reproduces the bug: the token is load-bearing, not decoration: not shown.",
            "6. every number reproducible from a committed command, scenario and seed: **not met**. The source tree was not a clean commit (abc1234 plus uncommitted changes).",
        ] {
            assert!(md.contains(broken), "{broken}\n{md}");
        }
        r.experiments = vec![experiment("gc-pause", vec![trial("pass", true)], false)];
        r.experiments[0].trials[0].rejections.clear();
        assert!(r.markdown().contains("2. the GC-pause run passes: the woken stale leader's write is fenced out, the rejected token shown: not shown. gc-pause passed 1 of 1 trials, but in none did the woken leader write"));
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
            jobs: 1,
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
