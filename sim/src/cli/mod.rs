//! The command line: clap definitions, one thin handler per subcommand (a file each), and
//! the one place where an error is printed and becomes an exit code.
//!
//! A handler checks its arguments, calls the module that does the work, writes and prints
//! what it made, and returns an [`Outcome`] or an [`Error`]; [`main`] prints the error once.

mod bench;
mod bisect;
mod common;
mod compare;
mod conform;
mod matrix;
mod real;
mod run;
mod search;
mod shrink;
mod stats;
mod sweep;

use crate::error::{Error, Outcome};
use baton_model::flags::{
    exit_codes, ConformArgs, JobsFlag, OutFlags, ProtocolsFlag, QuietFlag, RealArgs, ScenarioArgs,
    SeedFlag, SeedsFlag, SetFlags,
};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

const OVERVIEW: &str = "\
Every command's --help ends with its own exit codes. In general: 0 pass (or output
written), 1 a checked property failed, 2 bad input found before anything runs (nothing is
written), 3 Baton itself failed, 130 Ctrl-C after writing what finished.";

/// Baton: deterministic simulation of leader-election protocols.
///
/// Every node, the lease service, the fenced resource and the network run inside one
/// seeded madsim runtime: the same scenario, seed and code give byte-identical reports.
#[derive(Debug, Parser)]
#[command(name = "sim", version, after_help = OVERVIEW)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one scenario under one seed and write its report.
    ///
    /// Writes scenario.toml (resolved), timeline.jsonl, summary.txt, report.json,
    /// leaders_acting.svg and timeline.html to reports/<scenario>/<seed>/ (with --set:
    /// reports/<scenario>+<overrides>/<seed>/; or --out), and prints the summary.
    #[command(after_help = exit_codes::RUN)]
    Run(RunArgs),
    /// Run a scenario twice with one seed and compare every artifact byte for byte.
    #[command(after_help = exit_codes::CHECK_DETERMINISM)]
    CheckDeterminism(ScenarioArgs),
    /// Run every protocol on every scenario over a range of seeds, side by side.
    ///
    /// Writes matrix.md and matrix.json to reports/matrix-latest/ (or --out); the committed
    /// matrix in reports/matrix/ is replaced only with --out reports/matrix --force.
    /// Seeds default to 0..20, protocols to all.
    #[command(after_help = exit_codes::MATRIX)]
    Matrix(MatrixArgs),
    /// Run one scenario over a grid of values (a TTL sweep), for several protocols.
    ///
    /// Writes sweep.json, sweep.md (a table, then findings against the scenario's [slo])
    /// and four SVG plots to reports/<scenario>/sweep/ (or --out). Seeds default to 0..20,
    /// protocols to the scenario's own.
    #[command(after_help = exit_codes::SWEEP)]
    Sweep(SweepArgs),
    /// Run many seeds of a scenario (a swarm) and keep the failures, by signature.
    ///
    /// Writes failures.jsonl (seed, signature, first violation, recheck, wall ms),
    /// search.json, search.md and one resolved scenario per signature (the seed that
    /// failed earliest) to reports/<scenario>/search/ (or --out). Each failure is re-run
    /// in a fresh process first. Seeds default to 0..1000.
    ///
    /// With --budget (10m, or 200seeds) it searches continuously instead: it draws seeds
    /// at random (--draw-seed) until the budget is spent and keeps every seed tried,
    /// every failure and each signature's earliest seed with its shrunk file in a SQLite
    /// store (--store; default reports/<scenario>/search.sqlite), which a second run
    /// resumes and several processes may write at once. It prints a table of
    /// signatures.
    ///
    /// `--merge PATH...` merges shards' output directories, stores, or directories of
    /// stores instead of running.
    #[command(after_help = exit_codes::SEARCH)]
    Search(SearchArgs),
    /// Reduce a failing run's faults to a minimal scenario that fails the same way.
    ///
    /// Shrinks with proptest (drop faults, shorten durations, move times earlier),
    /// keeping a candidate only if it fails with the same properties under the same
    /// seed, replays the result twice, and writes <name>.min.toml to
    /// reports/<name>/shrink/ (or --out FILE).
    #[command(after_help = exit_codes::SHRINK)]
    Shrink(ShrinkArgs),
    /// Name the first commit under which a scenario fails (a `git bisect run` wrapper).
    ///
    /// Copies the scenario out of the tree, checks out each candidate commit in a git
    /// worktree of its own (your checkout is not touched), builds it into one shared
    /// target directory and runs the scenario with the seed. A commit that does not build
    /// or cannot run the scenario is skipped. `--bad` must fail and `--good` pass. Prints
    /// the first bad commit and the properties that failed there.
    #[command(after_help = exit_codes::BISECT)]
    Bisect(BisectArgs),
    /// Run a scenario against its live backend: real processes, real network, a real ledger.
    ///
    /// The backend is the protocol's own, started on loopback for each trial: etcd
    /// (etcd-lease), Redis (redis-naive, redis-fenced), ZooKeeper (zk-sequential) or
    /// PostgreSQL (db-row); raft's node processes are their own service. Builds the
    /// real-mode binary (the same protocol code without `--cfg madsim`, in target/real;
    /// only when its sources changed: the first build takes about 12 minutes on 2 cores,
    /// later ones seconds) and runs it. Trial k (seed S+k-1) writes the same artefacts as
    /// `sim run` to DIR/trial-<k>/, with the processes' logs and the SQLite ledger in
    /// DIR/trial-<k>/run/; DIR/trials.json lists every trial (DIR:
    /// reports/<scenario>/real/, or --out). Needs protobuf-compiler and libprotobuf-dev
    /// to build, and the backend's server (apt: etcd-server, redis-server, zookeeper,
    /// postgresql).
    #[command(after_help = exit_codes::REAL)]
    Real(RealArgs),
    /// Run the spec's experiments against a node of your own, on a live etcd, Redis,
    /// ZooKeeper or PostgreSQL (--backend).
    ///
    /// Starts your node from --node-cmd (the node contract: docs/src/node-contract.md) for
    /// ten experiments: clean kill under load, the leader partitioned from its backend, a
    /// SIGSTOP of TTL + 500 ms, a graceful step-down and the spec's churn (9 nodes, the
    /// leader killed every 5 s for 10 minutes), each with fencing on and off
    /// (scenarios/conform/), --trials trials each (default 3), and a TTL sweep. At the
    /// defaults it takes about 23 minutes on etcd four trials at a time, with --quick
    /// under 2; its first line gives the estimate
    /// for the run asked (the scenarios' durations plus a measured overhead per trial).
    /// Writes
    /// conformance.md (a table per experiment: verdict, failover, election latency,
    /// fencing rejections, double-leader incidents; then what failed, with the command
    /// that reproduces it), conformance.json and every trial's report with its
    /// timeline.html to reports/conformance-latest/ (or --out). Builds the real-mode
    /// binary as `sim real` does.
    #[command(after_help = exit_codes::CONFORM)]
    Conform(ConformArgs),
    /// Run a scenario simulated and live, and put the figures side by side.
    ///
    /// Runs real mode for --real-trials trials (or reads them from --real-dir) and the
    /// simulator over --sim-seeds, then writes compare.md and compare.json to
    /// reports/<scenario>/compare/ (or --out; the live trials go to its real/): failover
    /// median, p5, p95, min and max, election latency, fencing rejections and the lease
    /// TTL granted, each with its relative error.
    ///
    /// With --conform-dir DIR --experiment NAME the live side is a library's node, one
    /// experiment of its `sim conform` run, and the simulator runs the scenario those
    /// trials ran, with --set making Baton's protocol behave as the library does
    /// (output: reports/<library>-<experiment>/compare/, or --out).
    /// Example: sim compare --conform-dir reports/conformance/go-etcd --experiment
    /// gc-pause --set etcd-lease.local_deadline=session-done
    #[command(after_help = exit_codes::COMPARE)]
    Compare(CompareArgs),
    /// Measure Baton's speed: the named workloads, each in a fresh process.
    ///
    /// Prints two Markdown tables: per workload, simulated seconds per wall-clock second,
    /// messages per second and peak memory; then the speed targets against what was
    /// measured. The figures depend on the machine. `--list` names the workloads.
    #[command(after_help = exit_codes::BENCH)]
    Bench(BenchArgs),
    /// Figures over many runs' report.json, one line per --get (for scripts).
    ///
    /// Each --get KEY:AGG[:DIGITS] pools the values at a dotted KEY of every report (a
    /// list gives each of its numbers) and prints one line: count, sum, mean, min, max,
    /// pN (nearest-rank percentile), per_s (the sum per simulated second), nonzero (how
    /// many reports hold a value that is not 0 or empty), eq=VALUE (how many hold
    /// VALUE), or each (`LABEL: VALUES` of every report holding one; LABEL is the
    /// report's scenario and seed, `gc-pause seed 42`, or its path when two reports given
    /// share both). DIGITS rounds. A KEY that no report holds is an error that lists the
    /// keys they hold.
    /// Example: sim stats reports/x/*/report.json --get verdict:eq=pass
    /// --get election_latencies_ms:p99:1
    #[command(after_help = exit_codes::STATS)]
    Stats(StatsArgs),
    /// Run one benchmark workload in this process and print what it measured as JSON
    /// (what `sim bench` starts once per workload).
    #[command(hide = true)]
    BenchWorkload(BenchWorkloadArgs),
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    #[command(flatten)]
    out: OutFlags,
    #[command(flatten)]
    quiet: QuietFlag,
}

