//! Each protocol's TTL-like knob, in one place: what "a lease of T ms" means for it.
//!
//! A TTL sweep moves one number, but every protocol spells its lease differently, and
//! the timers around it (renewal, polling, retries) scale with it. The mapping scales
//! them as the committed scenarios do at T = 3 s (see `scenarios/clean-kill.toml`), so
//! that every protocol's lease outlives the same pause at the same T:
//!
//! | protocol | settings for T |
//! |---|---|
//! | etcd-lease | `lease_ttl_ms = T` (keepalive T/3; etcd still raises T below `min_lease_ttl_ms`, 2 s) |
//! | redis-naive, redis-fenced | `lock_ttl_ms = T` (renewal T/3) |
//! | db-row | `lease_ttl_ms = T`, `poll_interval_ms = 2T/15` (client-go's 2 s per 15 s) |
//! | consul-session | `session_ttl_ms = T/2` (the server allows 2 x TTL), `session_ttl_min_ms = T/2`, `lock_delay_ms = T/2`, `lock_retry_time_ms = T/6` |
//! | k8s-lease | `lease_duration_ms = 2T/3`, `renew_deadline_ms = 7T/15`, `retry_period_ms = T/10` (a candidate's worst wait, LeaseDuration + 2 jittered retries, is about T) |
//! | zk-sequential | `session_timeout_ms = T`, `tick_time_ms = T/3` (inside ZooKeeper's 2 to 20 ticks) |
//! | bully, ring | `failure_timeout_ms = 2T/3`, `heartbeat_interval_ms = T/3` (the suspicion, plus an election round, is about T) |
//! | raft | `election_timeout_min_ms = T/2`, `election_timeout_max_ms = T`, `heartbeat_interval_ms = T/20`, `leader_lease_ms = T/3` |

use crate::protocol::ProtocolName;

/// The grid key that sweeps every protocol's TTL at once.
pub const GENERIC_KEY: &str = "ttl_ms";

/// The key a user names for protocol `p`'s TTL (`etcd-lease.lease_ttl_ms`): a grid over
/// it, or over [`GENERIC_KEY`], moves every swept protocol's TTL by [`settings`].
pub fn primary_key(p: ProtocolName) -> String {
    let key = match p {
        ProtocolName::EtcdLease | ProtocolName::DbRow => "lease_ttl_ms",
        ProtocolName::RedisNaive | ProtocolName::RedisFenced => "lock_ttl_ms",
        ProtocolName::ConsulSession => "session_ttl_ms",
        ProtocolName::K8sLease => "lease_duration_ms",
        ProtocolName::ZkSequential => "session_timeout_ms",
        ProtocolName::Bully | ProtocolName::Ring => "failure_timeout_ms",
        ProtocolName::Raft => "election_timeout_max_ms",
    };
    format!("{}.{key}", p.name())
}

/// Whether `key` names the TTL axis: [`GENERIC_KEY`] or any protocol's primary key.
pub fn is_ttl_key(key: &str) -> bool {
    key == GENERIC_KEY || ProtocolName::ALL.iter().any(|p| primary_key(*p) == key)
}

/// The `--set` overrides that give protocol `p` a lease of `ttl_ms`.
pub fn settings(p: ProtocolName, ttl_ms: u64) -> Vec<String> {
    let t = ttl_ms;
    let at_least_1 = |v: u64| v.max(1);
    let pairs: Vec<(&str, u64)> = match p {
        ProtocolName::EtcdLease => vec![("lease_ttl_ms", t)],
        ProtocolName::RedisNaive | ProtocolName::RedisFenced => vec![("lock_ttl_ms", t)],
        ProtocolName::DbRow => vec![
            ("lease_ttl_ms", t),
            ("poll_interval_ms", at_least_1(t * 2 / 15)),
        ],
        ProtocolName::ConsulSession => vec![
            ("session_ttl_ms", at_least_1(t / 2)),
            ("session_ttl_min_ms", at_least_1(t / 2)),
            ("lock_delay_ms", t / 2),
            ("lock_retry_time_ms", at_least_1(t / 6)),
        ],
        ProtocolName::K8sLease => vec![
            ("lease_duration_ms", at_least_1(t * 2 / 3)),
            ("renew_deadline_ms", at_least_1(t * 7 / 15)),
            ("retry_period_ms", at_least_1(t / 10)),
        ],
        ProtocolName::ZkSequential => vec![
            ("session_timeout_ms", t),
            ("tick_time_ms", at_least_1(t / 3)),
        ],
        ProtocolName::Bully | ProtocolName::Ring => {
            vec![
                ("failure_timeout_ms", at_least_1(t * 2 / 3)),
                ("heartbeat_interval_ms", at_least_1(t / 3)),
            ]
        }
        ProtocolName::Raft => vec![
            ("election_timeout_min_ms", at_least_1(t / 2)),
            ("election_timeout_max_ms", t),
            ("heartbeat_interval_ms", at_least_1(t / 20)),
            ("leader_lease_ms", at_least_1(t / 3)),
        ],
    };
    pairs
        .into_iter()
        .map(|(k, v)| format!("{}.{k}={v}", p.name()))
        .collect()
}

#[cfg(test)]
mod tests {
    //! Methodology: every protocol's settings load for the TTLs a sweep uses, and the
    //! primary key is among them with T itself (or T's share for consul and k8s).
    use super::*;

    #[test]
    fn every_protocol_loads_at_every_swept_ttl() {
        for p in ProtocolName::ALL {
            for t in [1_000, 3_000, 10_000, 30_000] {
                let mut set = vec![format!("protocol={}", p.name())];
                set.extend(settings(p, t));
                crate::scenario::load_str("t.toml", "t", "", &set)
                    .unwrap_or_else(|e| panic!("{} at {t} ms: {e}", p.name()));
                let primary = primary_key(p);
                assert!(set.iter().any(|s| s.starts_with(&format!("{primary}="))));
                assert!(is_ttl_key(&primary));
            }
        }
        assert!(is_ttl_key("ttl_ms"));
        assert!(!is_ttl_key("etcd-lease.rpc_timeout_ms"));
    }
}
