//! The fenced resource's ledger: a real SQLite database (the spec's section 7).
//!
//! Tables:
//! - `fenced_resource(name, max_token)`: the highest token ever accepted;
//! - `sequence(name, last_seq, owner_token, owner_node)`: the sequencer's row, and the
//!   leadership (token and node) that last wrote it;
//! - `ticks(id, at_us, node, token, n)`: the scheduler's tick records;
//! - `job(name, cursor)`: the compaction job's cursor;
//! - `seq_batches(id, at_us, node, token, first_seq, last_seq)`: every accepted sequencer
//!   batch, in the order accepted: the sequence ledger the `lag()` check reads;
//! - `rejections(id, at_us, node, token, max_token, op)`: every write the fence turned
//!   away, with both tokens.
//!
//! Each write is one `BEGIN IMMEDIATE` transaction that reads `max_token`, decides, and
//! applies, so the check and the write are atomic as the spec asks. The rules mirror the
//! simulator's resource (`sim/src/world/service/resource.rs`): a token below `max_token` is
//! rejected and logged with both tokens; an equal one (the same leader's further writes)
//! or a higher one is accepted and raises `max_token`. A leader's own late sequencer batch
//! (same token and node as the row's last writer, not starting above `last_seq`: it timed
//! out and landed after that leader's next batch) is refused, since the fence cannot stop
//! it. With fencing off (the counterfactual) every write is accepted and nothing is
//! checked.

use crate::events::WriteOp;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::path::Path;

/// The row name every table uses (one protected resource per run).
pub const RESOURCE: &str = "baton";

/// What the ledger did with a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Accepted: `max_token` before the write, and the sequence row and job cursor after.
    Accepted {
        /// The highest token accepted before this write.
        max_token_before: u64,
        /// `sequence.last_seq` after the write.
        last_seq: u64,
        /// The job's cursor after the write.
        cursor: u64,
    },
    /// Rejected by the fence: the token was below `max_token`.
    Rejected {
        /// The highest token accepted so far.
        max_token: u64,
    },
    /// A leader's own late sequencer batch, refused by the row.
    Behind {
        /// `sequence.last_seq` when it arrived.
        last_seq: u64,
    },
}

