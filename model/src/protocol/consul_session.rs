//! `consul-session` in the model: the scenario table's checks and the failover bound.

#[allow(unused_imports)]
use super::{require_positive, Bound, Fleet, ProtocolModel, ProtocolName};
use crate::scenario::key_error::KeyError;
use baton_protocols::consul_session::ConsulSessionConfig;

/// The longest session TTL Consul accepts (24 h).
pub const MAX_TTL_MS: u64 = 86_400_000;

/// The consul-session protocol with its scenario table and the fleet its bounds are for.
#[derive(Clone, Debug)]
pub struct ConsulSession(pub ConsulSessionConfig, pub Fleet);

impl ProtocolModel for ConsulSession {
    fn name(&self) -> ProtocolName {
        ProtocolName::ConsulSession
    }

    fn safety_bounds(&self) -> baton_protocols::SafetyBounds {
        self.0.safety_bounds()
    }

    fn validate(&self) -> Result<(), KeyError> {
        let c = &self.0;
        require_positive(&[
            ("session_ttl_ms", c.session_ttl_ms),
            ("lock_wait_time_ms", c.lock_wait_time_ms),
            ("lock_retry_time_ms", c.lock_retry_time_ms),
            ("monitor_retry_time_ms", c.monitor_retry_time_ms),
            ("rpc_timeout_ms", c.rpc_timeout_ms),
            ("ttl_check_interval_ms", c.ttl_check_interval_ms),
        ])?;
        // Consul refuses lock-delays above 60 s.
        if c.lock_delay_ms > 60_000 {
            return Err(KeyError::new(
                "lock_delay_ms",
                format!(
                    "{} is above Consul's maximum lock-delay 60000",
                    c.lock_delay_ms
                ),
            ));
        }
        // The server would refuse every session: no campaign could ever start.
        if c.session_ttl_ms < c.session_ttl_min_ms || c.session_ttl_ms > MAX_TTL_MS {
            return Err(KeyError::new(
                "session_ttl_ms",
                format!(
                    "{} is outside [session_ttl_min_ms {}, 86400000]: Consul refuses such a session",
                    c.session_ttl_ms, c.session_ttl_min_ms
                ),
            ));
        }
        if c.key.is_empty() {
            return Err(KeyError::new("key", "must not be empty"));
        }
        Ok(())
    }

    /// The dead holder renewed its session no later than its last write, so the server
    /// invalidates it at most 2 x TTL (plus one check) after that write, releasing the
    /// key. Waiters' blocking queries return at once, but acquisitions are refused for
    /// the lock-delay, and a refused candidate retries only every lock retry time. Then
    /// one round: the waiter's failed acquire and read, a read after its retry sleep
    /// for each retry, its acquire, the read of its token, and its claim.
    fn failover_bound(&self) -> Bound {
        let c = &self.0;
        let ttl2 = 2 * c.session_ttl_ms;
        let check = c.ttl_check_interval_ms;
        let delay = self.lock_delay_wait_ms();
        let retries = if c.lock_delay_ms == 0 {
            0
        } else {
            c.lock_delay_ms.div_ceil(c.lock_retry_time_ms)
        };
        let trips = 4 + 2 * retries;
        let round = trips * 2 * self.1.latency_ms_max;
        Bound {
            ms: ttl2 + check + delay + round,
            formula: format!(
                "TTL to 2 x TTL, plus lock-delay = 2 x session TTL {} ms (Consul may wait up to twice the TTL) + TTL check {check} ms + lock-delay {} ms rounded up to lock retry time {} ms = {delay} ms + election round ({trips} round trips at <= {} ms one way = {round} ms)",
                c.session_ttl_ms, c.lock_delay_ms, c.lock_retry_time_ms, self.1.latency_ms_max
            ),
        }
    }

    fn default_liveness_bound_ms(&self) -> u64 {
        2 * self.0.session_ttl_ms + self.0.ttl_check_interval_ms + self.lock_delay_wait_ms() + 1000
    }
}

impl ConsulSession {
    /// The longest a waiter can be held back by lock-delay: the delay rounded up to
    /// whole lock retry times, since a refused candidate sleeps one retry time before
    /// trying again.
    fn lock_delay_wait_ms(&self) -> u64 {
        let c = &self.0;
        if c.lock_delay_ms == 0 {
            return 0;
        }
        c.lock_delay_ms.div_ceil(c.lock_retry_time_ms) * c.lock_retry_time_ms
    }
}
