//! The Raft log, vote and state machine of one node, kept in memory like a disk.
//!
//! [`RaftDisk`] is the node's "disk": the world owns it (outside the node's tasks), so a
//! kill loses nothing that was stored and a restart finds it again, as a real node finds
//! its fsynced files. Every write here is complete the moment it returns, which models a
//! disk whose fsync never loses an acknowledged write.
//!
//! A node process (real mode) keeps it in a file instead ([`RaftDisk::durable`]): every
//! write is written out whole (a temporary file, fsynced, renamed over the last) before
//! it returns, and a restarted process reads it back.
//!
//! What the fsync costs: in the simulation each write of the vote, the log or the commit
//! index waits a draw from `[raft] fsync_ms` ([`Fsync`]) before openraft goes on, as a
//! real node waits for its disk; a node process pays its real fsync instead.

use super::TypeConfig;
use crate::clock::{sleep_drawn, Clock};
use crate::peer::ElectionLog;
use openraft::storage::{LogFlushed, RaftLogStorage, RaftStateMachine};
use openraft::{
    Entry, EntryPayload, LogId, LogState, RaftLogReader, RaftSnapshotBuilder, Snapshot,
    SnapshotMeta, StorageError, StoredMembership, Vote,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io::Cursor;
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

type Membership = StoredMembership<u64, openraft::EmptyNode>;

#[derive(Default, Serialize, Deserialize)]
struct Disk {
    vote: Option<Vote<u64>>,
    log: BTreeMap<u64, Entry<TypeConfig>>,
    committed: Option<LogId<u64>>,
    purged: Option<LogId<u64>>,
    applied: Option<LogId<u64>>,
    membership: Membership,
    /// The state machine: the sequencer's last number handed out. A normal entry takes
    /// the next `count` numbers.
    value: u64,
    snapshot: Option<(SnapshotMeta<u64, openraft::EmptyNode>, Vec<u8>)>,
}

/// One node's durable Raft state.
#[derive(Default)]
pub struct RaftDisk {
    inner: Mutex<Disk>,
    /// Where it is written out, for a node process; `None` in the simulation.
    file: Option<PathBuf>,
}

fn write_out(path: &Path, d: &Disk) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(&serde_json::to_vec(d).map_err(std::io::Error::other)?)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

impl RaftDisk {
    /// A disk kept in the file `path`: what the file holds (nothing if it does not exist
    /// yet), written out again at every write.
    pub fn durable(path: &Path) -> std::io::Result<RaftDisk> {
        let disk = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(std::io::Error::other)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Disk::default(),
            Err(e) => return Err(e),
        };
        Ok(RaftDisk {
            inner: Mutex::new(disk),
            file: Some(path.to_path_buf()),
        })
    }

    /// The disk locked for a write: [`RaftDisk::store`] it before the lock is let go.
    fn write(&self) -> MutexGuard<'_, Disk> {
        self.inner.lock().unwrap()
    }

    /// Writes `d` out when the disk has a file (a node process): done before a write
    /// returns, as an fsync is. A write that fails is a storage error to openraft, which
    /// stops the node's Raft instance rather than vote on state it could not keep.
    fn store(&self, d: &Disk) -> Result<(), Box<StorageError<u64>>> {
        match &self.file {
            Some(path) => write_out(path, d).map_err(|e| {
                Box::new(StorageError::from_io_error(
                    openraft::ErrorSubject::Store,
                    openraft::ErrorVerb::Write,
                    e,
                ))
            }),
            None => Ok(()),
        }
    }

    /// True once the node has stored anything (a vote or a log entry): it was
    /// initialised before and must not be initialised again.
    pub fn is_blank(&self) -> bool {
        let d = self.inner.lock().unwrap();
        d.vote.is_none() && d.log.is_empty() && d.purged.is_none()
    }

    /// The state machine's value: the last sequence number taken by an applied entry.
    pub fn value(&self) -> u64 {
        self.inner.lock().unwrap().value
    }
}

/// What one fsync of a simulated node's disk costs: a draw from `range_ms` (µs
/// resolution) from the node's own generator, waited on the node's clock.
pub struct Fsync {
    /// The node's clock.
    pub clock: Arc<dyn Clock>,
    /// `[raft] fsync_ms`.
    pub range_ms: [u64; 2],
    /// Draws each fsync's length.
    pub rng: Mutex<rand_chacha::ChaCha8Rng>,
}

impl Fsync {
    /// Waits one fsync, unless `disk` is a real file (whose own fsync was paid).
    async fn wait(&self, disk: &RaftDisk) {
        if disk.file.is_none() {
            sleep_drawn(self.clock.as_ref(), &self.rng, self.range_ms).await;
        }
    }
}

/// The log store openraft writes to: the node's disk and what its fsync costs.
#[derive(Clone)]
pub struct LogStore(pub Arc<RaftDisk>, pub Arc<Fsync>);

