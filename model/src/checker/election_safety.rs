//! Election safety (Raft paper, section 5.2 and figure 3): at most one leader is elected
//! in a given term.
//!
//! It applies only to protocols whose token is a term (see
//! [`crate::protocol::ProtocolModel::token_is_term`]): there a token names one election, so two
//! different nodes winning under the same token is two leaders in one term. For the
//! other protocols a token may be shared legitimately (a clean handoff under one token)
//! or means something else, and the checker stays silent.
//!
//! It reads wins as the nodes record them (`RoleChanged` to leader, with the token), in
//! timeline order: the first node to win a term owns it, and any other node's win in the
//! same term, at any later time, is a violation, whether or not the two overlapped. One
//! violation per (term, intruding node). A node winning its own term again (its lease
//! lapsed and was renewed) is the same leadership of the same election, not a second one.

use super::{us_to_ms, CheckInput, Property, Violation};
use crate::timeline::{Entry, Event, Role};
use crate::NodeId;
use std::collections::{BTreeMap, BTreeSet};

/// Adds a violation for every second leader of a term; returns how many there were.
pub fn check(input: &CheckInput, out: &mut Vec<Violation>) -> u64 {
    if !input.resolved.protocol.token_is_term() {
        return 0;
    }
    check_entries(input.entries, out)
}

/// As [`check`], for a timeline known to carry terms as tokens.
pub fn check_entries(entries: &[Entry], out: &mut Vec<Violation>) -> u64 {
    let mut s = ElectionSafety::new(true);
    for e in entries {
        s.entry(e);
    }
    s.finish(out)
}

/// Election safety, read one event at a time.
pub(crate) struct ElectionSafety {
    /// Only protocols whose token is a term are judged.
    applies: bool,
    /// term -> the first node that won it
    owner: BTreeMap<u64, NodeId>,
    reported: BTreeSet<(u64, NodeId)>,
    violations: Vec<Violation>,
}

impl ElectionSafety {
    /// A checker that judges only if `applies` (the protocol's token is a term).
    pub fn new(applies: bool) -> Self {
        ElectionSafety {
            applies,
            owner: BTreeMap::new(),
            reported: BTreeSet::new(),
            violations: vec![],
        }
    }

    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        if !self.applies {
            return;
        }
        let Event::RoleChanged {
            node,
            role: Role::Leader,
            token: Some(term),
        } = &e.event
        else {
            return;
        };
        let first = self
            .owner
            .entry(*term)
            .or_insert_with(|| node.clone())
            .clone();
        if first != *node && self.reported.insert((*term, node.clone())) {
            self.violations.push(Violation {
                property: Property::ElectionSafety,
                at_ms: us_to_ms(e.at_us),
                detail: format!("{node} won term {term}, which {first} had already won"),
            });
        }
    }

    /// Appends the violations; returns how many there were.
    pub fn finish(self, out: &mut Vec<Violation>) -> u64 {
        let n = self.violations.len() as u64;
        out.extend(self.violations);
        n
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built timelines. Canary: two nodes win one term (it fires, once
    //! per intruder). Quiet: successive terms, and one node renewing its own term.
    use super::super::testing::*;
    use super::*;

    fn run(entries: &[Entry]) -> Vec<Violation> {
        let mut v = vec![];
        check_entries(entries, &mut v);
        v
    }

    #[test]
    fn two_leaders_in_one_term_fire() {
        let v = run(&[
            leader(100, "n1", 3),
            follower(150, "n1"),
            leader(200, "n2", 3),
            leader(300, "n2", 3),
        ]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].property, Property::ElectionSafety);
        assert_eq!(v[0].at_ms, 200.0);
        assert!(v[0]
            .detail
            .contains("n2 won term 3, which n1 had already won"));
    }

    #[test]
    fn successive_terms_and_renewals_are_quiet() {
        let v = run(&[
            leader(100, "n1", 2),
            follower(150, "n1"),
            leader(200, "n1", 2),
            leader(300, "n2", 4),
            leader(400, "n3", 5),
        ]);
        assert!(v.is_empty(), "{v:?}");
    }

    #[test]
    fn protocols_whose_token_is_not_a_term_are_not_checked() {
        // etcd-lease (the default protocol): a shared token is the double-leader
        // checker's business, not this one's.
        let r = resolved();
        let entries = vec![leader(100, "n1", 3), leader(200, "n2", 3)];
        let mut v = vec![];
        assert_eq!(check(&input(&r, &entries, 10_000), &mut v), 0);
        assert!(v.is_empty());
    }
}