#[derive(Debug, Args)]
struct MatrixArgs {
    /// Scenario files.
    #[arg(required = true)]
    scenarios: Vec<PathBuf>,
    #[command(flatten)]
    protocols: ProtocolsFlag,
    #[command(flatten)]
    seeds: SeedsFlag,
    #[command(flatten)]
    jobs: JobsFlag,
    #[command(flatten)]
    set: SetFlags,
    #[command(flatten)]
    out: OutFlags,
    #[command(flatten)]
    quiet: QuietFlag,
}

#[derive(Debug, Args)]
struct SweepArgs {
    /// The base scenario file.
    scenario: PathBuf,
    /// A grid axis, KEY=V1,V2,...; repeat for more axes (every combination runs). A TTL
    /// key (ttl_ms, or a protocol's own, such as etcd-lease.lease_ttl_ms) moves every
    /// protocol's TTL-like setting (see model/src/protocol/ttl.rs); any other dotted key is set as
    /// given. The first axis is the plots' x axis.
    #[arg(long = "grid", value_name = "KEY=V1,V2,...", required = true, value_parser = crate::cmd::sweep::parse_axis)]
    grid: Vec<crate::cmd::sweep::Axis>,
    #[command(flatten)]
    protocols: ProtocolsFlag,
    #[command(flatten)]
    seeds: SeedsFlag,
    #[command(flatten)]
    jobs: JobsFlag,
    #[command(flatten)]
    set: SetFlags,
    #[command(flatten)]
    out: OutFlags,
    #[command(flatten)]
    quiet: QuietFlag,
}

