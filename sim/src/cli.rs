//! The command line: clap definitions and what each subcommand does.

use crate::experiment::{self, Artifacts};
use crate::output;
use crate::scenario::{self, Resolved};
use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::time::Instant;

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
  2  bad input or usage: the scenario file, a --set, an argument or the output directory;
     the error names file:line, key and what is allowed, and nothing is written
  3  internal error: the simulator itself failed

With `git bisect run sim run SCENARIO --seed N`, 0 marks a commit good and 1 bad.";

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
    /// Writes scenario.toml (resolved), timeline.jsonl, summary.txt, report.json and
    /// leaders_acting.svg to reports/<scenario>/<seed>/ (or --out), prints the summary,
    /// and exits 0 if every checked property held, 1 if one failed.
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
    /// Measure simulated seconds per wall-clock second for scenarios.
    ///
    /// Prints a Markdown table; the figures depend on the machine.
    Bench(BenchArgs),
}

#[derive(Debug, Args)]
struct ScenarioArgs {
    /// The scenario file (TOML).
    scenario: PathBuf,
    /// The root seed of the run.
    #[arg(long, default_value_t = 0)]
    seed: u64,
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
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Overrides applied to every run, as in `run`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Write matrix.md and matrix.json here instead of reports/matrix/.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write into a directory that holds files sim did not write.
    #[arg(long)]
    force: bool,
}

#[derive(Debug, Args)]
struct BenchArgs {
    /// Scenario files.
    #[arg(required = true)]
    scenarios: Vec<PathBuf>,
    /// Seeds to run each scenario with, as A..B (B excluded).
    #[arg(long, default_value = "0..5", value_parser = parse_seed_range)]
    seeds: std::ops::Range<u64>,
    /// Overrides applied to every scenario, as in `run`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
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
        EXIT_INTERNAL
    })
}

/// Runs the parsed command; returns the process exit status.
pub fn main(cli: Cli) -> i32 {
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::CheckDeterminism(args) => check_determinism(args),
        Command::Matrix(args) => matrix(args),
        Command::Bench(args) => bench(args),
    };
    result.unwrap_or_else(|code| code)
}

fn run(args: RunArgs) -> Result<i32, i32> {
    let resolved = load(&args.scenario)?;
    let seed = args.scenario.seed;
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| output::default_dir(&resolved.scenario.name, &resolved.overrides, seed));
    // Refuse before simulating: bad input never leaves a partial report behind.
    output::check_writable(&dir, args.force).map_err(|e| {
        eprintln!("error: {e}");
        EXIT_BAD_INPUT
    })?;
    let artifacts = simulate(&resolved, seed)?;
    output::write_all(&dir, &artifacts.files()).map_err(|e| {
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
    }
    Ok(if artifacts.passed {
        EXIT_PASS
    } else {
        EXIT_FAIL
    })
}

fn check_determinism(args: ScenarioArgs) -> Result<i32, i32> {
    let resolved = load(&args)?;
    let a = simulate(&resolved, args.seed)?;
    let b = simulate(&resolved, args.seed)?;
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
        sayln!(
            "deterministic: seed {} gave byte-identical artifacts twice",
            args.seed
        );
        Ok(EXIT_PASS)
    } else {
        sayln!("NOT deterministic: {} differ", differ.join(", "));
        Ok(EXIT_FAIL)
    }
}

fn matrix(args: MatrixArgs) -> Result<i32, i32> {
    use crate::protocol::ProtocolName;
    let protocols: Vec<ProtocolName> = if args.protocols == "all" {
        ProtocolName::ALL.to_vec()
    } else {
        args.protocols
            .split(',')
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
            .collect::<Result<_, _>>()?
    };
    let plan = crate::matrix::Plan {
        scenarios: args.scenarios.clone(),
        protocols,
        seeds: args.seeds.clone(),
        set: args.set.clone(),
        jobs: args.jobs,
    };
    let resolved = crate::matrix::resolve(&plan).map_err(|e| {
        eprintln!("error: {e}");
        EXIT_BAD_INPUT
    })?;
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("reports/matrix"));
    output::check_writable(&dir, args.force).map_err(|e| {
        eprintln!("error: {e}");
        EXIT_BAD_INPUT
    })?;
    let cells = crate::matrix::run(&plan, &resolved).map_err(|e| {
        eprintln!("internal error: the simulation failed: {e}");
        EXIT_INTERNAL
    })?;
    let mut command = String::from("sim matrix");
    for s in &args.scenarios {
        let _ = std::fmt::Write::write_fmt(&mut command, format_args!(" {}", s.display()));
    }
    let _ = std::fmt::Write::write_fmt(
        &mut command,
        format_args!(
            " --protocols {} --seeds {}..{}",
            args.protocols, args.seeds.start, args.seeds.end
        ),
    );
    for s in &args.set {
        let _ = std::fmt::Write::write_fmt(&mut command, format_args!(" --set {s}"));
    }
    let md = crate::matrix::markdown(&plan, &command, &cells);
    let json = serde_json::json!({ "command": command, "seeds": [args.seeds.start, args.seeds.end], "cells": cells });
    let json = serde_json::to_string_pretty(&json).expect("cells serialize") + "\n";
    output::write_all(
        &dir,
        &[
            ("matrix.md", md.clone().into_bytes()),
            ("matrix.json", json.into_bytes()),
        ],
    )
    .map_err(|e| {
        eprintln!("error: cannot write the matrix to {}: {e}", dir.display());
        EXIT_INTERNAL
    })?;
    say(&md);
    sayln!("matrix: {}", dir.display());
    Ok(EXIT_PASS)
}

fn bench(args: BenchArgs) -> Result<i32, i32> {
    sayln!("| scenario | seeds | rate_per_s | simulated s | wall s (simulation) | sim s / wall s | wall s (with checks + report) | sim s / wall s | messages / wall s |");
    sayln!("|---|---|---|---|---|---|---|---|---|");
    for path in &args.scenarios {
        let resolved = load(&ScenarioArgs {
            scenario: path.clone(),
            seed: 0,
            set: args.set.clone(),
        })?;
        let (mut sim_wall, mut total_wall, mut messages) = (0.0f64, 0.0f64, 0u64);
        for seed in args.seeds.clone() {
            let t0 = Instant::now();
            let out = crate::run::run(&resolved, seed).map_err(|e| {
                eprintln!("internal error: the simulation failed: {e}");
                EXIT_INTERNAL
            })?;
            sim_wall += t0.elapsed().as_secs_f64();
            experiment::report(&resolved, seed, &out);
            total_wall += t0.elapsed().as_secs_f64();
            messages += out.messages;
        }
        let n = args.seeds.end - args.seeds.start;
        let simulated_s = resolved.scenario.duration_ms as f64 / 1000.0 * n as f64;
        sayln!(
            "| {} | {}..{} | {} | {:.0} | {:.2} | {:.0} | {:.2} | {:.0} | {:.0} |",
            Path::new(path).display(),
            args.seeds.start,
            args.seeds.end,
            resolved.scenario.work.rate_per_s,
            simulated_s,
            sim_wall,
            simulated_s / sim_wall,
            total_wall,
            simulated_s / total_wall,
            messages as f64 / sim_wall,
        );
    }
    Ok(EXIT_PASS)
}
