//! The `real` command: trials of a scenario against its live backend (etcd, Redis,
//! ZooKeeper, PostgreSQL, or raft's own node processes), each with the report a simulated
//! run has, and `trials.json` over them.
//!
//! `baton-real real <scenario.toml> [--trials N] [--seed S] [--out DIR] [--set K=V]...
//! [--force] [--quiet]`. Trial k runs with seed S + k - 1 (S: `--seed`, else the file's
//! `seed`, else 0) and writes `DIR/trial-<k>/` (the six artefacts, and `run/` with every
//! process's log and stderr, the configs and the SQLite ledger); DIR defaults to
//! `reports/<scenario>/real/` (`reports/<scenario>+<overrides>/real/` with `--set`).
//! `DIR/trials.json` lists each trial's seed, verdict, failovers and report path.
//!
//! Everything that can be refused is refused before anything starts: the scenario (as
//! `sim run` checks it), what real mode cannot apply ([`crate::trial::refusals`], for every
//! trial's swarm draw), and the output directories. Exit codes:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | every trial passed |
//! | 1 | a trial failed a checked property |
//! | 2 | bad input, or the world could not start (one line on stderr; nothing ran, or the trial that could not start ran nothing) |
//! | 3 | a trial started and then broke (stderr names its logs) |
//! | 130 | interrupted (Ctrl-C); the trials that finished are written |

use crate::contract::backends::ContractBackend;
use crate::contract::node_cmd::{NodeCmd, NodeCmdError};
use crate::trial::refusals::{self, Source};
use crate::trial::{self, TrialError, TrialSpec};
use baton_model::render::output_dir;
use baton_model::scenario::{self, Resolved};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Every trial passed.
pub const EXIT_PASS: i32 = 0;
/// A trial failed a property.
pub const EXIT_FAIL: i32 = 1;
/// Bad input, or the world could not start.
pub const EXIT_BAD_INPUT: i32 = 2;
/// A trial started, then broke.
pub const EXIT_BROKE: i32 = 3;
/// Interrupted.
pub const EXIT_INTERRUPTED: i32 = 130;

pub use baton_model::flags::RealArgs;

/// One trial's line in trials.json.
#[derive(Serialize)]
struct TrialLine {
    trial: usize,
    seed: u64,
    verdict: &'static str,
    failover_ms: Vec<f64>,
    report: String,
    wall_ms: u64,
}

#[derive(Serialize)]
struct Stats {
    count: usize,
    min: f64,
    p50: f64,
    max: f64,
}

#[derive(Serialize)]
struct TrialsJson<'a> {
    scenario: &'a str,
    file: &'a str,
    overrides: &'a [String],
    mode: &'static str,
    trials: &'a [TrialLine],
    /// Every failover of every trial, pooled.
    #[serde(skip_serializing_if = "Option::is_none")]
    failover_ms: Option<Stats>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    interrupted: bool,
}

/// The nearest-rank `p`th percentile of ascending `sorted` (as the simulator's reports).
fn nearest_rank(sorted: &[f64], p: usize) -> f64 {
    let n = sorted.len();
    sorted[(p * n).div_ceil(100).clamp(1, n) - 1]
}

fn stats(lines: &[TrialLine]) -> Option<Stats> {
    let mut all: Vec<f64> = lines.iter().flat_map(|l| l.failover_ms.clone()).collect();
    if all.is_empty() {
        return None;
    }
    all.sort_by(f64::total_cmp);
    Some(Stats {
        count: all.len(),
        min: all[0],
        p50: nearest_rank(&all, 50),
        max: all[all.len() - 1],
    })
}

/// The command that runs trial `seed` again, shell-quoted.
pub fn rerun_command(r: &Resolved, seed: u64, node_cmd: Option<&NodeCmd>) -> String {
    let seed = seed.to_string();
    let mut words = vec!["sim", "real", r.path.as_str(), "--seed", seed.as_str()];
    for set in &r.overrides {
        words.extend(["--set", set.as_str()]);
    }
    if let Some(c) = node_cmd {
        words.extend(["--node-cmd", c.template.as_str()]);
    }
    baton_model::render::shell::join(words)
}

