//! The database row's observer: when a generation's lease was granted and when it ended,
//! as the live PostgreSQL judges it on its own clock.
//!
//! A database does nothing when a lease lapses: the next acquire just finds `expires_at
//! < now()`. The simulated database records the moment its clock passes `expires_at`;
//! this observer does the same from outside the system under test: it reads the row
//! directly (no proxy) every [`POLL_MS`], with how far `expires_at` lies from the
//! database's `clock_timestamp()`, and logs
//! - `lease_granted` when a new generation appears (stamped when the read saw it);
//! - `lease_expired` (or `lease_revoked`, for a release, which sets `expires_at = now()`
//!   well before the time last read) and `key_deleted` for the row, with the
//!   generation as its `create_revision`, stamped at the instant the database's clock
//!   passed `expires_at`, mapped onto the run's clock through the read that saw it;
//! - nothing for a renewal, which only moves `expires_at`; a renewal that revives a
//!   lapsed lease nobody took makes its end count again, as in the simulation.
//!
//! A read that fails (the server restarting) is tried again after a pause from
//! `backoff`.

use crate::backoff::Backoff;
use crate::events::{Event, EventLog};
use std::time::Duration;

/// How often the row is read.
pub const POLL_MS: u64 = 5;

/// A release moves `expires_at` to `now()`: an end seen this much before the expiry last
/// read is a release, not an expiry.
const RELEASE_MARGIN_US: i64 = 20_000;

/// The row, with `expires_at` as microseconds from the database's clock now.
const READ: &str = "SELECT node, generation, (extract(epoch from (expires_at - clock_timestamp())) * 1000000)::bigint FROM leader";

/// What the observer knows of the current generation.
#[derive(Default)]
struct Seen {
    generation: i64,
    /// When its lease ends on the run's clock, as last read.
    expires_us: i64,
    ended: bool,
}

/// Logs the row's grants and ends (see the module doc) until the task is aborted.
pub async fn watch_row(conninfo: String, ttl_ms: u64, log: EventLog, mut backoff: Backoff) {
    let mut seen = Seen {
        ended: true,
        ..Seen::default()
    };
    loop {
        let Ok(client) =
            crate::backend::pg::client::connect(&conninfo, Duration::from_secs(1)).await
        else {
            tokio::time::sleep(backoff.failed()).await;
            continue;
        };
        backoff.succeeded();
        loop {
            let Ok(row) = client.query_one(READ, &[]).await else {
                break;
            };
            let now = log.clock().now_us();
            let (node, generation, left_us): (String, i64, i64) =
                (row.get(0), row.get(1), row.get(2));
            seen.read(&log, now, node, generation, left_us, ttl_ms);
            tokio::time::sleep(Duration::from_millis(POLL_MS)).await;
        }
        tokio::time::sleep(backoff.failed()).await;
    }
}

impl Seen {
    fn read(
        &mut self,
        log: &EventLog,
        now: i64,
        node: String,
        generation: i64,
        left_us: i64,
        ttl_ms: u64,
    ) {
        if generation == 0 {
            return;
        }
        if generation != self.generation {
            // A new generation is granted only once the old lease has lapsed.
            if !self.ended {
                self.end(log, self.expires_us.min(now), "expired");
            }
            self.generation = generation;
            self.ended = false;
            log.record_at(
                now,
                Event::LeaseGranted {
                    node: node.into(),
                    lease_id: generation,
                    ttl_requested_ms: ttl_ms,
                    ttl_granted_ms: ttl_ms,
                },
            );
        }
        let expires_us = now + left_us;
        if left_us > 0 {
            // Renewed (a lapsed lease nobody took is revived by its holder's renewal).
            self.ended = false;
            self.expires_us = expires_us;
            return;
        }
        if !self.ended {
            let cause = if expires_us + RELEASE_MARGIN_US < self.expires_us {
                "revoked"
            } else {
                "expired"
            };
            self.end(log, expires_us, cause);
        }
        self.expires_us = expires_us;
    }

    fn end(&mut self, log: &EventLog, at_us: i64, cause: &str) {
        self.ended = true;
        let lease_id = self.generation;
        log.record_at(
            at_us,
            if cause == "expired" {
                Event::LeaseExpired { lease_id }
            } else {
                Event::LeaseRevoked { lease_id }
            },
        );
        log.record_at(
            at_us,
            Event::KeyDeleted {
                key: "leader".to_string(),
                create_revision: lease_id,
                cause: cause.to_string(),
            },
        );
    }
}
