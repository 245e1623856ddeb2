//! `k8s-lease` in the model: the scenario table's checks and the failover bound.

#[allow(unused_imports)]
use super::{require_positive, Bound, Fleet, ProtocolModel, ProtocolName};
use baton_protocols::k8s_lease::K8sLeaseConfig;

/// The k8s-lease protocol with its scenario table and the fleet its bounds are for.
#[derive(Clone, Debug)]
pub struct K8sLease(pub K8sLeaseConfig, pub Fleet);

impl ProtocolModel for K8sLease {
    fn name(&self) -> ProtocolName {
        ProtocolName::K8sLease
    }

    fn validate(&self) -> Result<(), (String, String)> {
        self.0.check()?;
        if self.0.lease_name.is_empty() {
            return Err(("lease_name".into(), "must not be empty".into()));
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
