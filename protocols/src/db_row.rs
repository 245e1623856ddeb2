//! `db-row`: leadership as a lease on one row of a single-node SQL database.
//!
//! The practitioner's database-row lease (Baton's seed document 004: "you can use a
//! database row as a lock: `UPDATE leader SET node_id = 'node-1', expires_at = NOW() +
//! INTERVAL '30 seconds' WHERE expires_at < NOW()`. The node that successfully updates
//! the row is the leader. This works if the database is a single node"), the same
//! pattern as ShedLock's JDBC provider with `usingDbTime()`. The table is
//! `leader(node, expires_at, generation)` with one row, and every statement is judged on
//! the database's own clock `now()`, so the nodes' clocks never decide who holds it:
//! - acquire: `UPDATE leader SET node = ?, expires_at = now() + ttl, generation =
//!   generation + 1 WHERE expires_at < now() RETURNING generation`: one row affected
//!   means this node leads under the new generation;
//! - renew: `UPDATE leader SET expires_at = now() + ttl WHERE node = ? AND generation = ?`:
//!   no row affected means someone else took the row since;
//! - release: `UPDATE leader SET expires_at = now() WHERE node = ? AND generation = ?`,
//!   so the next candidate's acquire succeeds at once;
//! - observe: `SELECT node, generation FROM leader WHERE expires_at >= now()`.
//!
//! `generation` is the fencing token: it only grows, one step per acquisition, inside the
//! same atomic statement that grants the lease, so a later holder always has a higher one.
//!
//! Defaults: a 30 s lease (the seed's `INTERVAL '30 seconds'`), renewed every TTL / 3
//! (the rule etcd's Go client and Redisson's watchdog use); candidates retry the acquire
//! every 2 s (the retry period of the seed's Kubernetes lease pattern, client-go's
//! `RetryPeriod`), jittered as client-go jitters it (a wait drawn from [1, 2.2) periods,
//! [`crate::jitter`]): with a fixed period, nodes that never restart keep their start
//! order's phases, and under churn the same ones always poll just after another and
//! never win (a live 9-node churn starved n7 or n8 in 6 of 6 trials). No database bounds a statement by default (PostgreSQL's
//! `statement_timeout` is 0, off), so the client sets 2 s, well inside the renew
//! interval.
//!
//! The node keeps its own lease deadline on its own clock (the time just before it sent
//! the acquire or the last answered renewal, plus the TTL) and stops acting when it
//! passes, even if the database never answers again.

use crate::clock::{sleep_local, Clock};
use crate::elector::{Elector, ElectorError, LeaderInfo};
use crate::leadership::{Leadership, LeaseHandle, LossReason};
use crate::safety::SafetyBounds;
use crate::NodeId;
use async_trait::async_trait;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Why a statement failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DbError {
    /// No answer within the statement timeout (lost packets, partition, a paused server).
    Timeout,
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbError::Timeout => write!(f, "timed out"),
        }
    }
}

/// The `leader` row as a `SELECT` sees it while a lease is live.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderRow {
    /// The holder's name, as the row stores it.
    pub node: String,
    /// Its generation (the fencing token).
    pub generation: u64,
}

/// The statements the row lease uses, against the table `leader(node, expires_at,
/// generation)`. Every call is bounded by a timeout inside the implementation.
#[async_trait]
pub trait DbApi: Send + Sync {
    /// `UPDATE leader SET node = ?, expires_at = now() + ttl, generation = generation + 1
    /// WHERE expires_at < now() RETURNING generation`: the new generation when the row was
    /// updated, `None` when the lease is still live. `client_now_us` given: the
    /// statement reads that instead of `now()` (`lease_clock = "client"`).
    async fn acquire(
        &self,
        node: &str,
        ttl_ms: u64,
        client_now_us: Option<i64>,
    ) -> Result<Option<u64>, DbError>;
    /// `UPDATE leader SET expires_at = now() + ttl WHERE node = ? AND generation = ?`:
    /// true when one row was updated (`client_now_us`: as for `acquire`).
    async fn renew(
        &self,
        node: &str,
        generation: u64,
        ttl_ms: u64,
        client_now_us: Option<i64>,
    ) -> Result<bool, DbError>;
    /// `UPDATE leader SET expires_at = now() WHERE node = ? AND generation = ?`: true
    /// when one row was updated.
    async fn release(&self, node: &str, generation: u64) -> Result<bool, DbError>;
    /// `SELECT node, generation FROM leader WHERE expires_at >= now()`.
    async fn select(&self) -> Result<Option<LeaderRow>, DbError>;
}

