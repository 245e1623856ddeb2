//! What happened in a real run, in the simulator's timeline format, and the per-process
//! logs it is written to.
//!
//! [`Event`], [`Entry`], [`Role`] and [`WriteOp`] copy the simulator's timeline types
//! (`sim/src/timeline.rs`) field for field, with the same serde representation, so a real
//! run's merged `timeline.jsonl` deserializes into the simulator's `Entry` and the same
//! checkers read it. Only this module knows the shapes: when the model moves into a crate
//! of its own (`baton-model`), these definitions give way to a `pub use` of its types.
//!
//! Every process of a run appends its events to its own file, one JSON object per line
//! ([`EventLog`]), stamped with the run's clock ([`RunClock`]): one monotonic clock for
//! the whole machine. [`merge`] orders the files' lines into one timeline.

use crate::run_clock::RunClock;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A node's role, by its own belief.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Campaigning or waiting in the election queue.
    Candidate,
    /// Believes it leads.
    Leader,
    /// Neither (not campaigning: just started, or backing off).
    Follower,
}

/// What a protected write does at the fenced resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WriteOp {
    /// A new leader announces its token and reads the sequence row.
    Claim,
    /// The scheduler's tick record number `n` of this leadership.
    Tick {
        /// The tick number within the leadership.
        n: u64,
    },
    /// The sequencer hands out `first..=last` (one batch of `next` requests).
    Seq {
        /// First sequence number of the batch.
        first: u64,
        /// Last sequence number of the batch.
        last: u64,
    },
    /// The job's checkpoint: segment `segment` is compacted, the cursor moves past it.
    Checkpoint {
        /// The segment done.
        segment: u64,
    },
}

