//! Double-leader-acting incidents: two leaderships' writes both took effect.
//!
//! Two kinds of incident, each one [`Violation::DoubleLeaderActing`]:
//!
//! - **Stale leader acting.** An accepted write whose token is below the highest token
//!   accepted before it means an old leader acted after a newer one. A paused leader
//!   that wakes usually sends a burst, so each maximal run of consecutive stale accepted
//!   writes (consecutive among accepted writes) from one `(node, token)` is ONE
//!   incident: the count says how many times the trap sprang, not how many writes went
//!   through (that is [`super::stale_token`]).
//! - **Shared token.** Writes from two different nodes accepted under one token: the
//!   token no longer names one leader, so fencing cannot tell them apart. One incident
//!   per `(token, second node)`.
//!
//! "Highest token accepted before" is recomputed from the accepted writes rather than
//! read from the resource's `max_token`, so the checker does not trust the code it checks.

use super::{accepted_writes, us_to_ms, CheckInput, Violation};
use std::collections::{BTreeMap, BTreeSet};

/// Appends one violation per incident and returns the number of incidents.
pub fn check(input: &CheckInput, out: &mut Vec<Violation>) -> u64 {
    let mut incidents = 0;
    let mut max_before: Option<u64> = None;
    let mut stale_run: Option<(&str, u64)> = None;
    let mut first_writer: BTreeMap<u64, &str> = BTreeMap::new();
    let mut shared: BTreeSet<(u64, &str)> = BTreeSet::new();
    for w in accepted_writes(input.entries) {
        match max_before {
            Some(max) if w.token < max => {
                if stale_run != Some((w.node, w.token)) {
                    stale_run = Some((w.node, w.token));
                    incidents += 1;
                    out.push(Violation::DoubleLeaderActing {
                        at_ms: us_to_ms(w.at_us),
                        detail: format!(
                            "{} acted with stale token {} after token {} was accepted",
                            w.node, w.token, max
                        ),
                    });
                }
            }
            _ => stale_run = None,
        }
        let first = *first_writer.entry(w.token).or_insert(w.node);
        if first != w.node && shared.insert((w.token, w.node)) {
            incidents += 1;
            out.push(Violation::DoubleLeaderActing {
                at_ms: us_to_ms(w.at_us),
                detail: format!(
                    "{} and {} both had writes accepted under token {}",
                    first, w.node, w.token
                ),
            });
        }
        max_before = Some(max_before.map_or(w.token, |m| m.max(w.token)));
    }
    incidents
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built timelines. Canaries: a stale burst interrupted by the new
    //! leader (two incidents), and two nodes sharing a token. Quiet: a clean failover, and
    //! fenced stale writes (rejected, so no effect).
    use super::super::testing::*;
    use super::*;

    fn run(entries: &[crate::timeline::Entry]) -> (u64, Vec<Violation>) {
        let r = resolved();
        let mut v = vec![];
        let n = check(&input(&r, entries, 10_000), &mut v);
        (n, v)
    }

    #[test]
    fn stale_bursts_count_once_each() {
        let entries = vec![
            tick(100, "n1", 1),
            tick(200, "n2", 2),
            tick(300, "n1", 1),
            tick(301, "n1", 1),
            tick(302, "n1", 1),
            tick(400, "n2", 2),
            tick(500, "n1", 1),
        ];
        let (n, v) = run(&entries);
        assert_eq!(n, 2);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].at_ms(), 300.0);
        assert_eq!(v[1].at_ms(), 500.0);
        assert!(v[0].detail().contains("stale token 1 after token 2"));
    }

    #[test]
    fn two_nodes_one_token() {
        let entries = vec![
            tick(100, "n1", 5),
            tick(200, "n2", 5),
            tick(300, "n2", 5),
            tick(400, "n3", 5),
        ];
        let (n, v) = run(&entries);
        assert_eq!(n, 2);
        assert!(v[0].detail().contains("n1 and n2"));
        assert!(v[1].detail().contains("n1 and n3"));
    }

    #[test]
    fn quiet_for_clean_failover_and_fenced_stale_writes() {
        let mut entries = clean_failover();
        entries.push(rejected(5200, "n1", 1, 2));
        let (n, v) = run(&entries);
        assert_eq!(n, 0);
        assert!(v.is_empty());
    }
}
