//! `db-row` in the model: the scenario table's checks and the failover bound.

#[allow(unused_imports)]
use super::{require_positive, Bound, Fleet, ProtocolModel, ProtocolName};
use crate::scenario::key_error::KeyError;
use baton_protocols::db_row::DbRowConfig;

/// The db-row protocol with its scenario table and the fleet its bounds are for.
#[derive(Clone, Debug)]
pub struct DbRow(pub DbRowConfig, pub Fleet);

impl ProtocolModel for DbRow {
    fn name(&self) -> ProtocolName {
        ProtocolName::DbRow
    }

    fn safety_bounds(&self) -> baton_protocols::SafetyBounds {
        self.0.safety_bounds()
    }

    fn validate(&self) -> Result<(), KeyError> {
        let c = &self.0;
        require_positive(&[
            ("lease_ttl_ms", c.lease_ttl_ms),
            ("poll_interval_ms", c.poll_interval_ms),
            ("statement_timeout_ms", c.statement_timeout_ms),
        ])?;
        let [lo, hi] = c.fsync_ms;
        if lo > hi {
            return Err(KeyError::new(
                "fsync_ms",
                format!("[{lo}, {hi}]: the first is the least, at most the second"),
            ));
        }
        Ok(())
    }

    /// The holder's lease ends at most one TTL after its last renewal, which it sent no
    /// later than its last write (plus that renewal's trip). The database judges
    /// `expires_at < now()` exactly, so the first candidate to poll after that wins:
    /// within one poll wait (the longest jittered one) and one round trip. Then the
    /// claim write.
    fn failover_bound(&self) -> Bound {
        let ttl = self.0.lease_ttl_ms;
        let poll = baton_protocols::jitter::max_wait_ms(self.0.poll_interval_ms);
        let lat = self.1.latency_ms_max;
        let round = 3 * 2 * lat;
        let commits = 2 * self.0.fsync_ms[1];
        Bound {
            ms: ttl + poll + round + commits,
            formula: format!(
                "TTL + poll + acquisition = lease TTL {ttl} ms + the longest poll wait {poll} ms (2.2 x {} ms, jittered) + 3 round trips (last renewal, acquire UPDATE, claim write) at <= {lat} ms one way = {round} ms + the renewal's and the acquire's commits (2 x {} ms)",
                self.0.poll_interval_ms,
                self.0.fsync_ms[1]
            ),
        }
    }

    fn default_liveness_bound_ms(&self) -> u64 {
        2 * self.0.lease_ttl_ms
            + baton_protocols::jitter::max_wait_ms(self.0.poll_interval_ms)
            + 1000
    }
}
