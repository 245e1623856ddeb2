//! The command line: clap definitions and what each subcommand does.

use crate::experiment::{self, Artifacts};
use crate::output;
use crate::scenario::{self, Resolved};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Exit status: every checked property held (or the two runs were identical).
pub const EXIT_PASS: i32 = 0;
/// Exit status: a checked property failed (or the two runs differed).
pub const EXIT_FAIL: i32 = 1;
/// Exit status: bad input or usage (the scenario, a `--set`, an argument, the output
/// directory). Nothing was written.
pub const EXIT_BAD_INPUT: i32 = 2;
/// Exit status: the simulator itself failed (a bug: please report it with the command).
pub const EXIT_INTERNAL: i32 = 3;

const EXIT_CODES: &str = "\
Exit codes:
  0  pass: every checked property held (check-determinism: the runs were identical)
  1  fail: a checked property failed (check-determinism: the runs differed)
  2  bad input or usage: the scenario file, a --set, an argument or the output directory,
     found before anything runs; the error names file:line (or the --set), the key and
     what is allowed, and nothing is written
  3  internal error: the simulator itself failed, or a run stalled
130  interrupted (Ctrl-C) during matrix, sweep or search, after writing the runs that
     finished, marked as interrupted

With `git bisect run`, 0 marks a commit good and 1 bad; `sim bisect` rebuilds each commit
and maps 2 and 3 to 125 (skip). `sim bisect` itself exits 0 when it named a commit.";

/// Baton: deterministic simulation of leader-election protocols.
///
/// Every node, the lease service, the fenced resource and the network run inside one
/// seeded madsim runtime: the same scenario, seed and code give byte-identical reports.
#[derive(Debug, Parser)]
#[command(name = "sim", version, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one scenario under one seed and write its report.
    ///
    /// Writes scenario.toml (resolved), timeline.jsonl, summary.txt, report.json,
    /// leaders_acting.svg and timeline.html to reports/<scenario>/<seed>/ (or --out),
    /// prints the summary, and exits 0 if every checked property held, 1 if one failed.
    #[command(after_help = EXIT_CODES)]
    Run(RunArgs),
    /// Run a scenario twice with one seed and compare every artifact byte for byte.
    #[command(after_help = EXIT_CODES)]
    CheckDeterminism(ScenarioArgs),
    /// Run every protocol on every scenario over a range of seeds, side by side.
    ///
    /// Writes matrix.md and matrix.json to reports/matrix/ (or --out). Failing cells are
    /// data here, not errors: the command exits 0 once the matrix is written.
    #[command(after_help = EXIT_CODES)]
    Matrix(MatrixArgs),
    /// Run one scenario over a grid of values (a TTL sweep), for several protocols.
    ///
    /// Writes sweep.json, sweep.md (a table, then findings against the scenario's [slo])
    /// and four SVG plots to reports/<scenario>/sweep/ (or --out). Failing seeds are data
    /// here: the command exits 0 once the sweep is written.
    #[command(after_help = EXIT_CODES)]
    Sweep(SweepArgs),
    /// Run many seeds of a scenario (a swarm) and keep the failures, by signature.
    ///
    /// Writes failures.jsonl (seed, signature, first violation, recheck, wall ms),
    /// search.json, search.md and one resolved scenario per signature (the seed that
    /// failed earliest) to reports/<scenario>/search/ (or --out). Each failure is re-run
    /// in a fresh process first. Exits 0 when nothing failed, 1 when something did.
    /// `--merge DIR...` merges shards' outputs instead of running.
    #[command(after_help = EXIT_CODES)]
    Search(SearchArgs),
    /// Reduce a failing run's faults to a minimal scenario that fails the same way.
    ///
    /// Shrinks with proptest (drop faults, shorten durations, move times earlier),
    /// keeping a candidate only if it fails with the same properties under the same
    /// seed, replays the result twice, and writes <name>.min.toml to
    /// reports/<name>/shrink/ (or --out FILE). A run that passes has nothing to shrink:
    /// it says so and exits 0 without writing.
    #[command(after_help = EXIT_CODES)]
    Shrink(ShrinkArgs),
    /// Name the first commit under which a scenario fails (a `git bisect run` wrapper).
    ///
    /// Copies the scenario out of the tree, checks out each candidate commit in a git
    /// worktree of its own (your checkout is not touched), builds it into one shared
    /// target directory and runs the scenario with the seed. A commit that does not build
    /// or cannot run the scenario is skipped (125). `--bad` must fail and `--good` pass.
    /// Prints the first bad commit and the properties that failed there; exits 0 when it
    /// named one, 2 on bad input, 3 when it could not decide.
    #[command(after_help = EXIT_CODES)]
    Bisect(BisectArgs),
    /// Run a scenario against a live etcd: real processes, real network, a real ledger.
    ///
    /// Builds the real-mode binary (the same protocol code without `--cfg madsim`, in
    /// target/real) and runs `baton-real real` with these arguments: <scenario.toml>
    /// [--trials N] [--out DIR] [--set KEY=VALUE]... [--force] [--quiet]. Each trial
    /// writes the same artefacts as `sim run` to DIR/trial-<k>/ (default
    /// reports/<scenario>/real/). Needs etcd-server, protobuf-compiler and libprotobuf-dev (apt).
    #[command(after_help = EXIT_CODES, disable_help_flag = true)]
    Real(RealArgs),
    /// Run a scenario simulated and live, and put the figures side by side.
    ///
    /// Runs real mode (`sim real`) for --real-trials trials (or reads them from
    /// --real-dir) and the simulator over --sim-seeds, then writes compare.md and
    /// compare.json to reports/fidelity/<scenario>/ (or --out): failover median, p5,
    /// p95, min and max, election latency, fencing rejections and the lease TTL granted,
    /// each with its relative error. Exits 0 when the failover median is within 10% and
    /// p5 and p95 within 15% of the live figures, 1 when not.
    #[command(after_help = EXIT_CODES)]
    Compare(CompareArgs),
    /// Measure Baton's speed: the named workloads, each in a fresh process.
    ///
    /// Prints two Markdown tables: per workload, simulated seconds per wall-clock second,
    /// messages per second and peak memory; then the speed targets against what was
    /// measured. The figures depend on the machine. `--list` names the workloads.
    Bench(BenchArgs),
    /// Figures over many runs' report.json, one line per --get (for scripts).
    ///
    /// Each --get KEY:AGG[:DIGITS] pools the values at a dotted KEY of every report (a
    /// list gives each of its numbers) and prints one line: count, sum, mean, min, max,
    /// pN (nearest-rank percentile), per_s (the sum per simulated second), nonzero (how
    /// many reports hold a value that is not 0 or empty), eq=VALUE (how many hold
    /// VALUE), or each (`SEED: VALUES` of every report holding one). DIGITS rounds.
    /// Example: sim stats reports/x/*/report.json --get verdict:eq=pass
    /// --get election_latencies_ms:p99:1
    #[command(after_help = EXIT_CODES)]
    Stats(StatsArgs),
    /// Run one benchmark workload in this process and print what it measured as JSON
    /// (what `sim bench` starts once per workload).
    #[command(hide = true)]
    BenchWorkload(BenchWorkloadArgs),
}