/// Something that happened in a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A scenario fault took effect.
    FaultApplied {
        /// Index of the fault in the scenario's `faults` list.
        index: usize,
        /// The fault's kind.
        kind: String,
        /// What it hit, resolved (a node name, or `a->b` for a link).
        target: String,
    },
    /// A fault with a duration ended (or a `heal` ended partitions).
    FaultHealed {
        /// Index of the fault in the scenario's `faults` list.
        index: usize,
        /// The fault's kind.
        kind: String,
        /// What it had hit.
        target: String,
    },
    /// A fault could not be applied (e.g. target `leader` while nobody led).
    FaultSkipped {
        /// Index of the fault.
        index: usize,
        /// Why.
        reason: String,
    },
    /// A node started a campaign.
    CampaignStarted {
        /// The node.
        node: String,
    },
    /// A campaign ended without winning.
    CampaignFailed {
        /// The node.
        node: String,
        /// Why.
        error: String,
    },
    /// A node's belief about its role changed.
    RoleChanged {
        /// The node.
        node: String,
        /// The new role.
        role: Role,
        /// The fencing token, when it became leader.
        token: Option<u64>,
    },
    /// A leader stopped its protected writes.
    StoppedActing {
        /// The node.
        node: String,
        /// The token it had acted under.
        token: u64,
        /// Why it stopped.
        reason: String,
    },
    /// A node was killed (its tasks dropped).
    NodeKilled {
        /// The node.
        node: String,
    },
    /// A killed node was started again from scratch.
    NodeRestarted {
        /// The node.
        node: String,
    },
    /// A node stopped the world (a GC pause).
    NodePaused {
        /// The node.
        node: String,
    },
    /// A paused node runs again.
    NodeResumed {
        /// The node.
        node: String,
    },
    /// Background GC noise (`[noise.gc]`) stopped the world on a node: not a scripted
    /// fault. Its end is a `GcResumed`.
    GcPaused {
        /// The node.
        node: String,
        /// How long the pause lasts.
        duration_ms: u64,
    },
    /// A GC-noise pause ended.
    GcResumed {
        /// The node.
        node: String,
    },
    /// A leader started a step of the job (`[work.job]`): compacting one segment.
    JobStepStarted {
        /// The leader.
        node: String,
        /// Its token.
        token: u64,
        /// The segment (the cursor it resumed from, or its previous step's + 1).
        segment: u64,
    },
    /// A job step's work finished; its checkpoint write comes next.
    JobStepDone {
        /// The leader.
        node: String,
        /// Its token.
        token: u64,
        /// The segment.
        segment: u64,
        /// How long the step took on the node's clock.
        elapsed_ms: u64,
    },
    /// A leader gave up a job step half-way because it stopped leading: the work is
    /// lost and the next leader does the segment again.
    JobStepAbandoned {
        /// The leader.
        node: String,
        /// Its token.
        token: u64,
        /// The segment.
        segment: u64,
        /// How long it had worked on it, on its clock.
        elapsed_ms: u64,
    },
    /// A leader gave its leadership up on purpose (a step-down), telling the backend.
    Released {
        /// The node.
        node: String,
        /// The token it gave up.
        token: u64,
    },
    /// The lease service granted a lease.
    LeaseGranted {
        /// The node that asked.
        node: String,
        /// The lease id.
        lease_id: i64,
        /// The TTL asked for.
        ttl_requested_ms: u64,
        /// The TTL granted (raised to the service's minimum).
        ttl_granted_ms: u64,
    },
    /// The lease service found a lease past its TTL on its own clock and deleted it.
    LeaseExpired {
        /// The lease id.
        lease_id: i64,
    },
    /// A lease was revoked by its holder.
    LeaseRevoked {
        /// The lease id.
        lease_id: i64,
    },
    /// A key was deleted at the lease service.
    KeyDeleted {
        /// The key.
        key: String,
        /// Its create revision (for an election key: the token of its holder).
        create_revision: i64,
        /// `expired`, `revoked` or `deleted`.
        cause: String,
    },
    /// The backend freed the leader's seat without deleting a key: a lock released (by
    /// its holder, or because its session ended), or a lease record cleared or left
    /// unrenewed past its duration. Election latency is timed from here.
    SeatVacated {
        /// The lock key or lease object.
        key: String,
        /// The fencing token of the holder that left it.
        token: u64,
        /// `released`, `expired`, `destroyed`, ...
        cause: String,
    },
    /// A node sent a protected write.
    WriteAttempted {
        /// The node.
        node: String,
        /// The token it carried.
        token: u64,
        /// What it writes.
        op: WriteOp,
    },
    /// The fenced resource accepted a write.
    WriteAccepted {
        /// The writer.
        node: String,
        /// The token it carried.
        token: u64,
        /// The highest token accepted before this write.
        max_token: u64,
        /// What was written.
        op: WriteOp,
    },
    /// A sequencer batch took effect in a replicated log (raft with `sequencer = "log"`):
    /// the first time any node applied the entry, which is after it was committed and
    /// before anyone could be told of it. Checkers read it as an accepted `seq` write.
    BatchCommitted {
        /// The node that proposed it (the leader of its term).
        node: String,
        /// The term it was proposed in: its token.
        token: u64,
        /// Its position in the log.
        index: u64,
        /// First sequence number of the batch.
        first: u64,
        /// Last sequence number of the batch.
        last: u64,
    },
    /// A leader was told its batch committed and handed its numbers out. The batch's
    /// effect is its `BatchCommitted` (earlier, or at the same time); a batch that no
    /// leader handed out (its proposer died or was deposed before it heard) took numbers
    /// nobody received, and is no leader's act.
    BatchHandedOut {
        /// The leader.
        node: String,
        /// Its term.
        token: u64,
        /// First sequence number of the batch.
        first: u64,
        /// Last sequence number of the batch.
        last: u64,
    },
    /// The replicated log refused a leader's batch: the leader no longer led the term it
    /// acted under (it learned of a newer term before, or while, proposing). The log's
    /// own fencing, the counterpart of a resource's `WriteRejected`.
    BatchRefused {
        /// The leader.
        node: String,
        /// The term it acted under.
        token: u64,
    },
    /// A leader answered a read from its own applied state, without a quorum round trip,
    /// because its leader lease held on its clock.
    ReadServed {
        /// The node that answered.
        node: String,
        /// Its term.
        token: u64,
        /// The value it read: the last sequence number its state machine had applied.
        value: u64,
        /// When the client sent the read (global simulated µs): a read must reflect every
        /// batch committed before this.
        sent_at_us: i64,
        /// How many reads were answered at once (the client sends the reads of one
        /// quantum together; they all get this value).
        count: u64,
    },
    /// The resource refused a sequencer batch that did not start above the sequence row's
    /// `last_seq`: a leader's write that timed out and landed late, overtaken by the same
    /// leader's next batch. The row only moves forward.
    SeqRefused {
        /// The writer.
        node: String,
        /// Its token.
        token: u64,
        /// The batch's first number.
        first: u64,
        /// Its last number.
        last: u64,
        /// The row's `last_seq` when it arrived.
        last_seq: u64,
    },
    /// The fenced resource rejected a write whose token was below its `max_token`.
    WriteRejected {
        /// The writer.
        node: String,
        /// The token it carried.
        token: u64,
        /// The highest token accepted so far.
        max_token: u64,
        /// What it tried to write.
        op: WriteOp,
    },
}

/// One timeline line: when, and what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Microseconds since the run started (simulated time; in a real run, the run clock).
    pub at_us: i64,
    /// What happened.
    #[serde(flatten)]
    pub event: Event,
}

impl Entry {
    /// The time in milliseconds, as written in reports.
    pub fn at_ms(&self) -> f64 {
        self.at_us as f64 / 1000.0
    }
}

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
