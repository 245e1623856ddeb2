//! What every section of summary.txt reads (one [`Run`]) and how it writes a time, shared
//! by `summary.rs`, which lists the sections in order, and `feature_sections.rs`, which
//! writes those of the features a scenario turns on.

use crate::checker::Findings;
use crate::run_output::RunOutput;
use crate::scenario::Resolved;
use crate::trial::TrialReport;

/// What every section reads: the resolved scenario and seed, the run's output and its
/// findings, and what a real run adds.
pub(super) struct Run<'a> {
    pub(super) r: &'a Resolved,
    pub(super) seed: u64,
    pub(super) out: &'a RunOutput,
    pub(super) f: &'a Findings,
    pub(super) real: Option<&'a TrialReport>,
}

/// One section of summary.txt: appends its lines.
pub(super) type Section = fn(&mut String, &Run);

/// A time in milliseconds as the summary writes it (`2387.2 ms`).
pub(super) fn ms(v: f64) -> String {
    format!("{v:.1} ms")
}
