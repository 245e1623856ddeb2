//! Checkers: read a run's timeline and say what held and what did not.
//!
//! Each property lives in its own file as a checker that reads one event at a time (and,
//! from the accepted-write tracker, one accepted write at a time), so that a run is
//! checked as it goes and never holds its timeline in memory. A broken property is a
//! [`Violation`] (of one [`Property`]), which is data: checkers collect, they never
//! panic, so one run reports every broken property at once. [`Checks`] runs them all and
//! gathers the summaries into [`Findings`], from which the report writer and the plot
//! draw; [`check`] does the same over a timeline held in memory ([`CheckInput`], as the
//! unit tests build them).
//!
//! Every checker judges "before" and "after" by timeline order (the order the
//! single-threaded simulation recorded events), not by comparing timestamps, because
//! several events often share one microsecond and their order is still meaningful.
//!
//! The checkers do not trust the fenced resource's own bookkeeping: "the highest token
//! accepted before this write" is recomputed from the accepted writes, so a resource
//! that mislabels `max_token` cannot hide a stale accept.

mod accepted;
pub mod belief;
mod checks;
pub mod client_stats;
pub mod double_leader;
pub mod effect;
pub mod election_safety;
pub mod failover;
pub mod false_failover;
pub mod faults;
mod findings;
mod flight;
pub mod job;
pub mod lease_service;
pub mod lease_ttl;
pub mod liveness;
pub mod load;
pub mod node_contract;
pub mod protocol_safety;
pub mod sequence;
pub mod shards;
pub mod sometimes;
pub mod stale_read;
pub mod stale_token;
pub mod swim;
pub mod transfer;
mod violation;
pub mod wins;

use crate::scenario::Resolved;
use crate::timeline::Entry;
pub(crate) use accepted::{
    accepted_writes, Accepted, AcceptedTracker, LeadershipKey, Step, Succession,
};
pub(crate) use flight::{Flights, Landed};

pub use checks::{check, Checks};
pub use client_stats::ClientStats;
pub use findings::Findings;
pub use violation::{Property, Violation};

/// Everything the checkers read about one finished run.
pub struct CheckInput<'a> {
    /// The scenario with every default filled in (expectations, fencing, duration, TTL).
    pub resolved: &'a Resolved,
    /// The whole timeline, in recording order.
    pub entries: &'a [Entry],
    /// When the run stopped, in global simulated microseconds.
    pub end_us: i64,
    /// The client's own account of the sequencer replies.
    pub client: ClientStats,
}

impl CheckInput<'_> {
    /// When the run stopped, in milliseconds.
    pub fn end_ms(&self) -> f64 {
        us_to_ms(self.end_us)
    }
}

/// Microseconds to milliseconds, as reports write time.
pub fn us_to_ms(at_us: i64) -> f64 {
    at_us as f64 / 1000.0
}

/// Builders for hand-made timelines in the checkers' unit tests.
#[cfg(test)]
pub(crate) mod testing;
