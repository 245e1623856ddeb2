//! Protected writes in flight: each write a node sent (`WriteAttempted`), from its send
//! until the resource answered it (`WriteAccepted`, `WriteRejected` or `SeqRefused`: the
//! moment it took effect or was turned away) or its sender gave it up (its resource
//! timeout, `work.resource_timeout_ms`, ran out: the node then treats the write as lost
//! and moves on, though the network may still deliver it).
//!
//! A write in flight is its leader still acting: a leader that lets its grant go while
//! one is in flight, or whose grant ends then, may see it land after another leader's
//! claim (see [`super::protocol_safety`] and [`super::failover`], which read the writes
//! this tracker reports as they land).

use crate::scenario::Resolved;
use crate::timeline::{Entry, Event, WriteOp};
use crate::NodeId;
use std::collections::{BTreeMap, VecDeque};

/// A write that reached the resource, with when it was sent.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Landed {
    /// Position of its answer in the timeline.
    pub idx: usize,
    /// The writer.
    pub node: NodeId,
    /// The token it carried.
    pub token: u64,
    /// What it wrote.
    pub op: WriteOp,
    /// When it was sent (global µs).
    pub sent_us: i64,
    /// When the resource answered it.
    pub landed_us: i64,
    /// When its sender gave it up: `sent_us` plus the node's resource timeout.
    pub give_up_us: i64,
    /// Whether the resource took it.
    pub accepted: bool,
}

impl Landed {
    /// Whether it landed after its sender had given it up: the network held it longer
    /// than the node waits for a write.
    pub fn after_give_up(&self) -> bool {
        self.landed_us > self.give_up_us
    }
}

/// Pairs each answer at the resource with the send it answers, one event at a time.
pub(crate) struct Flights {
    timeout_us: i64,
    /// (writer, token) -> its writes in flight, oldest first: (what, sent at).
    in_flight: BTreeMap<(NodeId, u64), VecDeque<(WriteOp, i64)>>,
}

impl Flights {
    /// The tracker for a run of `r`.
    pub fn new(r: &Resolved) -> Self {
        Flights {
            timeout_us: r.scenario.work.resource_timeout_ms as i64 * 1000,
            in_flight: BTreeMap::new(),
        }
    }

    /// Reads event `idx`: the write it answers, when it is a resource's answer to one
    /// this tracker saw sent. Answers with no recorded send (a node that logs no
    /// attempts, a batch a replicated log committed) are no one's flight.
    pub fn entry(&mut self, idx: usize, e: &Entry) -> Option<Landed> {
        let (node, token, op, accepted) = match &e.event {
            Event::WriteAttempted { node, token, op } => {
                self.in_flight
                    .entry((node.clone(), *token))
                    .or_default()
                    .push_back((*op, e.at_us));
                return None;
            }
            Event::WriteAccepted {
                node, token, op, ..
            } => (node, *token, *op, true),
            Event::WriteRejected {
                node, token, op, ..
            } => (node, *token, *op, false),
            Event::SeqRefused {
                node,
                token,
                first,
                last,
                ..
            } => (
                node,
                *token,
                WriteOp::Seq {
                    first: *first,
                    last: *last,
                },
                false,
            ),
            _ => return None,
        };
        let key = (node.clone(), token);
        let queue = self.in_flight.get_mut(&key)?;
        let at = queue.iter().position(|(o, _)| *o == op)?;
        let (_, sent_us) = queue.remove(at)?;
        if queue.is_empty() {
            self.in_flight.remove(&key);
        }
        Some(Landed {
            idx,
            node: key.0,
            token,
            op,
            sent_us,
            landed_us: e.at_us,
            give_up_us: sent_us + self.timeout_us,
            accepted,
        })
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-made events on the default scenario (resource timeout 500 ms):
    //! each answer pairs with its own send, the oldest first when two sends look alike
    //! (a tick sent again), and an answer nobody was seen sending is no flight.
    use super::super::testing::*;
    use super::*;

    #[test]
    fn each_answer_pairs_with_its_own_send() {
        let r = resolved();
        let timeout_ms = r.scenario.work.resource_timeout_ms as i64;
        let mut f = Flights::new(&r);
        let tick = WriteOp::Tick { n: 0 };
        let events = [
            sent(100, "n1", 1, tick),
            sent(700, "n1", 1, tick),
            accepted(900, "n1", 1, 0, tick),
            rejected(950, "n1", 1, 2),
            accepted(960, "n2", 2, 1, WriteOp::Claim),
        ];
        let landed: Vec<Landed> = events
            .iter()
            .enumerate()
            .filter_map(|(i, e)| f.entry(i, e))
            .collect();
        assert_eq!(landed.len(), 2, "{landed:?}");
        assert_eq!((landed[0].sent_us, landed[0].landed_us), (100_000, 900_000));
        assert!(landed[0].accepted);
        assert_eq!(landed[0].give_up_us, 100_000 + timeout_ms * 1000);
        assert!(
            landed[0].after_give_up(),
            "800 ms in flight, past {timeout_ms} ms"
        );
        assert_eq!((landed[1].sent_us, landed[1].landed_us), (700_000, 950_000));
        assert!(!landed[1].accepted);
        assert!(!landed[1].after_give_up());
    }
}
