//! Requeueing in a FIFO election queue, for leadership transfer.
//!
//! etcd's `concurrency` election and ZooKeeper's sequential-znode recipe both hand the
//! seat to the oldest waiter: neither has a call that names the next leader. A leader
//! that must hand over to a designated successor therefore prepares the queue before it
//! lets go: it reads the queue ([`readiness`]) and asks every waiter queued ahead of the
//! successor to queue again at the back (a [`crate::mailbox::Mailbox`] in the waiter's
//! elector, read between its watches: the waiter deletes its key and
//! puts it again, under a new, higher create revision or sequence number). Once the
//! successor is next, the leader's plain resign is the handover: the successor's watch
//! on its predecessor fires, as it would for any release.

use crate::elector::TransferReadiness;
use crate::NodeId;

/// How a waiter's wait for its predecessors ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waited {
    /// No predecessor is left: it leads.
    Done,
    /// A transferring leader asked it to queue again at the back.
    Requeued,
}

/// Where `successor` stands in `queue`, the node names of the waiters behind the leader
/// in queue order, as the backend stores them: ready when it is first; else the other nodes ahead of it, to requeue.
/// A node's name appears twice when a session from before its restart has not expired
/// yet; the newest entry is taken for its live one, and an older one of the successor's
/// ahead of it cannot be requeued (nobody holds it): the transfer must wait it out.
pub fn readiness(queue: &[&str], successor: &NodeId) -> TransferReadiness {
    let successor = successor.as_str();
    let Some(at) = queue.iter().rposition(|n| *n == successor) else {
        return TransferReadiness::Waiting(format!("`{successor}` is not queued"));
    };
    let ahead = &queue[..at];
    if ahead.contains(&successor) {
        return TransferReadiness::Waiting(format!(
            "an older key of `{successor}` (a session from before a restart) is ahead of its own"
        ));
    }
    if ahead.is_empty() {
        return TransferReadiness::Ready;
    }
    let mut names: Vec<NodeId> = vec![];
    for n in ahead {
        if !names.iter().any(|m| m == n) {
            names.push(NodeId::from(*n));
        }
    }
    TransferReadiness::Behind(names)
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-written queues, each answer checked.
    use super::*;

    #[test]
    fn the_successor_first_is_ready_and_others_ahead_must_requeue() {
        assert_eq!(
            readiness(&["n3", "n2"], &"n3".into()),
            TransferReadiness::Ready
        );
        assert_eq!(
            readiness(&["n2", "n4", "n2", "n3"], &"n3".into()),
            TransferReadiness::Behind(vec!["n2".into(), "n4".into()])
        );
        assert!(matches!(
            readiness(&["n2"], &"n3".into()),
            TransferReadiness::Waiting(_)
        ));
        // A stale key of the successor's ahead of its live one: wait for it to expire.
        assert!(matches!(
            readiness(&["n3", "n2", "n3"], &"n3".into()),
            TransferReadiness::Waiting(_)
        ));
    }
}
