//! `[swim]`: a SWIM failure detector gossiping among the nodes (Das, Gupta and Motivala,
//! "SWIM: Scalable Weakly-consistent Infection-style Process Group Membership Protocol",
//! 2002), as the `foca` crate implements it: every probe period each member pings one
//! other; without an answer within the probe RTT it asks `indirect_probes` others to
//! ping it (ping-req); still nothing by the period's end and the member is suspected, a
//! suspicion every member learns by gossip piggybacked on the probes; a suspect that
//! does not refute it (a higher incarnation number) within `suspect_to_down_ms` is
//! declared down. Defaults are scaled for a LAN of a few milliseconds, so that a death
//! is confirmed in about a second, against leases of 1 to 10 s.
//!
//! With `evict_dead_leader` the detector feeds the elector: a node whose detector
//! declares the leader down asks the backend to take the seat from it (etcd: revoke its
//! lease), so the queue moves on before the lease would have expired. The backend still
//! decides who leads next, and the fence still guards the resource: a leader that was
//! only paused wakes with a lower token than its successor's.

use crate::scenario::key_error::KeyError;
use serde::{Deserialize, Serialize};

/// The `[swim]` table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SwimConfig {
    /// Run the detector (`false` keeps the table, for a sweep that turns it off).
    pub enabled: bool,
    /// How often each member probes one other (foca's `probe_period`).
    pub probe_period_ms: u64,
    /// How long a direct probe waits for its ack before the indirect ones
    /// (`probe_rtt`); below the probe period.
    pub probe_rtt_ms: u64,
    /// How many members are asked to probe on its behalf (`num_indirect_probes`, the
    /// paper's k).
    pub indirect_probes: u64,
    /// How long a suspect has to refute before it is declared down
    /// (`suspect_to_down_after`).
    pub suspect_to_down_ms: u64,
    /// How many times each membership update rides on outgoing messages
    /// (`max_transmissions`, the paper's lambda log n).
    pub max_transmissions: u64,
    /// Feed the elector: a node that declares the leader down asks the backend to take
    /// its seat (etcd-lease: revoke its lease). `false`: the detector only watches.
    pub evict_dead_leader: bool,
}

impl Default for SwimConfig {
    fn default() -> Self {
        SwimConfig {
            enabled: true,
            probe_period_ms: 200,
            probe_rtt_ms: 50,
            indirect_probes: 3,
            suspect_to_down_ms: 600,
            max_transmissions: 6,
            evict_dead_leader: true,
        }
    }
}

impl SwimConfig {
    /// Checks the table: a key and what is allowed.
    pub fn validate(&self) -> Result<(), KeyError> {
        let rules: [(&str, u64, u64, u64); 5] = [
            ("probe_period_ms", self.probe_period_ms, 2, 60_000),
            (
                "probe_rtt_ms",
                self.probe_rtt_ms,
                1,
                self.probe_period_ms.saturating_sub(1),
            ),
            ("indirect_probes", self.indirect_probes, 1, 16),
            ("suspect_to_down_ms", self.suspect_to_down_ms, 1, 600_000),
            ("max_transmissions", self.max_transmissions, 1, 255),
        ];
        for (key, v, lo, hi) in rules {
            if !(lo..=hi).contains(&v) {
                return Err(KeyError::new(
                    key,
                    format!("{v} is out of range: {lo} to {hi}"),
                ));
            }
        }
        Ok(())
    }

    /// The table in force, when the detector runs.
    pub fn running(table: &Option<SwimConfig>) -> Option<&SwimConfig> {
        table.as_ref().filter(|c| c.enabled)
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: the defaults pass; each bad value names its key.
    use super::*;

    #[test]
    fn bad_values_name_their_key() {
        assert!(SwimConfig::default().validate().is_ok());
        let key = |c: SwimConfig| c.validate().unwrap_err().key;
        let d = SwimConfig::default;
        assert_eq!(
            key(SwimConfig {
                probe_rtt_ms: 200,
                ..d()
            }),
            "probe_rtt_ms"
        );
        assert_eq!(
            key(SwimConfig {
                probe_period_ms: 1,
                ..d()
            }),
            "probe_period_ms"
        );
        assert_eq!(
            key(SwimConfig {
                indirect_probes: 0,
                ..d()
            }),
            "indirect_probes"
        );
    }
}