/// A `--node-cmd` that cannot start a node: one line naming the flag.
#[derive(Debug, thiserror::Error)]
#[error("--node-cmd: {0}")]
pub struct NodeCmdFlagError(#[from] NodeCmdError);

/// The `--node-cmd` template parsed, its program found; `Err` is one line.
pub fn parse_node_cmd(template: Option<&str>) -> Result<Option<NodeCmd>, NodeCmdFlagError> {
    let Some(t) = template else {
        return Ok(None);
    };
    let c = NodeCmd::parse(t)?;
    c.check_program()?;
    Ok(Some(c))
}

/// Why a trial cannot be planned: one line.
#[derive(Debug, thiserror::Error)]
pub enum TrialSpecError {
    /// Real mode cannot apply what the scenario asks.
    #[error("{0}")]
    Refused(Box<refusals::Refusal>),
    /// A `--node-cmd` node cannot run it.
    #[error("{path}: {why}")]
    NodeCmd {
        /// The scenario file.
        path: String,
        /// Why not.
        why: String,
    },
    /// The `--node-cmd` template names a placeholder of another backend than the run's.
    #[error(transparent)]
    Placeholder(#[from] NodeCmdFlagError),
    /// This process's own binary cannot be found (the supervisor starts it again).
    #[error("cannot find the baton-real binary: {0}")]
    NoBinary(std::io::Error),
}

/// Trial `trial`'s spec: the scenario `drawn` checked for real mode (and for a
/// `--node-cmd` node), its files under `dir`; `Err` is one line.
pub fn trial_spec(
    (drawn, src): (&Resolved, &Source),
    (trial, seed): (usize, u64),
    dir: &Path,
    node_cmd: Option<&NodeCmd>,
) -> Result<TrialSpec, TrialSpecError> {
    let mut plan = refusals::check(drawn, src).map_err(TrialSpecError::Refused)?;
    if let Some(cmd) = node_cmd {
        if let Some(why) = crate::contract::node_cmd::refusal(drawn) {
            return Err(TrialSpecError::NodeCmd {
                path: drawn.path.clone(),
                why,
            });
        }
        let backend = ContractBackend::of_protocol(drawn.scenario.protocol)
            .expect("refusal() passed only the contract's protocols");
        cmd.check_backend(backend).map_err(NodeCmdFlagError::from)?;
        if drawn.scenario.start_delay_ms_max > 0 {
            plan.notes.push(format!(
                "start_delay_ms_max = {} was not applied: a --node-cmd node starts campaigning when it likes",
                drawn.scenario.start_delay_ms_max
            ));
        }
    }
    Ok(TrialSpec {
        plan,
        seed,
        trial,
        run_dir: dir.join("run"),
        binary: std::env::current_exe().map_err(TrialSpecError::NoBinary)?,
        command: rerun_command(src.base, seed, node_cmd),
        node_cmd: node_cmd.cloned(),
    })
}

/// Writes to stdout, ignoring a closed pipe (`baton-real real ... | head` must not
/// panic half-way through a trial's report).
fn say(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// Why the `real` command stopped before every trial had its verdict: each with its exit
/// code, printed once by `main`.
#[derive(Debug, thiserror::Error)]
pub enum RealCommandError {
    /// Bad input, or a world that could not start, found before a trial ran (exit 2).
    #[error("{0}")]
    BadInput(String),
    /// A trial started and then broke, or its report could not be written (exit 3).
    #[error("{0}")]
    Broke(String),
    /// Ctrl-C (exit 130), after writing the trials that finished.
    #[error("{0}")]
    Interrupted(String),
}

impl RealCommandError {
    /// The process exit code.
    pub fn code(&self) -> i32 {
        match self {
            RealCommandError::BadInput(_) => EXIT_BAD_INPUT,
            RealCommandError::Broke(_) => EXIT_BROKE,
            RealCommandError::Interrupted(_) => EXIT_INTERRUPTED,
        }
    }

    /// How it reads on stderr.
    pub fn render(&self) -> String {
        match self {
            RealCommandError::Interrupted(m) => m.clone(),
            e => format!("error: {e}"),
        }
    }
}

fn bad(msg: impl std::fmt::Display) -> RealCommandError {
    RealCommandError::BadInput(msg.to_string())
}

/// A trial's directory that may not be written.
#[derive(Debug, thiserror::Error)]
pub enum TrialDirError {
    /// As any output directory.
    #[error(transparent)]
    OutputDir(#[from] output_dir::OutputDirError),
    /// Its `run/` holds files of another program's.
    #[error("refusing to write into {}: it holds `run/`, which baton-real did not write; choose another --out", .0.display())]
    ForeignRun(PathBuf),
}

/// Whether `run` is a run directory Baton's supervisor wrote: it holds the marker the
/// supervisor writes first, or the log it writes next (a run from before the marker).
pub fn is_own_run(run: &Path) -> bool {
    run.join(crate::supervisor::RUN_MARKER).is_file() || run.join("supervisor.jsonl").is_file()
}

/// Removes a trial's `run/` when it is Baton's (an earlier run's, or one left by a trial
/// that could not start), so that the next trial starts from nothing; anything else is
/// left alone ([`check_trial_dir`] refused it before anything ran).
pub fn clear_own_run(run: &Path) -> std::io::Result<()> {
    if is_own_run(run) {
        std::fs::remove_dir_all(run)?;
    }
    Ok(())
}

/// A trial's directory may be written: Baton's own (its marker), new, or empty, or
/// `--force`; its `run/` is replaced only when it holds an earlier real run's files. A
/// trial that could not start left only its `run/` (no report, so no marker): that
/// directory is Baton's too.
pub fn check_trial_dir(dir: &Path, force: bool) -> Result<(), TrialDirError> {
    let run = dir.join("run");
    let only_own_run = is_own_run(&run)
        && std::fs::read_dir(dir).is_ok_and(|entries| {
            entries
                .filter_map(|e| e.ok())
                .all(|e| e.file_name() == "run")
        });
    // `force` here only lets Baton's own leftovers through: nothing else is in the way.
    output_dir::check_writable(dir, force || only_own_run)?;
    if run.exists() && !is_own_run(&run) {
        return Err(TrialDirError::ForeignRun(dir.to_path_buf()));
    }
    Ok(())
}

/// Everything decided before anything starts.
struct Prepared {
    dir: PathBuf,
    specs: Vec<TrialSpec>,
    base: Resolved,
}

fn prepare(args: &RealArgs) -> Result<Prepared, RealCommandError> {
    if args.trials == 0 {
        return Err(bad("--trials must be at least 1"));
    }
    let base = scenario::load(&args.scenario.scenario, &args.scenario.set.set).map_err(bad)?;
    let text = std::fs::read_to_string(&args.scenario.scenario)
        .map_err(|e| bad(format!("{}: {e}", base.path)))?;
    let first_seed = args
        .scenario
        .seed
        .seed
        .unwrap_or_else(|| base.default_seed());
    let node_cmd = parse_node_cmd(args.node.node_cmd.as_deref()).map_err(bad)?;
    let dir = match &args.out.out {
        Some(d) => d.clone(),
        None => {
            let origin = base.origin();
            // A foreign node's trials never land among Baton's own node's.
            let leaf = if node_cmd.is_some() {
                "node-cmd"
            } else {
                "real"
            };
            let d = output_dir::default_dir_for(&base.scenario.name, &origin.overrides, leaf);
            output_dir::check_same_scenario(&d.join("trial-1"), &origin.file).map_err(bad)?;
            d
        }
    };
    output_dir::check_writable(&dir, args.out.force).map_err(bad)?;
    if first_seed > baton_model::seed::MAX - (args.trials - 1) {
        return Err(bad(format!(
            "--seed {first_seed} with --trials {}: the last trial's seed would pass {}; seeds are {}",
            args.trials,
            baton_model::seed::MAX,
            baton_model::seed::ALLOWED
        )));
    }
    let mut specs = vec![];
    for k in 1..=args.trials {
        let seed = first_seed + (k - 1);
        let drawn = baton_model::swarm::materialize(&base, seed).map_err(bad)?;
        let src = Source {
            text: &text,
            overrides: &args.scenario.set.set,
            base: &base,
            swarm_seed: base.scenario.swarm.as_ref().map(|_| seed),
        };
        let tdir = dir.join(format!("trial-{k}"));
        check_trial_dir(&tdir, args.out.force).map_err(bad)?;
        let spec = trial_spec((&drawn, &src), (k as usize, seed), &tdir, node_cmd.as_ref())
            .map_err(bad)?;
        specs.push(spec);
    }
    Ok(Prepared { dir, specs, base })
}

fn write_trials(p: &Prepared, lines: &[TrialLine], interrupted: bool) -> std::io::Result<()> {
    std::fs::create_dir_all(&p.dir)?;
    let j = TrialsJson {
        scenario: &p.base.scenario.name,
        file: &p.base.path,
        overrides: &p.base.overrides,
        mode: "real",
        trials: lines,
        failover_ms: stats(lines),
        interrupted,
    };
    let mut text = serde_json::to_string_pretty(&j).expect("trials.json serializes");
    text.push('\n');
    output_dir::write_all(&p.dir, &[("trials.json", text.as_bytes())])
}

/// Runs the `real` command: `Ok(true)` when every trial passed, `Ok(false)` when one
/// failed a checked property.
pub async fn run(args: RealArgs) -> Result<bool, RealCommandError> {
    let p = prepare(&args)?;
    // Installed before the first trial starts: a Ctrl-C between trials is kept for the
    // next select, not lost.
    let mut sigint = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
    {
        Ok(s) => s,
        Err(e) => return Err(bad(format!("cannot watch for Ctrl-C: {e}"))),
    };
    crate::process::sweep_stale_dirs(crate::backend::etcd::cluster::DATA_PREFIX);
    crate::process::sweep_stale_dirs(crate::backend::server::DATA_PREFIX);
    // The directory is Baton's from the first trial on (its marker, and trials.json
    // listing the trials so far), so that a run stopped half-way can be run again into it.
    write_trials(&p, &[], false).map_err(|e| {
        bad(format!(
            "cannot write {}: {e}",
            p.dir.join("trials.json").display()
        ))
    })?;
    let mut lines: Vec<TrialLine> = vec![];
    for spec in &p.specs {
        run_trial(&p, spec, args.quiet.quiet, &mut sigint, &mut lines).await?;
    }
    say_pooled(&p, &lines);
    Ok(lines.iter().all(|l| l.verdict == "pass"))
}

/// Runs one trial, writes its report, adds its line to `lines` and `trials.json`, and
/// prints its summary; an `Err` stops the command there.
async fn run_trial(
    p: &Prepared,
    spec: &TrialSpec,
    quiet: bool,
    sigint: &mut tokio::signal::unix::Signal,
    lines: &mut Vec<TrialLine>,
) -> Result<(), RealCommandError> {
    if !quiet {
        eprintln!(
            "trial {}/{} (seed {}): {}, {} nodes, the resource and the load client on 127.0.0.1 for {:.1} s of real time ...",
            spec.trial,
            p.specs.len(),
            spec.seed,
            crate::backend::backend_name(spec.plan.resolved.scenario.protocol),
            spec.plan.resolved.scenario.nodes,
            spec.plan.resolved.scenario.duration_ms as f64 / 1000.0
        );
    }
    // An earlier real run's process files in this trial's directory go: the check
    // before the start made sure they are Baton's.
    clear_own_run(&spec.run_dir)
        .map_err(|e| bad(format!("cannot remove {}: {e}", spec.run_dir.display())))?;
    let t = finish_trial(p, spec, sigint, lines).await?;
    let tdir = p.dir.join(format!("trial-{}", spec.trial));
    output_dir::write_run(&tdir, &t.artifacts).map_err(|e| {
        RealCommandError::Broke(format!(
            "cannot write the report to {}: {e}",
            tdir.display()
        ))
    })?;
    // The report holds the timeline; the merged copy in run/ would be a second one.
    let _ = std::fs::remove_file(spec.run_dir.join("timeline.jsonl"));
    let a = &t.artifacts;
    let verdict = if a.passed { "pass" } else { "fail" };
    lines.push(TrialLine {
        trial: spec.trial,
        seed: spec.seed,
        verdict,
        failover_ms: a.findings.failover_ms.clone(),
        report: tdir.join("report.json").display().to_string(),
        wall_ms: t.wall_ms,
    });
    write_trials(p, lines, false).map_err(|e| {
        RealCommandError::Broke(format!(
            "cannot write {}: {e}",
            p.dir.join("trials.json").display()
        ))
    })?;
    if quiet {
        say(&format!(
            "trial {} (seed {}): {}: {}\n",
            spec.trial,
            spec.seed,
            verdict.to_uppercase(),
            tdir.display()
        ));
    } else {
        say(&format!("{}report: {}\n", a.summary_txt, tdir.display()));
    }
    Ok(())
}

/// Runs the trial to its end unless Ctrl-C comes first; on an `Err`, `trials.json` lists
/// the trials that finished (`lines`).
async fn finish_trial(
    p: &Prepared,
    spec: &TrialSpec,
    sigint: &mut tokio::signal::unix::Signal,
    lines: &[TrialLine],
) -> Result<trial::Trial, RealCommandError> {
    let r = tokio::select! {
        r = trial::run(spec) => r,
        _ = sigint.recv() => {
            // Dropping the trial stopped every process and removed etcd's data.
            let _ = write_trials(p, lines, true);
            return Err(RealCommandError::Interrupted(format!(
                "interrupted during trial {}; the trials that finished are in {} (the interrupted one's logs in {})",
                spec.trial,
                p.dir.display(),
                spec.run_dir.display()
            )));
        }
    };
    match r {
        Ok(t) => Ok(t),
        Err(TrialError::CannotStart(e)) => {
            let _ = write_trials(p, lines, false);
            Err(bad(format!("trial {} could not start: {e}", spec.trial)))
        }
        Err(e @ TrialError::Broke { .. }) => {
            let _ = write_trials(p, lines, false);
            Err(RealCommandError::Broke(format!(
                "trial {} broke after it started: {e}",
                spec.trial
            )))
        }
    }
}

/// Prints the failovers pooled over the trials, when there were several.
fn say_pooled(p: &Prepared, lines: &[TrialLine]) {
    let n = p.specs.len();
    if let Some(s) = stats(lines) {
        if n > 1 {
            let passed = lines.iter().filter(|l| l.verdict == "pass").count();
            say(&format!(
                "{passed} of {n} trials passed; failover over {} failovers: min {:.0} ms, median {:.0} ms, max {:.0} ms ({})\n",
                s.count,
                s.min,
                s.p50,
                s.max,
                p.dir.join("trials.json").display()
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: trial directories as Baton and a user leave them, in a fresh temporary
    //! directory each: Baton's own leftovers (a `run/` it marked, from a trial that could
    //! not start) are taken back; anything a user wrote is refused.
    use super::*;

    fn trial_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("baton-trial-dir-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("run")).unwrap();
        d
    }

    #[test]
    fn a_trial_that_could_not_start_leaves_a_directory_baton_takes_back() {
        // The backend failed: only the supervisor's marker (and a backend log) is there.
        let d = trial_dir("marker");
        std::fs::write(d.join("run").join(crate::supervisor::RUN_MARKER), "x").unwrap();
        std::fs::write(d.join("run").join("etcd-1.stderr"), "x").unwrap();
        assert!(check_trial_dir(&d, false).is_ok());
        clear_own_run(&d.join("run")).unwrap();
        assert!(!d.join("run").exists());
        // The preflight failed: an older supervisor wrote its log but no marker.
        std::fs::create_dir_all(d.join("run")).unwrap();
        std::fs::write(d.join("run").join("supervisor.jsonl"), "").unwrap();
        assert!(check_trial_dir(&d, false).is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn what_a_user_wrote_is_still_refused() {
        let d = trial_dir("user");
        std::fs::write(d.join("run").join("notes.md"), "mine").unwrap();
        let e = check_trial_dir(&d, false).unwrap_err().to_string();
        assert!(e.contains("it holds `run`, which sim did not write"), "{e}");
        clear_own_run(&d.join("run")).unwrap();
        assert!(d.join("run").join("notes.md").is_file(), "never removed");
        // Baton's run/ beside a file of the user's: the directory is not Baton's alone.
        std::fs::remove_file(d.join("run").join("notes.md")).unwrap();
        std::fs::write(d.join("run").join(crate::supervisor::RUN_MARKER), "x").unwrap();
        std::fs::write(d.join("mine.txt"), "mine").unwrap();
        let e = check_trial_dir(&d, false).unwrap_err().to_string();
        assert!(e.contains("mine.txt"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
