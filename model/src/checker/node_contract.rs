//! The node contract: a node Baton did not write (`--node-cmd`) keeps the rules of
//! `docs/src/node-contract.md` for the whole run.
//!
//! What breaks a rule before the experiment (a node that never listens, answers with
//! the wrong JSON, hands out numbers as a follower, or never elects a leader) stops the
//! run before it starts. What breaks one during the run is seen by the supervisor,
//! which polls each node, and recorded in the timeline as a `ContractBroken`; each is a
//! [`Property::NodeContract`] here, so the run fails with the rule named, as any other
//! property does. Baton's own node never records one.

use super::{us_to_ms, Property, Violation};
use crate::timeline::{Entry, Event};

/// Gathers every recorded breach, one violation each.
#[derive(Default)]
pub(crate) struct NodeContract {
    violations: Vec<Violation>,
}

impl NodeContract {
    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        if let Event::ContractBroken { node, rule, detail } = &e.event {
            self.violations.push(Violation {
property: Property::NodeContract,
                at_ms: us_to_ms(e.at_us),
                detail: format!(
                    "{node} broke rule `{rule}` of the node contract (docs/src/node-contract.md#{rule}): {detail}"
                ),
            });
        }
    }

    /// Appends the violations.
    pub fn finish(self, out: &mut Vec<Violation>) {
        out.extend(self.violations);
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: a clean failover is quiet; the same with one recorded breach fails
    //! with the rule named (the canary that the breach reaches the verdict).
    use super::super::testing::*;
    use super::super::*;
    use crate::timeline::Event;

    #[test]
    fn a_recorded_breach_fails_the_run_with_its_rule() {
        let r = resolved();
        let mut entries = clean_failover();
        let quiet = check(&input(&r, &entries, 12_000));
        assert!(
            !quiet.signature().contains(&Property::NodeContract),
            "{:?}",
            quiet.violations
        );
        entries.push(at(
            6000,
            Event::ContractBroken {
                node: "n2".into(),
                rule: "status".into(),
                detail: "`role` is \"boss\"".into(),
            },
        ));
        let f = check(&input(&r, &entries, 12_000));
        let v: Vec<&Violation> = f
            .violations
            .iter()
            .filter(|v| v.property == Property::NodeContract)
            .collect();
        assert_eq!(v.len(), 1, "{:?}", f.violations);
        assert_eq!(v[0].at_ms, 6000.0);
        assert!(v[0].detail.contains("rule `status`"), "{}", v[0].detail);
        assert!(!f.passed());
    }
}
