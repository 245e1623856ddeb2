//! What the sequencer client saw over a run, counted per request: the data the
//! checkers and the report read, whichever world (simulated or real) produced it.

use serde::Serialize;

/// What the client saw over the run, counted per request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ClientStats {
    /// Requests sent.
    pub sent: u64,
    /// Replies with a sequence number.
    pub ok: u64,
    /// Replies saying "not the leader".
    pub not_leader: u64,
    /// Requests that got no answer in time, or whose leader could not write in time.
    pub timeouts: u64,
    /// Replies whose seq had already been handed out before.
    pub reused: u64,
    /// Reads sent.
    pub reads_sent: u64,
    /// Reads answered with a value.
    pub reads_ok: u64,
    /// `next` requests sent and answered with a number, by when they were sent: one
    /// entry per 100 ms of simulated time (index = send time / 100 ms). Not in
    /// report.json: `load` there is computed from it.
    #[serde(skip)]
    pub by_send_time: Vec<SentOk>,
}

/// Requests sent in one 100 ms slice, and how many of them got a number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SentOk {
    /// Sent.
    pub sent: u64,
    /// Answered with a number.
    pub ok: u64,
}

/// The width of a [`ClientStats::by_send_time`] slice.
pub const SLICE_US: i64 = 100_000;
