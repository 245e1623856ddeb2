//! The store of a continuous search: one SQLite file that holds every seed tried, every
//! failure, and per signature the kept seed with its resolved scenario and its shrunk
//! file.
//!
//! Many processes may write one store at once (one machine: SQLite's locks need a local
//! file system): WAL journal, `synchronous = NORMAL`, and a busy timeout, so a writer
//! waits for another's transaction instead of failing. Every change is one short
//! transaction: a claim (the draw's cursor moves on and the seed is written as
//! `running`, at once, so no two processes try one seed), a finish (the seed's outcome,
//! its failure and the signature's kept seed, together), a shrink's result. A process
//! stopped at any point leaves every transaction it committed.
//!
//! A file is a store when its SQLite `application_id` is [`APPLICATION_ID`] and its
//! `user_version` is [`VERSION`]. One store holds one search: the resolved scenario
//! (every `--set` applied) is recorded when the store is made, and a search of another
//! refuses the store.

pub mod read;

use super::draw::Draw;
use super::Failure;
use rusqlite::{
    params, Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `PRAGMA application_id` of a store: "Btn1".
pub const APPLICATION_ID: i64 = 0x4274_6e31;
/// `PRAGMA user_version`: the schema's version.
pub const VERSION: i64 = 1;
/// How long a writer waits for another process's transaction.
const BUSY: Duration = Duration::from_secs(60);

const SCHEMA: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    command TEXT NOT NULL,
    draw_seed INTEGER NOT NULL,
    budget TEXT NOT NULL,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    ending TEXT
);
CREATE TABLE draws (draw_seed INTEGER PRIMARY KEY, next_position INTEGER NOT NULL);
CREATE TABLE seeds (
    seed INTEGER PRIMARY KEY,
    draw_seed INTEGER NOT NULL,
    position INTEGER NOT NULL,
    run INTEGER NOT NULL REFERENCES runs (id),
    outcome TEXT NOT NULL,
    wall_ms INTEGER
);
CREATE INDEX seeds_released ON seeds (draw_seed, position) WHERE outcome = 'released';
CREATE TABLE failures (
    seed INTEGER PRIMARY KEY REFERENCES seeds (seed),
    signature TEXT NOT NULL,
    properties TEXT NOT NULL,
    first_violation_ms REAL NOT NULL,
    recheck TEXT NOT NULL,
    wall_ms INTEGER NOT NULL,
    found_at TEXT NOT NULL
);
CREATE INDEX failures_by_signature ON failures (signature);
CREATE TABLE signatures (
    signature TEXT PRIMARY KEY,
    seed INTEGER NOT NULL,
    first_violation_ms REAL NOT NULL,
    scenario_toml TEXT NOT NULL,
    shrink TEXT NOT NULL,
    min_toml TEXT
);
";

/// The wall clock as the store writes it: UTC, to the second.
const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%SZ', 'now')";

/// A file that cannot be a store, or a store that failed. Each names the flag and the
/// file; all but `Sql` are found before anything runs (bad input, exit 2).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Not a store: another file, another SQLite database, a directory.
    #[error("{flag} {}: not a Baton search store ({why}); a store is a SQLite file that sim search --budget made", .path.display())]
    NotAStore {
        /// `--store` or `--merge`.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// What it is instead.
        why: String,
    },
    /// A store of another schema version.
    #[error("{flag} {}: a search store of format {found}, this sim reads format {VERSION}", .path.display())]
    Version {
        /// `--store` or `--merge`.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// Its `user_version`.
        found: i64,
    },
    /// A store of another search.
    #[error("{flag} {}: the store holds a search of `{theirs}`, with another resolved scenario: give this search a store of its own", .path.display())]
    OtherSearch {
        /// `--store`.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// The search it holds.
        theirs: String,
    },
    /// It cannot be opened or made.
    #[error("{flag} {}: cannot open it: {source}", .path.display())]
    Open {
        /// `--store` or `--merge`.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: rusqlite::Error,
    },
    /// Its directory cannot be made.
    #[error("{flag} {}: cannot make its directory: {source}", .path.display())]
    Directory {
        /// `--store`.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A read or write failed after the store was opened (exit 3).
    #[error("the search store {}: {source}", .path.display())]
    Sql {
        /// The file.
        path: PathBuf,
        /// Why.
        source: rusqlite::Error,
    },
}

