//! The lease service as a cluster: its leader changes and how long each lease outlived
//! its holder. A figure, not a property: nothing here fails a run.
//!
//! A lease's overrun is how long after its last renewal (or its grant) plus its TTL the
//! service ended it by expiry: 0 up to one expiry check for a service that never fails,
//! more when an etcd leader change promoted a new lessor, which gives every lease a full
//! TTL plus an election timeout again (etcd's `lessor.Promote`). Read from the
//! `etcd_leader_elected`, `lease_granted`, `lease_renewed` and `lease_expired` events;
//! absent (`report.json`: no `lease_service`) when the service is not a cluster.

use super::failover::LatencyStats;
use crate::timeline::{Entry, Event};
use serde::Serialize;
use std::collections::BTreeMap;

/// The lease service's figures for one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LeaseServiceSummary {
    /// Every election an etcd member won: (at ms, member, term), in order.
    pub leaders: Vec<(f64, String, u64)>,
    /// Leader changes: elections after the first.
    pub leader_changes: u64,
    /// Overrun of every lease that expired, ms.
    pub lease_overrun_ms: LatencyStats,
    /// Each expired lease's overrun, ms, in the order they expired (what `sim compare`
    /// pools over runs).
    pub lease_overruns_ms: Vec<f64>,
}

/// The figures, read one event at a time.
#[derive(Default)]
pub(crate) struct LeaseService {
    leaders: Vec<(f64, String, u64)>,
    /// Per live lease: its TTL and when it was last granted or renewed, µs.
    leases: BTreeMap<i64, (u64, i64)>,
    overruns: Vec<f64>,
}

impl LeaseService {
    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        match &e.event {
            Event::EtcdLeaderElected { member, term } => {
                self.leaders
                    .push((e.at_us as f64 / 1000.0, member.clone(), *term))
            }
            Event::LeaseGranted {
                lease_id,
                ttl_granted_ms,
                ..
            } => {
                self.leases.insert(*lease_id, (*ttl_granted_ms, e.at_us));
            }
            Event::LeaseRenewed { lease_id } => {
                if let Some(l) = self.leases.get_mut(lease_id) {
                    l.1 = e.at_us;
                }
            }
            Event::LeaseExpired { lease_id } => {
                if let Some((ttl, last)) = self.leases.remove(lease_id) {
                    let due = last + ttl as i64 * 1000;
                    self.overruns.push((e.at_us - due) as f64 / 1000.0);
                }
            }
            Event::LeaseRevoked { lease_id } => {
                self.leases.remove(lease_id);
            }
            _ => {}
        }
    }

    /// The figures, or `None` when no etcd member ever led (not a cluster).
    pub fn finish(self) -> Option<LeaseServiceSummary> {
        if self.leaders.is_empty() {
            return None;
        }
        Some(LeaseServiceSummary {
            leader_changes: self.leaders.len() as u64 - 1,
            leaders: self.leaders,
            lease_overrun_ms: LatencyStats::of(&self.overruns),
            lease_overruns_ms: self.overruns,
        })
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-written timelines whose overruns are worked out by hand.
    use super::*;

    fn at(ms: i64, event: Event) -> Entry {
        Entry {
            at_us: ms * 1000,
            event,
        }
    }

    #[test]
    fn overrun_runs_from_the_last_renewal() {
        let mut s = LeaseService::default();
        for e in [
            at(
                100,
                Event::EtcdLeaderElected {
                    member: "etcd-1".into(),
                    term: 1,
                },
            ),
            at(
                1000,
                Event::LeaseGranted {
                    node: "n1".into(),
                    lease_id: 7,
                    ttl_requested_ms: 3000,
                    ttl_granted_ms: 3000,
                },
            ),
            at(2000, Event::LeaseRenewed { lease_id: 7 }),
            at(
                6000,
                Event::EtcdLeaderElected {
                    member: "etcd-2".into(),
                    term: 2,
                },
            ),
            // Due at 5000: it outlived its holder by 4.5 s.
            at(9500, Event::LeaseExpired { lease_id: 7 }),
        ] {
            s.entry(&e);
        }
        let f = s.finish().expect("a cluster");
        assert_eq!(f.leader_changes, 1);
        assert_eq!(f.lease_overrun_ms.max, 4500.0);
        assert_eq!(f.lease_overrun_ms.count, 1);
    }

    #[test]
    fn no_cluster_no_figures() {
        let mut s = LeaseService::default();
        s.entry(&at(1, Event::LeaseExpired { lease_id: 1 }));
        assert!(s.finish().is_none());
    }
}
