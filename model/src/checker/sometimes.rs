//! "Sometimes" expectations: the run reached the state the scenario is about.
//!
//! A fencing scenario whose paused leader never woke up to write passes every safety
//! check without testing anything. So each scenario names what must happen at least
//! once (stateright's `sometimes`), and an unmet one is a
//! [`Property::ExpectationNeverMet`](super::Property::ExpectationNeverMet), dated at the end of the run, when "never" is known.
//!
//! - `stale-write-rejected`: some `WriteRejected` exists.
//! - `leader-changed`: writes from at least two leaderships were accepted.
//! - `belief-overlap`: two nodes believed they led at once (belief max >= 2).
//! - `leader-resigned`: some `StoppedActing` has reason `resigned`.
//! - `deadline-stop`: some `StoppedActing` has reason `deadline_passed` (a leader stopped
//!   by its own clock, without being told).
//! - `leader-transferred`: some `StoppedActing` has reason `transferred` (a leader
//!   stopped to hand over; whether its successor took over is the transfer checker's).

use super::{accepted_writes, belief, Accepted, CheckInput, LeadershipKey, Violation};
use crate::scenario::{Resolved, Sometimes as Expectation};
use crate::timeline::{Entry, Event};
use serde::Serialize;
use std::collections::BTreeSet;

/// One expectation and whether it held.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SometimesResult {
    /// Its name, as in the scenario file.
    pub name: &'static str,
    /// Whether it held at least once.
    pub met: bool,
}

/// Evaluates each of the scenario's expectations, in the order the scenario lists them.
pub fn check(input: &CheckInput, out: &mut Vec<Violation>) -> Vec<SometimesResult> {
    let mut s = Sometimes::default();
    for e in input.entries {
        s.entry(e);
    }
    for w in accepted_writes(input.entries) {
        s.write(&w);
    }
    let belief_max = belief::summarize(input.entries, input.end_us).max;
    s.finish(input.resolved, belief_max, input.end_ms(), out)
}

/// What the expectations need, read one event and one accepted write at a time.
#[derive(Default)]
pub(crate) struct Sometimes {
    rejected: bool,
    resigned: bool,
    deadline_stop: bool,
    transferred: bool,
    /// Leaderships that had a write accepted, up to two (enough to know it changed).
    leaderships: BTreeSet<LeadershipKey>,
}

impl Sometimes {
    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        match &e.event {
            Event::WriteRejected { .. } | Event::BatchRefused { .. } => self.rejected = true,
            Event::StoppedActing { reason, .. } if reason == "resigned" => self.resigned = true,
            Event::StoppedActing { reason, .. } if reason == "transferred" => {
                self.transferred = true
            }
            Event::StoppedActing { reason, .. } if reason == "deadline_passed" => {
                self.deadline_stop = true
            }
            _ => {}
        }
    }

    /// Reads the next accepted write.
    pub fn write(&mut self, w: &Accepted) {
        if self.leaderships.len() < 2 {
            self.leaderships.insert(w.leadership.clone());
        }
    }

    /// Appends a violation per unmet expectation (dated `end_ms`); `belief_max` is the
    /// most nodes that believed they led at once.
    pub fn finish(
        self,
        resolved: &Resolved,
        belief_max: u32,
        end_ms: f64,
        out: &mut Vec<Violation>,
    ) -> Vec<SometimesResult> {
        let mut results = vec![];
        for &expectation in &resolved.scenario.expect.sometimes {
            let met = match expectation {
                Expectation::StaleWriteRejected => self.rejected,
                Expectation::LeaderChanged => self.leaderships.len() >= 2,
                Expectation::BeliefOverlap => belief_max >= 2,
                Expectation::LeaderResigned => self.resigned,
                Expectation::LeaderTransferred => self.transferred,
                Expectation::DeadlineStop => self.deadline_stop,
            };
            if !met {
                out.push(Violation::expectation_never_met(end_ms, expectation.name()));
            }
            results.push(SometimesResult {
                name: expectation.name(),
                met,
            });
        }
        results
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: one timeline that meets every expectation, and one that meets none.
    //! The quiet case must report each as met; the canary must fire once per expectation.
    use super::super::testing::*;
    use super::*;

    fn all_expected() -> Resolved {
        let mut r = resolved();
        r.scenario.expect.sometimes = vec![
            Expectation::StaleWriteRejected,
            Expectation::LeaderChanged,
            Expectation::BeliefOverlap,
            Expectation::LeaderResigned,
            Expectation::DeadlineStop,
            Expectation::LeaderTransferred,
        ];
        r
    }

    #[test]
    fn all_met_is_quiet() {
        let r = all_expected();
        let entries = vec![
            leader(100, "n1", 1),
            tick(200, "n1", 1),
            leader(300, "n2", 2),
            tick(400, "n2", 2),
            rejected(500, "n1", 1, 2),
            stopped(600, "n1", 1, "resigned"),
            stopped(700, "n2", 2, "deadline_passed"),
            stopped(800, "n2", 2, "transferred"),
        ];
        let mut v = vec![];
        let res = check(&input(&r, &entries, 1000), &mut v);
        assert!(v.is_empty(), "{v:?}");
        assert_eq!(res.len(), 6);
        assert!(res.iter().all(|s| s.met));
        assert_eq!(res[0].name, "stale-write-rejected");
    }

    #[test]
    fn none_met_fires_each() {
        let r = all_expected();
        let entries = vec![
            leader(100, "n1", 1),
            tick(200, "n1", 1),
            tick(300, "n1", 1),
            stopped(600, "n1", 1, "lease-expired"),
        ];
        let mut v = vec![];
        let res = check(&input(&r, &entries, 1000), &mut v);
        assert!(res.iter().all(|s| !s.met));
        assert_eq!(v.len(), 6);
        assert_eq!(
            v[3],
            Violation {
                property: crate::checker::Property::ExpectationNeverMet,
                at_ms: 1000.0,
                detail: "expectation `leader-resigned` never held during the run".into()
            }
        );
    }

    #[test]
    fn nothing_expected_nothing_checked() {
        let r = resolved();
        let mut v = vec![];
        let res = check(&input(&r, &[], 1000), &mut v);
        assert!(res.is_empty() && v.is_empty());
    }
}
