//! Per-node lanes: who believed it led, with which token, and when; what the resource did
//! with its writes; what hit it. The data behind the lanes of `leaders_acting.svg` and
//! `timeline.html`.
//!
//! A [`LaneBuilder`] reads a run's timeline one event at a time, as the checkers do, and
//! [`LaneBuilder::finish`] returns [`Lanes`]: a pure function of the events (plus the
//! scenario's clock-fault values, which the events name only by index), with no
//! dependence on the simulated world, so that a timeline from anywhere draws the same way.
//!
//! What it keeps stays bounded however long the run: accepted writes are counted in
//! buckets of a fixed width (about 1/2000 of the run) per node and token, and other events
//! are kept up to a cap per kind, with what was left out counted, so a page can say so.
//! Everything is kept in timeline order or in `BTreeMap`s: identical events give identical
//! lanes.
//!
//! This file is the data model: what a lane shows. Reading events into it is
//! `builder.rs` (with `windows.rs` for what hit a lane and `writes.rs` for what the
//! resource did with the writes), ordering the lanes and placing each item on its lane at the run's end is
//! `order.rs`, and the clock view (clock faults' values and each faulted clock's offset
//! over the run) is `clock.rs`.

mod builder;
mod clock;
mod order;
mod windows;
mod writes;

pub use builder::{event_kind, LaneBuilder};
pub use clock::{ClockChange, ClockSeries};

use crate::timeline::{Entry, WriteOp};
use serde::Serialize;
use std::collections::BTreeMap;

/// How many buckets of accepted writes a run is cut into (per node and token).
pub const WRITE_BUCKETS_PER_RUN: i64 = 2000;
/// The most events of one kind kept for drawing; later ones are counted in
/// [`Lanes::capped`].
pub const MAX_EVENTS_PER_KIND: usize = 2000;
/// The most windows, marks or rejections kept.
pub const MAX_ITEMS: usize = 20_000;
/// The service lanes, in the order they are shown after the nodes (each only when
/// something hit it).
pub const SERVICE_LANES: [&str; 3] = ["backend", "resource", "client"];

/// Where leadership was believed: one node, one token, from its win to its loss.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Span {
    /// Index into [`Lanes::lanes`].
    pub lane: usize,
    /// The fencing token it won with.
    pub token: Option<u64>,
    /// When it came to believe it led (global µs).
    pub from_us: i64,
    /// When it stopped believing (or the run ended).
    pub to_us: i64,
    /// What ended it: the new role (`follower`, `candidate`), `killed`, `new token`, or
    /// `run ended`.
    pub end: String,
    /// When it stopped its protected writes, if it said so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_us: Option<i64>,
    /// Why it stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// A stretch of time a lane spent in a faulty state.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Window {
    /// Index into [`Lanes::lanes`].
    pub lane: usize,
    /// `down` (killed, until restarted), `pause` (a scripted stop-the-world), `gc-pause`
    /// (background GC noise), `partition` or `slow-link`.
    pub kind: String,
    /// When it began (global µs).
    pub from_us: i64,
    /// When it ended, or the run's end.
    pub to_us: i64,
    /// True when it had not ended by the run's end.
    pub open_at_end: bool,
    /// What the fault said it hit (`n1<->backend`), or the node.
    pub label: String,
    /// The scripted fault's index, when a fault caused it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<usize>,
}

/// Something that hit a lane at one instant: a kill, a restart, a resignation, a clock
/// fault.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mark {
    /// Index into [`Lanes::lanes`].
    pub lane: usize,
    /// `kill`, `restart`, `resign`, `transfer`, `clock-offset`, `clock-drift` or `clock-step`.
    pub kind: String,
    /// When (global µs).
    pub at_us: i64,
    /// What to print beside it (`drift -400000 ppm`).
    pub label: String,
    /// The scripted fault's index, when a fault caused it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<usize>,
}

/// Counts of accepted writes by what they wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpCounts {
    /// A new leader's claim.
    pub claim: u32,
    /// Scheduler ticks.
    pub tick: u32,
    /// Sequencer batches (at the resource, or committed in a Raft log).
    pub seq: u32,
    /// Job checkpoints.
    pub checkpoint: u32,
}

/// Accepted writes of one node under one token in one bucket of time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WriteBucket {
    /// Index into [`Lanes::lanes`].
    pub lane: usize,
    /// The token the writes carried.
    pub token: u64,
    /// The first write's time (global µs).
    pub from_us: i64,
    /// The last write's time.
    pub to_us: i64,
    /// How many writes.
    pub count: u32,
    /// What they wrote.
    pub ops: OpCounts,
    /// The lowest and highest sequence numbers handed out, if any batch was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<(u64, u64)>,
}

/// A write the resource (or the Raft log) refused.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rejection {
    /// Index into [`Lanes::lanes`].
    pub lane: usize,
    /// When (global µs).
    pub at_us: i64,
    /// `write_rejected` (a token below `max_token`), `batch_refused` (the log refused a
    /// deposed leader's batch) or `seq_refused` (a late batch below the row's `last_seq`).
    pub kind: String,
    /// The token the write carried.
    pub token: u64,
    /// The highest token accepted before it (`write_rejected` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_token: Option<u64>,
    /// What it tried to write.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<WriteOp>,
    /// More, for a person (`batch 10..20 below last_seq 25`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// Any other event, drawn as a dot on its lane (when it has one).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LaneEvent {
    /// Index into [`Lanes::lanes`]; `None` when the event names no node (a skipped fault).
    pub lane: Option<usize>,
    /// The event as `timeline.jsonl` writes it.
    #[serde(flatten)]
    pub entry: Entry,
}

/// Everything the lanes show.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Lanes {
    /// When the run stopped (global µs).
    pub end_us: i64,
    /// The lanes' names: every node, then `backend`, `resource`, `client` when something
    /// hit them.
    pub lanes: Vec<String>,
    /// Leadership by belief, in order of the wins.
    pub spans: Vec<Span>,
    /// Faulty stretches, in order of their starts.
    pub windows: Vec<Window>,
    /// Faults at an instant, in order.
    pub marks: Vec<Mark>,
    /// Fault windows that hit every lane (`network`), in order.
    pub global_windows: Vec<Window>,
    /// Accepted writes, bucketed, by lane then time.
    pub writes: Vec<WriteBucket>,
    /// How wide a write bucket is (µs).
    pub write_bucket_us: i64,
    /// Accepted writes in all.
    pub writes_accepted: u64,
    /// Refused writes, in order.
    pub rejections: Vec<Rejection>,
    /// Other events, in order, up to [`MAX_EVENTS_PER_KIND`] of each kind.
    pub events: Vec<LaneEvent>,
    /// Clocks a fault moved (empty when no clock was faulted).
    pub clocks: Vec<ClockSeries>,
    /// Events deliberately not drawn, by kind (their outcome is: `write_attempted` is
    /// drawn as its acceptance or rejection), with their counts.
    pub not_drawn: BTreeMap<String, u64>,
    /// Events beyond a cap, by kind, with how many were left out.
    pub capped: BTreeMap<String, u64>,
    /// Events read.
    pub events_read: u64,
}

impl Lanes {
    /// The index of a lane by name.
    pub fn lane(&self, name: &str) -> Option<usize> {
        self.lanes.iter().position(|l| l == name)
    }
}

/// The lanes of a timeline held in memory (tests, and tools that read `timeline.jsonl`).
pub fn build(builder: LaneBuilder, entries: &[Entry], end_us: i64) -> Lanes {
    let mut b = builder;
    for e in entries {
        b.entry(e);
    }
    b.finish(end_us)
}