#[derive(Debug, Args)]
struct ScenarioArgs {
    /// The scenario file (TOML).
    scenario: PathBuf,
    /// The root seed of the run (default: the file's `seed` key, which a report's
    /// resolved scenario.toml records, or else 0).
    #[arg(long)]
    seed: Option<u64>,
    /// Override a scenario value by its dotted path, e.g. `etcd-lease.lease_ttl_ms=1000`,
    /// `fencing=false`, `faults.0.duration_ms=5000`. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Write the report here instead of reports/<scenario>/<seed>/.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write into a directory that holds files sim did not write (they are left alone).
    #[arg(long)]
    force: bool,
    /// Print only the verdict line, not the summary.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Debug, Args)]
struct MatrixArgs {
    /// Scenario files.
    #[arg(required = true)]
    scenarios: Vec<PathBuf>,
    /// `all`, or protocol names separated by commas.
    #[arg(long, default_value = "all")]
    protocols: String,
    /// Seeds to run each cell with, as A..B (B excluded).
    #[arg(long, default_value = "0..20", value_parser = parse_seed_range)]
    seeds: std::ops::Range<u64>,
    /// Runs in parallel (each on its own thread and runtime; results do not depend on it).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=256))]
    jobs: u64,
    /// Overrides applied to every run, as in `run` (not `protocol`: use --protocols).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Write matrix.md and matrix.json here instead of reports/matrix/.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write into a directory that holds files sim did not write.
    #[arg(long)]
    force: bool,
    /// No progress bar (it shows only on a terminal anyway).
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Debug, Args)]
struct SweepArgs {
    /// The base scenario file.
    scenario: PathBuf,
    /// A grid axis, KEY=V1,V2,...; repeat for more axes (every combination runs). A TTL
    /// key (ttl_ms, or a protocol's own, such as etcd-lease.lease_ttl_ms) moves every
    /// protocol's TTL-like setting (see sim/src/ttl.rs); any other dotted key is set as
    /// given. The first axis is the plots' x axis.
    #[arg(long = "grid", value_name = "KEY=V1,V2,...", required = true, value_parser = crate::sweep::parse_axis)]
    grid: Vec<crate::sweep::Axis>,
    /// `all`, or protocol names separated by commas (default: the scenario's protocol).
    #[arg(long)]
    protocols: Option<String>,
    /// Seeds to run each cell with, as A..B (B excluded).
    #[arg(long, default_value = "0..20", value_parser = parse_seed_range)]
    seeds: std::ops::Range<u64>,
    /// Runs in parallel (results do not depend on it).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=256))]
    jobs: u64,
    /// Overrides applied to every run, as in `run`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Write the sweep here instead of reports/<scenario>/sweep/.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write into a directory that holds files sim did not write.
    #[arg(long)]
    force: bool,
    /// No progress bar and no table on stdout: only the output directory.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Debug, Args)]
struct SearchArgs {
    /// The scenario file (not with --merge).
    #[arg(required_unless_present = "merge")]
    scenario: Option<PathBuf>,
    /// Seeds to run, as A..B (B excluded).
    #[arg(long, default_value = "0..1000", value_parser = parse_seed_range)]
    seeds: std::ops::Range<u64>,
    /// Runs in parallel (results do not depend on it).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=256))]
    jobs: u64,
    /// This worker's share: slice:K/N, hash:K/N (nextest's grammar), or auto (GitLab's
    /// CI_NODE_INDEX/CI_NODE_TOTAL, Slurm's SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT,
    /// a Kubernetes Indexed Job's JOB_COMPLETION_INDEX with BATON_SHARDS, or
    /// BATON_SHARD/BATON_SHARDS).
    #[arg(long, value_parser = crate::search::parse_partition)]
    partition: Option<crate::search::Partition>,
    /// A seed running longer than this many wall-clock seconds is reported as a hang.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    watchdog_s: u64,
    /// Overrides applied to every run, as in `run`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Merge these search directories (shards) instead of running.
    #[arg(long, num_args = 1.., value_name = "DIR", conflicts_with_all = ["scenario", "partition"])]
    merge: Vec<PathBuf>,
    /// Write here instead of reports/<scenario>/search/.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write into a directory that holds files sim did not write.
    #[arg(long)]
    force: bool,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Debug, Args)]