/// Parameters of the row lease (a scenario's `[db-row]` table).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DbRowConfig {
    /// The lease's length (`expires_at = now() + ttl`): 30 s, as in the seed's statement.
    pub lease_ttl_ms: u64,
    /// How often the holder renews. 0 means TTL / 3.
    pub renew_interval_ms: u64,
    /// How often a candidate retries the acquire (client-go's `RetryPeriod`: 2 s), each
    /// wait jittered up to 2.2 times it ([`crate::jitter`]).
    pub poll_interval_ms: u64,
    /// Timeout of every statement.
    pub statement_timeout_ms: u64,
    /// Whose clock the statements' `now` is: `database` (the fix: `now()`, ShedLock's
    /// `usingDbTime()`) or `client` (ShedLock's default: the node sends its own time as
    /// a parameter, `expires_at = :now + ttl WHERE expires_at <= :now`, so a candidate
    /// whose clock runs ahead takes a lease the holder still renews).
    pub lease_clock: LeaseClock,
    /// A statement that changes the row commits, and its commit waits for its WAL
    /// flush (PostgreSQL's `synchronous_commit`, on by default) before the answer
    /// leaves, drawn uniformly from `[min, max]` ms at µs resolution. `[0, 1]`: the
    /// fsync of this machine kind's disk, as etcd's; a live PostgreSQL here took 0.52 ms
    /// for a node's first acquire on its connection, 0.27 ms for a later committing
    /// UPDATE (real/tests/call_latency.rs). Simulation only: a live database has its own.
    pub fsync_ms: [u64; 2],
}

/// Whose clock a statement's `now` reads (`lease_clock`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LeaseClock {
    /// The database's `now()`.
    #[default]
    Database,
    /// The calling node's clock, sent with the statement (the bug).
    Client,
}

impl Default for DbRowConfig {
    fn default() -> Self {
        DbRowConfig {
            lease_ttl_ms: 30_000,
            renew_interval_ms: 0,
            poll_interval_ms: 2000,
            statement_timeout_ms: 2000,
            lease_clock: LeaseClock::Database,
            fsync_ms: [0, 1],
        }
    }
}

impl DbRowConfig {
    /// The `now` a statement sent at `client_now_us` carries: none (the database reads
    /// its own) unless `lease_clock = "client"`.
    pub fn statement_now(&self, client_now_us: i64) -> Option<i64> {
        (self.lease_clock == LeaseClock::Client).then_some(client_now_us)
    }

    /// What this protocol promises without the fence: its leader's deadline counts from before its
    /// request left, so it stops before the backend's grant ends while its clock is true
    /// and it is not paused; it keeps no margin beyond that (see
    /// [`SafetyBounds::LEASE_WITHOUT_MARGIN`]).
    pub fn safety_bounds(&self) -> SafetyBounds {
        SafetyBounds::LEASE_WITHOUT_MARGIN
    }

    /// The renew interval in force (TTL / 3 when not set).
    pub fn effective_renew_interval_ms(&self) -> u64 {
        if self.renew_interval_ms == 0 {
            (self.lease_ttl_ms / 3).max(1)
        } else {
            self.renew_interval_ms
        }
    }
}

/// The lease this node holds.
#[derive(Clone)]
struct Held {
    generation: u64,
    lease: LeaseHandle,
    /// Renewals hold it shared across their round trip, the release exclusively: a
    /// renewal still in flight must not land after the release and revive the row for a
    /// whole TTL with nobody acting under it.
    statements: Arc<tokio::sync::RwLock<()>>,
}

/// A database-row elector for one node.
pub struct DbRowElector {
    api: Arc<dyn DbApi>,
    clock: Arc<dyn Clock>,
    cfg: DbRowConfig,
    node: NodeId,
    held: Mutex<Option<Held>>,
    /// The poll's jitter source (seeded by the caller).
    rng: Mutex<Box<dyn RngCore + Send>>,
}

fn unavailable(e: DbError) -> ElectorError {
    ElectorError::Unavailable(e.to_string())
}

