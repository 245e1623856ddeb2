//! The lease TTLs the backend granted. A figure, not a property: nothing here fails a run.
//!
//! What a scenario asks for is not always what it gets: etcd raises any TTL below its
//! minimum (2 s at default settings) to that minimum, and so does the simulated service.
//! The failover a run measures follows the granted TTL, so a report that compares runs
//! (the simulator's against a live etcd's, or one TTL against another) needs it. Read
//! from the `lease_granted` events (`report.json`: `lease_ttl_granted_ms`, absent when
//! the protocol grants no leases).

use super::CheckInput;
use crate::timeline::{Entry, Event};
use serde::Serialize;

/// The granted TTLs of a run's leases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LeaseTtlGranted {
    /// The shortest TTL granted.
    pub min: u64,
    /// The longest.
    pub max: u64,
    /// How many leases were granted.
    pub count: u64,
}

/// The granted TTLs of the leases in `input`'s timeline.
pub fn check(input: &CheckInput) -> Option<LeaseTtlGranted> {
    let mut l = LeaseTtl::default();
    for e in input.entries {
        l.entry(e);
    }
    l.finish()
}

/// Granted TTLs, read one event at a time.
#[derive(Default)]
pub(crate) struct LeaseTtl {
    seen: Option<LeaseTtlGranted>,
}

impl LeaseTtl {
    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        if let Event::LeaseGranted { ttl_granted_ms, .. } = e.event {
            let t = ttl_granted_ms;
            self.seen = Some(match self.seen {
                None => LeaseTtlGranted {
                    min: t,
                    max: t,
                    count: 1,
                },
                Some(s) => LeaseTtlGranted {
                    min: s.min.min(t),
                    max: s.max.max(t),
                    count: s.count + 1,
                },
            });
        }
    }

    /// The granted TTLs, or `None` when no lease was granted.
    pub fn finish(self) -> Option<LeaseTtlGranted> {
        self.seen
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-made grants, including one raised to the service's minimum.
    use super::*;
    use crate::checker::testing::{at, input, resolved};

    fn granted(at_ms: i64, asked: u64, got: u64) -> Entry {
        at(
            at_ms,
            Event::LeaseGranted {
                node: "n1".into(),
                lease_id: at_ms,
                ttl_requested_ms: asked,
                ttl_granted_ms: got,
            },
        )
    }

    #[test]
    fn grants_are_summarized_and_absent_without_any() {
        let r = resolved();
        assert_eq!(check(&input(&r, &[], 1000)), None);
        let e = vec![
            granted(10, 1000, 2000),
            granted(20, 3000, 3000),
            granted(30, 1000, 2000),
        ];
        assert_eq!(
            check(&input(&r, &e, 1000)),
            Some(LeaseTtlGranted {
                min: 2000,
                max: 3000,
                count: 3
            })
        );
    }
}
