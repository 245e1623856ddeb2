//! `ring` in the model: the scenario table's checks and the failover bound.

#[allow(unused_imports)]
use super::{require_positive, Bound, Fleet, ProtocolModel, ProtocolName};
use crate::scenario::key_error::KeyError;
use baton_protocols::ring::RingConfig;

/// The ring protocol with its scenario table and the fleet its bounds are for.
#[derive(Clone, Debug)]
pub struct Ring(pub RingConfig, pub Fleet);

impl ProtocolModel for Ring {
    fn name(&self) -> ProtocolName {
        ProtocolName::Ring
    }

    fn safety_bounds(&self) -> baton_protocols::SafetyBounds {
        self.0.safety_bounds()
    }

    fn validate(&self) -> Result<(), KeyError> {
        let c = &self.0;
        require_positive(&[
            ("heartbeat_interval_ms", c.heartbeat_interval_ms),
            ("failure_timeout_ms", c.failure_timeout_ms),
            ("hop_timeout_ms", c.hop_timeout_ms),
            ("election_timeout_ms", c.election_timeout_ms),
        ])?;
        if c.failure_timeout_ms <= c.heartbeat_interval_ms {
            return Err(KeyError::new(
                "failure_timeout_ms",
                format!(
                    "{} must be above heartbeat_interval_ms {}, or every coordinator is suspected between heartbeats",
                    c.failure_timeout_ms, c.heartbeat_interval_ms
                ),
            ));
        }
        Ok(())
    }

    /// A killed coordinator's last heartbeat left no earlier than its last write, so a
    /// node suspects it at most one failure timeout (plus the heartbeat's flight) later.
    /// The round then passes the dead node at most twice (ELECTION, then ELECTION with
    /// the winner's id), each time waiting one hop timeout, and crosses the live nodes
    /// in at most two laps; the winner claims the resource in one round trip.
    fn failover_bound(&self) -> Bound {
        let c = &self.0;
        let lat = self.1.latency_ms_max;
        let laps = 2 * self.1.nodes as u64 * lat;
        let ms = c.failure_timeout_ms + lat + 2 * c.hop_timeout_ms + laps + 2 * lat;
        Bound {
            ms,
            formula: format!(
                "failure timeout + 2 hop timeouts = failure timeout {} ms + heartbeat flight {lat} ms + the dead node skipped twice (2 x {} ms) + two laps of {} hops at <= {lat} ms one way ({laps} ms) + claim round trip ({} ms)",
                c.failure_timeout_ms,
                c.hop_timeout_ms,
                self.1.nodes,
                2 * lat
            ),
        }
    }

    fn default_liveness_bound_ms(&self) -> u64 {
        let c = &self.0;
        2 * (c.failure_timeout_ms + c.election_timeout_ms) + 1000
    }
}
