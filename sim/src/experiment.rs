//! One experiment end to end: simulate, check, and render every artifact in memory.

use crate::run;
use crate::scenario::Resolved;
pub use baton_model::artifacts::{report, report_verdict, Artifacts};

/// Simulates `resolved` under `seed` and renders its report, timeline included.
///
/// A scenario with a `[swarm]` runs (and reports) with the faults its seed draws.
pub fn run(resolved: &Resolved, seed: u64) -> Result<Artifacts, String> {
    let resolved = &crate::swarm::materialize(resolved, seed).map_err(|e| e.to_string())?;
    let out = run::run(resolved, seed, true)?;
    Ok(report(resolved, seed, out))
}

/// As [`run()`], without the timeline file and the pages a person reads (for commands
/// that only read the verdict, the findings, the summary and report.json).
pub fn run_unrecorded(resolved: &Resolved, seed: u64) -> Result<Artifacts, String> {
    let resolved = &crate::swarm::materialize(resolved, seed).map_err(|e| e.to_string())?;
    let out = run::run(resolved, seed, false)?;
    Ok(report_verdict(resolved, seed, out))
}
