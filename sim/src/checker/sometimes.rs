//! "Sometimes" expectations: the run reached the state the scenario is about.
//!
//! A fencing scenario whose paused leader never woke up to write passes every safety
//! check without testing anything. So each scenario names what must happen at least
//! once (stateright's `sometimes`), and an unmet one is a
//! [`Violation::ExpectationNeverMet`], dated at the end of the run, when "never" is known.
//!
//! - `stale-write-rejected`: some `WriteRejected` exists.
//! - `leader-changed`: writes from at least two leaderships were accepted.
//! - `belief-overlap`: two nodes believed they led at once (belief max >= 2).
//! - `leader-resigned`: some `StoppedActing` has reason `resigned`.
//! - `deadline-stop`: some `StoppedActing` has reason `deadline_passed` (a leader stopped
//!   by its own clock, without being told).

use super::{accepted_writes, belief, CheckInput, Violation};
use crate::scenario::Sometimes;
use crate::timeline::Event;
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
    let entries = input.entries;
    let mut results = vec![];
    for &expectation in &input.resolved.scenario.expect.sometimes {
        let met = match expectation {
            Sometimes::StaleWriteRejected => entries.iter().any(|e| {
                matches!(
                    e.event,
                    Event::WriteRejected { .. } | Event::BatchRefused { .. }
                )
            }),
            Sometimes::LeaderChanged => {
                // Two leaderships wrote (told apart by node and win, not token alone, so a
                // protocol without tokens can change leader too).
                let leaderships: BTreeSet<_> = accepted_writes(entries)
                    .iter()
                    .map(|w| w.leadership)
                    .collect();
                leaderships.len() >= 2
            }
            Sometimes::BeliefOverlap => belief::summarize(entries, input.end_us).max >= 2,
            Sometimes::LeaderResigned => stopped_because(entries, "resigned"),
            Sometimes::DeadlineStop => stopped_because(entries, "deadline_passed"),
        };
        if !met {
            out.push(Violation::ExpectationNeverMet {
                at_ms: input.end_ms(),
                name: expectation.name().to_string(),
            });
        }
        results.push(SometimesResult {
            name: expectation.name(),
            met,
        });
    }
    results
}

fn stopped_because(entries: &[crate::timeline::Entry], why: &str) -> bool {
    entries
        .iter()
        .any(|e| matches!(&e.event, Event::StoppedActing { reason, .. } if reason == why))
}

#[cfg(test)]
mod tests {
    //! Methodology: one timeline that meets every expectation, and one that meets none.
    //! The quiet case must report each as met; the canary must fire once per expectation.
    use super::super::testing::*;
    use super::*;
    use crate::scenario::Resolved;

    fn all_expected() -> Resolved {
        let mut r = resolved();
        r.scenario.expect.sometimes = vec![
            Sometimes::StaleWriteRejected,
            Sometimes::LeaderChanged,
            Sometimes::BeliefOverlap,
            Sometimes::LeaderResigned,
            Sometimes::DeadlineStop,
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
        ];
        let mut v = vec![];
        let res = check(&input(&r, &entries, 1000), &mut v);
        assert!(v.is_empty(), "{v:?}");
        assert_eq!(res.len(), 5);
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
        assert_eq!(v.len(), 5);
        assert_eq!(
            v[3],
            Violation::ExpectationNeverMet {
                at_ms: 1000.0,
                name: "leader-resigned".into()
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
