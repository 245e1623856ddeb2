//! A single-node SQL database holding one table, `leader(node, expires_at, generation)`,
//! with one row, as one simulated node.
//!
//! Each statement runs atomically (a single-row `UPDATE` takes the row lock) and reads
//! `now()` from the database's own clock, unless the client sends its own time in its
//! place (`db-row.lease_clock = "client"`, ShedLock's default, the bug). The row starts with
//! `generation = 0` and an `expires_at` long past, so the first acquire wins.
//!
//! The row lives on the database's "disk" ([`DbDisk`], owned outside the node), so a
//! restart of the database (`kill`/`restart` of `backend`) finds it as it was: committed
//! rows survive a crash, as PostgreSQL's do.
//!
//! Not modelled: replication (a failover to a replica that missed the last `UPDATE` would
//! hand out a generation twice), transactions spanning several statements, connection
//! pools.

use crate::world::clock::NodeClock;
use crate::world::net::Endpoint;
use crate::world::rpc::{request, BACKEND_ADDR};
use crate::world::timeline::{Event, Timeline};
use baton_protocols::db_row::LeaderRow;
use baton_protocols::{sleep_drawn, sleep_until_local, Clock};
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

// The requests this service answers: it declares them, and its client
// (`crate::world::protocol::db_row`) sends them.

/// The acquire statement; the new generation when one row was updated.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DbAcquire {
    /// The candidate.
    pub node: String,
    /// The lease length.
    pub ttl_ms: u64,
    /// The client's time, read instead of `now()` (`db-row.lease_clock = "client"`).
    pub client_now_us: Option<i64>,
}
request!(DbAcquire => Option<u64>);

/// The renew statement; true when one row was updated.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DbRenew {
    /// The holder.
    pub node: String,
    /// Its generation.
    pub generation: u64,
    /// The lease length.
    pub ttl_ms: u64,
    /// The client's time, read instead of `now()` (as for [`DbAcquire`]).
    pub client_now_us: Option<i64>,
}
request!(DbRenew => bool);

/// The release statement; true when one row was updated.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DbRelease {
    /// The holder.
    pub node: String,
    /// Its generation.
    pub generation: u64,
}
request!(DbRelease => bool);

/// The select statement: the live holder, if any.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DbSelect;
request!(DbSelect => Option<LeaderRow>);

/// The table's one row.
struct Row {
    node: String,
    /// Database-clock microseconds.
    expires_at_us: i64,
    generation: u64,
    /// Timeline only: whether the end of this generation's lease has been recorded.
    end_recorded: bool,
}

/// The database's durable state: the `leader` row, kept across restarts.
pub struct DbDisk(Mutex<Row>);

impl Default for DbDisk {
    fn default() -> Self {
        DbDisk(Mutex::new(Row {
            node: String::new(),
            expires_at_us: i64::MIN,
            generation: 0,
            end_recorded: true,
        }))
    }
}

struct Service {
    disk: Arc<DbDisk>,
    clock: NodeClock,
    timeline: Timeline,
    changed: Notify,
    commit: Commit,
}

/// What a commit costs: a statement that changed the row answers only once its WAL is
/// flushed, a draw from `[db-row] fsync_ms` from the database's own generator. The
/// change is visible to the next statement at once (PostgreSQL makes it visible at the
/// commit, under a millisecond later; the row lock orders the statements either way).
pub struct Commit {
    fsync_ms: [u64; 2],
    rng: std::sync::Mutex<rand_chacha::ChaCha8Rng>,
}

impl Commit {
    /// The commits of a database started under `seed`.
    pub fn new(fsync_ms: [u64; 2], seed: u64) -> Commit {
        Commit {
            fsync_ms,
            rng: std::sync::Mutex::new(baton_model::seed::fork(seed, "db/server")),
        }
    }
}

/// The key name the timeline uses for the row.
const ROW_KEY: &str = "leader";

/// Runs the database on the current node until the node is killed, its row on `disk`.
///
/// `requests` counts every statement served (the backend load a protocol puts on it).
pub async fn serve(
    timeline: Timeline,
    clock: NodeClock,
    requests: Arc<crate::world::requests::RequestCounter>,
    disk: Arc<DbDisk>,
    commit: Commit,
) {
    let ep = Endpoint::bind(BACKEND_ADDR).expect("backend address is free");
    let svc = Arc::new(Service {
        disk,
        clock,
        timeline,
        changed: Notify::new(),
        commit,
    });
    let (s, n) = (svc.clone(), requests.clone());
    ep.add_rpc_handler(move |r: DbAcquire| {
        n.fetch_add(1, Ordering::Relaxed);
        let out = s.acquire(r.node, r.ttl_ms, r.client_now_us);
        let s = s.clone();
        async move {
            s.commit_if(out.is_some()).await;
            out
        }
    });
    let (s, n) = (svc.clone(), requests.clone());
    ep.add_rpc_handler(move |r: DbRenew| {
        n.fetch_add(1, Ordering::Relaxed);
        let out = s.renew(&r.node, r.generation, r.ttl_ms, r.client_now_us);
        let s = s.clone();
        async move {
            s.commit_if(out).await;
            out
        }
    });
    let (s, n) = (svc.clone(), requests.clone());
    ep.add_rpc_handler(move |r: DbRelease| {
        n.fetch_add(1, Ordering::Relaxed);
        let out = s.release(&r.node, r.generation);
        let s = s.clone();
        async move {
            s.commit_if(out).await;
            out
        }
    });
    let (s, n) = (svc.clone(), requests);
    ep.add_rpc_handler(move |_: DbSelect| {
        n.fetch_add(1, Ordering::Relaxed);
        let out = s.select();
        async move { out }
    });
    svc.watch_expiries().await;
}

