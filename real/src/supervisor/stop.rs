//! The end of a run: every process stopped, the per-process logs merged into
//! `timeline.jsonl`, the ledger read; [`StoppedRun`] is what is left.

use super::error::RealError;
use super::{Supervisor, Tasks};
use crate::events::{merge, write_timeline, Entry};
use crate::load::LoadStats;
use crate::resource::ledger::{summarize, LedgerSummary};
use std::path::PathBuf;
use std::time::Duration;

/// What a finished run leaves.
#[derive(Debug)]
pub struct StoppedRun {
    /// The run directory.
    pub run_dir: PathBuf,
    /// The merged timeline (also written to `timeline.jsonl`).
    pub timeline: Vec<Entry>,
    /// Log lines that could not be read (`file:line: error`).
    pub unreadable: Vec<String>,
    /// What the SQLite ledger holds, with the `lag()` check's count.
    pub ledger: LedgerSummary,
    /// The load client's counts (default when it never ran).
    pub load: LoadStats,
    /// Every port the run bound, for leak checks.
    pub ports: Vec<u16>,
    /// Every process the run started, for leak checks.
    pub pids: Vec<u32>,
    /// Where the backend kept its data (removed by now), for leak checks; empty when it
    /// kept none (raft).
    pub backend_data_dir: PathBuf,
}

impl Supervisor {
    /// The per-process logs, in the order the merge breaks ties.
    pub fn log_paths(&self) -> Vec<PathBuf> {
        let mut v = vec![
            self.cfg.run_dir.join("supervisor.jsonl"),
            self.cfg.run_dir.join("resource.jsonl"),
        ];
        v.extend(self.nodes.iter().map(|s| s.cfg.log_path.clone()));
        v
    }

    /// Stops everything (the load client with SIGTERM so it saves its counts, the rest
    /// with SIGKILL, the backend last), removes its data, merges the logs into
    /// `timeline.jsonl` and reads the ledger.
    pub async fn stop(mut self) -> Result<StoppedRun, RealError> {
        if let Some(mut l) = self.load.take() {
            // Blocks this thread for at most the grace period; nothing else needs to
            // run meanwhile.
            l.terminate(libc::SIGTERM, Duration::from_secs(2));
        }
        self.tasks = Tasks::default(); // aborts the watchers
        for s in &self.nodes {
            if let Some(mut c) = s.child.lock().unwrap().take() {
                c.kill();
            }
        }
        if let Some(mut r) = self.resource.take() {
            r.kill();
        }
        let log_paths = self.log_paths();
        self.nodes.clear(); // closes the proxies
        let mut backend_data_dir = PathBuf::new();
        if let Some(b) = self.backend.take() {
            backend_data_dir = b.data_dir().unwrap_or_default();
            b.stop();
        }
        let merged = merge(&log_paths)?;
        write_timeline(&self.cfg.run_dir.join("timeline.jsonl"), &merged.entries)?;
        let ledger = summarize(&self.cfg.run_dir.join("ledger.db"))
            .map_err(|e| std::io::Error::other(format!("ledger.db: {e}")))?;
        let load = LoadStats::read(&self.cfg.run_dir.join("load-stats.json")).unwrap_or_default();
        Ok(StoppedRun {
            run_dir: self.cfg.run_dir.clone(),
            timeline: merged.entries,
            unreadable: merged.unreadable,
            ledger,
            load,
            ports: self.ports.clone(),
            pids: self.pids(),
            backend_data_dir,
        })
    }
}
