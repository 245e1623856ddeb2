//! Running a planned `conform` suite ([`super::prepare`]): its trials, up to `--jobs` at
//! a time, each a real-mode trial with its own backend, ports and directories; the
//! report rewritten as each experiment completes; progress on stderr
//! ([`super::progress`]); Ctrl-C stops every running trial, whose processes, ports and
//! directories go with it, and writes what finished.
//!
//! Trials start in the suite's order (experiment by experiment, trial by trial) and the
//! next starts when one ends, so with `--jobs 1` the run is the suite in order. A trial
//! that cannot start, or breaks, stops the run as Ctrl-C does.

use super::progress::Progress;
use super::report::{ExperimentResult, Report, TrialResult, Verdict};
use super::spec::SpecFailure;
use super::{bad, estimate, Planned, Prepared};
use crate::trial::command::RealCommandError;
use crate::trial::{self, TrialError, TrialSpec};
use baton_model::flags::ConformArgs;
use baton_model::render::output_dir;
use futures::StreamExt;
use std::path::Path;
use std::time::Instant;

/// Runs the `conform` command: `Ok(true)` when no experiment failed.
pub(super) async fn run(args: ConformArgs) -> Result<bool, RealCommandError> {
    let p = super::prepare(&args)?;
    // The first line says how long the run will take, so that a user can decide to
    // shorten it (--quick, --trials, --churn-rounds, --only, --jobs) before waiting.
    say(&format!(
        "conform: {} on {}, {} at {} trial(s) at a time (the scenarios' durations plus about {} s per trial to start and stop)\n",
        super::sweep::what_runs(p.experiments.len(), p.trials, p.sweep.as_ref()),
        p.backend.name(),
        estimate::say(p.estimate_ms),
        p.jobs,
        estimate::overhead_ms(p.backend) / 1000
    ));
    let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(|e| bad(format!("cannot watch for Ctrl-C: {e}")))?;
    crate::process::sweep_stale_dirs(crate::backend::etcd::cluster::DATA_PREFIX);
    let wall = Instant::now();
    let mut report = new_report(&p, &args);
    let all: Vec<(usize, &TrialSpec)> = p
        .experiments
        .iter()
        .enumerate()
        .flat_map(|(i, e)| e.specs.iter().map(move |s| (i, s)))
        .collect();
    let progress = Progress::new(all.len() as u64, p.estimate_serial_ms, args.quiet.quiet);
    let mut done: Vec<Vec<TrialResult>> = p.experiments.iter().map(|_| vec![]).collect();
    let mut reported = 0;
    let mut trials = futures::stream::iter(
        all.into_iter()
            .map(|(i, spec)| one_trial(&p, &p.experiments[i], spec, &progress, args.quiet.quiet)),
    )
    .buffer_unordered(p.jobs as usize);
    loop {
        let next = tokio::select! {
            t = trials.next() => t,
            _ = sigint.recv() => Some(Err(RealCommandError::Interrupted(format!(
                "interrupted; the experiments that finished are in {}",
                p.dir.join("conformance.md").display()
            )))),
        };
        let Some(t) = next else { break };
        let (i, t) = match t {
            Ok(t) => t,
            Err(err) => {
                // Dropping the stream stops every running trial and removes what it ran.
                drop(trials);
                report.interrupted = matches!(err, RealCommandError::Interrupted(_));
                report.wall_ms = wall.elapsed().as_millis() as u64;
                let _ = write_report(&p.dir, &report);
                return Err(err);
            }
        };
        done[i].push(t);
        // Experiments enter the report in the suite's order, each once all its trials
        // are in.
        while reported < p.experiments.len()
            && done[reported].len() == p.experiments[reported].specs.len()
        {
            let e = &p.experiments[reported];
            let mut trials = std::mem::take(&mut done[reported]);
            trials.sort_by_key(|t| t.trial);
            let r = result(e, trials);
            if let (Some(sp), true) = (&p.sweep, e.scenario.name == super::sweep::NAME) {
                report.ttl_sweep = Some(super::sweep::summarize(&p.dir, sp, &r));
            }
            report.experiments.push(r);
            reported += 1;
            report.wall_ms = wall.elapsed().as_millis() as u64;
            write_report(&p.dir, &report).map_err(|e| {
                RealCommandError::Broke(format!("cannot write the conformance report: {e}"))
            })?;
        }
    }
    drop(trials);
    drop(progress);
    if !args.quiet.quiet {
        say(&report.verdict_lines());
    }
    say(&format!(
        "conformance: {} ({})\n",
        report.overall(),
        p.dir.join("conformance.md").display()
    ));
    Ok(report
        .experiments
        .iter()
        .all(|e| e.verdict != Verdict::Fail))
}

