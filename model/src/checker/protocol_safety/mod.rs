//! Protocol safety: does the protocol itself keep its leader inside its grant, or only
//! the fence? (See [`baton_protocols::SafetyBounds`] for what each protocol declares.)
//!
//! A leadership is a node's win under a token until it stops (a role change, its
//! `StoppedActing`, or its death). Its **grant ends** at the backend's own judgement:
//! the first `KeyDeleted` whose create revision is its token or `SeatVacated` naming its
//! token, after the win, or, first, another node's win under a token at least as high
//! (the backend, or the peers' quorum, gave the seat away). The leadership **acts past its grant** when it still
//! believes it leads after that instant, starts a protected write (`WriteAttempted`
//! under its token) after it, or had a write in flight at that instant (sent, neither
//! answered nor given up by its sender) that reached the resource after another leader's
//! claim (see `in_flight.rs`, which also says what excuses those).
//!
//! Such an act is **excused** when, before it and during the leadership, the node was
//! paused longer than the protocol's `pause_ms` (a scripted pause or GC noise; the
//! pause's start counts, once its length is known), or its clock jumped beyond
//! `offset_ms` or was made to drift beyond `drift_ppm` (either way), or the backend's
//! clock was (a clock fault on any target that is not a node), or, where the peers'
//! clocks judge the grant (raft's followers time the election), any node's, or the
//! backend restarted without its data (Redis without persistence forgets the lock and
//! the token counter: no protocol on top of it can keep its promise). A jump is judged by what
//! the clock read before and after: setting an offset inside the bound on a clock that
//! had drifted far moves it far (the checker keeps each clock's [`Skew`](crate::clock_model::Skew)). Excused acts are the fence's to
//! stop: they are counted ("fence-saved"), and the run passes as the other checkers
//! say. An act that is not excused is a bug in the protocol: one
//! [`Property::ActedPastGrant`](crate::checker::Property::ActedPastGrant) per leadership, whatever the fence did. A protocol that
//! promises nothing (`self_safe: false`: bully, ring) has every act excused.
//!
//! The run's outcome says who kept the work right: **unsafe** when nobody did (the work
//! went wrong: double leaders, stale tokens accepted, the sequence, an interleaved
//! handoff, two leaders in a term, stale reads; see [`Property::is_damage`](crate::checker::Property::is_damage)), else
//! **fence-saved** when some leadership acted past its grant (excused or not: a
//! violation besides when not), else **protocol-safe**. A fence-saved run with an
//! `acted_past_grant` violation fails: the fence kept the resource right, and the
//! protocol broke its own promise.
//!
//! `grants.rs` follows each leadership's grant and what it did past it; `excuses.rs`
//! gathers the pauses, clock faults and backend restarts that excuse such acts;
//! `in_flight.rs` judges the writes in flight across a grant's end.

mod excuses;
mod grants;
mod in_flight;

use super::Violation;
use baton_protocols::SafetyBounds;
use serde::Serialize;

pub(crate) use grants::ProtocolSafety;

/// The three outcomes of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// No leader acted past its grant, and no safety property failed.
    #[default]
    ProtocolSafe,
    /// Some leader acted past its grant, and the fence kept the resource right: beyond
    /// the protocol's bounds, or inside them (then a violation too: a protocol bug).
    FenceSaved,
    /// The work went wrong: a safety property of the resource failed.
    Unsafe,
}

impl Outcome {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::ProtocolSafe => "protocol-safe",
            Outcome::FenceSaved => "fence-saved",
            Outcome::Unsafe => "unsafe",
        }
    }
}

/// What `report.json` says under `protocol_safety`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ProtocolSafetySummary {
    /// protocol-safe, fence-saved or unsafe.
    pub outcome: Outcome,
    /// The bounds the protocol declares.
    pub bounds: Option<SafetyBounds>,
    /// Leaderships that acted past their grant inside the bounds (each a violation).
    pub past_grant_in_bounds: u64,
    /// Leaderships that acted past their grant beyond the bounds (the fence's to stop).
    pub past_grant_fence_saved: u64,
    /// Protected writes started past the grant, over both.
    pub writes_past_grant: u64,
    /// Protected writes in flight when the grant ended that landed after another
    /// leader's claim, over both (written only when there were some).
    #[serde(skip_serializing_if = "is_zero")]
    pub writes_landed_past_grant: u64,
    /// Each fence-saved leadership: who, when, and the excuse.
    pub fence_saved: Vec<String>,
    /// The same, in words for a stranger (summary.txt's): not in report.json, whose
    /// `fence_saved` scripts read as it is.
    #[serde(skip)]
    pub fence_saved_plain: Vec<String>,
}

impl ProtocolSafetySummary {
    /// Sets the outcome from every violation of the run.
    pub fn judge(&mut self, violations: &[Violation]) {
        self.outcome = if violations.iter().any(|v| v.property.is_damage()) {
            Outcome::Unsafe
        } else if self.past_grant_fence_saved + self.past_grant_in_bounds > 0
            || violations.iter().any(|v| v.property.is_safety())
        {
            Outcome::FenceSaved
        } else {
            Outcome::ProtocolSafe
        };
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests;
