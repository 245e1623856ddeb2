//! The spec's own criteria for two experiments, judged on top of the trial's checkers,
//! and the figures the spec asks each of them to report.
//!
//! **Election churn** (9 nodes, the leader killed and restarted every 5 s): election
//! latency's p99 over the storm, one winner per round (no `election_safety` violation,
//! at most one node believing it led at once), and no starved node (a node that ran
//! through [`STARVED_MIN_ELECTIONS`] elections without a win fails the trial: the
//! checkers measure starvation but fail no run on it, and the spec makes it a criterion
//! here). Backend requests per second during the storm are not given: real mode counts
//! no backend's requests (its reports' `backend_requests_per_s` is 0 on every backend),
//! so the figure would be a false zero.
//!
//! **Graceful step-down**: the gap between the old leader's stop and the new leader's
//! first write (`handoff_gaps`, as the failover checker measures it), which must never
//! be negative. The checkers already fail accepted interleaving (`negative_handoff_gap`);
//! the spec fails any negative gap, a fenced-out write of the old leader included: a
//! leader that was asked to step down has no reason to write after its successor.

use baton_model::checker::wins::STARVED_MIN_ELECTIONS;
use baton_model::checker::Property;
use baton_model::Findings;
use serde::Serialize;

/// Which of the spec's criteria an experiment adds to the checkers'.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecCheck {
    /// None beyond the checkers.
    None,
    /// Election churn: no starved node.
    Churn,
    /// Graceful step-down: the handoff gap is never negative.
    StepDown,
}

/// A criterion of the spec a trial broke.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpecFailure {
    /// Its name, as the verdict table lists it with the checkers' properties.
    pub criterion: &'static str,
    /// What happened.
    pub detail: String,
}

impl SpecCheck {
    /// The criteria findings `f` broke.
    pub fn failures(self, f: &Findings) -> Vec<SpecFailure> {
        match self {
            SpecCheck::None => vec![],
            SpecCheck::Churn => f
                .elections
                .starved
                .iter()
                .map(|n| SpecFailure {
                    criterion: "starved_node",
                    detail: format!(
                        "{n} ran through {} elections without a win (the spec: no starved node)",
                        f.elections
                            .wins_by_node
                            .get(n)
                            .map_or(STARVED_MIN_ELECTIONS, |w| w.elections_running)
                    ),
                })
                .collect(),
            SpecCheck::StepDown => f
                .handoff_gaps
                .iter()
                .filter(|g| g.gap_ms < 0.0)
                .map(|g| SpecFailure {
                    criterion: "negative_step_down_gap",
                    detail: format!(
                        "{} (token {}) first wrote {:.1} ms before {} (token {}) stopped (the spec: the gap is never negative)",
                        g.new_node, g.new_token, -g.gap_ms, g.old_node, g.old_token
                    ),
                })
                .collect(),
        }
    }
}

/// The `election_safety` violations among `f`'s: two winners of one round.
pub fn election_safety_violations(f: &Findings) -> usize {
    f.violations
        .iter()
        .filter(|v| v.property == Property::ElectionSafety)
        .count()
}
