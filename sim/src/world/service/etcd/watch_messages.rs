//! The watch's messages: what a client's watch stream asks the member it talks to, and
//! what the member answers from its applied store (`watch.rs`).
//!
//! A live watch is one gRPC stream; here it is a long poll that the client's stream task
//! repeats: each poll names every watch of the stream and the revision it has reached,
//! and the member answers at once if any has events (or was compacted away), else when
//! one comes or `wait_ms` runs out.

use super::v3_messages::{Kv, V3Header};
use serde::{Deserialize, Serialize};

/// One watch of a stream, as `WatchCreateRequest` has it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchSpec {
    /// The key, or the range's start.
    pub key: Vec<u8>,
    /// The range's end (etcd's: empty for one key, `[0]` for every key from `key`).
    pub range_end: Vec<u8>,
    /// Leave puts out (`WatchFilterType::NoPut`).
    pub no_put: bool,
    /// Leave deletes out (`WatchFilterType::NoDelete`).
    pub no_delete: bool,
    /// Give each event the key's previous state.
    pub prev_kv: bool,
}

/// One watch in a poll: its id on the stream, what it watches, and the first revision
/// it has not seen (0 when it is being created from "now").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchAsk {
    /// Its id on the stream.
    pub id: i64,
    /// What it watches.
    pub spec: WatchSpec,
    /// The first revision it wants; 0: none of the past.
    pub from: i64,
}

/// A poll of a stream's watches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchPoll {
    /// The stream's watches.
    pub watches: Vec<WatchAsk>,
    /// How long the member may wait for an event before it answers with none.
    pub wait_ms: u64,
}

/// One event, as `mvccpb.Event`: a put carries the key as it now is; a delete carries
/// the key with its mod revision set to the deleting revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchEv {
    /// A delete (else a put).
    pub delete: bool,
    /// The key after the event.
    pub kv: Kv,
    /// The key before it, when the watch asked and it existed.
    pub prev_kv: Option<Kv>,
}

/// What one watch found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WatchFound {
    /// Its events from its revision on, in revision order (none yet: empty).
    Events(Vec<WatchEv>),
    /// Its revision is older than the history kept: the oldest revision that is kept,
    /// where the watch may start again (etcd's compact revision).
    Compacted(i64),
}

/// A member's answer to a poll: the header (the store's revision when it answered) and,
/// per watch of the poll in the poll's order, what it found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchBatch {
    /// The header; `revision` bounds every event of the batch, and every event at or
    /// below it that a watch wants is in the batch.
    pub header: V3Header,
    /// Per watch, by id.
    pub found: Vec<(i64, WatchFound)>,
}
