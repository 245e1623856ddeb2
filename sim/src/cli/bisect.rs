//! `sim bisect`.

use super::common::sayln;
use super::BisectArgs;
use crate::cmd::bisect::{self, BisectError};
use crate::error::{input, internal, Error, Outcome, Result};
use std::path::PathBuf;

impl From<BisectError> for Error {
    fn from(e: BisectError) -> Error {
        match e {
            BisectError::Input(m) => input(m),
            BisectError::Failed(m) => internal(format!("bisect failed: {m}")),
        }
    }
}

pub(super) fn bisect(args: BisectArgs) -> Result {
    let cwd = std::env::current_dir()
        .map_err(|e| input(format!("cannot read the working directory: {e}")))?;
    let repo = bisect::repo_of(&cwd)?;
    let good = bisect::resolve(&repo, "--good", &args.good)?;
    let bad = bisect::resolve(&repo, "--bad", &args.bad)?;
    if !args.scenario.is_file() {
        return Err(input(format!(
            "{}: no such scenario file",
            args.scenario.display()
        )));
    }
    let target_dir = args.target_dir.clone().unwrap_or_else(|| {
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo.join("target"))
            .join("bisect")
    });
    let seed = args.seed.seed.unwrap_or(0);
    let plan = bisect::Plan {
        repo,
        good,
        bad,
        scenario: args.scenario.clone(),
        seed,
        set: args.set.set.clone(),
        target_dir,
        profile: args.profile.clone(),
    };
    let quiet = args.quiet.quiet;
    let spinner = crate::cmd::progress::Spinner::new(quiet);
    let found = bisect::bisect(&plan, &spinner, |line| {
        if !quiet {
            spinner.say(&format!("bisect: {line}"));
        }
    })?;
    sayln(format!(
        "first bad commit: {} {}",
        found.commit, found.subject
    ));
    for (property, detail) in &found.failed {
        sayln(format!("fails: {property} ({detail})"));
    }
    sayln(format!(
        "tested {} commits between the ends ({} skipped: no build, or exit 2 or 3)",
        found.tested, found.skipped
    ));
    let mut again = format!(
        "git checkout {} && cargo run --release --bin sim -- run {} --seed {seed}",
        &found.commit[..12],
        baton_model::render::shell::quote(&args.scenario.to_string_lossy()),
    );
    for s in &args.set.set {
        again.push_str(&format!(" --set {}", baton_model::render::shell::quote(s)));
    }
    sayln(format!("reproduce: {again}"));
    Ok(Outcome::Pass)
}
