//! What the resource did with the writes, as the builder reads it: accepted writes
//! counted in buckets of a fixed width per node and token (a batch the Raft log committed
//! counts as one), and refused writes (a token below `max_token`, a deposed leader's batch,
//! a late batch), each kept up to the cap.

use super::builder::LaneBuilder;
use super::{OpCounts, Rejection, WriteBucket, MAX_ITEMS};
use crate::timeline::{Entry, Event, WriteOp};

impl LaneBuilder {
    /// A batch the Raft log committed counts as an accepted sequencer write.
    pub(super) fn committed(
        &mut self,
        node: &str,
        at_us: i64,
        token: u64,
        (first, last): (u64, u64),
    ) {
        self.accepted(node, at_us, token, WriteOp::Seq { first, last });
    }

    /// A write the resource or the log refused.
    pub(super) fn refused(&mut self, e: &Entry) {
        if let Some((node, r)) = rejection(e) {
            self.rejected(node, r);
        }
    }

    pub(super) fn accepted(&mut self, lane: &str, at_us: i64, token: u64, op: WriteOp) {
        self.writes_accepted += 1;
        let fits = self.last_bucket.get(lane).is_some_and(|&i| {
            let b = &self.writes[i].1;
            b.token == token && at_us - b.from_us < self.bucket_us
        });
        if !fits {
            self.last_bucket.insert(lane.to_string(), self.writes.len());
            self.writes.push((
                lane.to_string(),
                WriteBucket {
                    lane: 0,
                    token,
                    from_us: at_us,
                    to_us: at_us,
                    count: 0,
                    ops: OpCounts::default(),
                    seq: None,
                },
            ));
        }
        let i = self.last_bucket[lane];
        let b = &mut self.writes[i].1;
        b.to_us = at_us;
        b.count += 1;
        match op {
            WriteOp::Claim => b.ops.claim += 1,
            WriteOp::Tick { .. } => b.ops.tick += 1,
            WriteOp::Checkpoint { .. } => b.ops.checkpoint += 1,
            WriteOp::Seq { first, last } => {
                b.ops.seq += 1;
                b.seq = Some(match b.seq {
                    Some((lo, hi)) => (lo.min(first), hi.max(last)),
                    None => (first, last),
                });
            }
        }
    }

    fn rejected(&mut self, lane: &str, r: Rejection) {
        if self.rejections.len() >= MAX_ITEMS {
            self.capped(&r.kind.clone());
            return;
        }
        self.rejections.push((lane.to_string(), r));
    }
}

/// The refused write an event records, with the node that sent it: a token below
/// `max_token`, a deposed leader's batch the log refused, or a late batch below the
/// sequence row's `last_seq`. `None` for any other event.
fn rejection(e: &Entry) -> Option<(&str, Rejection)> {
    let at_us = e.at_us;
    let refused = match &e.event {
        Event::WriteRejected {
            node,
            token,
            max_token,
            op,
        } => (
            node,
            Rejection {
                lane: 0,
                at_us,
                kind: "write_rejected".into(),
                token: *token,
                max_token: Some(*max_token),
                op: Some(*op),
                detail: String::new(),
            },
        ),
        Event::BatchRefused { node, token } => (
            node,
            Rejection {
                lane: 0,
                at_us,
                kind: "batch_refused".into(),
                token: *token,
                max_token: None,
                op: None,
                detail: "the log refused a deposed leader's batch".into(),
            },
        ),
        Event::SeqRefused {
            node,
            token,
            first,
            last,
            last_seq,
        } => (
            node,
            Rejection {
                lane: 0,
                at_us,
                kind: "seq_refused".into(),
                token: *token,
                max_token: None,
                op: Some(WriteOp::Seq {
                    first: *first,
                    last: *last,
                }),
                detail: format!("late batch {first}..{last}, not above last_seq {last_seq}"),
            },
        ),
        _ => return None,
    };
    Some((refused.0.as_str(), refused.1))
}