#[derive(Debug, Args)]
struct SearchArgs {
    /// The scenario file (not with --merge).
    #[arg(required_unless_present = "merge")]
    scenario: Option<PathBuf>,
    #[command(flatten)]
    seeds: SeedsFlag,
    #[command(flatten)]
    jobs: JobsFlag,
    /// This worker's share: slice:K/N, hash:K/N (nextest's grammar), or auto (GitLab's
    /// CI_NODE_INDEX/CI_NODE_TOTAL, Slurm's SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT,
    /// a Kubernetes Indexed Job's JOB_COMPLETION_INDEX with BATON_SHARDS, or
    /// BATON_SHARD/BATON_SHARDS).
    #[arg(long, value_parser = crate::cmd::search::parse_partition)]
    partition: Option<crate::cmd::search::Partition>,
    /// A seed running longer than this many wall-clock seconds is reported as a hang.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    watchdog_s: u64,
    /// Start no seed once one has failed: the lowest failing seed written is the first
    /// in seed order (every seed below it ran), whatever --jobs is.
    #[arg(long, conflicts_with = "merge")]
    first_failure: bool,
    /// Search continuously: draw seeds at random until this much wall-clock time has
    /// passed (90s, 10m, 2h) or this many seeds were tried (200seeds), keeping what is
    /// found in --store. Not with --seeds, --partition, --first-failure or --out.
    #[arg(long, value_name = "TIME|Nseeds", value_parser = crate::cmd::search::budget::parse_budget,
          conflicts_with_all = ["seeds", "partition", "first_failure", "merge", "out", "force"])]
    budget: Option<crate::cmd::search::budget::Budget>,
    /// With --budget: the SQLite store to keep the search in (made if new, resumed if
    /// not). Default: reports/<scenario>/search.sqlite (reports/<scenario>+<overrides>/
    /// with --set).
    #[arg(long, value_name = "FILE", requires = "budget")]
    store: Option<PathBuf>,
    /// With --budget: the seed of the generator that draws the seeds (0 to
    /// 9223372036854775807). A store keeps a cursor per draw seed: the same draw seed
    /// goes on where the store's last run of it stopped.
    #[arg(long, default_value_t = 0, value_parser = baton_model::seed::parse, requires = "budget")]
    draw_seed: u64,
    /// With --budget: the most candidates each shrink runs (sim shrink's --max-runs);
    /// 0 shrinks nothing.
    #[arg(long, default_value_t = crate::cmd::search::continuous::SHRINK_RUNS, value_name = "N", requires = "budget")]
    shrink_max_runs: u64,
    #[command(flatten)]
    set: SetFlags,
    /// Merge these searches instead of running (needs --out): shards' output
    /// directories, continuous searches' stores, or directories holding stores.
    #[arg(long, num_args = 1.., value_name = "DIR|STORE", conflicts_with_all = ["scenario", "partition"])]
    merge: Vec<PathBuf>,
    #[command(flatten)]
    out: OutFlags,
    #[command(flatten)]
    quiet: QuietFlag,
}