impl DbRowElector {
    /// An elector for `node` talking to the database through `api`, reading time on
    /// `clock`, drawing its poll's jitter from `rng`.
    pub fn new(
        node: &NodeId,
        api: Arc<dyn DbApi>,
        clock: Arc<dyn Clock>,
        cfg: DbRowConfig,
        rng: Box<dyn RngCore + Send>,
    ) -> Self {
        DbRowElector {
            api,
            clock,
            cfg,
            node: node.clone(),
            held: Mutex::new(None),
            rng: Mutex::new(rng),
        }
    }
}

/// Renews every `interval_ms` until the lease is lost. Each renewal is its own task, sent
/// on schedule, so one lost answer costs one renewal and not the cadence. An answered
/// renewal extends the local deadline to (time it was sent + TTL); no row updated ends
/// the lease; a timed-out one extends nothing, so a partitioned holder's deadline runs
/// out on its own.
fn spawn_renewals(
    api: Arc<dyn DbApi>,
    clock: Arc<dyn Clock>,
    node: NodeId,
    held: Held,
    cfg: DbRowConfig,
) {
    let (ttl_ms, interval_ms) = (cfg.lease_ttl_ms, cfg.effective_renew_interval_ms());
    let Held {
        generation,
        lease,
        statements,
    } = held;
    madsim::task::spawn(async move {
        loop {
            if !lease
                .sleep_while_valid(clock.as_ref(), Duration::from_millis(interval_ms))
                .await
            {
                return;
            }
            let (api, clock, node, lease, statements, cfg) = (
                api.clone(),
                clock.clone(),
                node.clone(),
                lease.clone(),
                statements.clone(),
                cfg.clone(),
            );
            madsim::task::spawn(async move {
                let _in_flight = statements.read().await;
                if !lease.valid() {
                    return;
                }
                let sent_us = clock.now_us();
                let now = cfg.statement_now(sent_us);
                match api.renew(node.as_str(), generation, ttl_ms, now).await {
                    Ok(true) => lease.extend_to(sent_us + ttl_ms as i64 * 1000),
                    Ok(false) => lease.end(LossReason::Revoked),
                    Err(_) => {}
                }
            });
        }
    });
}

#[async_trait]
impl Elector for DbRowElector {
    async fn campaign(&self) -> Result<Leadership, ElectorError> {
        let ttl_ms = self.cfg.lease_ttl_ms;
        let (generation, sent_us) = loop {
            let sent_us = self.clock.now_us();
            match self
                .api
                .acquire(self.node.as_str(), ttl_ms, self.cfg.statement_now(sent_us))
                .await
                .map_err(unavailable)?
            {
                Some(g) => break (g, sent_us),
                None => {
                    let wait = {
                        let mut rng = self.rng.lock().unwrap();
                        crate::jitter::jittered(self.cfg.poll_interval_ms, &mut **rng)
                    };
                    sleep_local(self.clock.as_ref(), wait).await
                }
            }
        };
        let lease = LeaseHandle::new(self.clock.clone(), sent_us + ttl_ms as i64 * 1000, true);
        let held = Held {
            generation,
            lease: lease.clone(),
            statements: Arc::new(tokio::sync::RwLock::new(())),
        };
        *self.held.lock().unwrap() = Some(held.clone());
        spawn_renewals(
            self.api.clone(),
            self.clock.clone(),
            self.node.clone(),
            held,
            self.cfg.clone(),
        );
        Ok(lease.leadership(generation))
    }

    async fn resign(&self, leadership: &Leadership) -> Result<(), ElectorError> {
        leadership.end(LossReason::Resigned);
        let held = self.held.lock().unwrap().take();
        if let Some(h) = held {
            h.lease.end(LossReason::Resigned);
            // Wait for renewals in flight; later ones see the lease ended and send nothing.
            let _no_renewal_in_flight = h.statements.write().await;
            self.api
                .release(self.node.as_str(), h.generation)
                .await
                .map_err(unavailable)?;
        }
        Ok(())
    }

    async fn observe(&self) -> Result<Option<LeaderInfo>, ElectorError> {
        let row = self.api.select().await.map_err(unavailable)?;
        Ok(row.map(|r| LeaderInfo {
            node: NodeId::from(r.node),
            token: r.generation,
        }))
    }
}
