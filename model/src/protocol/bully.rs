//! `bully` in the model: the scenario table's checks and the failover bound.

#[allow(unused_imports)]
use super::{require_positive, Bound, Fleet, ProtocolModel, ProtocolName};
use crate::scenario::key_error::KeyError;
use baton_protocols::bully::BullyConfig;

/// The bully protocol with its scenario table and the fleet its bounds are for.
#[derive(Clone, Debug)]
pub struct Bully(pub BullyConfig, pub Fleet);

impl ProtocolModel for Bully {
    fn name(&self) -> ProtocolName {
        ProtocolName::Bully
    }

    fn safety_bounds(&self) -> baton_protocols::SafetyBounds {
        self.0.safety_bounds()
    }

    fn validate(&self) -> Result<(), KeyError> {
        let c = &self.0;
        require_positive(&[
            ("heartbeat_interval_ms", c.heartbeat_interval_ms),
            ("failure_timeout_ms", c.failure_timeout_ms),
            ("answer_timeout_ms", c.answer_timeout_ms),
            ("coordinator_timeout_ms", c.coordinator_timeout_ms),
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

    /// A killed coordinator's last heartbeat left no earlier than its last write, so
    /// the next-highest node suspects it at most one failure timeout (plus the
    /// heartbeat's flight) later. Its ELECTION to the dead node then goes unanswered for
    /// one answer timeout, its COORDINATOR to the dead node for another, and it claims
    /// the resource in one round trip.
    fn failover_bound(&self) -> Bound {
        let c = &self.0;
        let lat = self.1.latency_ms_max;
        let ms = c.failure_timeout_ms + lat + 2 * c.answer_timeout_ms + 2 * lat;
        Bound {
            ms,
            formula: format!(
                "failure timeout + 2 answer timeouts = failure timeout {} ms + heartbeat flight {lat} ms + ELECTION and COORDINATOR unanswered by the dead node (2 x {} ms) + claim round trip ({} ms)",
                c.failure_timeout_ms,
                c.answer_timeout_ms,
                2 * lat
            ),
        }
    }

    fn default_liveness_bound_ms(&self) -> u64 {
        let c = &self.0;
        2 * (c.failure_timeout_ms + c.round_ms()) + 1000
    }
}
