//! `sim compare`.

use super::common::{out_dir, say, sayln, write_files, Words};
use super::real::{binary, run_real};
use super::CompareArgs;
use crate::cmd::compare::{self, RunFigures};
use crate::error::{Error, Outcome, Result};
use crate::run::SeedFailed;
use std::path::{Path, PathBuf};

pub(super) fn compare(args: CompareArgs) -> Result {
    let Sides {
        resolved,
        real,
        title,
        live,
        command,
        dir,
    } = match (&args.conform_dir, &args.experiment) {
        (Some(conform), Some(experiment)) => conform_side(&args, conform, experiment)?,
        _ => real_side(&args)?,
    };
    let seeds: Vec<u64> = args.sim_seeds.clone().collect();
    let sims = crate::cmd::pool::map_ordered(seeds.len(), args.jobs.jobs as usize, |i| {
        let a = crate::run::run_unrecorded(&resolved, seeds[i]).map_err(|error| SeedFailed {
            seed: seeds[i],
            error,
        })?;
        // The simulator's own report.json always reads back.
        Ok(RunFigures::from_report_json(&a.report_json).expect("a report.json of our own"))
    });
    let sim = sims
        .into_iter()
        .collect::<std::result::Result<Vec<_>, SeedFailed>>()
        .map_err(Error::SimSide)?;
    let c = compare::compare(&command, &title, &live, &sim, &real);
    let (md, json) = (c.markdown(), c.json());
    write_files(
        &dir,
        "comparison",
        &[
            ("compare.md", md.as_bytes()),
            ("compare.json", json.as_bytes()),
        ],
    )?;
    if args.quiet.quiet {
        let verdict = if c.within_targets {
            "WITHIN TARGETS"
        } else {
            "OFF TARGET"
        };
        sayln(format!("{verdict}: {}", dir.display()));
    } else {
        say(&md);
        sayln(format!("compare: {}", dir.display()));
    }
    Ok(Outcome::of(c.within_targets))
}

/// What the comparison is of, before the simulator runs.
struct Sides {
    /// The scenario the simulator runs.
    resolved: baton_model::scenario::Resolved,
    /// The live trials' figures.
    real: Vec<RunFigures>,
    /// What compare.md is titled.
    title: String,
    /// The live side's name (`live etcd`, `live go-etcd`).
    live: String,
    /// The command, as the report names it.
    command: String,
    /// The output directory, checked.
    dir: PathBuf,
}

/// The live side from `sim real`: run now, or read from `--real-dir`.
fn real_side(args: &CompareArgs) -> Result<Sides> {
    // clap requires the scenario unless --conform-dir is given.
    let scenario = args.scenario.as_deref().expect("clap requires a scenario");
    let resolved = baton_model::scenario::load(scenario, &args.set.set)?;
    let name = resolved.scenario.name.clone();
    let default = baton_model::render::output_dir::default_dir_for(&name, &args.set.set, "compare");
    let dir = out_dir(&args.out.out, args.out.force, default)?;
    let mut words = Words::new("compare")
        .path(scenario)
        .seeds("--sim-seeds", &args.sim_seeds);
    words = match &args.real_dir {
        Some(d) => words.flag("--real-dir", d.display().to_string()),
        None => words.flag("--real-trials", args.real_trials.to_string()),
    };
    let command = words.sets(&args.set.set).line();
    // The live side first: real mode refuses a scenario it cannot run before anything
    // starts, and the simulation should not run for nothing.
    let real_dir = match &args.real_dir {
        Some(d) => d.clone(),
        None => live_trials(args, scenario, &dir)?,
    };
    let real = compare::read_live(&real_dir)?;
    Ok(Sides {
        title: name,
        live: resolved.scenario.protocol.live_side(),
        resolved,
        real,
        command,
        dir,
    })
}

/// The live side from a conformance run's experiment: its trials, and the scenario they
/// ran (with `--set` on top) for the simulator.
fn conform_side(args: &CompareArgs, conform: &Path, experiment: &str) -> Result<Sides> {
    let exp = compare::conformance::open(conform, experiment)?;
    let resolved = baton_model::scenario::load(&exp.scenario, &args.set.set)?;
    let name = format!("{}-{experiment}", exp.library);
    let default = baton_model::render::output_dir::default_dir_for(&name, &args.set.set, "compare");
    let dir = out_dir(&args.out.out, args.out.force, default)?;
    let command = Words::new("compare")
        .flag("--conform-dir", conform.display().to_string())
        .flag("--experiment", experiment)
        .seeds("--sim-seeds", &args.sim_seeds)
        .sets(&args.set.set)
        .line();
    Ok(Sides {
        title: format!(
            "{}, {experiment}, against {}",
            exp.library,
            resolved.scenario.protocol.name()
        ),
        resolved,
        real: exp.live,
        live: format!("live {}", exp.library),
        command,
        dir,
    })
}

/// Runs the live trials into `dir/real/` and returns that directory.
fn live_trials(args: &CompareArgs, scenario: &Path, dir: &Path) -> Result<PathBuf> {
    let binary = binary(args.quiet.quiet)?;
    let out = dir.join("real");
    let mut words = vec![
        scenario.display().to_string(),
        "--trials".into(),
        args.real_trials.to_string(),
        "--out".into(),
        out.display().to_string(),
        "--force".into(),
    ];
    if args.quiet.quiet {
        words.push("--quiet".into());
    }
    for s in &args.set.set {
        words.extend(["--set".into(), s.clone()]);
    }
    let code = run_real(&binary, &words)?;
    // 0 and 1 are verdicts (data here); anything else ends the comparison.
    if code > 1 {
        return Err(Error::Child {
            code,
            message: format!("real mode exited {code}: no comparison written"),
        });
    }
    Ok(out)
}
