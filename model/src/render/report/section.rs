//! What every section of summary.txt reads (one [`Run`]) and how it writes a time, shared
//! by `summary.rs`, which lists the sections in order, and `feature_sections.rs`, which
//! writes those of the features a scenario turns on.

use crate::checker::failover::LatencyStats;
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

/// Nearest-rank statistics as the summary writes them (`p50 12.0 ms p99 40.1 ms max
/// 40.1 ms over 9`), or `no samples` when there were none: percentiles of nothing are
/// not zero, and a reader should not take them for a measured 0 ms.
pub(super) fn percentiles(s: &LatencyStats) -> String {
    if s.count == 0 {
        return "no samples".into();
    }
    format!(
        "p50 {} p99 {} max {} over {}",
        ms(s.p50),
        ms(s.p99),
        ms(s.max),
        s.count
    )
}

#[cfg(test)]
mod tests {
    //! Methodology: the formatter on no samples and on some, as the summary prints them.
    use super::*;

    #[test]
    fn percentiles_of_nothing_say_so() {
        assert_eq!(percentiles(&LatencyStats::of(&[])), "no samples");
        assert_eq!(
            percentiles(&LatencyStats::of(&[3.0, 1.0])),
            "p50 1.0 ms p99 3.0 ms max 3.0 ms over 2"
        );
    }
}
