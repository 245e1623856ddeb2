//! The leader's desk, as a user's node sees it: its protected writes and the sequencer's
//! requests, while a term is held, for a user's node that does its own protected work
//! (`crate::library::World::own_work`). The node loop implements it
//! (`crate::world::node::desk`); the protocol side only names it, so that protocols
//! never depend on the node.

use crate::world::timeline::WriteOp;
use async_trait::async_trait;
use std::sync::Arc;
use tokio::sync::watch;

/// One term's desk.
#[async_trait]
pub trait Desk: Send + Sync {
    /// The term's token.
    fn token(&self) -> u64;

    /// One protected write under the term's token: the claim, a tick, a sequence batch.
    /// Once called, the write goes out even if the caller stops waiting for it (drops
    /// the future): a `before-write` pause strikes between the lease check and the send,
    /// and a live write whose check passed is in the kernel's hands by then, beyond the
    /// reach of the caller's `select!`.
    async fn write(&self, op: WriteOp) -> Written;

    /// The sequencer's requests queued since the last call, waiting for one when none
    /// is; `None` once the term is over.
    async fn requests(&self) -> Option<Box<dyn Requests>>;
}

/// Client batches of `next` the leader took from its queue: answered together, with
/// numbers in queue order, or turned away. Dropped unanswered, they are answered
/// `Unavailable` (the client tries again).
pub trait Requests: Send {
    /// How many numbers they ask for in all.
    fn count(&self) -> u64;
    /// Hands out `first..first + count()` under `token`, in queue order: only once the
    /// write of the sequence row that covers them was accepted.
    fn grant(self: Box<Self>, token: u64, first: u64);
    /// Answers that the leader could not make them durable (`503`): the client retries.
    fn unavailable(self: Box<Self>);
}

/// What a protected write came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// The resource took it: where the sequence row stands after it.
    Accepted {
        /// `sequence.last_seq` after the write.
        last_seq: u64,
    },
    /// The resource refused it: a newer token exists (the fence).
    Rejected,
    /// No answer in the resource's timeout (it may still land), a late batch of its
    /// own, or the term was already over (nothing was sent).
    Failed,
}

/// Where the node loop puts the current term's desk (`None` between terms) for the
/// user's node to find.
pub type DeskSlot = watch::Sender<Option<Arc<dyn Desk>>>;

/// Whether the slot holds the desk of `token`'s term.
pub fn holds(slot: &Option<Arc<dyn Desk>>, token: u64) -> bool {
    slot.as_ref().is_some_and(|d| d.token() == token)
}