impl Service {
    /// Waits for the commit's WAL flush when the statement changed the row (one that
    /// changed nothing writes no WAL, and a SELECT none).
    async fn commit_if(&self, changed: bool) {
        if changed {
            sleep_drawn(&self.clock, &self.commit.rng, self.commit.fsync_ms).await;
        }
    }

    /// `UPDATE leader SET node = ?, expires_at = now() + ttl, generation = generation + 1
    /// WHERE expires_at < now() RETURNING generation`, or with the client's time given
    /// in place of `now()`.
    fn acquire(&self, node: String, ttl_ms: u64, client_now_us: Option<i64>) -> Option<u64> {
        let now = client_now_us.unwrap_or_else(|| self.clock.now_us());
        let mut row = self.disk.0.lock().unwrap();
        if row.expires_at_us >= now {
            return None;
        }
        self.record_end(&mut row, "expired");
        row.node = node.clone();
        row.expires_at_us = now + ttl_ms as i64 * 1000;
        row.generation += 1;
        row.end_recorded = false;
        // The row holds the holder's name as text; the timeline, the node it names.
        self.timeline.record(Event::LeaseGranted {
            node: node.into(),
            lease_id: row.generation as i64,
            ttl_requested_ms: ttl_ms,
            ttl_granted_ms: ttl_ms,
        });
        let generation = row.generation;
        drop(row);
        self.changed.notify_waiters();
        Some(generation)
    }

    /// `UPDATE leader SET expires_at = now() + ttl WHERE node = ? AND generation = ?`.
    fn renew(&self, node: &str, generation: u64, ttl_ms: u64, client_now_us: Option<i64>) -> bool {
        let now = client_now_us.unwrap_or_else(|| self.clock.now_us());
        let mut row = self.disk.0.lock().unwrap();
        if row.node != node || row.generation != generation {
            return false;
        }
        // The statement matches on node and generation only: a holder whose lease ran
        // out unnoticed by anyone revives it, as the real statement would.
        row.expires_at_us = now + ttl_ms as i64 * 1000;
        row.end_recorded = false;
        drop(row);
        self.changed.notify_waiters();
        true
    }

    /// `UPDATE leader SET expires_at = now() WHERE node = ? AND generation = ?`.
    fn release(&self, node: &str, generation: u64) -> bool {
        let now = self.clock.now_us();
        let mut row = self.disk.0.lock().unwrap();
        if row.node != node || row.generation != generation {
            return false;
        }
        row.expires_at_us = now;
        self.record_end(&mut row, "revoked");
        drop(row);
        self.changed.notify_waiters();
        true
    }

    /// `SELECT node, generation FROM leader WHERE expires_at >= now()`.
    fn select(&self) -> Option<LeaderRow> {
        let now = self.clock.now_us();
        let row = self.disk.0.lock().unwrap();
        (row.generation > 0 && row.expires_at_us >= now).then(|| LeaderRow {
            node: row.node.clone(),
            generation: row.generation,
        })
    }

    /// Timeline only: records that the current generation's lease ended (once).
    /// `create_revision` carries the generation, the holder's token, as the
    /// election-latency checker expects of a vacated seat.
    fn record_end(&self, row: &mut Row, cause: &str) {
        if row.end_recorded {
            return;
        }
        row.end_recorded = true;
        let lease_id = row.generation as i64;
        self.timeline.record(if cause == "expired" {
            Event::LeaseExpired { lease_id }
        } else {
            Event::LeaseRevoked { lease_id }
        });
        self.timeline.record(Event::KeyDeleted {
            key: ROW_KEY.to_string(),
            create_revision: lease_id,
            cause: cause.to_string(),
        });
    }

    /// Timeline only: a database does nothing when a lease lapses (the next acquire just
    /// finds `expires_at < now()`), but the run's timeline should show when the seat
    /// became vacant. This watcher records it the moment the database clock passes
    /// `expires_at`; it answers no statement and changes no state a client can see.
    async fn watch_expiries(&self) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let due = {
                let mut row = self.disk.0.lock().unwrap();
                if row.end_recorded {
                    None
                } else if self.clock.now_us() > row.expires_at_us {
                    self.record_end(&mut row, "expired");
                    None
                } else {
                    Some(row.expires_at_us + 1)
                }
            };
            match due {
                Some(at) => {
                    tokio::select! {
                        // Biased: tokio would otherwise pick among ready branches with its own RNG, which
                        // madsim does not seed; polling in written order keeps runs deterministic.
                        biased;
                        _ = notified => {}
                        _ = sleep_until_local(&self.clock, at) => {}
                    }
                }
                None => notified.await,
            }
        }
    }
}
