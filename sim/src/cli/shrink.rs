//! `sim shrink`.

use super::common::{sayln, Words};
use super::ShrinkArgs;
use crate::error::{input, internal, Outcome, Result};
use std::io::IsTerminal;
use std::path::PathBuf;

pub(super) fn shrink(args: ShrinkArgs) -> Result {
    let resolved = crate::scenario::load(&args.scenario, &args.set.set)?;
    let name = resolved.scenario.name.clone();
    let file = args.out.clone().unwrap_or_else(|| {
        crate::output::default_dir_for(&name, &args.set.set, "shrink")
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
        crate::output::check_writable(dir, true).map_err(input)?;
    }
    let started = std::time::Instant::now();
    let base = crate::swarm::materialize(&resolved, args.seed).map_err(|e| input(e.to_string()))?;
    let show = !args.quiet.quiet && std::io::stderr().is_terminal();
    let min = crate::shrink::minimize(&base, args.seed, args.max_runs, |runs, n| {
        if show {
            eprint!("\rshrink: {runs} runs, {n} faults left   ");
        }
    })
    .map_err(internal)?;
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
    let command = Words::new("shrink")
        .path(&args.scenario)
        .flag("--seed", args.seed.to_string())
        .sets(&args.set.set)
        .line();
    let text = min.file_text(&command, started.elapsed(), &file, args.seed);
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
        min.signature.join(", ")
    ));
    Ok(Outcome::Pass)
}
