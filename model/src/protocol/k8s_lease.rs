//! `k8s-lease` in the model: the scenario table's checks and the failover bound.

#[allow(unused_imports)]
use super::{require_positive, Bound, Fleet, ProtocolModel, ProtocolName};
use crate::scenario::key_error::KeyError;
use baton_protocols::k8s_lease::{K8sLeaseConfig, JITTER_FACTOR};

/// The k8s-lease protocol with its scenario table and the fleet its bounds are for.
#[derive(Clone, Debug)]
pub struct K8sLease(pub K8sLeaseConfig, pub Fleet);

impl ProtocolModel for K8sLease {
    fn transfer_method(&self) -> &'static str {
        "the leader releases the Lease naming the successor as its preferredHolder (Kubernetes 1.31's coordinated leader election field) and tells it to try at once; other candidates leave a Lease released to another node alone for a whole LeaseDuration"
    }

    fn name(&self) -> ProtocolName {
        ProtocolName::K8sLease
    }

    fn safety_bounds(&self) -> baton_protocols::SafetyBounds {
        self.0.safety_bounds()
    }

    /// client-go's `NewLeaderElector` checks, then the lease's name.
    fn validate(&self) -> Result<(), KeyError> {
        let c = &self.0;
        if c.retry_period_ms == 0 {
            return Err(KeyError::new("retry_period_ms", "must be at least 1"));
        }
        if c.rpc_timeout_ms == 0 {
            return Err(KeyError::new("rpc_timeout_ms", "must be at least 1"));
        }
        if c.lease_duration_ms <= c.renew_deadline_ms {
            return Err(KeyError::new(
                "lease_duration_ms",
                format!(
                    "{} must be greater than renew_deadline_ms {} (client-go)",
                    c.lease_duration_ms, c.renew_deadline_ms
                ),
            ));
        }
        if c.renew_deadline_ms as f64 <= JITTER_FACTOR * c.retry_period_ms as f64 {
            return Err(KeyError::new(
                "renew_deadline_ms",
                format!(
                    "{} must be greater than retry_period_ms x 1.2 = {} (client-go)",
                    c.renew_deadline_ms,
                    JITTER_FACTOR * c.retry_period_ms as f64
                ),
            ));
        }
        if self.0.lease_name.is_empty() {
            return Err(KeyError::new("lease_name", "must not be empty"));
        }
        Ok(())
    }

    /// A candidate sees the dead holder's last renewal (made no later than its last
    /// write) at its next try, up to one jittered RetryPeriod later; from then it waits
    /// LeaseDuration on its own clock, and takes the Lease at its first try after that,
    /// up to one more jittered RetryPeriod. Then one round: read and update the Lease,
    /// and claim the resource.
    fn failover_bound(&self) -> Bound {
        let c = &self.0;
        let jitter = c.max_retry_wait_ms();
        let round = 3 * 2 * self.1.latency_ms_max;
        Bound {
            ms: c.lease_duration_ms + 2 * jitter + round,
            formula: format!(
                "LeaseDuration + RetryPeriod x jitter, twice = LeaseDuration {} ms + 2 x RetryPeriod {} ms x (1 + JitterFactor 1.2) = 2 x {jitter} ms + election round (3 round trips at <= {} ms one way = {round} ms)",
                c.lease_duration_ms, c.retry_period_ms, self.1.latency_ms_max
            ),
        }
    }

    fn default_liveness_bound_ms(&self) -> u64 {
        self.0.lease_duration_ms + 2 * self.0.max_retry_wait_ms() + 1000
    }
}
