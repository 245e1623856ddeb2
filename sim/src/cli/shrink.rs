//! `sim shrink`.

use super::common::{sayln, Words};
use super::ShrinkArgs;
use crate::error::{input, internal, Outcome, Result};
use std::io::IsTerminal;
use std::path::PathBuf;

pub(super) fn shrink(args: ShrinkArgs) -> Result {
    let resolved = baton_model::scenario::load(&args.scenario, &args.set.set)?;
    let name = resolved.scenario.name.clone();
    let file = args.out.clone().unwrap_or_else(|| {
        baton_model::render::output_dir::default_dir_for(&name, &args.set.set, "shrink")
            .join(format!("{name}.min.toml"))
    });
    if file.exists() && !args.force {
        return Err(input(format!(
            "{} exists: pass --force to replace it, or choose another --out",
            file.display()
        )));
    }
    let parent = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map(PathBuf::from);
    if let Some(dir) = &parent {
        // Only writability: the file itself is the one thing written there.
        baton_model::render::output_dir::check_writable(dir, true)?;
    }
    let started = std::time::Instant::now();
    let base = baton_model::swarm::materialize(&resolved, args.seed)?;
    let fixed = if args.fixed_by.is_empty() {
        None
    } else {
        let with_fix = [args.set.set.clone(), args.fixed_by.clone()].concat();
        let r = baton_model::scenario::load(&args.scenario, &with_fix)?;
        Some(baton_model::swarm::materialize(&r, args.seed)?)
    };
    let show = !args.quiet.quiet && std::io::stderr().is_terminal();
    let min = crate::cmd::shrink::minimize(
        &base,
        args.seed,
        args.max_runs,
        fixed.as_ref(),
        &|| false,
        |runs, n| {
            if show {
                eprint!("\rshrink: {runs} runs, {n} faults left   ");
            }
        },
    )
    .map_err(|e| match e {
        crate::cmd::shrink::MinimizeError::FailsWithFix => input(format!(
            "{} under seed {} fails with --fixed-by {} as well: nothing tells the bug apart",
            args.scenario.display(),
            args.seed,
            args.fixed_by.join(" --fixed-by ")
        )),
        e => e.into(),
    })?;
    if show {
        eprintln!();
    }
    let Some(min) = min else {
        sayln(format!(
            "{} passes under seed {}: nothing to shrink (nothing written)",
            args.scenario.display(),
            args.seed
        ));
        return Ok(Outcome::Pass);
    };
    let mut command = Words::new("shrink")
        .path(&args.scenario)
        .flag("--seed", args.seed.to_string())
        .sets(&args.set.set);
    for f in &args.fixed_by {
        command = command.flag("--fixed-by", f.clone());
    }
    let command = command.line();
    let text = min.file_text(&command, Some(started.elapsed()), &file, args.seed);
    if let Some(dir) = &parent {
        std::fs::create_dir_all(dir)
            .map_err(|e| internal(format!("cannot create {}: {e}", dir.display())))?;
    }
    std::fs::write(&file, text)
        .map_err(|e| internal(format!("cannot write {}: {e}", file.display())))?;
    sayln(format!(
        "shrunk {} faults to {} in {} runs: {} ({})",
        min.faults_before,
        min.resolved.scenario.faults.len(),
        min.runs,
        file.display(),
        crate::cmd::shrink::names(&min.signature)
    ));
    Ok(Outcome::Pass)
}
