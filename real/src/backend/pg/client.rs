//! [`DbApi`] over a live PostgreSQL, with `tokio-postgres`: what `db-row` runs on in real
//! mode, the same elector code as in the simulator.
//!
//! The table is `leader(node text, expires_at timestamptz, generation bigint)` with one
//! row, made by the supervisor before the fleet starts ([`create_table`]); its
//! `expires_at` starts at 1970, long past, so the first acquire wins. The statements are
//! the protocol's own (`baton_protocols::db_row`), each one an autocommit transaction,
//! judged on the database's clock `now()`, or, with `lease_clock = "client"` (ShedLock's
//! default, the bug), on the time the node sends: the node's skewed clock as a wall-clock
//! timestamp (the machine's real time plus the node's skew).
//!
//! One connection per node, made when the node starts (as an application makes its pool
//! at start-up) and made again after it breaks (a restarted server), with the four
//! statements prepared on it once, so each call is one round trip (tokio-postgres would
//! otherwise prepare an unnamed statement before every execution). Every statement is
//! bounded by `statement_timeout_ms`: no answer in time is [`DbError::Timeout`]. A statement that timed out on a cut link is still in
//! the TCP stream and may run when the link is mended, as with any real client: an
//! acquire that ran late leaves the row held until it expires by a node that does not
//! know it holds it (the simulator's partition drops the message instead).

use crate::run_clock::RunClock;
use async_trait::async_trait;
use baton_protocols::db_row::{DbApi, DbError, LeaderRow};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_postgres::{Client, Config, NoTls, Statement};

/// The lease table's name, as every statement here spells it (they are literals made
/// with `concat!`, which cannot name a constant): a foreign node is given it as
/// `{pg_table}` (node contract v2).
pub const TABLE: &str = "leader";

/// The table and its one row.
pub const CREATE_TABLE: &str = "CREATE TABLE leader (node text NOT NULL, expires_at timestamptz NOT NULL, generation bigint NOT NULL); INSERT INTO leader VALUES ('', '1970-01-01 00:00:00+00', 0);";

/// `now`: the client's time when one is sent (`$n`, microseconds since the Unix epoch),
/// else the database's `now()`.
macro_rules! now_or {
    ($n:literal) => {
        concat!("COALESCE(to_timestamp($", $n, "::float8 / 1000000), now())")
    };
}

const ACQUIRE: &str = concat!(
    "UPDATE leader SET node = $1, expires_at = ",
    now_or!("3"),
    " + $2::bigint * interval '1 millisecond', generation = generation + 1 WHERE expires_at < ",
    now_or!("3"),
    " RETURNING generation"
);
const RENEW: &str = concat!(
    "UPDATE leader SET expires_at = ",
    now_or!("4"),
    " + $3::bigint * interval '1 millisecond' WHERE node = $1 AND generation = $2"
);
const RELEASE: &str = "UPDATE leader SET expires_at = now() WHERE node = $1 AND generation = $2";
const SELECT: &str =
    "SELECT node, generation FROM leader WHERE generation > 0 AND expires_at >= now()";

/// Why the database could not be reached or made ready.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// The connection string is refused, or the connection failed.
    #[error("{conninfo}: {source}")]
    Connect {
        /// The connection string.
        conninfo: String,
        /// Why.
        source: tokio_postgres::Error,
    },
    /// No connection in time.
    #[error("{conninfo}: no connection within {ms} ms")]
    Timeout {
        /// The connection string.
        conninfo: String,
        /// The time allowed.
        ms: u128,
    },
    /// The table could not be made.
    #[error("creating the leader table: {0}")]
    CreateTable(tokio_postgres::Error),
    /// A statement could not be prepared.
    #[error("preparing {sql}: {source}")]
    Prepare {
        /// The statement.
        sql: &'static str,
        /// Why.
        source: tokio_postgres::Error,
    },
}

/// Makes the table, directly on the server (not through a proxy).
pub async fn create_table(conninfo: &str) -> Result<(), PgError> {
    let client = connect(conninfo, Duration::from_secs(5)).await?;
    client
        .batch_execute(CREATE_TABLE)
        .await
        .map_err(PgError::CreateTable)
}

