//! The fenced resource: the protected store of the spec's data model (section 7).
//!
//! `fenced_resource(name, max_token)`, `sequence(name, last_seq, owner_token)`, tick
//! records and the job's checkpointed cursor, behind one check done atomically with each write: a token below `max_token`
//! is rejected and logged with both tokens; a token equal to it (the same leader's further
//! writes) or above it is accepted and raises `max_token`. With `fencing = false` every
//! write is accepted: the counterfactual that shows the token is load-bearing.

use crate::world::net::Endpoint;
use crate::world::rpc::{FencedWrite, WriteReply, RESOURCE_ADDR};
use crate::world::timeline::{Event, Timeline, WriteOp};
use baton_model::NodeId;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Rows {
    /// `fenced_resource.max_token`: the highest token ever accepted.
    max_token: u64,
    /// `sequence.last_seq`.
    last_seq: u64,
    /// `sequence.owner_token`: the token of the last sequence write.
    owner_token: u64,
    /// The node of the last sequence write (with `owner_token`, the writing leadership).
    owner_node: NodeId,
    /// Tick records written.
    ticks: u64,
    /// The job's cursor: the first segment not yet checkpointed.
    cursor: u64,
}

/// Runs the resource on the current node until the node is killed. A sharded fleet's
/// partitions each have their own rows (their own `max_token` and `sequence`), and what
/// happens to them is recorded as the partition's (`Event::Shard`).
pub async fn serve(timeline: Timeline, fencing: bool) {
    let ep = Endpoint::bind(RESOURCE_ADDR).expect("resource address is free");
    let rows: Arc<Mutex<BTreeMap<Option<u32>, Rows>>> = Arc::default();
    ep.add_rpc_handler(move |w: FencedWrite| {
        let reply = apply(&rows, &timeline, fencing, w);
        async move { reply }
    });
    futures::future::pending::<()>().await;
}

fn apply(
    rows: &Mutex<BTreeMap<Option<u32>, Rows>>,
    timeline: &Timeline,
    fencing: bool,
    w: FencedWrite,
) -> WriteReply {
    let mut all = rows.lock().unwrap();
    let partition = w.partition;
    let r = all.entry(partition).or_default();
    let record = |event: Event| match partition {
        Some(partition) => timeline.record(Event::Shard {
            partition,
            inner: Box::new(event),
        }),
        None => timeline.record(event),
    };
    if fencing && w.token < r.max_token {
        record(Event::WriteRejected {
            node: w.node,
            token: w.token,
            max_token: r.max_token,
            op: w.op,
        });
        return WriteReply::Rejected {
            max_token: r.max_token,
        };
    }
    // A leader's own late batch: it timed out, the leader moved on, and its next batch
    // landed first. Same token, so the fence lets it through; the row refuses it (the
    // write carries the leadership that last wrote the row and does not start above
    // it), as a conditional UPDATE keyed on the writer would. Another leadership's batch
    // is the fence's business, not this check's: with no real token (redis-naive) it
    // still gets in, which is the finding. Unfenced, the counterfactual store checks
    // nothing.
    if let (true, WriteOp::Seq { first, last }) = (fencing, w.op) {
        if first <= r.last_seq && w.token == r.owner_token && w.node == r.owner_node {
            record(Event::SeqRefused {
                node: w.node,
                token: w.token,
                first,
                last,
                last_seq: r.last_seq,
            });
            return WriteReply::Behind {
                last_seq: r.last_seq,
            };
        }
    }
    let before = r.max_token;
    r.max_token = r.max_token.max(w.token);
    match w.op {
        WriteOp::Claim => {}
        WriteOp::Tick { .. } => r.ticks += 1,
        WriteOp::Seq { last, .. } => {
            // Unfenced, a stale leader's batch can move last_seq backwards: that is the
            // corruption the counterfactual run is meant to show.
            r.last_seq = last;
            r.owner_token = w.token;
            r.owner_node = w.node.clone();
        }
        // Unfenced, a stale leader's checkpoint can move the cursor backwards too (the
        // next leader then compacts those segments again).
        WriteOp::Checkpoint { segment } => r.cursor = segment + 1,
    }
    record(Event::WriteAccepted {
        node: w.node,
        token: w.token,
        max_token: before,
        op: w.op,
    });
    WriteReply::Accepted {
        last_seq: r.last_seq,
        cursor: r.cursor,
    }
}
