//! `sim run` and `sim check-determinism`.

use super::common::{say, sayln, sim_hint};
use super::RunArgs;
use crate::error::{internal, Error, Outcome, Result};
use crate::run::{self, Artifacts};
use baton_model::flags::ScenarioArgs;
use baton_model::render::output_dir;
use baton_model::scenario::{self, Resolved};

/// Loads the scenario with its overrides (bad input: exit 2).
pub(super) fn load(args: &ScenarioArgs) -> Result<Resolved> {
    Ok(scenario::load(&args.scenario, &args.set.set)?)
}

/// Runs the scenario under `seed`; a failure is an internal error with its reproducer.
pub(super) fn simulate(resolved: &Resolved, seed: u64) -> Result<Artifacts> {
    run::run(resolved, seed).map_err(|message| Error::Simulation {
        message,
        reproduce: baton_model::render::report::reproduce_command(resolved, seed),
    })
}

pub(super) fn run(args: RunArgs) -> Result {
    let resolved = load(&args.scenario)?;
    let seed = args
        .scenario
        .seed
        .seed
        .unwrap_or_else(|| resolved.default_seed());
    let dir = match &args.out.out {
        Some(dir) => dir.clone(),
        None => {
            // Named by the origin: rerunning a report's resolved scenario.toml writes to
            // that report's directory, never to another run's.
            let origin = resolved.origin();
            let dir = output_dir::default_dir(&resolved.scenario.name, &origin.overrides, seed);
            output_dir::check_same_scenario(&dir, &origin.file)?;
            dir
        }
    };
    // Refuse before simulating: bad input never leaves a partial report behind.
    output_dir::check_writable(&dir, args.out.force)?;
    let artifacts = simulate(&resolved, seed)?;
    output_dir::write_run(&dir, &artifacts)
        .map_err(|e| internal(format!("cannot write the report to {}: {e}", dir.display())))?;
    if args.quiet.quiet {
        let verdict = if artifacts.passed { "PASS" } else { "FAIL" };
        sayln(format!("{verdict}: {}", dir.display()));
    } else {
        say(&artifacts.summary_txt);
        sayln(format!("report: {}", dir.display()));
        if let Some(hint) = sim_hint() {
            sayln(hint);
        }
    }
    Ok(Outcome::of(artifacts.passed))
}

pub(super) fn check_determinism(args: ScenarioArgs) -> Result {
    let resolved = load(&args)?;
    let seed = args.seed.seed.unwrap_or_else(|| resolved.default_seed());
    let a = simulate(&resolved, seed)?;
    let b = simulate(&resolved, seed)?;
    let mut differ = vec![];
    for ((name, x), (_, y)) in a.files().iter().zip(b.files().iter()) {
        if x != y {
            differ.push(*name);
        }
        let same = if x == y { "identical" } else { "DIFFERENT" };
        sayln(format!("{name}: {} bytes, {same}", x.len()));
    }
    if differ.is_empty() {
        sayln(format!(
            "deterministic: seed {seed} gave byte-identical artifacts twice"
        ));
    } else {
        sayln(format!("NOT deterministic: {} differ", differ.join(", ")));
    }
    Ok(Outcome::of(differ.is_empty()))
}
