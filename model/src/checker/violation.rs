//! What a checker finds: a [`Violation`] of one [`Property`], at a time, with a detail for
//! a human. Violations are data: checkers collect them, they never panic, so one run
//! reports every broken property at once.

use serde::Serialize;
use std::cmp::Ordering;
use std::fmt;

/// A property a checker defends. Each serialises to its stable snake_case name, as
/// `report.json` writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Property {
    /// "One leader acts at a time, by effect" (see [`double_leader`](super::double_leader)): the resource
    /// accepted a stale leader's writes after a newer token's, or two nodes' writes under
    /// one token. One per incident, not per write.
    DoubleLeaderActing,
    /// Fencing (see [`stale_token`](super::stale_token)): every accepted write carries a token at least as
    /// high as every token accepted before it. One per write.
    StaleTokenAccepted,
    /// Sequence continuity (see [`sequence`](super::sequence)): each batch handed out starts above every
    /// sequence number handed out before it.
    SequenceNotIncreasing,
    /// "Zero reuse" (see [`sequence`](super::sequence)): the client never receives a sequence number
    /// twice. Dated at the end of the run: the client's count has no time of its own.
    SequenceReused,
    /// Liveness (see [`liveness`](super::liveness)): after the last fault ends, a leader's write is
    /// accepted within the scenario's bound. Dated at the deadline that passed (or the
    /// end of the run).
    NoProgress,
    /// The scenario's "sometimes" expectations (see [`sometimes`](super::sometimes)): a run that never
    /// reached its trap proves nothing, so it fails. Dated at the end of the run: only
    /// then is "never" known.
    ExpectationNeverMet,
    /// `expect.failover_ms_max` (see [`failover`](super::failover)).
    FailoverTooSlow,
    /// Bounded handoff (see [`failover`](super::failover)): the old leader stops its writes before the new
    /// one starts. Fires only when both leaders' writes were accepted interleaved.
    NegativeHandoffGap,
    /// "Stop, then release" (see [`failover`](super::failover)): a leader that gave leadership up on
    /// purpose was still acting when the next leader first wrote.
    ActedAfterRelease,
    /// Election safety (see [`election_safety`](super::election_safety)): at most one leader per term, for
    /// protocols whose token is a term.
    ElectionSafety,
    /// Linearizable reads (see [`stale_read`](super::stale_read)): a read answered from a leader's lease
    /// reflects every batch committed before it was sent. One per leadership.
    StaleRead,
    /// "One leader acts at a time, by the protocol alone" (see [`protocol_safety`](super::protocol_safety)): a
    /// leader stops acting before the backend's grant to it ends, unless a pause or clock
    /// fault beyond the protocol's declared bounds explains it. One per leadership,
    /// whether or not the fence stopped its writes.
    ActedPastGrant,
    /// "A transfer hands leadership to its designated successor" (see [`transfer`](super::transfer)): the
    /// first newer leadership to write after a handover is the successor's, unless the
    /// successor died first.
    TransferMissed,
    /// `expect.transfer_gap_ms_max` (see [`transfer`](super::transfer)): a handover's gap, old leader's
    /// last accepted write to the successor's first, is at most the bound.
    TransferTooSlow,
    /// `expect.swim_detection_ms_max` (see [`swim`](super::swim)): a killed node that stays down is
    /// declared down by the SWIM detector within the bound.
    DeathUndetected,
    /// The node contract (see [`node_contract`](super::node_contract)): a node run by `--node-cmd` kept its
    /// rules during the run. One per recorded breach.
    NodeContract,
}

impl Property {
    /// Every property, in the order above.
    pub const ALL: [Property; 16] = [
        Property::DoubleLeaderActing,
        Property::StaleTokenAccepted,
        Property::SequenceNotIncreasing,
        Property::SequenceReused,
        Property::NoProgress,
        Property::ExpectationNeverMet,
        Property::FailoverTooSlow,
        Property::NegativeHandoffGap,
        Property::ActedAfterRelease,
        Property::ElectionSafety,
        Property::StaleRead,
        Property::ActedPastGrant,
        Property::TransferMissed,
        Property::TransferTooSlow,
        Property::DeathUndetected,
        Property::NodeContract,
    ];

