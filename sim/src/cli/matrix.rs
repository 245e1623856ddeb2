//! `sim matrix`.

use super::common::{
    out_dir, progress, protocols, refuse_protocol_set, say, sayln, write_files, Words,
};
use super::MatrixArgs;
use crate::error::{Outcome, Result};
use crate::world::protocol::ProtocolName;
use std::path::PathBuf;

/// Where a matrix goes without --out: beside the committed one, never onto it.
const DEFAULT_DIR: &str = "reports/matrix-latest";

pub(super) fn matrix(args: MatrixArgs) -> Result {
    let protocols = protocols(&args.protocols.protocols, ProtocolName::ALL.to_vec())?;
    refuse_protocol_set(
        &args.set.set,
        "this command sets each run's protocol from --protocols (default all); choose protocols with --protocols",
    )?;
    let plan = crate::cmd::matrix::Plan {
        scenarios: args.scenarios.clone(),
        protocols,
        seeds: args.seeds.or(0..20),
        set: args.set.set.clone(),
        jobs: args.jobs.jobs as usize,
    };
    let resolved = crate::cmd::matrix::resolve(&plan)?;
    let dir = out_dir(&args.out.out, args.out.force, PathBuf::from(DEFAULT_DIR))?;
    let total = resolved.len() as u64 * (plan.seeds.end - plan.seeds.start);
    let bar = progress(total, "runs", args.quiet.quiet);
    let outcome = crate::cmd::matrix::run(&plan, &resolved, &bar);
    bar.finish();
    let outcome = outcome?;
    let mut words = Words::new("matrix");
    for p in &args.scenarios {
        words = words.path(p);
    }
    let command = words
        .flag(
            "--protocols",
            args.protocols.protocols.as_deref().unwrap_or("all"),
        )
        .seeds("--seeds", &plan.seeds)
        .sets(&plan.set)
        .line();
    let md = crate::cmd::matrix::markdown(&plan, &command, &outcome);
    let json = crate::cmd::matrix::json(&plan, &command, &outcome);
    write_files(
        &dir,
        "matrix",
        &[
            ("matrix.md", md.as_bytes()),
            ("matrix.json", json.as_bytes()),
        ],
    )?;
    say(&md);
    sayln(format!("matrix: {}", dir.display()));
    if outcome.interrupted() {
        eprintln!(
            "interrupted after {} of {} runs: the matrix in {} holds the runs that finished",
            outcome.runs_done,
            outcome.runs_planned,
            dir.display()
        );
        return Ok(Outcome::Interrupted);
    }
    Ok(Outcome::Pass)
}
