//! `zk-sequential` in the model: the scenario table's checks and the failover bound.

#[allow(unused_imports)]
use super::{require_positive, Bound, Fleet, ProtocolModel, ProtocolName};
use crate::scenario::key_error::KeyError;
use baton_protocols::zk_sequential::ZkSequentialConfig;

/// The zk-sequential protocol with its scenario table and the fleet its bounds are for.
#[derive(Clone, Debug)]
pub struct ZkSequential(pub ZkSequentialConfig, pub Fleet);

impl ProtocolModel for ZkSequential {
    fn transfer_method(&self) -> &'static str {
        "the successor must be next in the queue of sequential znodes: the leader reads the children and asks every node queued ahead of it to requeue (delete its znode and create a new one, at the back); once the successor is next, closing the leader's session deletes its znode and wakes the successor's watch"
    }

    fn name(&self) -> ProtocolName {
        ProtocolName::ZkSequential
    }

    fn safety_bounds(&self) -> baton_protocols::SafetyBounds {
        self.0.safety_bounds()
    }

    fn validate(&self) -> Result<(), KeyError> {
        let c = &self.0;
        require_positive(&[
            ("session_timeout_ms", c.session_timeout_ms),
            ("rpc_timeout_ms", c.rpc_timeout_ms),
            ("tick_time_ms", c.tick_time_ms),
        ])?;
        if c.effective_min_session_timeout_ms() > c.effective_max_session_timeout_ms() {
            return Err(KeyError::new(
                "min_session_timeout_ms",
                format!(
                    "{} is above max_session_timeout_ms {}",
                    c.effective_min_session_timeout_ms(),
                    c.effective_max_session_timeout_ms()
                ),
            ));
        }
        for (key, [lo, hi]) in [
            ("fsync_ms", c.fsync_ms),
            ("session_setup_ms", c.session_setup_ms),
        ] {
            if lo > hi {
                return Err(KeyError::new(
                    key,
                    format!("[{lo}, {hi}]: the first is the least, at most the second"),
                ));
            }
        }
        if !c.election_path.starts_with('/') || c.election_path.len() < 2 {
            return Err(KeyError::new(
                "election_path",
                "must be an absolute znode path below the root, like /election",
            ));
        }
        Ok(())
    }

    /// A killed leader's last ping reached the server no later than its last write, so
    /// the server expires its session at most one session timeout plus one tick (the
    /// tracker's granularity) after that write; the successor's watch then fires, it
    /// re-reads the children and claims the resource: about three round trips.
    fn failover_bound(&self) -> Bound {
        let timeout = self.0.negotiated_timeout_ms();
        let tick = self.0.tick_time_ms;
        let round = 3 * 2 * self.1.latency_ms_max;
        Bound {
            ms: timeout + tick + round,
            formula: format!(
                "session timeout + tick + election round = negotiated session timeout {timeout} ms + tickTime {tick} ms (session tracker granularity) + watch, getChildren and claim (3 round trips at <= {} ms one way = {round} ms)",
                self.1.latency_ms_max
            ),
        }
    }

    fn default_liveness_bound_ms(&self) -> u64 {
        2 * self.0.negotiated_timeout_ms() + self.0.tick_time_ms + 1000
    }
}