    /// The property's stable snake_case name, as written in `report.json`.
    pub fn name(self) -> &'static str {
        match self {
            Property::DoubleLeaderActing => "double_leader_acting",
            Property::StaleTokenAccepted => "stale_token_accepted",
            Property::SequenceNotIncreasing => "sequence_not_increasing",
            Property::SequenceReused => "sequence_reused",
            Property::NoProgress => "no_progress",
            Property::ExpectationNeverMet => "expectation_never_met",
            Property::FailoverTooSlow => "failover_too_slow",
            Property::NegativeHandoffGap => "negative_handoff_gap",
            Property::ActedAfterRelease => "acted_after_release",
            Property::ElectionSafety => "election_safety",
            Property::StaleRead => "stale_read",
            Property::ActedPastGrant => "acted_past_grant",
            Property::TransferMissed => "transfer_missed",
            Property::TransferTooSlow => "transfer_too_slow",
            Property::DeathUndetected => "death_undetected",
            Property::NodeContract => "node_contract",
        }
    }

    /// Whether it is a safety property (the others are liveness and expectations): a
    /// leader acting when it should not, or the work going wrong.
    pub fn is_safety(self) -> bool {
        matches!(
            self,
            Property::ActedPastGrant
                | Property::DoubleLeaderActing
                | Property::StaleTokenAccepted
                | Property::SequenceNotIncreasing
                | Property::SequenceReused
                | Property::NegativeHandoffGap
                | Property::ActedAfterRelease
                | Property::ElectionSafety
                | Property::StaleRead
        )
    }

    /// Whether its failure means the work itself went wrong (the resource took a stale
    /// leader's write, the sequence moved back or repeated, a read was stale, two leaders
    /// shared a term): a run unsafe, whatever the fence did. The other safety properties
    /// are a leader acting when it should not have (past its grant, after its release),
    /// which the fence may have stopped.
    pub fn is_damage(self) -> bool {
        self.is_safety() && !matches!(self, Property::ActedPastGrant | Property::ActedAfterRelease)
    }

    /// Whether it is damage a fence at the resource stops (a stale leader's write taken,
    /// the sequence moved back or repeated, two leaders' writes interleaved): what a run
    /// with fencing off is expected to reproduce, since only the fence turns those
    /// writes away. Two winners of a term and a stale read are damage no fence stops.
    pub fn fence_stops(self) -> bool {
        matches!(
            self,
            Property::DoubleLeaderActing
                | Property::StaleTokenAccepted
                | Property::SequenceNotIncreasing
                | Property::SequenceReused
                | Property::NegativeHandoffGap
        )
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Properties order by name, so that violations at one instant, and signatures, sort as
/// their names do in every report.
impl Ord for Property {
    fn cmp(&self, other: &Self) -> Ordering {
        self.name().cmp(other.name())
    }
}

impl PartialOrd for Property {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A broken property, as `report.json` writes it: `{property, at_ms, detail}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    /// The property broken.
    pub property: Property,
    /// When it happened, in simulated milliseconds.
    pub at_ms: f64,
    /// What happened, for a human.
    pub detail: String,
}

impl Violation {
    /// A violation of `property` at `at_ms`.
    pub fn new(property: Property, at_ms: f64, detail: impl Into<String>) -> Violation {
        Violation {
            property,
            at_ms,
            detail: detail.into(),
        }
    }

    /// The scenario's expectation `name` never held, known at `at_ms`, the end of the run.
    pub fn expectation_never_met(at_ms: f64, name: &str) -> Violation {
        Violation::new(
            Property::ExpectationNeverMet,
            at_ms,
            format!("expectation `{name}` never held during the run"),
        )
    }

    /// The same violation, found in partition `p` of a sharded fleet: its detail names
    /// the partition.
    pub fn in_partition(mut self, p: u32) -> Violation {
        self.detail = match self.property {
            // The partition qualifies the expectation's name, inside its quotes.
            Property::ExpectationNeverMet => {
                self.detail.replacen('`', &format!("`partition {p}: "), 1)
            }
            _ => format!("partition {p}: {}", self.detail),
        };
        self
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: every property's serialised name is its `name()` (what report.json,
    //! signatures and `--fixed-by` checks compare), properties order as their names do,
    //! and a violation serialises to report.json's flat `{property, at_ms, detail}`;
    //! a partition's expectation names the partition inside the quotes.
    use super::*;

    #[test]
    fn a_property_serialises_to_its_name_and_orders_by_it() {
        for p in Property::ALL {
            assert_eq!(serde_json::to_value(p).unwrap(), p.name(), "{p:?}");
        }
        assert_eq!(Property::ElectionSafety.name(), "election_safety");
        let mut by_name = Property::ALL.to_vec();
        by_name.sort();
        let names: Vec<&str> = by_name.iter().map(|p| p.name()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
    }

    #[test]
    fn a_violation_serialises_flat() {
        let v = Violation::new(Property::StaleRead, 12.5, "n2 read 3");
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"property":"stale_read","at_ms":12.5,"detail":"n2 read 3"}"#
        );
    }

    #[test]
    fn a_partitions_violation_names_its_partition() {
        let v = Violation::expectation_never_met(9.0, "leader-changed").in_partition(3);
        assert_eq!(
            v.detail,
            "expectation `partition 3: leader-changed` never held during the run"
        );
        let v = Violation::new(Property::NoProgress, 9.0, "none came").in_partition(3);
        assert_eq!(v.detail, "partition 3: none came");
    }
}