#[derive(Debug, Args)]
struct ShrinkArgs {
    /// The scenario file (a swarm's, or any scenario with faults).
    scenario: PathBuf,
    /// The failing seed (0 to 9223372036854775807).
    #[arg(long, allow_negative_numbers = true, value_parser = baton_model::seed::parse)]
    seed: u64,
    #[command(flatten)]
    set: SetFlags,
    /// The most candidates to run.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    max_runs: u64,
    /// The bug's fix, as --set takes it (repeatable): keep only candidates that pass
    /// with it, so that the minimal file reproduces this bug and not another failure.
    #[arg(long, value_name = "KEY=VALUE")]
    fixed_by: Vec<String>,
    /// Write the minimal scenario to this file instead of
    /// reports/<name>/shrink/<name>.min.toml (reports/<name>+<overrides>/shrink/ with --set).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Replace the file if it exists.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    quiet: QuietFlag,
}

#[derive(Debug, Args)]
struct BisectArgs {
    /// A commit (branch, tag or hash) under which the scenario passes.
    #[arg(long, value_name = "REV")]
    good: String,
    /// A commit under which it fails.
    #[arg(long, value_name = "REV")]
    bad: String,
    /// The scenario file; copied before any checkout, so it need not exist in old commits.
    scenario: PathBuf,
    #[command(flatten)]
    seed: SeedFlag,
    #[command(flatten)]
    set: SetFlags,
    /// The target directory every commit builds into (default: target/bisect beside the
    /// repository's own, or $CARGO_TARGET_DIR/bisect).
    #[arg(long, value_name = "DIR")]
    target_dir: Option<PathBuf>,
    /// The cargo profile each commit is built with: `release`, or `dev` (incremental
    /// builds, quicker between nearby commits; slower runs).
    #[arg(long, default_value = "release", value_name = "NAME")]
    profile: String,
    #[command(flatten)]
    quiet: QuietFlag,
}