/// The ledger, open on one SQLite database.
pub struct Ledger {
    conn: Connection,
    fencing: bool,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS fenced_resource (
    name      TEXT PRIMARY KEY,
    max_token INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sequence (
    name        TEXT PRIMARY KEY,
    last_seq    INTEGER NOT NULL,
    owner_token INTEGER NOT NULL,
    owner_node  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ticks (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    at_us INTEGER NOT NULL,
    node  TEXT NOT NULL,
    token INTEGER NOT NULL,
    n     INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS job (
    name   TEXT PRIMARY KEY,
    cursor INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS seq_batches (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at_us     INTEGER NOT NULL,
    node      TEXT NOT NULL,
    token     INTEGER NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS rejections (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at_us     INTEGER NOT NULL,
    node      TEXT NOT NULL,
    token     INTEGER NOT NULL,
    max_token INTEGER NOT NULL,
    op        TEXT NOT NULL
);
";

/// The spec's acceptance check (section 12): sequencer batches, in the order the ledger
/// accepted them, whose first number does not exceed the previous batch's last. Zero
/// means `seq` only ever went up.
pub const NON_INCREASING_STEPS_SQL: &str = "
SELECT COUNT(*) FROM (
    SELECT first_seq,
           LAG(last_seq) OVER (ORDER BY id) AS prev_last
    FROM seq_batches
) WHERE prev_last IS NOT NULL AND first_seq <= prev_last";

fn op_name(op: &WriteOp) -> String {
    serde_json::to_string(op).expect("a write op serializes")
}

impl Ledger {
    /// Opens (creating if needed) the ledger at `path`. WAL journal with
    /// `synchronous = NORMAL`: every transaction is durable against a crash of the
    /// resource process, though not against power loss, which no fault here injects.
    pub fn open(path: &Path, fencing: bool) -> rusqlite::Result<Ledger> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.execute_batch(SCHEMA)?;
        conn.execute(
            "INSERT OR IGNORE INTO fenced_resource (name, max_token) VALUES (?1, 0)",
            params![RESOURCE],
        )?;
        conn.execute(
            "INSERT OR IGNORE INTO sequence (name, last_seq, owner_token, owner_node)
             VALUES (?1, 0, 0, '')",
            params![RESOURCE],
        )?;
        conn.execute(
            "INSERT OR IGNORE INTO job (name, cursor) VALUES (?1, 0)",
            params![RESOURCE],
        )?;
        Ok(Ledger { conn, fencing })
    }

    /// Whether the fence is on.
    pub fn fencing(&self) -> bool {
        self.fencing
    }

    /// Applies one protected write by `node` under `token`, at run time `at_us`, in one
    /// transaction.
    pub fn write(
        &mut self,
        node: &str,
        token: u64,
        op: WriteOp,
        at_us: i64,
    ) -> rusqlite::Result<Outcome> {
        let fencing = self.fencing;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let max_token: i64 = tx.query_row(
            "SELECT max_token FROM fenced_resource WHERE name = ?1",
            params![RESOURCE],
            |r| r.get(0),
        )?;
        let max_token = max_token as u64;
        let (last_seq, owner_token, owner_node): (i64, i64, String) = tx.query_row(
            "SELECT last_seq, owner_token, owner_node FROM sequence WHERE name = ?1",
            params![RESOURCE],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let last_seq = last_seq as u64;
        if fencing && token < max_token {
            tx.execute(
                "INSERT INTO rejections (at_us, node, token, max_token, op)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![at_us, node, token as i64, max_token as i64, op_name(&op)],
            )?;
            tx.commit()?;
            return Ok(Outcome::Rejected { max_token });
        }
        if let (true, WriteOp::Seq { first, .. }) = (fencing, op) {
            if first <= last_seq && token == owner_token as u64 && node == owner_node {
                tx.commit()?;
                return Ok(Outcome::Behind { last_seq });
            }
        }
        tx.execute(
            "UPDATE fenced_resource SET max_token = MAX(max_token, ?2) WHERE name = ?1",
            params![RESOURCE, token as i64],
        )?;
        let mut new_last = last_seq;
        match op {
            WriteOp::Claim => {}
            WriteOp::Tick { n } => {
                tx.execute(
                    "INSERT INTO ticks (at_us, node, token, n) VALUES (?1, ?2, ?3, ?4)",
                    params![at_us, node, token as i64, n as i64],
                )?;
            }
            WriteOp::Seq { first, last } => {
                // Unfenced, a stale leader's batch can move last_seq backwards: the
                // corruption the counterfactual run exists to show.
                tx.execute(
                    "UPDATE sequence SET last_seq = ?2, owner_token = ?3, owner_node = ?4
                     WHERE name = ?1",
                    params![RESOURCE, last as i64, token as i64, node],
                )?;
                tx.execute(
                    "INSERT INTO seq_batches (at_us, node, token, first_seq, last_seq)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![at_us, node, token as i64, first as i64, last as i64],
                )?;
                new_last = last;
            }
            WriteOp::Checkpoint { segment } => {
                tx.execute(
                    "UPDATE job SET cursor = ?2 WHERE name = ?1",
                    params![RESOURCE, segment as i64 + 1],
                )?;
            }
        }
        let cursor: i64 = tx.query_row(
            "SELECT cursor FROM job WHERE name = ?1",
            params![RESOURCE],
            |r| r.get(0),
        )?;
        tx.commit()?;
        Ok(Outcome::Accepted {
            max_token_before: max_token,
            last_seq: new_last,
            cursor: cursor as u64,
        })
    }

    /// The highest token accepted so far.
    pub fn max_token(&self) -> rusqlite::Result<u64> {
        self.conn
            .query_row(
                "SELECT max_token FROM fenced_resource WHERE name = ?1",
                params![RESOURCE],
                |r| r.get::<_, i64>(0),
            )
            .map(|v| v as u64)
    }

    /// `sequence.last_seq`.
    pub fn last_seq(&self) -> rusqlite::Result<u64> {
        self.conn
            .query_row(
                "SELECT last_seq FROM sequence WHERE name = ?1",
                params![RESOURCE],
                |r| r.get::<_, i64>(0),
            )
            .map(|v| v as u64)
    }
}

/// What a finished run's ledger holds, read from its database file.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LedgerSummary {
    /// `fenced_resource.max_token`.
    pub max_token: u64,
    /// `sequence.last_seq`.
    pub last_seq: u64,
    /// Sequencer batches accepted.
    pub seq_batches: u64,
    /// Tick records.
    pub ticks: u64,
    /// Writes the fence rejected.
    pub rejections: u64,
    /// [`NON_INCREASING_STEPS_SQL`]'s count: batches that did not go above the one
    /// before them.
    pub non_increasing_steps: u64,
}

/// Reads the summary of the ledger at `path`.
pub fn summarize(path: &Path) -> rusqlite::Result<LedgerSummary> {
    // Opened read-write: a ledger whose process was killed leaves its last
    // transactions in the WAL file, and opening it for writing replays them.
    let conn = Connection::open(path)?;
    let count = |sql: &str| -> rusqlite::Result<u64> {
        conn.query_row(sql, [], |r| r.get::<_, i64>(0))
            .map(|v| v as u64)
    };
    let one = |sql: &str| -> rusqlite::Result<u64> {
        conn.query_row(sql, params![RESOURCE], |r| r.get::<_, i64>(0))
            .optional()
            .map(|v| v.unwrap_or(0) as u64)
    };
    Ok(LedgerSummary {
        max_token: one("SELECT max_token FROM fenced_resource WHERE name = ?1")?,
        last_seq: one("SELECT last_seq FROM sequence WHERE name = ?1")?,
        seq_batches: count("SELECT COUNT(*) FROM seq_batches")?,
        ticks: count("SELECT COUNT(*) FROM ticks")?,
        rejections: count("SELECT COUNT(*) FROM rejections")?,
        non_increasing_steps: count(NON_INCREASING_STEPS_SQL)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(fencing: bool) -> (tempfile::TempDir, Ledger) {
        let dir = tempfile::tempdir().unwrap();
        let l = Ledger::open(&dir.path().join("ledger.db"), fencing).unwrap();
        (dir, l)
    }

    fn seq(first: u64, last: u64) -> WriteOp {
        WriteOp::Seq { first, last }
    }

    #[test]
    fn the_fence_rejects_a_lower_token_and_logs_both() {
        let (dir, mut l) = open(true);
        assert!(matches!(
            l.write("n1", 5, WriteOp::Claim, 1).unwrap(),
            Outcome::Accepted {
                max_token_before: 0,
                ..
            }
        ));
        l.write("n1", 5, seq(1, 10), 2).unwrap();
        l.write("n2", 9, WriteOp::Claim, 3).unwrap();
        assert_eq!(
            l.write("n1", 5, seq(11, 20), 4).unwrap(),
            Outcome::Rejected { max_token: 9 }
        );
        // The same leader's further writes under its own token pass.
        assert!(matches!(
            l.write("n2", 9, seq(11, 20), 5).unwrap(),
            Outcome::Accepted { last_seq: 20, .. }
        ));
        let row: (String, i64, i64) = l
            .conn
            .query_row("SELECT node, token, max_token FROM rejections", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap();
        assert_eq!(row, ("n1".into(), 5, 9));
        let s = summarize(&dir.path().join("ledger.db")).unwrap();
        assert_eq!((s.max_token, s.last_seq, s.rejections), (9, 20, 1));
        assert_eq!(s.non_increasing_steps, 0);
    }

    #[test]
    fn a_leaders_own_late_batch_is_refused_but_another_leaderships_is_left_to_the_fence() {
        let (_dir, mut l) = open(true);
        l.write("n1", 5, seq(1, 10), 1).unwrap();
        l.write("n1", 5, seq(11, 20), 2).unwrap();
        assert_eq!(
            l.write("n1", 5, seq(1, 10), 3).unwrap(),
            Outcome::Behind { last_seq: 20 }
        );
        // A higher token is the fence's business, and it passes the fence.
        assert!(matches!(
            l.write("n2", 6, seq(15, 16), 4).unwrap(),
            Outcome::Accepted { .. }
        ));
    }

    /// The canary for the lag() check: unfenced, a stale leader's batch lands and the
    /// query counts the step backwards.
    #[test]
    fn unfenced_a_stale_batch_lands_and_the_lag_check_counts_it() {
        let (dir, mut l) = open(false);
        l.write("n1", 5, seq(1, 10), 1).unwrap();
        l.write("n2", 9, seq(11, 20), 2).unwrap();
        assert!(matches!(
            l.write("n1", 5, seq(11, 15), 3).unwrap(),
            Outcome::Accepted { .. }
        ));
        assert_eq!(l.last_seq().unwrap(), 15);
        assert_eq!(l.max_token().unwrap(), 9);
        let s = summarize(&dir.path().join("ledger.db")).unwrap();
        assert_eq!(s.non_increasing_steps, 1);
        assert_eq!(s.rejections, 0);
    }

    #[test]
    fn ticks_and_checkpoints_are_recorded() {
        let (dir, mut l) = open(true);
        l.write("n1", 3, WriteOp::Tick { n: 1 }, 1).unwrap();
        let o = l
            .write("n1", 3, WriteOp::Checkpoint { segment: 4 }, 2)
            .unwrap();
        assert!(matches!(o, Outcome::Accepted { cursor: 5, .. }));
        assert_eq!(summarize(&dir.path().join("ledger.db")).unwrap().ticks, 1);
    }
}
