//! Reading a store: what the table of signatures, the run's summary and `--merge` need.

use super::{Kept, Store, StoreError};
use crate::cmd::search::Failure;

impl Store {
    /// The kept seeds, by signature.
    pub fn kept(&self) -> Result<Vec<Kept>, StoreError> {
        self.rows(
            "SELECT signature, seed, scenario_toml, shrink, min_toml FROM signatures ORDER BY signature",
            [],
            |r| {
                Ok(Kept {
                    signature: r.get(0)?,
                    seed: r.get::<_, i64>(1)? as u64,
                    scenario_toml: r.get(2)?,
                    shrink: r.get(3)?,
                    min_toml: r.get(4)?,
                })
            },
        )
    }

    /// Every failure, by seed.
    pub fn failures(&self) -> Result<Vec<Failure>, StoreError> {
        self.rows(
            "SELECT seed, properties, first_violation_ms, recheck, wall_ms FROM failures ORDER BY seed",
            [],
            |r| {
                let properties: String = r.get(1)?;
                Ok(Failure {
                    seed: r.get::<_, i64>(0)? as u64,
                    signature: serde_json::from_str(&properties).unwrap_or_default(),
                    first_violation_ms: r.get(2)?,
                    check: r.get(3)?,
                    wall_ms: r.get::<_, i64>(4)? as u64,
                })
            },
        )
    }

    /// Every seed tried to its end, in order.
    pub fn tried(&self) -> Result<Vec<u64>, StoreError> {
        self.rows(
            "SELECT seed FROM seeds WHERE outcome NOT IN ('running', 'released') ORDER BY seed",
            [],
            |r| Ok(r.get::<_, i64>(0)? as u64),
        )
    }

    /// Every run's command, in order.
    pub fn commands(&self) -> Result<Vec<String>, StoreError> {
        self.rows("SELECT command FROM runs ORDER BY id", [], |r| r.get(0))
    }

    /// Per signature (by key): failures, when first found (UTC), and its kept seed's
    /// seed, shrink and shrunk file.
    pub fn table(&self) -> Result<Vec<SignatureRow>, StoreError> {
        self.rows(
            "SELECT f.signature, COUNT(*), MIN(f.found_at), s.seed, s.shrink, s.min_toml
             FROM failures f LEFT JOIN signatures s ON s.signature = f.signature
             GROUP BY f.signature ORDER BY f.signature",
            [],
            |r| {
                Ok(SignatureRow {
                    signature: r.get(0)?,
                    failures: r.get::<_, i64>(1)? as u64,
                    first_seen: r.get(2)?,
                    seed: r.get::<_, Option<i64>>(3)?.map(|s| s as u64),
                    shrink: r.get(4)?,
                    min_toml: r.get(5)?,
                })
            },
        )
    }

    /// Seeds tried to their end, seeds still `running` (in flight in another process,
    /// or left by a process that was killed), failures and runs: over the store, or of
    /// run `run` alone.
    pub fn counts(&self, run: Option<i64>) -> Result<Counts, StoreError> {
        let only = if run.is_some() {
            "WHERE run = ?1"
        } else {
            "WHERE ?1 IS NULL"
        };
        let sql = format!(
            "SELECT COUNT(*) FILTER (WHERE outcome NOT IN ('running', 'released')),
                    COUNT(*) FILTER (WHERE outcome = 'running'),
                    COUNT(*) FILTER (WHERE outcome IN ('fail', 'hang')),
                    (SELECT COUNT(*) FROM runs)
             FROM seeds {only}"
        );
        self.conn
            .query_row(&sql, [run], |r| {
                Ok(Counts {
                    tried: r.get::<_, i64>(0)? as u64,
                    running: r.get::<_, i64>(1)? as u64,
                    failed: r.get::<_, i64>(2)? as u64,
                    runs: r.get::<_, i64>(3)? as u64,
                })
            })
            .map_err(|e| self.sql(e))
    }

    fn rows<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        f: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, StoreError> {
        let read = || -> rusqlite::Result<Vec<T>> {
            let mut stmt = self.conn.prepare(sql)?;
            let rows = stmt.query_map(params, f)?;
            rows.collect()
        };
        read().map_err(|e| self.sql(e))
    }
}

/// A line of the signature table.
#[derive(Clone, Debug, PartialEq)]
pub struct SignatureRow {
    /// The signature's key.
    pub signature: String,
    /// Its failures.
    pub failures: u64,
    /// When the first was found (UTC).
    pub first_seen: String,
    /// The kept seed (none when every failure was nondeterministic).
    pub seed: Option<u64>,
    /// Its shrink.
    pub shrink: Option<String>,
    /// Its shrunk file.
    pub min_toml: Option<String>,
}

/// How much a store (or one run into it) holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Seeds tried to their end.
    pub tried: u64,
    /// Seeds claimed and not finished.
    pub running: u64,
    /// Seeds that failed (hangs included).
    pub failed: u64,
    /// Runs into the store (all of them, whichever run was asked).
    pub runs: u64,
}