impl StoreError {
    /// Whether it is bad input (found before anything ran), not a failure of Baton's.
    pub fn is_input(&self) -> bool {
        !matches!(self, StoreError::Sql { .. })
    }
}

/// What one store searches: recorded when it is made, compared on every open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The search as words: `sim search FILE --set ...`.
    pub search: String,
    /// The resolved scenario (`Resolved::to_toml`): two searches are one when it is.
    pub resolved_toml: String,
}

/// A kept seed: the reproducer of its signature.
#[derive(Clone, Debug, PartialEq)]
pub struct Kept {
    /// The signature's key (`a+b`).
    pub signature: String,
    /// The seed.
    pub seed: u64,
    /// Its resolved scenario, as `sim search` writes a reproducer.
    pub scenario_toml: String,
    /// `pending`, `done`, `off`, `not shrunk: ...` or `failed: ...`.
    pub shrink: String,
    /// The shrunk file, when `shrink` is `done`.
    pub min_toml: Option<String>,
}

/// One open store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens the store at `path` for `identity`'s search, making it (and its directory)
    /// when the file is new or empty.
    pub fn open(path: &Path, identity: &Identity) -> Result<Store, StoreError> {
        let flag = "--store";
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Directory {
                flag,
                path: path.to_path_buf(),
                source,
            })?;
        }
        let mut store = Store::connect(path, flag, true)?;
        let tx = store
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| checking(flag, path, e))?;
        let found = read_identity(&tx, flag, path, true)?;
        match found {
            None => make(&tx, identity).map_err(|e| checking(flag, path, e))?,
            Some(theirs) if theirs.resolved_toml != identity.resolved_toml => {
                return Err(StoreError::OtherSearch {
                    flag,
                    path: path.to_path_buf(),
                    theirs: theirs.search,
                })
            }
            Some(_) => {}
        }
        tx.commit().map_err(|e| checking(flag, path, e))?;
        store.wal().map_err(|e| checking(flag, path, e))?;
        Ok(store)
    }

    /// Opens an existing store to read it (`--merge`), whatever search it holds.
    pub fn open_existing(path: &Path) -> Result<(Store, Identity), StoreError> {
        let flag = "--merge";
        let store = Store::connect(path, flag, false)?;
        let identity =
            read_identity(&store.conn, flag, path, false)?.ok_or(StoreError::NotAStore {
                flag,
                path: path.to_path_buf(),
                why: "an empty file".into(),
            })?;
        Ok((store, identity))
    }

    /// Connects to `path` (making the file only when `create`), with the busy timeout.
    fn connect(path: &Path, flag: &'static str, create: bool) -> Result<Store, StoreError> {
        if path.is_dir() {
            return Err(StoreError::NotAStore {
                flag,
                path: path.to_path_buf(),
                why: "a directory".into(),
            });
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let conn = Connection::open_with_flags(path, flags).map_err(|source| StoreError::Open {
            flag,
            path: path.to_path_buf(),
            source,
        })?;
        conn.busy_timeout(BUSY)
            .map_err(|e| checking(flag, path, e))?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// WAL, so that readers never wait and writers wait only for each other. Another
    /// process may be switching the same new file: try again until it is WAL.
    fn wal(&self) -> rusqlite::Result<()> {
        for _ in 0..200 {
            match self
                .conn
                .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))
            {
                Ok(mode) if mode.eq_ignore_ascii_case("wal") => {
                    return self.conn.pragma_update(None, "synchronous", "NORMAL")
                }
                Ok(_) => {}
                Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) => {}
                Err(e) => return Err(e),
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            Some("could not switch the journal to WAL".into()),
        ))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sql {
            path: self.path.clone(),
            source,
        }
    }

    fn immediate(&mut self) -> Result<Transaction<'_>, StoreError> {
        let path = self.path.clone();
        self.conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|source| StoreError::Sql { path, source })
    }

    /// Records a run of `sim search --budget` and returns its id.
    pub fn begin_run(&self, command: &str, draw: Draw, budget: &str) -> Result<i64, StoreError> {
        self.conn
            .execute(
                &format!("INSERT INTO runs (command, draw_seed, budget, started_at) VALUES (?1, ?2, ?3, {NOW})"),
                params![command, draw.seed as i64, budget],
            )
            .map_err(|e| self.sql(e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Records how run `run` ended (`budget spent`, `interrupted`, an error).
    pub fn end_run(&self, run: i64, ending: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                &format!("UPDATE runs SET ended_at = {NOW}, ending = ?2 WHERE id = ?1"),
                params![run, ending],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// Claims the next seed of `draw` that no one has tried, for run `run`, in one
    /// transaction: a seed of the draw given back earlier ([`Store::release`]) first,
    /// else the seed at the draw's cursor (passing over seeds another draw tried), and
    /// the cursor moves past it. The seed is written as `running`. Returns (its position
    /// in the draw, the seed).
    pub fn claim(&mut self, draw: Draw, run: i64) -> Result<(u64, u64), StoreError> {
        let tx = self.immediate()?;
        let claimed = (|| -> rusqlite::Result<(u64, u64)> {
            let released: Option<(i64, i64)> = tx
                .query_row(
                    "SELECT seed, position FROM seeds WHERE draw_seed = ?1 AND outcome = 'released'
                     ORDER BY position LIMIT 1",
                    [draw.seed as i64],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            if let Some((seed, position)) = released {
                tx.execute(
                    "UPDATE seeds SET outcome = 'running', run = ?2 WHERE seed = ?1",
                    params![seed, run],
                )?;
                tx.commit()?;
                return Ok((position as u64, seed as u64));
            }
            let mut position: i64 = tx
                .query_row(
                    "SELECT next_position FROM draws WHERE draw_seed = ?1",
                    [draw.seed as i64],
                    |r| r.get(0),
                )
                .optional()?
                .unwrap_or(0);
            // A seed another draw already tried is passed over.
            let seed = loop {
                let seed = draw.seed_at(position as u64);
                position += 1;
                let new = tx.execute(
                    "INSERT OR IGNORE INTO seeds (seed, draw_seed, position, run, outcome)
                     VALUES (?1, ?2, ?3, ?4, 'running')",
                    params![seed as i64, draw.seed as i64, position - 1, run],
                )?;
                if new == 1 {
                    break seed;
                }
            };
            tx.execute(
                "INSERT INTO draws (draw_seed, next_position) VALUES (?1, ?2)
                 ON CONFLICT (draw_seed) DO UPDATE SET next_position = excluded.next_position",
                params![draw.seed as i64, position],
            )?;
            tx.commit()?;
            Ok(((position - 1) as u64, seed))
        })();
        claimed.map_err(|e| self.sql(e))
    }

    /// Gives back a claimed seed that did not run to its end (abandoned at a second
    /// Ctrl-C, or the simulator failed): the next claim of its draw takes it first.
    pub fn release(&self, seed: u64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE seeds SET outcome = 'released' WHERE seed = ?1 AND outcome = 'running'",
                [seed as i64],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// Records a claimed seed's end, in one transaction: its outcome and, for a failure,
    /// the failure and (when it is the signature's earliest: first violation earliest in
    /// simulated time, ties the lower seed; not a nondeterministic one) the kept seed with
    /// `scenario_toml`, its shrink set to `shrink`. Returns whether the seed is now kept.
    pub fn finish(
        &mut self,
        seed: u64,
        wall_ms: u64,
        failure: Option<(&Failure, &str)>,
        shrink: &str,
    ) -> Result<bool, StoreError> {
        let tx = self.immediate()?;
        let kept = (|| -> rusqlite::Result<bool> {
            let outcome = match failure {
                None => "pass",
                Some((f, _)) if f.check == "hang" => "hang",
                Some(_) => "fail",
            };
            tx.execute(
                "UPDATE seeds SET outcome = ?2, wall_ms = ?3 WHERE seed = ?1",
                params![seed as i64, outcome, wall_ms as i64],
            )?;
            let Some((f, toml)) = failure else {
                tx.commit()?;
                return Ok(false);
            };
            let key = super::signature_key(&f.signature);
            let properties = serde_json::to_string(&f.signature).expect("names serialize");
            tx.execute(
                &format!(
                    "INSERT INTO failures (seed, signature, properties, first_violation_ms, recheck, wall_ms, found_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, {NOW})"
                ),
                params![seed as i64, key, properties, f.first_violation_ms, f.check, wall_ms as i64],
            )?;
            let kept: Option<(f64, i64)> = tx
                .query_row(
                    "SELECT first_violation_ms, seed FROM signatures WHERE signature = ?1",
                    [&key],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            let earlier = kept.is_none_or(|(ms, s)| {
                f.first_violation_ms < ms || (f.first_violation_ms == ms && (seed as i64) < s)
            });
            let keep = earlier && f.check != "nondeterministic";
            if keep {
                tx.execute(
                    "INSERT OR REPLACE INTO signatures
                     (signature, seed, first_violation_ms, scenario_toml, shrink, min_toml)
                     VALUES (?1, ?2, ?3, ?4, ?5, NULL)",
                    params![key, seed as i64, f.first_violation_ms, toml, shrink],
                )?;
            }
            tx.commit()?;
            Ok(keep)
        })();
        kept.map_err(|e| self.sql(e))
    }

    /// Records a shrink of `signature`'s kept `seed`: `shrink` (`done`, `failed: ...`)
    /// and the file. Nothing changes if another seed is kept by now.
    pub fn shrunk(
        &self,
        signature: &str,
        seed: u64,
        shrink: &str,
        min_toml: Option<&str>,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE signatures SET shrink = ?3, min_toml = ?4 WHERE signature = ?1 AND seed = ?2",
                params![signature, seed as i64, shrink, min_toml],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }
}

/// A store's identity, `None` when the file is new (an empty SQLite database); an error
/// when it is not a store. `fresh_ok`: an empty file may become a store.
fn read_identity(
    tx: &Connection,
    flag: &'static str,
    path: &Path,
    fresh_ok: bool,
) -> Result<Option<Identity>, StoreError> {
    let not = |why: &str| StoreError::NotAStore {
        flag,
        path: path.to_path_buf(),
        why: why.to_string(),
    };
    let pragma = |name: &str| -> Result<i64, StoreError> {
        tx.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
            .map_err(|e| checking(flag, path, e))
    };
    let application_id = pragma("application_id")?;
    let tables: i64 = tx
        .query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(|e| checking(flag, path, e))?;
    if application_id == 0 && tables == 0 {
        return if fresh_ok {
            Ok(None)
        } else {
            Err(not("an empty file"))
        };
    }
    if application_id != APPLICATION_ID {
        return Err(not("a SQLite database of something else"));
    }
    let found = pragma("user_version")?;
    if found != VERSION {
        return Err(StoreError::Version {
            flag,
            path: path.to_path_buf(),
            found,
        });
    }
    let meta = |key: &str| -> Result<String, StoreError> {
        tx.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .map_err(|e| checking(flag, path, e))
    };
    Ok(Some(Identity {
        search: meta("search")?,
        resolved_toml: meta("resolved_toml")?,
    }))
}

/// Makes the schema of a new store, in the open transaction.
fn make(tx: &Connection, identity: &Identity) -> rusqlite::Result<()> {
    tx.execute_batch(SCHEMA)?;
    tx.pragma_update(None, "application_id", APPLICATION_ID)?;
    tx.pragma_update(None, "user_version", VERSION)?;
    tx.execute(
        &format!(
            "INSERT INTO meta (key, value) VALUES ('search', ?1), ('resolved_toml', ?2), ('created_at', {NOW})"
        ),
        params![identity.search, identity.resolved_toml],
    )?;
    Ok(())
}

/// An error while a file is checked: "not a database" means not a store; anything else,
/// that it cannot be opened.
fn checking(flag: &'static str, path: &Path, e: rusqlite::Error) -> StoreError {
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) {
        StoreError::NotAStore {
            flag,
            path: path.to_path_buf(),
            why: "not a SQLite database".into(),
        }
    } else {
        StoreError::Open {
            flag,
            path: path.to_path_buf(),
            source: e,
        }
    }
}
