//! What happened in a real run, in the model's timeline format, and the per-process
//! logs it is written to.
//!
//! [`Event`], [`Entry`], [`Role`] and [`WriteOp`] are the model's timeline types
//! (`baton_model::timeline`), re-exported: a real run's merged `timeline.jsonl` is the
//! same format a simulated run writes, and the same checkers read it.
//!
//! Every process of a run appends its events to its own file, one JSON object per line
//! ([`EventLog`]), stamped with the run's clock ([`RunClock`]): one monotonic clock for
//! the whole machine. [`merge`] orders the files' lines into one timeline.

pub use baton_model::timeline::{Entry, Event, Role, WriteOp};

use crate::run_clock::RunClock;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One process's event log: a file of JSON lines, each an [`Entry`] stamped with the
/// run's clock. Cloning shares the file.
///
/// Each line is written and flushed while a lock is held, with its time read inside the
/// same lock, so a file's lines are in time order even when several tasks record at once,
/// and a process killed with SIGKILL loses at most the line it was writing.
#[derive(Clone)]
pub struct EventLog {
    clock: RunClock,
    path: PathBuf,
    file: Arc<Mutex<File>>,
}

impl EventLog {
    /// Opens (creating or appending to) the log at `path`, stamping with `clock`.
    pub fn open(path: &Path, clock: RunClock) -> std::io::Result<EventLog> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(EventLog {
            clock,
            path: path.to_path_buf(),
            file: Arc::new(Mutex::new(file)),
        })
    }

    /// The run's clock this log stamps with.
    pub fn clock(&self) -> RunClock {
        self.clock
    }

    /// Where the log is written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `event` stamped `at_us` (a time read earlier, when what happened was seen,
    /// before work that would delay the record); returns its entry. The merge orders by
    /// time, so such a line may sit after later ones in this file.
    pub fn record_at(&self, at_us: i64, event: Event) -> Entry {
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        self.append(&mut f, Entry { at_us, event })
    }

    fn append(&self, f: &mut File, entry: Entry) -> Entry {
        let mut line = serde_json::to_string(&entry).expect("an event always serializes");
        line.push('\n');
        if let Err(e) = f.write_all(line.as_bytes()) {
            eprintln!("baton-real: cannot append to {}: {e}", self.path.display());
        }
        entry
    }

    /// Appends `event`, stamped now; returns its entry.
    ///
    /// A failed write (a full disk) is reported on stderr and otherwise ignored: losing
    /// an event must not stop a node, and the merge says how many lines it could not read.
    pub fn record(&self, event: Event) -> Entry {
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let entry = Entry {
            at_us: self.clock.now_us(),
            event,
        };
        self.append(&mut f, entry)
    }
}

/// The result of merging per-process logs.
#[derive(Debug, Default)]
pub struct Merged {
    /// Every readable entry, ordered by time; entries at the same microsecond keep the
    /// order of the files given, then of their lines.
    pub entries: Vec<Entry>,
    /// Lines that did not parse, as `file:line: error` (a process killed mid-write leaves
    /// at most a truncated last line).
    pub unreadable: Vec<String>,
}

/// Reads the logs at `paths` (a missing file counts as empty: a process that never
/// started wrote nothing) and orders their entries into one timeline.
pub fn merge(paths: &[PathBuf]) -> std::io::Result<Merged> {
    let mut keyed: Vec<(i64, usize, usize, Entry)> = vec![];
    let mut unreadable = vec![];
    for (fi, path) in paths.iter().enumerate() {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for (li, line) in BufReader::new(file).lines().enumerate() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Entry>(&line) {
                Ok(e) => keyed.push((e.at_us, fi, li, e)),
                Err(err) => unreadable.push(format!("{}:{}: {err}", path.display(), li + 1)),
            }
        }
    }
    keyed.sort_by_key(|(at, fi, li, _)| (*at, *fi, *li));
    Ok(Merged {
        entries: keyed.into_iter().map(|(_, _, _, e)| e).collect(),
        unreadable,
    })
}

/// Writes `entries` as JSON lines to `path` (the run's `timeline.jsonl`).
pub fn write_timeline(path: &Path, entries: &[Entry]) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(File::create(path)?);
    for e in entries {
        serde_json::to_writer(&mut w, e)?;
        w.write_all(b"\n")?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shapes are the simulator's: these lines are copied from a simulated
    /// `timeline.jsonl` (sim run scenarios/gc-pause.toml --seed 42) and must read back
    /// into the same JSON.
    #[test]
    fn simulator_lines_round_trip() {
        let lines = [
            r#"{"at_us":185000,"event":"campaign_started","node":"n2"}"#,
            r#"{"at_us":201957,"event":"role_changed","node":"n2","role":"leader","token":2}"#,
            r#"{"at_us":205523,"event":"write_accepted","node":"n2","token":2,"max_token":0,"op":{"kind":"claim"}}"#,
            r#"{"at_us":10000703,"event":"fault_applied","index":0,"kind":"pause","target":"n2"}"#,
            r#"{"at_us":12500001,"event":"key_deleted","key":"/election/leader/1","create_revision":2,"cause":"expired"}"#,
            r#"{"at_us":13503398,"event":"write_rejected","node":"n2","token":2,"max_token":3,"op":{"kind":"seq","first":9489,"last":9497}}"#,
        ];
        for l in lines {
            let e: Entry = serde_json::from_str(l).unwrap();
            assert_eq!(serde_json::to_string(&e).unwrap(), l);
        }
    }

    #[test]
    fn merge_orders_by_time_across_files_and_skips_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
        std::fs::write(
            &a,
            "{\"at_us\":10,\"event\":\"node_killed\",\"node\":\"n1\"}\n{\"at_us\":30,\"event\":\"node_re",
        )
        .unwrap();
        std::fs::write(
            &b,
            "{\"at_us\":20,\"event\":\"node_paused\",\"node\":\"n2\"}\n",
        )
        .unwrap();
        let m = merge(&[a, b, dir.path().join("never-started.jsonl")]).unwrap();
        let at: Vec<i64> = m.entries.iter().map(|e| e.at_us).collect();
        assert_eq!(at, vec![10, 20]);
        assert_eq!(m.unreadable.len(), 1, "{:?}", m.unreadable);
    }

    #[test]
    fn a_log_stamps_with_the_run_clock() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(&dir.path().join("x.jsonl"), RunClock::start()).unwrap();
        let e = log.record(Event::NodeKilled { node: "n1".into() });
        let m = merge(&[log.path().to_path_buf()]).unwrap();
        assert_eq!(m.entries, vec![e]);
    }
}