#[derive(Debug, Args)]
struct CompareArgs {
    /// The scenario file (TOML). Not with --conform-dir, which names its own.
    #[arg(
        required_unless_present = "conform_dir",
        conflicts_with = "conform_dir"
    )]
    scenario: Option<PathBuf>,
    /// Seeds of the simulated side, as A..B (B excluded).
    #[arg(long, default_value = "0..100", allow_hyphen_values = true, value_parser = baton_model::seed::parse_range)]
    sim_seeds: std::ops::Range<u64>,
    /// Trials of the live side.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
    real_trials: u64,
    /// Read the live side from an earlier `sim real --out DIR` instead of running it.
    #[arg(long, value_name = "DIR", conflicts_with = "real_trials")]
    real_dir: Option<PathBuf>,
    /// Read the live side from a `sim conform --out DIR` run instead: the trials of one
    /// --experiment, a library's node live. The simulated side runs the scenario those
    /// trials ran (their scenario.toml), with --set on top to make Baton's protocol
    /// behave as the library does.
    #[arg(long, value_name = "DIR", requires = "experiment", conflicts_with_all = ["real_dir", "real_trials"])]
    conform_dir: Option<PathBuf>,
    /// The experiment of --conform-dir to compare (clean-kill, gc-pause, partition, ...).
    #[arg(long, value_name = "NAME", requires = "conform_dir")]
    experiment: Option<String>,
    #[command(flatten)]
    jobs: JobsFlag,
    #[command(flatten)]
    set: SetFlags,
    #[command(flatten)]
    out: OutFlags,
    #[command(flatten)]
    quiet: QuietFlag,
}

#[derive(Debug, Args)]
struct BenchArgs {
    /// Run only these workloads (names separated by commas; see --list).
    #[arg(long, value_name = "NAMES")]
    only: Option<String>,
    /// List the workloads and exit.
    #[arg(long)]
    list: bool,
    /// Run each workload this many times (each in a fresh process) and report the run
    /// with the median wall time: a shared machine's noise only ever adds time, and the
    /// median does not pick the luckiest run either.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
}

#[derive(Debug, Args)]
struct StatsArgs {
    /// report.json files, or report directories holding one.
    #[arg(required = true, value_name = "REPORT")]
    reports: Vec<PathBuf>,
    /// KEY:AGG[:DIGITS], e.g. `elections.starved:nonzero`, `failover_ms:p50:1`. Repeatable.
    #[arg(long = "get", required = true, value_name = "KEY:AGG[:DIGITS]", value_parser = crate::cmd::stats::parse_get)]
    get: Vec<crate::cmd::stats::Get>,
    /// What an aggregate of no numbers prints (a mean, min, max, percentile or per_s).
    #[arg(long, default_value = "none")]
    empty: String,
}

#[derive(Debug, Args)]
struct BenchWorkloadArgs {
    /// The workload's name.
    name: String,
    /// Messages per simulated second for a baseline workload.
    #[arg(long, default_value_t = 0)]
    messages_per_s: u64,
}

/// Runs the parsed command; prints an error once, and returns the process exit status.
pub fn main(cli: Cli) -> i32 {
    let result: Result<Outcome, Error> = match cli.command {
        Command::Run(a) => run::run(a),
        Command::CheckDeterminism(a) => run::check_determinism(a),
        Command::Matrix(a) => matrix::matrix(a),
        Command::Sweep(a) => sweep::sweep(a),
        Command::Search(a) => search::search(a),
        Command::Shrink(a) => shrink::shrink(a),
        Command::Bisect(a) => bisect::bisect(a),
        Command::Real(a) => real::real(a),
        Command::Conform(a) => conform::conform(a),
        Command::Compare(a) => compare::compare(a),
        Command::Bench(a) => bench::bench(a),
        Command::Stats(a) => stats::stats(a),
        Command::BenchWorkload(a) => bench::bench_workload(a),
    };
    match result {
        Ok(outcome) => outcome.code(),
        Err(e) => {
            eprintln!("{}", e.render());
            if let (Error::Simulation { .. }, Some(hint)) = (&e, common::sim_hint()) {
                eprintln!("{hint}");
            }
            e.code()
        }
    }
}
