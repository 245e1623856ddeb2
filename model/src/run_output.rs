//! What a finished run produced, whichever world ran it: the findings, the timeline
//! file, the client's counts and the backend's load. The report renders it.

use crate::checker::client_stats::ClientStats;
use crate::checker::Findings;
use crate::render::lanes::Lanes;
use std::fs::File;
use std::io::{Seek, Write};

/// The width of a bucket of [`RunOutput::backend_requests_by_100ms`].
pub const BUCKET_US: i64 = 100_000;

/// A finished run's timeline: one JSON event a line, in a temporary file that is gone
/// once this is dropped.
#[derive(Debug)]
pub struct TimelineFile(pub File);
impl TimelineFile {
    /// Copies the whole timeline to `w`.
    pub fn copy_to(&self, mut w: impl Write) -> std::io::Result<()> {
        let mut f = &self.0;
        f.rewind()?;
        std::io::copy(&mut f, &mut w)?;
        Ok(())
    }
}

/// What a run produced.
#[derive(Debug)]
pub struct RunOutput {
    /// What the checkers found.
    pub findings: Findings,
    /// Who led, wrote and was hit, when: what the plot's and the page's lanes draw.
    pub lanes: Lanes,
    /// The timeline, when it was kept (`baton_sim::simulate`'s `keep_timeline`).
    pub timeline: Option<TimelineFile>,
    /// The simulated time the run stopped, in microseconds.
    pub end_us: i64,
    /// What the sequencer client saw.
    pub client: ClientStats,
    /// Messages the simulated network carried.
    pub messages: u64,
    /// Requests the protocol's backend served (0 for peer-to-peer protocols).
    pub backend_requests: u64,
    /// Requests the backend served in each 100 ms of the run.
    pub backend_requests_by_100ms: Vec<u64>,
}
