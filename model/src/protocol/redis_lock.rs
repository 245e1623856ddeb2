//! `redis-naive` and `redis-fenced` in the model: the scenario table's checks and the failover bound.

#[allow(unused_imports)]
use super::{require_positive, Bound, Fleet, ProtocolModel, ProtocolName};
use crate::scenario::key_error::KeyError;
use baton_protocols::redis_lock::{Fencing, RedisLockConfig};

/// `redis-naive`: the lock without a fencing token (every leadership carries 0).
#[derive(Clone, Debug)]
pub struct RedisNaive(pub RedisLockConfig, pub Fleet);

impl ProtocolModel for RedisNaive {
    fn name(&self) -> ProtocolName {
        ProtocolName::RedisNaive
    }

    fn safety_bounds(&self) -> baton_protocols::SafetyBounds {
        self.0.safety_bounds()
    }

    fn validate(&self) -> Result<(), KeyError> {
        validate(&self.0)
    }

    fn failover_bound(&self) -> Bound {
        bound(&self.0, &self.1, Fencing::None)
    }

    fn default_liveness_bound_ms(&self) -> u64 {
        liveness_bound_ms(&self.0)
    }
}

/// `redis-fenced`: the lock plus a token from `INCR <key>:token` on acquisition.
#[derive(Clone, Debug)]
pub struct RedisFenced(pub RedisLockConfig, pub Fleet);

impl ProtocolModel for RedisFenced {
    fn name(&self) -> ProtocolName {
        ProtocolName::RedisFenced
    }

    fn safety_bounds(&self) -> baton_protocols::SafetyBounds {
        self.0.safety_bounds()
    }

    fn validate(&self) -> Result<(), KeyError> {
        validate(&self.0)
    }

    fn failover_bound(&self) -> Bound {
        bound(&self.0, &self.1, Fencing::IncrCounter)
    }

    fn default_liveness_bound_ms(&self) -> u64 {
        liveness_bound_ms(&self.0)
    }
}

fn validate(c: &RedisLockConfig) -> Result<(), KeyError> {
    require_positive(&[
        ("lock_ttl_ms", c.lock_ttl_ms),
        ("retry_interval_ms", c.retry_interval_ms),
        ("rpc_timeout_ms", c.rpc_timeout_ms),
    ])?;
    if c.key.is_empty() {
        return Err(KeyError::new("key", "must not be empty"));
    }
    Ok(())
}

/// The holder's key expires at most one TTL after its last renewal, which it sent no
/// later than its last write (plus that renewal's trip). Redis judges expiry on access,
/// so the first candidate to retry after that takes the lock: within one retry interval
/// and one round trip. Then the token (fenced only) and the claim write.
fn bound(cfg: &RedisLockConfig, fleet: &Fleet, fencing: Fencing) -> Bound {
    let ttl = cfg.lock_ttl_ms;
    let retry = cfg.retry_interval_ms;
    let (trips, what) = match fencing {
        Fencing::None => (3, "last renewal, SET NX PX, claim write"),
        Fencing::IncrCounter => (4, "last renewal, SET NX PX, INCR, claim write"),
    };
    let lat = fleet.latency_ms_max;
    let round = trips * 2 * lat;
    Bound {
        ms: ttl + retry + round,
        formula: format!(
            "TTL + retry + acquisition = lock TTL {ttl} ms + one retry interval {retry} ms + {trips} round trips ({what}) at <= {lat} ms one way = {round} ms"
        ),
    }
}

fn liveness_bound_ms(cfg: &RedisLockConfig) -> u64 {
    2 * cfg.lock_ttl_ms + cfg.retry_interval_ms + 1000
}
