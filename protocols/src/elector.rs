//! The one interface every election protocol implements.

use crate::leadership::Leadership;
use crate::NodeId;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Who leads, as a backend reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderInfo {
    /// The leader's node.
    pub node: NodeId,
    /// The leader's fencing token.
    pub token: u64,
}

/// Why an elector call did not succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ElectorError {
    /// The backend did not answer in time or could not be reached.
    Unavailable(String),
    /// The lease (or session) behind a campaign was lost before the campaign finished.
    LeaseLost,
    /// This node no longer leads in the term the call was made for.
    NotLeader,
}

impl std::fmt::Display for ElectorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ElectorError::Unavailable(why) => write!(f, "backend unavailable: {why}"),
            ElectorError::LeaseLost => write!(f, "lease lost during campaign"),
            ElectorError::NotLeader => write!(f, "no longer the leader of that term"),
        }
    }
}

impl std::error::Error for ElectorError {}

/// A leader-election protocol, seen from one node.
///
/// The contract every implementation keeps:
/// - `campaign` returns only once this node leads, with a fencing token that is higher
///   than any token an earlier leadership of any node carried;
/// - the returned [`Leadership`] stops reporting `acting()` no later than the moment the
///   node must stop acting by its own clock, even if the backend never answers again;
/// - `resign` is called only after the node has stopped its protected writes.
#[async_trait]
pub trait Elector: Send + Sync {
    /// Blocks until this node leads.
    async fn campaign(&self) -> Result<Leadership, ElectorError>;

    /// Gives up leadership (or abandons a lost one) so the next candidate can win.
    async fn resign(&self, leadership: &Leadership) -> Result<(), ElectorError>;

    /// Who leads now, as the backend sees it.
    async fn observe(&self) -> Result<Option<LeaderInfo>, ElectorError>;

    /// How far the backend is from handing this leadership to `successor`, asked over and over by a leader preparing a transfer while it still
    /// works. The default, for a backend with no queue and no log to catch up, is
    /// [`TransferReadiness::Ready`].
    async fn transfer_readiness(
        &self,
        leadership: &Leadership,
        successor: &NodeId,
    ) -> Result<TransferReadiness, ElectorError> {
        let _ = (leadership, successor);
        Ok(TransferReadiness::Ready)
    }

    /// Hands the leadership to `successor` by the backend's own primitive, once the
    /// node has stopped its protected writes (and readiness said `Ready`). The default
    /// resigns: in a queue whose head is the successor, that is the handover.
    async fn transfer(
        &self,
        leadership: &Leadership,
        successor: &NodeId,
    ) -> Result<(), ElectorError> {
        let _ = successor;
        self.resign(leadership).await
    }

    /// This node is the designated successor of a transfer that was just handed over:
    /// try for the seat now, not at the next retry or timeout. No-op by default (a
    /// queued waiter's watch already fires).
    fn take_over_now(&self) {}

    /// A leader preparing a transfer to another node asks this waiting candidate, queued
    /// ahead of the successor, to queue again at the back. No-op by default (no queue).
    fn requeue(&self) {}

    /// Gives up a campaign that has not won (its key or znode removed, its session
    /// closed): the node no longer wants this seat. No-op by default.
    async fn withdraw(&self) {}

    /// A failure detector (SWIM, `[swim]`) confirmed `node` dead: if it holds the seat,
    /// have the backend take it away by the backend's own means, so that the next
    /// candidate need not wait for its lease to expire. True when it did. The backend
    /// still decides who leads next, and the fence still guards the resource. No-op by
    /// default (a backend with no way to end another's grant).
    async fn evict(&self, node: &NodeId) -> Result<bool, ElectorError> {
        let _ = node;
        Ok(false)
    }

    /// The protocol's own replicated log, if it has one and the scenario asked to use it
    /// (raft with `sequencer = "log"`). Lease protocols have none: their state lives at
    /// the fenced resource.
    fn replicated_log(&self) -> Option<&dyn ReplicatedLog> {
        None
    }
}

/// What a leader preparing a transfer still waits for ([`Elector::transfer_readiness`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransferReadiness {
    /// The backend will give the seat to the successor once this leadership is handed
    /// over.
    Ready,
    /// These candidates (in queue order) are queued ahead of the successor: ask each to
    /// requeue ([`Elector::requeue`]).
    Behind(Vec<NodeId>),
    /// Not yet, for this reason (the successor is not queued yet, its log lags).
    Waiting(String),
}

/// A log the election protocol replicates itself (a consensus log), used two ways:
/// the sequencer commits its batches through it instead of writing the fenced resource,
/// and the leader serves reads of its applied state without a quorum round trip while
/// its leader lease holds (a "lease read", Raft thesis section 6.4.1).
#[async_trait]
pub trait ReplicatedLog: Send + Sync {
    /// Commits `count` more sequence numbers through the log while this node leads in
    /// term `token`, and returns the first and last number of the batch once the entry is
    /// committed and applied. The numbers are assigned by the state machine in log order,
    /// so no two batches can ever share one. Errs with [`ElectorError::NotLeader`] if the
    /// node does not lead in `token` (before or while committing).
    async fn advance(&self, token: u64, count: u64) -> Result<(u64, u64), ElectorError>;

    /// A read served by the leader from its applied state: `Some((term, value))` while
    /// its leader lease holds on its own clock, `None` otherwise. No round trip: that is
    /// the speed a lease buys, and clock drift beyond the lease's margin is its price.
    fn leased_read(&self) -> Option<(u64, u64)>;
}
