//! `sim real`: builds the real-mode binary when its sources changed, and runs it.

use crate::cmd::real::RealBuildError;
use crate::error::{input, internal, Error, Outcome, Result};
use baton_model::flags::RealArgs;
use std::path::PathBuf;

impl From<RealBuildError> for Error {
    fn from(e: RealBuildError) -> Error {
        match e {
            RealBuildError::Missing(m) => input(m),
            b @ RealBuildError::Build { .. } => internal(b.to_string()),
        }
    }
}

/// The real-mode binary, built if its sources changed. Unless `quiet`, a line on stderr
/// says so and how long it takes, before the wait; on a terminal a spinner then shows
/// cargo's progress and the time elapsed until the build ends.
pub(super) fn binary(quiet: bool) -> Result<PathBuf> {
    let spinner = crate::cmd::progress::Spinner::new(quiet);
    Ok(crate::cmd::real::build(&spinner, |line| {
        if !quiet {
            eprintln!("real: {line}");
        }
    })?)
}

/// Runs `baton-real real` with `words`; its exit code is passed on.
pub(super) fn run_real(binary: &std::path::Path, words: &[String]) -> Result<i32> {
    // Ctrl-C reaches baton-real too (one process group): wait for it to clean up and
    // pass its exit code on, rather than die first and leave the terminal to it.
    crate::cmd::interrupt::install();
    Ok(crate::cmd::real::run(binary, words)?)
}

pub(super) fn real(args: RealArgs) -> Result {
    // The scenario is checked here too, before a build that may take minutes; baton-real
    // checks it again, with what only real mode refuses.
    baton_model::scenario::load(&args.scenario.scenario, &args.scenario.set.set)?;
    let binary = binary(args.quiet.quiet)?;
    Ok(Outcome::PassedOn(run_real(&binary, &args.to_words())?))
}