struct ShrinkArgs {
    /// The scenario file (a swarm's, or any scenario with faults).
    scenario: PathBuf,
    /// The failing seed.
    #[arg(long)]
    seed: u64,
    /// Overrides, as in `run`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// The most candidates to run.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    max_runs: u64,
    /// Write the minimal scenario to this file instead of
    /// reports/<name>/shrink/<name>.min.toml.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Replace the file if it exists.
    #[arg(long)]
    force: bool,
    /// No progress line.
    #[arg(long, short)]
    quiet: bool,
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
struct RealArgs {
    /// Passed to `baton-real real` as they are (`sim real --help` shows its options).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    args: Vec<String>,
}

#[derive(Debug, Args)]
struct CompareArgs {
    /// The scenario file (TOML).
    scenario: PathBuf,
    /// Seeds of the simulated side, as A..B (B excluded).
    #[arg(long, default_value = "0..100", value_parser = parse_seed_range)]
    sim_seeds: std::ops::Range<u64>,
    /// Trials of the live side.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
    real_trials: u64,
    /// Read the live side from an earlier `sim real --out DIR` instead of running it.
    #[arg(long, value_name = "DIR", conflicts_with = "real_trials")]
    real_dir: Option<PathBuf>,
    /// Simulations in parallel (results do not depend on it).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=256))]
    jobs: u64,
    /// Overrides applied to both sides, as in `run`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Write here instead of reports/fidelity/<scenario>/.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write into a directory that holds files sim did not write.
    #[arg(long)]
    force: bool,
    /// Print only the verdict line.
    #[arg(long, short)]
    quiet: bool,
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
    /// The seed every commit runs.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Overrides every commit's run gets, as in `run`. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// The target directory every commit builds into (default: target/bisect beside the
    /// repository's own, or $CARGO_TARGET_DIR/bisect).
    #[arg(long, value_name = "DIR")]
    target_dir: Option<PathBuf>,
    /// The cargo profile each commit is built with: `release`, or `dev` (incremental
    /// builds, quicker between nearby commits; slower runs).
    #[arg(long, default_value = "release", value_name = "NAME")]
    profile: String,
    /// Print only the answer.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Debug, Args)]
struct StatsArgs {
    /// report.json files, or report directories holding one.
    #[arg(required = true, value_name = "REPORT")]
    reports: Vec<PathBuf>,
    /// KEY:AGG[:DIGITS], e.g. `elections.starved:nonzero`, `failover_ms:p50:1`. Repeatable.
    #[arg(long = "get", required = true, value_name = "KEY:AGG[:DIGITS]", value_parser = crate::stats::parse_get)]
    get: Vec<crate::stats::Get>,
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

/// Writes to stdout, ignoring a closed pipe (`sim run ... | head` must not panic).
fn say(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

macro_rules! sayln {
    ($($arg:tt)*) => { say(&format!("{}\n", format!($($arg)*))) };
}

/// Parses `A..B` into a seed range.
pub fn parse_seed_range(s: &str) -> Result<std::ops::Range<u64>, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}` is not a range A..B"))?;
    let a: u64 = a
        .trim()
        .parse()
        .map_err(|_| format!("`{a}` is not a seed"))?;
    let b: u64 = b
        .trim()
        .parse()
        .map_err(|_| format!("`{b}` is not a seed"))?;
    if a >= b {
        return Err(format!("`{s}` is empty: A must be below B"));
    }
    Ok(a..b)
}

fn load(args: &ScenarioArgs) -> Result<Resolved, i32> {
    scenario::load(&args.scenario, &args.set).map_err(|e| {
        eprintln!("error: {e}");
        EXIT_BAD_INPUT
    })
}

fn simulate(resolved: &Resolved, seed: u64) -> Result<Artifacts, i32> {
    experiment::run(resolved, seed).map_err(|e| {
        eprintln!("internal error: the simulation failed: {e}");
        eprintln!(
            "reproduce: {}",
            crate::report::reproduce_command(resolved, seed)
        );
        if let Some(hint) = sim_hint() {
            eprintln!("{hint}");
        }
        EXIT_INTERNAL
    })
}

/// When `sim` is not on PATH, how to run the reproduce command (which starts with
/// `sim`, so that reports do not depend on how the binary was started).
fn sim_hint() -> Option<&'static str> {
    let on_path = std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(d.join("sim"))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    });
    (!on_path).then_some(
        "(`sim` is not on your PATH: run `cargo install --locked --path sim` in the repository, or put `cargo run --release --bin sim --` in its place)",
    )
}

/// The first `--set protocol=...` among `set`, if any.
fn sets_protocol(set: &[String]) -> Option<&String> {
    set.iter()
        .find(|s| s.split('=').next().is_some_and(|k| k.trim() == "protocol"))
}

/// Refuses `--set protocol=...` where the command chooses protocols itself.
fn refuse_protocol_set(set: &[String]) -> Result<(), i32> {
    match sets_protocol(set) {
        Some(s) => {
            eprintln!(
                "error: --set {s}: this command sets each run's protocol from --protocols (default all); choose protocols with --protocols, e.g. --protocols {}",
                s.split_once('=').map_or("", |(_, v)| v.trim())
            );
            Err(EXIT_BAD_INPUT)
        }
        None => Ok(()),
    }
}

/// Checks that `dir` may be written; exit 2 (bad input) if not, before anything runs.
fn writable(dir: &std::path::Path, force: bool) -> Result<(), i32> {
    output::check_writable(dir, force).map_err(|e| {
        eprintln!("error: {e}");
        EXIT_BAD_INPUT
    })
}

/// Runs the parsed command; returns the process exit status.
pub fn main(cli: Cli) -> i32 {
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::CheckDeterminism(args) => check_determinism(args),
        Command::Matrix(args) => matrix(args),
        Command::Sweep(args) => sweep(args),
        Command::Search(args) => search(args),
        Command::Shrink(args) => shrink(args),
        Command::Bisect(args) => bisect(args),
        Command::Real(args) => real(args),
        Command::Compare(args) => compare(args),
        Command::Bench(args) => bench(args),
        Command::Stats(args) => stats(args),
        Command::BenchWorkload(args) => bench_workload(args),
    };
    result.unwrap_or_else(|code| code)
}

fn run(args: RunArgs) -> Result<i32, i32> {
    let resolved = load(&args.scenario)?;
    let seed = args
        .scenario
        .seed
        .unwrap_or_else(|| resolved.default_seed());
    let dir = match &args.out {
        Some(dir) => dir.clone(),
        None => {
            // Named by the origin: rerunning a report's resolved scenario.toml writes to
            // that report's directory, never to another run's.
            let origin = resolved.origin();
            let dir = output::default_dir(&resolved.scenario.name, &origin.overrides, seed);
            output::check_same_scenario(&dir, &origin.file).map_err(|e| {
                eprintln!("error: {e}");
                EXIT_BAD_INPUT
            })?;
            dir
        }
    };
    // Refuse before simulating: bad input never leaves a partial report behind.
    writable(&dir, args.force)?;
    let artifacts = simulate(&resolved, seed)?;
    output::write_run(&dir, &artifacts).map_err(|e| {
        eprintln!("error: cannot write the report to {}: {e}", dir.display());
        EXIT_INTERNAL
    })?;
    if args.quiet {
        sayln!(
            "{}: {}",
            if artifacts.passed { "PASS" } else { "FAIL" },
            dir.display()
        );
    } else {
        say(&artifacts.summary_txt);
        sayln!("report: {}", dir.display());
        if let Some(hint) = sim_hint() {
            sayln!("{hint}");
        }
    }
    Ok(if artifacts.passed {
        EXIT_PASS
    } else {
        EXIT_FAIL
    })
}

fn check_determinism(args: ScenarioArgs) -> Result<i32, i32> {
    let resolved = load(&args)?;
    let seed = args.seed.unwrap_or_else(|| resolved.default_seed());
    let a = simulate(&resolved, seed)?;
    let b = simulate(&resolved, seed)?;
    let mut differ = vec![];
    for ((name, x), (_, y)) in a.files().iter().zip(b.files().iter()) {
        if x != y {
            differ.push(*name);
        }
        sayln!(
            "{name}: {} bytes, {}",
            x.len(),
            if x == y { "identical" } else { "DIFFERENT" }
        );
    }
    if differ.is_empty() {
        sayln!("deterministic: seed {seed} gave byte-identical artifacts twice");
        Ok(EXIT_PASS)
    } else {
        sayln!("NOT deterministic: {} differ", differ.join(", "));
        Ok(EXIT_FAIL)
    }
}

/// Parses `--protocols`: `all`, or names separated by commas.
fn parse_protocols(arg: &str) -> Result<Vec<crate::protocol::ProtocolName>, i32> {
    use crate::protocol::ProtocolName;
    if arg == "all" {
        return Ok(ProtocolName::ALL.to_vec());
    }
    arg.split(',')
        .map(|p| {
            ProtocolName::parse(p.trim()).ok_or_else(|| {
                let names: Vec<&str> = ProtocolName::ALL.iter().map(|p| p.name()).collect();
                eprintln!(
                    "error: --protocols: unknown protocol `{}`: expected all, or some of {}",
                    p.trim(),
                    names.join(", ")
                );
                EXIT_BAD_INPUT
            })
        })
        .collect()
}

fn sweep(args: SweepArgs) -> Result<i32, i32> {
    use crate::sweep;
    let bad = |m: String| {
        eprintln!("error: {m}");
        EXIT_BAD_INPUT
    };
    let base = scenario::load(&args.scenario, &args.set).map_err(|e| bad(e.to_string()))?;
    let protocols = match &args.protocols {
        Some(p) => parse_protocols(p)?,
        None => vec![base.scenario.protocol],
    };
    if let Some(s) = sets_protocol(&args.set) {
        return Err(bad(format!(
            "--set {s}: sweep protocols with --protocols (default: the scenario's own)"
        )));
    }
    let plan = sweep::Plan {
        scenario: args.scenario.clone(),
        axes: args.grid.clone(),
        protocols,
        seeds: args.seeds.clone(),
        set: args.set.clone(),
        jobs: args.jobs as usize,
    };
    let targets = sweep::resolve(&plan).map_err(bad)?;
    let dir = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("reports")
            .join(&base.scenario.name)
            .join("sweep")
    });
    output::check_writable(&dir, args.force).map_err(bad)?;
    let slo = base.scenario.slo.clone();
    let slo_given = slo.is_some();
    let slo = slo.unwrap_or_default();
    let total = targets.len() as u64 * (plan.seeds.end - plan.seeds.start);
    crate::interrupt::install();
    let bar = crate::progress::Bar::new(total, "runs", args.quiet);
    let (cells, done) = sweep::run(&plan, &targets, &slo, &bar).map_err(|e| {
        bar.finish();
        eprintln!("internal error: the simulation failed: {e}");
        EXIT_INTERNAL
    })?;
    bar.finish();
    let mut words = vec![
        "sim".to_string(),
        "sweep".into(),
        scenario::display_path(&args.scenario),
    ];
    for a in &plan.axes {
        words.extend(["--grid".into(), format!("{}={}", a.key, a.values.join(","))]);
    }
    if let Some(p) = &args.protocols {
        words.extend(["--protocols".into(), p.clone()]);
    }
    words.extend([
        "--seeds".into(),
        format!("{}..{}", plan.seeds.start, plan.seeds.end),
    ]);
    for s in &args.set {
        words.extend(["--set".into(), s.clone()]);
    }
    let command = crate::shell::join(&words);
    let name = &base.scenario.name;
    let mut md = sweep::markdown(&plan, &command, name, &slo, slo_given, &cells);
    let interrupted = done < total;
    if interrupted {
        // Under the title: a reader must not take a partial sweep for a whole one.
        let mark = format!(
            "**Interrupted after {done} of {total} runs** (Ctrl-C): each cell sums the seeds that finished (its pass count says how many).\n\n"
        );
        let at = md.find("\n\n").map_or(0, |i| i + 2);
        md.insert_str(at, &mark);
    }
    let mut json = serde_json::json!({
        "command": command,
        "scenario": name,
        "seeds": [plan.seeds.start, plan.seeds.end],
        "slo": slo,
        "slo_budget_s_per_hour": slo.budget_s_per_hour(),
        "cells": cells,
    });
    if interrupted {
        json["interrupted"] = serde_json::json!({ "runs_done": done, "runs_planned": total });
    }
    let json = serde_json::to_string_pretty(&json).expect("cells serialize") + "\n";
    // Every input was checked before the runs: a plot that fails now is Baton's fault.
    let plot = |r: Result<String, String>| {
        r.map_err(|e| {
            eprintln!("internal error: cannot plot the sweep: {e}");
            EXIT_INTERNAL
        })
    };
    let plots = [
        (
            "failover_vs_ttl.svg",
            plot(crate::sweep_plot::failover_svg(
                &cells,
                &format!(
                    "{name}: failover vs TTL (median, p5-p95 band; dashed: the protocol's bound)"
                ),
            ))?,
        ),
        (
            "false_failovers_vs_ttl.svg",
            plot(crate::sweep_plot::false_failovers_svg(
                &cells,
                &format!("{name}: false failovers per hour vs TTL, under the scenario's GC noise"),
            ))?,
        ),
        (
            "election_latency_cdf.svg",
            plot(crate::sweep_plot::election_cdf_svg(
                &cells,
                &format!("{name}: election latency CDF (every grid point and seed)"),
            ))?,
        ),
        (
            "unavailability_vs_ttl.svg",
            plot(crate::sweep_plot::unavailability_svg(
                &cells,
                slo.budget_s_per_hour(),
                &format!("{name}: dark seconds per hour vs TTL (deaths + false failovers)"),
            ))?,
        ),
    ];
    let mut files: Vec<(&str, &[u8])> =
        vec![("sweep.md", md.as_bytes()), ("sweep.json", json.as_bytes())];
    for (n, svg) in &plots {
        files.push((n, svg.as_bytes()));
    }
    output::write_all(&dir, &files).map_err(|e| {
        eprintln!("error: cannot write the sweep to {}: {e}", dir.display());
        EXIT_INTERNAL
    })?;
    if !args.quiet {
        say(&md);
    }
    sayln!("sweep: {}", dir.display());
    if interrupted {
        eprintln!(
            "interrupted after {done} of {total} runs: the sweep in {} holds the runs that finished",
            dir.display()
        );
        return Ok(crate::interrupt::EXIT_INTERRUPTED);
    }
    Ok(EXIT_PASS)
}

fn search(args: SearchArgs) -> Result<i32, i32> {
    use crate::search;
    let bad = |m: String| {
        eprintln!("error: {m}");
        EXIT_BAD_INPUT
    };
    if !args.merge.is_empty() {
        let dir = args
            .out
            .clone()
            .ok_or_else(|| bad("--merge needs --out DIR".into()))?;
        output::check_writable(&dir, args.force).map_err(bad)?;
        let merged = search::merge(&args.merge).map_err(bad)?;
        let mut words = vec!["sim".to_string(), "search".into(), "--merge".into()];
        words.extend(args.merge.iter().map(|d| d.display().to_string()));
        let command = crate::shell::join(&words);
        return write_search(
            &dir,
            &command,
            merged.seeds_run,
            &merged.failures,
            merged.files,
            &merged.commands,
            None,
        );
    }
    let path = args
        .scenario
        .clone()
        .expect("clap requires it without --merge");
    let resolved = scenario::load(&path, &args.set).map_err(|e| bad(e.to_string()))?;
    let dir = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("reports")
            .join(&resolved.scenario.name)
            .join("search")
    });
    output::check_writable(&dir, args.force).map_err(bad)?;
    let partition = args.partition.unwrap_or(search::Partition::All);
    let plan = search::Plan {
        resolved,
        seeds: args.seeds.clone(),
        partition,
        jobs: args.jobs as usize,
        watchdog: std::time::Duration::from_secs(args.watchdog_s),
        recheck_with: std::env::current_exe().ok(),
    };
    let total = partition.seeds(&plan.seeds).len() as u64;
    crate::interrupt::install();
    let bar = crate::progress::Bar::new(total, "seeds", args.quiet);
    let found = search::run(&plan, &bar).map_err(|e| {
        bar.finish();
        eprintln!("internal error: the simulation failed: {e}");
        EXIT_INTERNAL
    })?;
    bar.finish();
    let mut words = vec![
        "sim".to_string(),
        "search".into(),
        scenario::display_path(&path),
        "--seeds".into(),
        format!("{}..{}", args.seeds.start, args.seeds.end),
    ];
    if partition != search::Partition::All {
        words.extend(["--partition".into(), partition.label()]);
    }
    for s in &args.set {
        words.extend(["--set".into(), s.clone()]);
    }
    let command = crate::shell::join(&words);
    let files = found
        .reproducers
        .iter()
        .map(|(k, (_, t))| (format!("{k}.toml"), t.clone().into_bytes()))
        .collect();
    let interrupted = (found.seeds_run < total).then_some((found.seeds_run, total));
    write_search(
        &dir,
        &command,
        found.seeds_run,
        &found.failures,
        files,
        &[],
        interrupted,
    )
}

/// Writes a search's (or a merge's) outputs and prints its summary.
fn write_search(
    dir: &std::path::Path,
    command: &str,
    seeds_run: u64,
    failures: &[crate::search::Failure],
    files: Vec<(String, Vec<u8>)>,
    merged: &[String],
    interrupted: Option<(u64, u64)>,
) -> Result<i32, i32> {
    let jsonl = crate::search::failures_jsonl(failures);
    let mut md = crate::search::summary(command, seeds_run, failures);
    let mut meta = serde_json::json!({
        "command": command,
        "seeds_run": seeds_run,
        "failures": failures.len(),
        "merged": merged,
    });
    if let Some((done, planned)) = interrupted {
        let mark = format!(
            "**Interrupted after {done} of {planned} runs** (Ctrl-C): the seeds that finished.\n\n"
        );
        let at = md.find("\n\n").map_or(0, |i| i + 2);
        md.insert_str(at, &mark);
        meta["interrupted"] = serde_json::json!({ "runs_done": done, "runs_planned": planned });
    }
    let meta = serde_json::to_string_pretty(&meta).expect("serializes") + "\n";
    let mut all: Vec<(&str, &[u8])> = vec![
        ("failures.jsonl", jsonl.as_bytes()),
        ("search.md", md.as_bytes()),
        ("search.json", meta.as_bytes()),
    ];
    for (n, b) in &files {
        all.push((n.as_str(), b.as_slice()));
    }
    output::write_all(dir, &all).map_err(|e| {
        eprintln!("error: cannot write the search to {}: {e}", dir.display());
        EXIT_INTERNAL
    })?;
    say(&md);
    sayln!("search: {}", dir.display());
    if let Some((done, planned)) = interrupted {
        eprintln!(
            "interrupted after {done} of {planned} runs: the search in {} holds the seeds that finished",
            dir.display()
        );
        return Ok(crate::interrupt::EXIT_INTERRUPTED);
    }
    Ok(if failures.is_empty() {
        EXIT_PASS
    } else {
        EXIT_FAIL
    })
}

fn shrink(args: ShrinkArgs) -> Result<i32, i32> {
    use crate::shrink;
    use std::io::IsTerminal;
    let bad = |m: String| {
        eprintln!("error: {m}");
        EXIT_BAD_INPUT
    };
    let internal = |m: String| {
        eprintln!("internal error: {m}");
        EXIT_INTERNAL
    };
    let resolved = scenario::load(&args.scenario, &args.set).map_err(|e| bad(e.to_string()))?;
    let name = resolved.scenario.name.clone();
    let file = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("reports")
            .join(&name)
            .join("shrink")
            .join(format!("{name}.min.toml"))
    });
    if file.exists() && !args.force {
        return Err(bad(format!(
            "{} exists: pass --force to replace it, or choose another --out",
            file.display()
        )));
    }
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        // Only writability: the file itself is the one thing written there.
        output::check_writable(dir, true).map_err(bad)?;
    }
    let started = std::time::Instant::now();
    let base = crate::swarm::materialize(&resolved, args.seed).map_err(|e| bad(e.to_string()))?;
    let show = !args.quiet && std::io::stderr().is_terminal();
    let min = shrink::minimize(&base, args.seed, args.max_runs, |runs, n| {
        if show {
            eprint!("\rshrink: {runs} runs, {n} faults left   ");
        }
    })
    .map_err(internal)?;
    if show {
        eprintln!();
    }
    let Some(min) = min else {
        sayln!(
            "{} passes under seed {}: nothing to shrink (nothing written)",
            args.scenario.display(),
            args.seed
        );
        return Ok(EXIT_PASS);
    };
    let seed = args.seed.to_string();
    let scenario_path = scenario::display_path(&args.scenario);
    let mut words = vec![
        "sim",
        "shrink",
        scenario_path.as_str(),
        "--seed",
        seed.as_str(),
    ];
    for s in &args.set {
        words.extend(["--set", s.as_str()]);
    }
    let command = crate::shell::join(words);
    let text = min.file_text(&command, started.elapsed(), &file, args.seed);
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| internal(format!("cannot create {}: {e}", dir.display())))?;
    }
    std::fs::write(&file, text)
        .map_err(|e| internal(format!("cannot write {}: {e}", file.display())))?;
    sayln!(
        "shrunk {} faults to {} in {} runs: {} ({})",
        min.faults_before,
        min.resolved.scenario.faults.len(),
        min.runs,
        file.display(),
        min.signature.join(", ")
    );
    Ok(EXIT_PASS)
}

fn real_binary(quiet: bool) -> Result<PathBuf, i32> {
    crate::real::build(|line| {
        if !quiet {
            eprintln!("real: {line}");
        }
    })
    .map_err(|e| {
        eprintln!("error: {e}");
        EXIT_BAD_INPUT
    })
}

fn real(args: RealArgs) -> Result<i32, i32> {
    let quiet = args.args.iter().any(|a| a == "--quiet" || a == "-q");
    let binary = real_binary(quiet)?;
    // Ctrl-C reaches baton-real too (one process group): wait for it to clean up and
    // pass its exit code on, rather than die first and leave the terminal to it.
    crate::interrupt::install();
    crate::real::run(&binary, &args.args).map_err(|e| {
        eprintln!("error: {e}");
        EXIT_INTERNAL
    })
}

fn compare(args: CompareArgs) -> Result<i32, i32> {
    use crate::compare::{self, RunFigures};
    let resolved = scenario::load(&args.scenario, &args.set).map_err(|e| {
        eprintln!("error: {e}");
        EXIT_BAD_INPUT
    })?;
    let name = resolved.scenario.name.clone();
    let dir = args.out.clone().unwrap_or_else(|| {
        let d = output::default_dir(&name, &args.set, 0);
        PathBuf::from("reports")
            .join("fidelity")
            .join(d.parent().and_then(|p| p.file_name()).unwrap_or_default())
    });
    writable(&dir, args.force)?;
    let mut words = vec![
        "sim".to_string(),
        "compare".into(),
        scenario::display_path(&args.scenario),
        "--sim-seeds".into(),
        format!("{}..{}", args.sim_seeds.start, args.sim_seeds.end),
    ];
    match &args.real_dir {
        Some(d) => words.extend(["--real-dir".into(), d.display().to_string()]),
        None => words.extend(["--real-trials".into(), args.real_trials.to_string()]),
    }
    for s in &args.set {
        words.extend(["--set".into(), s.clone()]);
    }
    let command = crate::shell::join(&words);

    // The live side first: real mode refuses a scenario it cannot run before anything
    // starts, and the simulation should not run for nothing.
    let real_dir = match &args.real_dir {
        Some(d) => d.clone(),
        None => {
            let binary = real_binary(args.quiet)?;
            crate::interrupt::install();
            let out = dir.join("real");
            let mut real_args = vec![
                args.scenario.display().to_string(),
                "--trials".into(),
                args.real_trials.to_string(),
                "--out".into(),
                out.display().to_string(),
                "--force".into(),
            ];
            if args.quiet {
                real_args.push("--quiet".into());
            }
            for s in &args.set {
                real_args.extend(["--set".into(), s.clone()]);
            }
            let code = crate::real::run(&binary, &real_args).map_err(|e| {
                eprintln!("error: {e}");
                EXIT_INTERNAL
            })?;
            // 0 and 1 are verdicts (data here); anything else ends the comparison.
            if code > 1 {
                eprintln!("error: real mode exited {code}: no comparison written");
                return Err(code);
            }
            out
        }
    };
    let mut trials: Vec<PathBuf> = std::fs::read_dir(&real_dir)
        .map_err(|e| {
            eprintln!("error: --real-dir {}: {e}", real_dir.display());
            EXIT_BAD_INPUT
        })?
        .filter_map(|e| e.ok().map(|e| e.path().join("report.json")))
        .filter(|p| p.is_file())
        .collect();
    trials.sort();
    if trials.is_empty() {
        eprintln!(
            "error: {} holds no trial-*/report.json: nothing live to compare",
            real_dir.display()
        );
        return Err(EXIT_BAD_INPUT);
    }
    let mut real = vec![];
    for t in &trials {
        let text = std::fs::read_to_string(t).map_err(|e| {
            eprintln!("error: {}: {e}", t.display());
            EXIT_BAD_INPUT
        })?;
        real.push(RunFigures::from_report_json(&text).map_err(|e| {
            eprintln!("error: {}: {e}", t.display());
            EXIT_BAD_INPUT
        })?);
    }

    let seeds: Vec<u64> = args.sim_seeds.clone().collect();
    let sims = crate::pool::map_ordered(seeds.len(), args.jobs as usize, |i| {
        experiment::run_unrecorded(&resolved, seeds[i])
            .and_then(|a| RunFigures::from_report_json(&a.report_json))
    });
    let mut sim = vec![];
    for (seed, r) in seeds.iter().zip(sims) {
        sim.push(r.map_err(|e| {
            eprintln!("internal error: seed {seed}: {e}");
            EXIT_INTERNAL
        })?);
    }
    let c = compare::compare(&command, &name, &sim, &real);
    let (md, json) = (c.markdown(), c.json());
    output::write_all(
        &dir,
        &[
            ("compare.md", md.as_bytes()),
            ("compare.json", json.as_bytes()),
        ],
    )
    .map_err(|e| {
        eprintln!("error: cannot write {}: {e}", dir.display());
        EXIT_INTERNAL
    })?;
    if args.quiet {
        sayln!(
            "{}: {}",
            if c.within_targets {
                "WITHIN TARGETS"
            } else {
                "OFF TARGET"
            },
            dir.display()
        );
    } else {
        say(&md);
        sayln!("compare: {}", dir.display());
    }
    Ok(if c.within_targets {
        EXIT_PASS
    } else {
        EXIT_FAIL
    })
}

fn bisect(args: BisectArgs) -> Result<i32, i32> {
    use crate::bisect::{self, BisectError};
    let fail = |e: BisectError| match e {
        BisectError::Input(m) => {
            eprintln!("error: {m}");
            EXIT_BAD_INPUT
        }
        BisectError::Failed(m) => {
            eprintln!("bisect failed: {m}");
            EXIT_INTERNAL
        }
    };
    let cwd = std::env::current_dir().map_err(|e| {
        eprintln!("error: cannot read the working directory: {e}");
        EXIT_BAD_INPUT
    })?;
    let repo = bisect::repo_of(&cwd).map_err(fail)?;
    let good = bisect::resolve(&repo, "--good", &args.good).map_err(fail)?;
    let bad = bisect::resolve(&repo, "--bad", &args.bad).map_err(fail)?;
    if !args.scenario.is_file() {
        eprintln!("error: {}: no such scenario file", args.scenario.display());
        return Err(EXIT_BAD_INPUT);
    }
    let target_dir = args.target_dir.clone().unwrap_or_else(|| {
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo.join("target"))
            .join("bisect")
    });
    let plan = bisect::Plan {
        repo,
        good,
        bad,
        scenario: args.scenario.clone(),
        seed: args.seed,
        set: args.set.clone(),
        target_dir,
        profile: args.profile.clone(),
    };
    let found = bisect::bisect(&plan, |line| {
        if !args.quiet {
            eprintln!("bisect: {line}");
        }
    })
    .map_err(fail)?;
    sayln!("first bad commit: {} {}", found.commit, found.subject);
    for (property, detail) in &found.failed {
        sayln!("fails: {property} ({detail})");
    }
    sayln!(
        "tested {} commits between the ends ({} skipped: no build, or exit 2 or 3)",
        found.tested,
        found.skipped
    );
    let mut again = format!(
        "git checkout {} && cargo run --release --bin sim -- run {} --seed {}",
        &found.commit[..12],
        bisect::shell_quote(&args.scenario.to_string_lossy()),
        args.seed
    );
    for s in &args.set {
        again.push_str(&format!(" --set {}", bisect::shell_quote(s)));
    }
    sayln!("reproduce: {again}");
    Ok(EXIT_PASS)
}

fn matrix(args: MatrixArgs) -> Result<i32, i32> {
    let protocols = parse_protocols(&args.protocols)?;
    refuse_protocol_set(&args.set)?;
    let plan = crate::matrix::Plan {
        scenarios: args.scenarios.clone(),
        protocols,
        seeds: args.seeds.clone(),
        set: args.set.clone(),
        jobs: args.jobs as usize,
    };
    let resolved = crate::matrix::resolve(&plan).map_err(|e| {
        eprintln!("error: {e}");
        EXIT_BAD_INPUT
    })?;
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("reports/matrix"));
    writable(&dir, args.force)?;
    crate::interrupt::install();
    let total = resolved.len() as u64 * (args.seeds.end - args.seeds.start);
    let bar = crate::progress::Bar::new(total, "runs", args.quiet);
    let outcome = crate::matrix::run(&plan, &resolved, &bar).map_err(|e| {
        bar.finish();
        eprintln!("internal error: the simulation failed: {e}");
        EXIT_INTERNAL
    })?;
    bar.finish();
    let mut words: Vec<String> = vec!["sim".into(), "matrix".into()];
    words.extend(args.scenarios.iter().map(|p| scenario::display_path(p)));
    words.extend([
        "--protocols".into(),
        args.protocols.clone(),
        "--seeds".into(),
        format!("{}..{}", args.seeds.start, args.seeds.end),
    ]);
    for s in &args.set {
        words.extend(["--set".into(), s.clone()]);
    }
    let command = crate::shell::join(&words);
    let md = crate::matrix::markdown(&plan, &command, &outcome);
    let json = serde_json::json!({
        "command": command,
        "seeds": [args.seeds.start, args.seeds.end],
        "runs_planned": outcome.runs_planned,
        "runs_done": outcome.runs_done,
        "interrupted": outcome.interrupted(),
        "cells": outcome.cells,
    });
    let json = serde_json::to_string_pretty(&json).expect("cells serialize") + "\n";
    output::write_all(
        &dir,
        &[
            ("matrix.md", md.as_bytes()),
            ("matrix.json", json.as_bytes()),
        ],
    )
    .map_err(|e| {
        eprintln!("error: cannot write the matrix to {}: {e}", dir.display());
        EXIT_INTERNAL
    })?;
    say(&md);
    sayln!("matrix: {}", dir.display());
    if outcome.interrupted() {
        eprintln!(
            "interrupted after {} of {} runs: the matrix in {} holds the runs that finished",
            outcome.runs_done,
            outcome.runs_planned,
            dir.display()
        );
        return Ok(crate::interrupt::EXIT_INTERRUPTED);
    }
    Ok(EXIT_PASS)
}

fn bench(args: BenchArgs) -> Result<i32, i32> {
    use crate::bench::{self, Measured, Row, WORKLOADS};
    if args.list {
        for w in WORKLOADS {
            sayln!("{:<18} {}", w.name, w.what);
        }
        return Ok(EXIT_PASS);
    }
    let chosen: Vec<&'static bench::Workload> = match &args.only {
        None => WORKLOADS.iter().collect(),
        Some(names) => names
            .split(',')
            .map(|n| {
                bench::workload(n.trim()).ok_or_else(|| {
                    let all: Vec<&str> = WORKLOADS.iter().map(|w| w.name).collect();
                    eprintln!(
                        "error: --only: unknown workload `{}`: expected some of {}",
                        n.trim(),
                        all.join(", ")
                    );
                    EXIT_BAD_INPUT
                })
            })
            .collect::<Result<_, _>>()?,
    };
    let exe = std::env::current_exe().map_err(|e| {
        eprintln!("internal error: cannot find the sim executable: {e}");
        EXIT_INTERNAL
    })?;
    let once = |name: &str, messages_per_s: u64| -> Result<Measured, i32> {
        let out = std::process::Command::new(&exe)
            .args(["bench-workload", name, "--messages-per-s"])
            .arg(messages_per_s.to_string())
            .stderr(std::process::Stdio::inherit())
            .output()
            .map_err(|e| {
                eprintln!("internal error: cannot start a bench workload: {e}");
                EXIT_INTERNAL
            })?;
        if !out.status.success() {
            // Every name was checked before the first workload ran: a workload that
            // fails now is an internal error, whatever its own status.
            eprintln!(
                "internal error: bench workload {name} failed ({})",
                out.status
            );
            return Err(EXIT_INTERNAL);
        }
        serde_json::from_slice(&out.stdout).map_err(|e| {
            eprintln!("internal error: bench workload {name} said something unreadable: {e}");
            EXIT_INTERNAL
        })
    };
    let child = |name: &str, messages_per_s: u64| -> Result<Measured, i32> {
        let mut runs = (0..args.repeat)
            .map(|_| once(name, messages_per_s))
            .collect::<Result<Vec<_>, _>>()?;
        runs.sort_by(|a, b| a.total_wall_s.total_cmp(&b.total_wall_s));
        Ok(runs.swap_remove(runs.len() / 2))
    };
    // The baselines exchange as many messages per simulated second as the workload they
    // match: measure that one first.
    let needs_rate = chosen
        .iter()
        .any(|w| matches!(w.kind, bench::Kind::MadsimEndpoints | bench::Kind::BatonNet));
    let mut rows: Vec<Row> = vec![];
    let mut rate = 0;
    if needs_rate {
        let w = bench::workload(bench::BASELINE_MATCHES).expect("a listed workload");
        let m = child(w.name, 0)?;
        rate = (m.messages as f64 / m.simulated_s).round() as u64;
        if chosen.iter().any(|c| c.name == w.name) {
            rows.push(Row {
                workload: w,
                measured: m,
            });
        }
    }
    for w in chosen {
        if rows.iter().any(|r| r.workload.name == w.name) {
            continue;
        }
        eprintln!("bench: {} ...", w.name);
        let measured = child(w.name, rate)?;
        rows.push(Row {
            workload: w,
            measured,
        });
    }
    // Report order is the list's order.
    rows.sort_by_key(|r| WORKLOADS.iter().position(|w| w.name == r.workload.name));
    say(&bench::table(&rows));
    say("\n");
    say(&bench::targets(&rows));
    Ok(EXIT_PASS)
}

fn stats(args: StatsArgs) -> Result<i32, i32> {
    let out = crate::stats::run(&args.reports, &args.get, &args.empty).map_err(|e| {
        eprintln!("error: {e}");
        EXIT_BAD_INPUT
    })?;
    say(&out);
    Ok(EXIT_PASS)
}

fn bench_workload(args: BenchWorkloadArgs) -> Result<i32, i32> {
    let w = crate::bench::workload(&args.name).ok_or_else(|| {
        eprintln!(
            "error: unknown workload `{}` (see sim bench --list)",
            args.name
        );
        EXIT_BAD_INPUT
    })?;
    let m = crate::bench::measure(w, args.messages_per_s).map_err(|e| {
        eprintln!("error: workload {}: {e}", w.name);
        EXIT_INTERNAL
    })?;
    sayln!("{}", serde_json::to_string(&m).expect("numbers serialize"));
    Ok(EXIT_PASS)
}
