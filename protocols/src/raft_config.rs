//! The `[raft]` table's types: what a scenario may say about the raft protocol.
//!
//! Kept apart from [`crate::raft`], which needs openraft: the model reads `[raft]` tables
//! without it.

use crate::safety::SafetyBounds;
use serde::{Deserialize, Serialize};

/// A deliberately broken variant, for the harness to catch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RaftCanary {
    /// The real protocol.
    #[default]
    None,
    /// The leader acts for as long as openraft believes it leads, with no lease check:
    /// a paused or cut-off leader keeps acting until it hears of a higher term.
    NoLeaseCheck,
    /// A leader asked to step down stands aside at once, while a protected write it
    /// sent is still in flight: the write may land after the next leader's claim.
    ReleaseInFlight,
}

/// Where the sequencer's numbers are made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SequencerPath {
    /// At the fenced resource, like every other protocol: the term fences each batch.
    #[default]
    Resource,
    /// Through the Raft log: a batch is a log entry, its numbers are assigned when it is
    /// applied, and they are handed out only once it is committed. The log is its own
    /// fence: an entry from a deposed leader never commits. Needed for leased reads.
    Log,
}

/// How a raft leader hands over to a designated successor (`transfer`): openraft
/// 0.9.25 has no transfer call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RaftTransfer {
    /// The leader elects its successor itself: once the successor's log matches its
    /// own, it sends a committed vote for the successor in the next term, in an empty
    /// AppendEntries, to itself and a majority first, then to the successor, which
    /// becomes leader on receiving it (openraft's "node-a electing for node-b" path, its
    /// `VoteHandler::become_leader`). No vote round, no wait for the followers' lease.
    #[default]
    Vote,
    /// The successor starts an election at once (`Raft::trigger().elect()` on a
    /// `TimeoutNow` message, Raft thesis 3.10): the voters refuse it while their
    /// followers' lease from the old leader's last heartbeat runs, so the seat stays
    /// empty for up to `election_timeout_max_ms`.
    Elect,
}

/// Parameters of the raft protocol (a scenario's `[raft]` table).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RaftConfig {
    /// Lower bound of the randomised election timeout (openraft default 150 ms).
    pub election_timeout_min_ms: u64,
    /// Upper bound of the election timeout (openraft default 300 ms); also the
    /// followers' lease, during which they refuse to vote for another leader.
    pub election_timeout_max_ms: u64,
    /// The leader's heartbeat interval (openraft default 50 ms). openraft sends a
    /// heartbeat at its tick (every 1.5 intervals), and each one a majority accepts
    /// renews the leader lease.
    pub heartbeat_interval_ms: u64,
    /// How long after sending a quorum-acknowledged heartbeat the leader may act. Must
    /// be below `election_timeout_min_ms`.
    pub leader_lease_ms: u64,
    /// Where the sequencer's numbers are made: `resource` or `log`.
    pub sequencer: SequencerPath,
    /// Run a pre-vote round before each election (Raft thesis, section 9.6): a node
    /// raises its term only if a majority would vote for it. `false` elects directly.
    pub pre_vote: bool,
    /// How a leader hands over to a designated successor: `vote` or `elect`.
    pub transfer: RaftTransfer,
    /// Each write of the node's vote, log or commit index waits for its fsync before
    /// openraft goes on (a vote is sent, an append acknowledged, only once stored, as
    /// Raft requires), drawn uniformly from `[min, max]` ms at µs resolution. `[0, 1]`:
    /// the fsync of this machine kind's disk, as etcd's (`[etcd] fsync_ms`); a real node
    /// here writes its state out whole and fsyncs it in 0.27 ms (median, the ignored test
    /// `raft::store::tests::durable_write_cost`). A node process
    /// has its real disk, so real mode accepts only the default.
    pub fsync_ms: [u64; 2],
    /// A deliberately broken variant (`none` for the real protocol).
    pub canary: RaftCanary,
}

impl Default for RaftConfig {
    fn default() -> Self {
        RaftConfig {
            election_timeout_min_ms: 150,
            election_timeout_max_ms: 300,
            heartbeat_interval_ms: 50,
            leader_lease_ms: 100,
            sequencer: SequencerPath::Resource,
            pre_vote: true,
            transfer: RaftTransfer::Vote,
            fsync_ms: [0, 1],
            canary: RaftCanary::None,
        }
    }
}

impl RaftConfig {
    /// What raft promises without the fence, by term and its leader lease: the leader
    /// acts only within `leader_lease_ms` of sending a heartbeat a majority accepted, on
    /// its own clock, and a follower votes for no one within `election_timeout_min_ms`
    /// of hearing it; no new leader is elected before the old one's lease ran out. The
    /// difference is the margin: a pause or clock jump up to it, and a slow clock up to
    /// `1 - leader_lease / election_timeout_min`. The followers' clocks count the
    /// election timeout, so the same bounds hold for every voter's clock: a follower
    /// whose clock jumps past them votes early and ends the leader's grant under it.
    /// (The `no-lease-check` canary claims the same and breaks it: the checker must
    /// catch it.)
    pub fn safety_bounds(&self) -> SafetyBounds {
        SafetyBounds::with_margin(
            self.election_timeout_min_ms
                .saturating_sub(self.leader_lease_ms),
            self.election_timeout_min_ms,
        )
        .judged_by_peers()
    }

    /// openraft's tick: it checks election timeouts every 1.5 heartbeat intervals.
    pub fn tick_ms(&self) -> u64 {
        self.heartbeat_interval_ms * 3 / 2
    }
}
