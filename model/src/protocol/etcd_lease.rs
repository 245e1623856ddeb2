//! `etcd-lease` in the model: the scenario table's checks and the failover bound.

#[allow(unused_imports)]
use super::{require_positive, Bound, Fleet, ProtocolModel, ProtocolName};
use crate::scenario::key_error::KeyError;
use baton_protocols::etcd_lease::EtcdLeaseConfig;

/// The etcd-lease protocol with its scenario table and the fleet its bounds are for.
#[derive(Clone, Debug)]
pub struct EtcdLease(pub EtcdLeaseConfig, pub Fleet);

impl ProtocolModel for EtcdLease {
    fn transfer_method(&self) -> &'static str {
        "the successor must be next in the election queue (FIFO by create revision): the leader reads the queue and asks every node queued ahead of it to requeue (delete its key and put it again, at the back); once the successor is next, the leader's resign (delete its key, revoke its lease) wakes the successor's watch"
    }

    fn name(&self) -> ProtocolName {
        ProtocolName::EtcdLease
    }

    fn safety_bounds(&self) -> baton_protocols::SafetyBounds {
        self.0.safety_bounds()
    }

    fn validate(&self) -> Result<(), KeyError> {
        let c = &self.0;
        require_positive(&[
            ("lease_ttl_ms", c.lease_ttl_ms),
            ("rpc_timeout_ms", c.rpc_timeout_ms),
            ("expiry_check_interval_ms", c.expiry_check_interval_ms),
        ])?;
        let bounded = [
            ("lease_ttl_ms", c.lease_ttl_ms),
            ("keepalive_interval_ms", c.keepalive_interval_ms),
            ("rpc_timeout_ms", c.rpc_timeout_ms),
            ("min_lease_ttl_ms", c.min_lease_ttl_ms),
            ("expiry_check_interval_ms", c.expiry_check_interval_ms),
        ];
        for (key, v) in bounded {
            if i128::from(v) > crate::fault::MAX_MS {
                return Err(KeyError::new(
                    key,
                    format!("{v} is out of range: 0 to 3600000 (one simulated hour)"),
                ));
            }
        }
        Ok(())
    }

    /// The old leader's lease runs out at most one TTL after its last write (it renewed
    /// no later than that write), the service notices within one expiry check, and the
    /// next candidate in the queue needs one campaign round: its watch fires, it confirms
    /// it has no predecessor, it claims the resource and writes: four round trips.
    fn failover_bound(&self) -> Bound {
        let ttl = self.0.granted_ttl_ms();
        let check = self.0.expiry_check_interval_ms;
        let round = 4 * 2 * self.1.latency_ms_max;
        Bound {
            ms: ttl + check + round,
            formula: format!(
                "TTL + election round = lease TTL {ttl} ms + lease expiry check {check} ms + one campaign round (4 round trips at <= {} ms one way = {round} ms)",
                self.1.latency_ms_max
            ),
        }
    }

    fn default_liveness_bound_ms(&self) -> u64 {
        2 * self.0.granted_ttl_ms() + self.0.expiry_check_interval_ms + 1000
    }
}