/// A connection to `conninfo`, its driver spawned.
pub async fn connect(conninfo: &str, timeout: Duration) -> Result<Client, PgError> {
    let refused = |source| PgError::Connect {
        conninfo: conninfo.to_string(),
        source,
    };
    let mut cfg: Config = conninfo.parse().map_err(refused)?;
    cfg.connect_timeout(timeout);
    let (client, conn) = tokio::time::timeout(timeout, cfg.connect(NoTls))
        .await
        .map_err(|_| PgError::Timeout {
            conninfo: conninfo.to_string(),
            ms: timeout.as_millis(),
        })?
        .map_err(refused)?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

/// A node's database client. See the module doc.
pub struct RealDb {
    conninfo: String,
    timeout: Duration,
    run: RunClock,
    conn: tokio::sync::Mutex<Option<Arc<Conn>>>,
}

/// A connection and the protocol's statements, prepared on it.
struct Conn {
    client: Client,
    acquire: Statement,
    renew: Statement,
    release: Statement,
    select: Statement,
}

impl Conn {
    async fn open(conninfo: &str, timeout: Duration) -> Result<Conn, PgError> {
        let client = connect(conninfo, timeout).await?;
        let prepare = |sql: &'static str| {
            let c = &client;
            async move {
                c.prepare(sql)
                    .await
                    .map_err(|source| PgError::Prepare { sql, source })
            }
        };
        Ok(Conn {
            acquire: prepare(ACQUIRE).await?,
            renew: prepare(RENEW).await?,
            release: prepare(RELEASE).await?,
            select: prepare(SELECT).await?,
            client,
        })
    }
}

impl RealDb {
    /// A client of the database at `conninfo` (through the node's proxy) whose every
    /// statement waits at most `statement_timeout_ms`; `run` is the run's clock, against
    /// which a node's local time is turned into a timestamp. Nothing is connected yet.
    pub fn new(conninfo: &str, statement_timeout_ms: u64, run: RunClock) -> RealDb {
        RealDb {
            conninfo: conninfo.to_string(),
            timeout: Duration::from_millis(statement_timeout_ms.max(1)),
            run,
            conn: tokio::sync::Mutex::new(None),
        }
    }

    /// Opens the connection now, if it can (a node starting up); a failure is left for
    /// the first statement to meet again.
    pub async fn connect_now(&self) {
        let _ = tokio::time::timeout(self.timeout, self.conn()).await;
    }

    /// The node's local time `local_us` (its skewed run clock) as a wall-clock timestamp,
    /// microseconds since the Unix epoch: the machine's time now plus the node's skew.
    fn wall_us(&self, local_us: i64) -> f64 {
        let real_now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        (real_now + local_us - self.run.now_us()) as f64
    }

    /// The connection, made if there is none (or the last one broke).
    async fn conn(&self) -> Result<Arc<Conn>, DbError> {
        let mut g = self.conn.lock().await;
        if let Some(c) = g.as_ref().filter(|c| !c.client.is_closed()) {
            return Ok(c.clone());
        }
        *g = None;
        let c = Arc::new(
            Conn::open(&self.conninfo, self.timeout)
                .await
                .map_err(|_| DbError::Timeout)?,
        );
        *g = Some(c.clone());
        Ok(c)
    }

    /// Runs the statement `which` picks with `params`, returning its rows, within the
    /// statement timeout.
    async fn query(
        &self,
        which: fn(&Conn) -> &Statement,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, DbError> {
        let run = async {
            let c = self.conn().await?;
            c.client
                .query(which(&c), params)
                .await
                .map_err(|_| DbError::Timeout)
        };
        tokio::time::timeout(self.timeout, run)
            .await
            .map_err(|_| DbError::Timeout)?
    }

    /// Runs the statement `which` picks with `params`, returning how many rows it
    /// changed, within the statement timeout.
    async fn execute(
        &self,
        which: fn(&Conn) -> &Statement,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<u64, DbError> {
        let run = async {
            let c = self.conn().await?;
            c.client
                .execute(which(&c), params)
                .await
                .map_err(|_| DbError::Timeout)
        };
        tokio::time::timeout(self.timeout, run)
            .await
            .map_err(|_| DbError::Timeout)?
    }
}

#[async_trait]
impl DbApi for RealDb {
    async fn acquire(
        &self,
        node: &str,
        ttl_ms: u64,
        client_now_us: Option<i64>,
    ) -> Result<Option<u64>, DbError> {
        let now = client_now_us.map(|t| self.wall_us(t));
        let rows = self
            .query(|c| &c.acquire, &[&node, &(ttl_ms as i64), &now])
            .await?;
        Ok(rows.first().map(|r| r.get::<_, i64>(0) as u64))
    }

    async fn renew(
        &self,
        node: &str,
        generation: u64,
        ttl_ms: u64,
        client_now_us: Option<i64>,
    ) -> Result<bool, DbError> {
        let now = client_now_us.map(|t| self.wall_us(t));
        let n = self
            .execute(
                |c| &c.renew,
                &[&node, &(generation as i64), &(ttl_ms as i64), &now],
            )
            .await?;
        Ok(n == 1)
    }

    async fn release(&self, node: &str, generation: u64) -> Result<bool, DbError> {
        let n = self
            .execute(|c| &c.release, &[&node, &(generation as i64)])
            .await?;
        Ok(n == 1)
    }

    async fn select(&self) -> Result<Option<LeaderRow>, DbError> {
        let rows = self.query(|c| &c.select, &[]).await?;
        Ok(rows.first().map(|r| LeaderRow {
            node: r.get(0),
            generation: r.get::<_, i64>(1) as u64,
        }))
    }
}