/// The state machine openraft applies to.
#[derive(Clone)]
pub struct StateMachine {
    /// Where the applied state lives.
    pub disk: Arc<RaftDisk>,
    /// Told of every sequencer batch applied here.
    pub log: Arc<dyn ElectionLog>,
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<u64>> {
        let d = self.0.inner.lock().unwrap();
        Ok(d.log.range(range).map(|(_, e)| e.clone()).collect())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<u64>> {
        let d = self.0.inner.lock().unwrap();
        let last = d.log.values().next_back().map(|e| e.log_id).or(d.purged);
        Ok(LogState {
            last_purged_log_id: d.purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> Result<(), StorageError<u64>> {
        {
            let mut d = self.0.write();
            d.vote = Some(*vote);
            self.0.store(&d).map_err(|e| *e)?;
        }
        self.1.wait(&self.0).await;
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageError<u64>> {
        Ok(self.0.inner.lock().unwrap().vote)
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<u64>>,
    ) -> Result<(), StorageError<u64>> {
        {
            let mut d = self.0.write();
            d.committed = committed;
            self.0.store(&d).map_err(|e| *e)?;
        }
        self.1.wait(&self.0).await;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<u64>>, StorageError<u64>> {
        Ok(self.0.inner.lock().unwrap().committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let stored = {
            let mut d = self.0.write();
            for e in entries {
                d.log.insert(e.log_id.index, e);
            }
            self.0.store(&d).map_err(|e| *e)
        };
        // Stored is durable once its fsync is done.
        match stored {
            Ok(()) => {
                self.1.wait(&self.0).await;
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.log_io_completed(Err(std::io::Error::other(e.to_string())));
                Err(e)
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        let mut d = self.0.write();
        d.log.split_off(&log_id.index);
        self.0.store(&d).map_err(|e| *e)
    }

    async fn purge(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        let mut d = self.0.write();
        d.purged = Some(log_id);
        d.log = d.log.split_off(&(log_id.index + 1));
        self.0.store(&d).map_err(|e| *e)
    }
}

fn snapshot_of(d: &Disk) -> (SnapshotMeta<u64, openraft::EmptyNode>, Vec<u8>) {
    let meta = SnapshotMeta {
        last_log_id: d.applied,
        last_membership: d.membership.clone(),
        snapshot_id: format!(
            "{}-{}",
            d.applied.map(|l| l.leader_id.term).unwrap_or(0),
            d.applied.map(|l| l.index).unwrap_or(0)
        ),
    };
    (meta, d.value.to_le_bytes().to_vec())
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<u64>> {
        let mut d = self.disk.write();
        let (meta, data) = snapshot_of(&d);
        d.snapshot = Some((meta.clone(), data.clone()));
        self.disk.store(&d).map_err(|e| *e)?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<u64>>, Membership), StorageError<u64>> {
        let d = self.disk.inner.lock().unwrap();
        Ok((d.applied, d.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<u64>, StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let mut d = self.disk.write();
        let mut out = Vec::new();
        for e in entries {
            d.applied = Some(e.log_id);
            match e.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(b) => {
                    let first = d.value.saturating_add(1);
                    d.value = d.value.saturating_add(b.count);
                    if b.count > 0 {
                        let id = e.log_id;
                        self.log.batch_applied(
                            id.index,
                            id.leader_id.term,
                            b.leader,
                            first,
                            d.value,
                        );
                    }
                }
                EntryPayload::Membership(m) => {
                    d.membership = StoredMembership::new(Some(e.log_id), m);
                }
            }
            out.push(d.value);
        }
        self.disk.store(&d).map_err(|e| *e)?;
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<u64>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, openraft::EmptyNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<u64>> {
        let mut d = self.disk.write();
        let data = snapshot.into_inner();
        let mut b = [0u8; 8];
        let n = data.len().min(8);
        b[..n].copy_from_slice(&data[..n]);
        d.value = u64::from_le_bytes(b);
        d.applied = meta.last_log_id;
        d.membership = meta.last_membership.clone();
        d.snapshot = Some((meta.clone(), data));
        self.disk.store(&d).map_err(|e| *e)
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<u64>> {
        let d = self.disk.inner.lock().unwrap();
        Ok(d.snapshot.as_ref().map(|(meta, data)| Snapshot {
            meta: meta.clone(),
            snapshot: Box::new(Cursor::new(data.clone())),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_durable_disk_reads_back_what_it_stored() {
        // A node process's disk: a vote and an entry written out, read back by a new
        // process's disk as a restarted node would; a fresh file is blank.
        let dir = std::env::temp_dir().join(format!("baton-raftdisk-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("n1.raft.json");
        let _ = std::fs::remove_file(&path);
        let disk = RaftDisk::durable(&path).unwrap();
        assert!(disk.is_blank());
        {
            let mut d = disk.write();
            d.vote = Some(Vote::new(3, 2));
            d.value = 41;
            disk.store(&d).unwrap();
        }
        let again = RaftDisk::durable(&path).unwrap();
        assert!(!again.is_blank());
        assert_eq!(again.value(), 41);
        assert_eq!(again.inner.lock().unwrap().vote, Some(Vote::new(3, 2)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// What a node process's disk write costs on this machine: its whole state written
    /// out, fsynced and renamed, 100 times, in a directory on the repository's own
    /// filesystem (where real mode's run directories are). A measurement for `[raft]
    /// fsync_ms`, not a check: it prints the median and 90th percentile.
    /// `cargo test --release -p baton-protocols durable_write_cost -- --ignored --nocapture`
    #[test]
    #[ignore = "a measurement: run it by hand (see the doc)"]
    fn durable_write_cost() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/raftdisk-probe");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("n1.raft.json");
        let disk = RaftDisk::durable(&path).unwrap();
        let mut ms = vec![];
        for term in 0..100 {
            let mut d = disk.write();
            d.vote = Some(Vote::new(term, 2));
            let t = std::time::Instant::now();
            disk.store(&d).unwrap();
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "durable write: median {:.3} ms, p90 {:.3} ms (100 writes)",
            ms[49], ms[89]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
