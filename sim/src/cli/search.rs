//! `sim search`, `sim search --budget` (continuous), and `sim search --merge`.

use super::common::{out_dir, progress, progress_open_ended, say, sayln, write_files, Words};
use super::SearchArgs;
use crate::cmd::search::budget::Budget;
use crate::cmd::search::continuous;
use crate::cmd::search::draw::Draw;
use crate::cmd::search::store::{Identity, Store};
use crate::cmd::search::{self, Failure, Partition};
use crate::error::{input, Outcome, Result};
use std::path::Path;

pub(super) fn search(args: SearchArgs) -> Result {
    if !args.merge.is_empty() {
        return merge(&args);
    }
    if let Some(budget) = args.budget {
        return continuous(&args, budget);
    }
    let path = args
        .scenario
        .clone()
        .expect("clap requires it without --merge");
    let resolved = baton_model::scenario::load(&path, &args.set.set)?;
    let default = baton_model::render::output_dir::default_dir_for(
        &resolved.scenario.name,
        &args.set.set,
        "search",
    );
    let dir = out_dir(&args.out.out, args.out.force, default)?;
    let partition = args.partition.unwrap_or(Partition::All);
    let plan = search::Plan {
        resolved,
        seeds: args.seeds.or(0..1000),
        partition,
        jobs: args.jobs.jobs as usize,
        watchdog: std::time::Duration::from_secs(args.watchdog_s),
        recheck_with: std::env::current_exe().ok(),
        first_failure: args.first_failure,
    };
    let total = partition.seeds(&plan.seeds).len() as u64;
    let bar = progress(total, "seeds", args.quiet.quiet);
    let found = search::run(&plan, &bar);
    bar.finish();
    let found = found?;
    let mut words = Words::new("search")
        .path(&path)
        .seeds("--seeds", &plan.seeds);
    if partition != Partition::All {
        words = words.flag("--partition", partition.label());
    }
    if args.first_failure {
        words = words.word("--first-failure");
    }
    let command = words.sets(&args.set.set).line();
    let files: Vec<(String, Vec<u8>)> = found
        .reproducers
        .iter()
        .map(|(k, (_, t))| (format!("{k}.toml"), t.clone().into_bytes()))
        .collect();
    // Stopping at the first failure is what was asked, not an interruption.
    let stopped = args.first_failure && !found.failures.is_empty();
    let interrupted = (found.seeds_run < total && !stopped).then_some((found.seeds_run, total));
    let written = Written {
        dir: &dir,
        command: &command,
        seeds_run: found.seeds_run,
        failures: &found.failures,
        merged: &[],
        interrupted,
    };
    written.write(&files)
}

/// `--budget`: draws seeds into the store until the budget is spent, prints the table.
fn continuous(args: &SearchArgs, budget: Budget) -> Result {
    let path = args
        .scenario
        .clone()
        .expect("clap requires it without --merge");
    let resolved = baton_model::scenario::load(&path, &args.set.set)?;
    let store_path = args.store.clone().unwrap_or_else(|| {
        baton_model::render::output_dir::default_dir_for(
            &resolved.scenario.name,
            &args.set.set,
            "search.sqlite",
        )
    });
    let identity = Identity {
        search: Words::new("search").path(&path).sets(&args.set.set).line(),
        resolved_toml: resolved.to_toml(),
    };
    let store = Store::open(&store_path, &identity)?;
    let mut words = Words::new("search")
        .path(&path)
        .flag("--budget", budget.label())
        .flag("--draw-seed", args.draw_seed.to_string())
        .flag("--store", store_path.display().to_string());
    if args.shrink_max_runs != continuous::SHRINK_RUNS {
        words = words.flag("--shrink-max-runs", args.shrink_max_runs.to_string());
    }
    let command = words.sets(&args.set.set).line();
    let plan = continuous::Plan {
        resolved,
        budget,
        draw: Draw {
            seed: args.draw_seed,
        },
        jobs: args.jobs.jobs as usize,
        watchdog: std::time::Duration::from_secs(args.watchdog_s),
        recheck_with: std::env::current_exe().ok(),
        shrink_runs: args.shrink_max_runs,
    };
    let bar = match budget {
        Budget::Seeds(n) => progress(n, "seeds", args.quiet.quiet),
        Budget::Time(_) => progress_open_ended("seeds", args.quiet.quiet),
    };
    let report = continuous::search(&plan, store, &command, &bar);
    bar.finish();
    let report = report?;
    if args.quiet.quiet {
        sayln(format!("search: {}", store_path.display()));
    } else {
        say(&report.text);
    }
    if report.interrupted {
        eprintln!(
            "interrupted: the store {} holds every seed that finished; the same command goes on from there",
            store_path.display()
        );
        return Ok(Outcome::Interrupted);
    }
    Ok(Outcome::of(!report.failed))
}

fn merge(args: &SearchArgs) -> Result {
    let out = args
        .out
        .out
        .clone()
        .ok_or_else(|| input("--merge needs --out DIR"))?;
    let dir = out_dir(&Some(out), args.out.force, Default::default())?;
    let merged = search::merge::merge(&args.merge)?;
    let mut words = Words::new("search").word("--merge");
    for d in &args.merge {
        words = words.word(d.display().to_string());
    }
    let command = words.line();
    let written = Written {
        dir: &dir,
        command: &command,
        seeds_run: merged.seeds_run,
        failures: &merged.failures,
        merged: &merged.commands,
        interrupted: None,
    };
    written.write(&merged.files)
}

/// A search's (or a merge's) outputs, to be written and summed up.
struct Written<'a> {
    dir: &'a Path,
    command: &'a str,
    seeds_run: u64,
    failures: &'a [Failure],
    merged: &'a [String],
    interrupted: Option<(u64, u64)>,
}

impl Written<'_> {
    /// Writes the summary files and `files` (the reproducers), prints the summary.
    fn write(&self, files: &[(String, Vec<u8>)]) -> Result {
        let outputs = search::outputs(
            self.command,
            self.seeds_run,
            self.failures,
            self.merged,
            self.interrupted,
        );
        let mut all: Vec<(&str, &[u8])> = outputs.iter().map(|(n, t)| (*n, t.as_bytes())).collect();
        all.extend(files.iter().map(|(n, b)| (n.as_str(), b.as_slice())));
        write_files(self.dir, "search", &all)?;
        say(&outputs[1].1);
        sayln(format!("search: {}", self.dir.display()));
        if let Some((done, planned)) = self.interrupted {
            eprintln!(
                "interrupted after {done} of {planned} runs: the search in {} holds the seeds that finished",
                self.dir.display()
            );
            return Ok(Outcome::Interrupted);
        }
        Ok(Outcome::of(self.failures.is_empty()))
    }
}