/// The report of a run about to start: no experiment yet.
fn new_report(p: &Prepared, args: &ConformArgs) -> Report {
    Report {
        command: baton_model::render::shell::join(
            ["sim", "conform"]
                .into_iter()
                .map(String::from)
                .chain(args.to_words()),
        ),
        node_cmd: p.node_cmd.template.clone(),
        backend: p.backend.name().to_string(),
        commit: commit(),
        root: root_link(&p.dir),
        trials_per_experiment: p.trials,
        jobs: p.jobs,
        wall_ms: 0,
        experiments: vec![],
        interrupted: false,
        ttl_sweep: None,
    }
}

/// Experiment `e`'s result from its trials, judged.
fn result(e: &Planned, trials: Vec<TrialResult>) -> ExperimentResult {
    let mut r = ExperimentResult {
        name: e.name(),
        file: e.scenario.file.to_string(),
        does: e.scenario.does.to_string(),
        fencing: e.fencing,
        reproduces: e.reproduces(),
        ttl_ms: e.ttl_ms,
        failover_max_ms: e
            .specs
            .first()
            .and_then(|s| s.plan.resolved.scenario.expect.failover_ms_max),
        check: e.scenario.check,
        verdict: Verdict::Pass,
        trials,
    };
    r.judge(e.scenario.needs_resign);
    r
}

/// Writes to stdout, ignoring a closed pipe.
fn say(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// The source tree's commit (`git rev-parse --short HEAD`), with "plus uncommitted
/// changes" when anything outside `reports/` differs from it (as `nightly/lib.sh` names
/// a report's commit), or `unknown` outside a git checkout.
fn commit() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
    };
    let Some(head) = git(&["rev-parse", "--short", "HEAD"])
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    else {
        return "unknown".into();
    };
    let clean = git(&["diff", "--quiet", "HEAD", "--", ".", ":!reports"])
        .is_some_and(|o| o.status.success());
    if clean {
        head
    } else {
        format!("{head} plus uncommitted changes")
    }
}

/// The way from `dir` up to the directory the command ran in (Baton's source tree, for
/// the report's links to the contract and the scenarios): `../` per component of a
/// relative `dir`, the working directory itself for an absolute one.
fn root_link(dir: &Path) -> String {
    if dir.is_absolute() {
        let cwd = std::env::current_dir().unwrap_or_default();
        return format!("{}/", cwd.display());
    }
    let depth = dir
        .components()
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .count();
    "../".repeat(depth)
}

fn write_report(dir: &Path, r: &Report) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut json = serde_json::to_string_pretty(r).expect("the report serializes");
    json.push('\n');
    output_dir::write_all(
        dir,
        &[
            ("conformance.json", json.as_bytes()),
            ("conformance.md", r.markdown().as_bytes()),
        ],
    )
}

/// Removes what the module doc says a trial does not keep: a passing trial keeps its
/// page and plot only if it is its experiment's first, and never its raw timeline or
/// its processes' files.
fn prune(tdir: &Path, trial: usize, passed: bool) {
    if !passed {
        return;
    }
    let _ = std::fs::remove_dir_all(tdir.join("run"));
    let _ = std::fs::remove_file(tdir.join("timeline.jsonl"));
    if trial > 1 {
        let _ = std::fs::remove_file(tdir.join("timeline.html"));
        let _ = std::fs::remove_file(tdir.join("leaders_acting.svg"));
    }
}

/// Runs one trial of experiment `e` (the `i`-th of the suite... see [`run`]), writes its
/// report, and returns its result with its experiment's index.
async fn one_trial(
    p: &Prepared,
    e: &Planned,
    spec: &TrialSpec,
    progress: &Progress,
    quiet: bool,
) -> Result<(usize, TrialResult), RealCommandError> {
    let name = e.name();
    let index = p
        .experiments
        .iter()
        .position(|x| std::ptr::eq(x, e))
        .expect("e is one of p's experiments");
    let tdir = spec
        .run_dir
        .parent()
        .expect("a trial's run/ has a parent")
        .to_path_buf();
    let label = format!(
        "{name} trial {}/{} (seed {})",
        spec.trial,
        e.specs.len(),
        spec.seed
    );
    crate::trial::command::clear_own_run(&spec.run_dir)
        .map_err(|err| bad(format!("cannot remove {}: {err}", spec.run_dir.display())))?;
    progress.started(&label, estimate::trial_ms(spec, p.backend));
    let t = trial::run(spec).await;
    progress.finished(&label);
    let t = match t {
        Ok(t) => t,
        Err(TrialError::CannotStart(err)) => {
            return Err(bad(format!(
                "{name} trial {} could not start: {err}",
                spec.trial
            )))
        }
        Err(err @ TrialError::Broke { .. }) => {
            return Err(RealCommandError::Broke(format!(
                "{name} trial {} broke after it started: {err}",
                spec.trial
            )))
        }
    };
    output_dir::write_run(&tdir, &t.artifacts).map_err(|err| {
        RealCommandError::Broke(format!("cannot write {}: {err}", tdir.display()))
    })?;
    let _ = std::fs::remove_file(spec.run_dir.join("timeline.jsonl"));
    // A trial the spec's own criteria failed (a starved node) keeps its files as one
    // the checkers failed does.
    let spec_failures = e.scenario.check.failures(&t.artifacts.findings);
    note_spec_failures(&tdir, &spec_failures).map_err(|err| {
        RealCommandError::Broke(format!("cannot write {}: {err}", tdir.display()))
    })?;
    prune(
        &tdir,
        spec.trial,
        t.artifacts.passed && spec_failures.is_empty(),
    );
    let line = TrialResult::of(spec, &t, &p.dir, &tdir, spec_failures, e.reproduces());
    if !quiet {
        progress.out(&format!("{}\n", line.line(&name)));
    }
    Ok((index, line))
}

/// Puts the spec's criteria a trial failed under the verdict line of its summary.txt: the
/// run's own checkers passed it (its `verdict: PASS`), and a reader who opens the trial
/// should not take that for the experiment's verdict.
fn note_spec_failures(tdir: &Path, failures: &[SpecFailure]) -> std::io::Result<()> {
    if failures.is_empty() {
        return Ok(());
    }
    let path = tdir.join("summary.txt");
    let text = std::fs::read_to_string(&path)?;
    let notes: String = failures
        .iter()
        .map(|f| {
            format!(
                "conformance: FAIL by the spec's criterion {}: {}\n",
                f.criterion, f.detail
            )
        })
        .collect();
    let at = match text.find("\nverdict: ") {
        Some(i) => text[i + 1..]
            .find('\n')
            .map_or(text.len(), |j| i + 1 + j + 1),
        None => 0,
    };
    std::fs::write(&path, format!("{}{notes}{}", &text[..at], &text[at..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_criterion_goes_under_the_trial_s_verdict_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.txt");
        std::fs::write(
            &path,
            "Baton real run: churn\nnodes: n1..n9\nverdict: PASS\n\nfault 0\n",
        )
        .unwrap();
        note_spec_failures(dir.path(), &[]).unwrap();
        assert!(!std::fs::read_to_string(&path)
            .unwrap()
            .contains("conformance"));
        let starved = SpecFailure {
            criterion: "starved_node",
            detail: "n7 won 0 of 21 elections".to_string(),
        };
        note_spec_failures(dir.path(), &[starved]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "Baton real run: churn\nnodes: n1..n9\nverdict: PASS\nconformance: FAIL by the spec's criterion starved_node: n7 won 0 of 21 elections\n\nfault 0\n"
        );
    }
}
