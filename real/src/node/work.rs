//! The singleton work a leader does in a real node: a scheduler tick and a batched
//! sequencer, every write fenced. A port of the simulator's `sim/src/world/node/work.rs` (without
//! the `[work.job]` compaction job and the raft log sequencer, which real mode does not
//! run yet).
//!
//! One task does all of a leader's protected writes, one at a time, so that when it
//! returns no write it sent is still awaiting an answer: the node can then release
//! leadership knowing it has stopped. A write that timed out may still be held by a
//! proxy and land later; nothing but the fence at the resource can stop that one.
//!
//! `POST /next` requests queue here; each batch the leader takes is one fenced write of
//! the `sequence` row (`last_seq` advanced by the batch size), and only once the
//! resource accepted it are the numbers handed out, in queue order.

use crate::backoff::Pacer;
use crate::events::{Event, EventLog, WriteOp};
use crate::resource::{FencedWrite, WriteReply};
use baton_model::NodeId;
use baton_protocols::sleep_until_local;
use baton_protocols::{Clock, Leadership, LossReason};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{oneshot, Notify};

/// The answer to one `POST /next` batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextReply {
    /// Numbers `first..=last`, handed out under `token`.
    Ok {
        /// The leader's token.
        token: u64,
        /// First number.
        first: u64,
        /// Last number.
        last: u64,
    },
    /// This node does not lead (any more).
    NotLeader,
    /// The write timed out: the numbers may or may not exist; they will never be reused.
    Unavailable,
}

struct Queued {
    count: u64,
    reply: oneshot::Sender<NextReply>,
}

/// The sequencer's queue, shared by the HTTP handler and the leader's loop.
#[derive(Default)]
pub struct LeaderWork {
    /// `Some(token)` while this node leads and accepts `next`.
    leading: Mutex<Option<u64>>,
    queue: Mutex<Vec<Queued>>,
    queued: Notify,
}

impl LeaderWork {
    /// Queues a batch of `count` requests for the leader's next write; `None` if this node
    /// does not lead (answer with a hint).
    pub fn submit(&self, count: u64) -> Option<oneshot::Receiver<NextReply>> {
        let leading = self.leading.lock().unwrap();
        leading.as_ref()?;
        let (tx, rx) = oneshot::channel();
        self.queue.lock().unwrap().push(Queued { count, reply: tx });
        drop(leading);
        self.queued.notify_waiters();
        Some(rx)
    }

    /// The token this node leads under, if it accepts `next`.
    pub fn leading(&self) -> Option<u64> {
        *self.leading.lock().unwrap()
    }

    fn take(&self) -> Vec<Queued> {
        std::mem::take(&mut *self.queue.lock().unwrap())
    }

    /// Stops accepting `next` and turns the queued ones away.
    pub fn stop_leading(&self) {
        *self.leading.lock().unwrap() = None;
        for q in self.take() {
            let _ = q.reply.send(NextReply::NotLeader);
        }
    }
}

/// What the leader's loop needs from its node.
pub struct WorkCtx {
    /// The node's name.
    pub node: NodeId,
    /// Its clock.
    pub clock: Arc<dyn Clock>,
    /// Its event log.
    pub log: EventLog,
    /// Its metrics.
    pub metrics: Arc<crate::node::metrics::NodeMetrics>,
    /// The resource's `/write` URL (through the node's proxy).
    pub resource_url: String,
    /// HTTP client for the resource.
    pub http: reqwest::Client,
    /// Timeout of each write.
    pub resource_timeout_ms: u64,
    /// No write starts with less than this left before the lease deadline.
    pub write_margin_ms: u64,
    /// Scheduler tick interval.
    pub tick_interval_ms: u64,
    /// Set to ask the leader to step down.
    pub resign_requested: AtomicBool,
    /// Wakes the leader when a resign is requested.
    pub resign_notify: Notify,
    /// A `point = "before-write"` pause armed by the supervisor: the fault's index.
    pub pause_armed: Mutex<Option<usize>>,
    /// Paces writes the resource did not answer (a refused or reset connection, an
    /// HTTP error): such a write returns only once a backoff pause, at most the write's
    /// timeout, has passed since it was sent, so a leader whose resource refuses retries
    /// its claim as a timed-out write would, not at once (see `backoff.rs`).
    pub pacer: Pacer,
}

#[derive(Clone, Copy)]
enum Outcome {
    /// Accepted: `sequence.last_seq` after the write.
    Written(u64),
    TimedOut,
    Fenced,
    NotActing,
}

/// Does the leader's work until it must stop; returns why it stopped.
pub async fn lead(ctx: &WorkCtx, l: &Leadership, work: &LeaderWork) -> LossReason {
    // Claim: announce the token to the resource (raising max_token, which fences every
    // older leader from here on) and read where the sequence stands.
    let mut last_seq = loop {
        if ctx.resign_requested.swap(false, Ordering::SeqCst) {
            return LossReason::Resigned;
        }
        match write(ctx, l, WriteOp::Claim).await {
            Outcome::Written(s) => break s,
            Outcome::TimedOut => continue,
            Outcome::Fenced => return LossReason::Fenced,
            Outcome::NotActing => return l.loss_reason(),
        }
    };
    *work.leading.lock().unwrap() = Some(l.token);
    let clock = ctx.clock.as_ref();
    let tick_us = ctx.tick_interval_ms as i64 * 1000;
    let mut next_tick_us = clock.now_us();
    let mut tick_n = 0u64;
    loop {
        if !l.acting() {
            return l.loss_reason();
        }
        if ctx.resign_requested.swap(false, Ordering::SeqCst) {
            return LossReason::Resigned;
        }
        // The tick goes first when due: under load the sequencer's queue is never empty,
        // so after it the tick would wait for ever.
        if clock.now_us() >= next_tick_us {
            tick_n += 1;
            next_tick_us += tick_us;
            match write(ctx, l, WriteOp::Tick { n: tick_n }).await {
                Outcome::Fenced => return LossReason::Fenced,
                Outcome::NotActing => return l.loss_reason(),
                _ => continue,
            }
        }
        let batch = work.take();
        if !batch.is_empty() {
            let count: u64 = batch.iter().map(|q| q.count).sum();
            let (first, last) = (last_seq + 1, last_seq + count);
            let outcome = write(ctx, l, WriteOp::Seq { first, last }).await;
            // A timed-out write may still land: skip its numbers rather than risk
            // handing them out twice. Gaps are allowed; reuse is not.
            if matches!(outcome, Outcome::Written(..) | Outcome::TimedOut) {
                last_seq = last;
            }
            let mut next = first;
            for q in batch {
                let reply = match outcome {
                    Outcome::Written(..) => {
                        let r = NextReply::Ok {
                            token: l.token,
                            first: next,
                            last: next + q.count - 1,
                        };
                        next += q.count;
                        r
                    }
                    Outcome::TimedOut => NextReply::Unavailable,
                    Outcome::Fenced | Outcome::NotActing => NextReply::NotLeader,
                };
                let _ = q.reply.send(reply);
            }
            match outcome {
                Outcome::Fenced => return LossReason::Fenced,
                Outcome::NotActing => return l.loss_reason(),
                _ => continue,
            }
        }
        tokio::select! {
            biased;
            _ = l.lost() => {}
            _ = ctx.resign_notify.notified() => {}
            _ = work.queued.notified() => {}
            _ = sleep_until_local(clock, next_tick_us) => {}
        }
    }
}

/// One protected write: check the lease, then send. An armed `before-write` pause
/// strikes between the two, which is where a real GC pause does its damage.
async fn write(ctx: &WorkCtx, l: &Leadership, op: WriteOp) -> Outcome {
    if !l.acting_with_margin(ctx.write_margin_ms as i64 * 1000) {
        return Outcome::NotActing;
    }
    strike_armed_pause(ctx);
    ctx.log.record(Event::WriteAttempted {
        node: ctx.node.clone(),
        token: l.token,
        op,
    });
    let req = FencedWrite {
        node: ctx.node.clone(),
        token: l.token,
        op,
    };
    let send = async {
        let resp = ctx.http.post(&ctx.resource_url).json(&req).send().await?;
        resp.error_for_status()?.json::<WriteReply>().await
    };
    let bound = Duration::from_millis(ctx.resource_timeout_ms);
    let sent = tokio::time::Instant::now();
    let reply = match tokio::time::timeout(bound, send).await {
        Ok(Ok(reply)) => reply,
        Ok(Err(_)) | Err(_) => {
            ctx.pacer.failed(sent).await;
            return Outcome::TimedOut;
        }
    };
    ctx.pacer.succeeded();
    match reply {
        WriteReply::Accepted { last_seq, .. } => Outcome::Written(last_seq),
        WriteReply::Rejected { .. } => {
            ctx.metrics.fencing_rejections.inc();
            Outcome::Fenced
        }
        // Only a late batch is behind the row, and nobody waits for its answer.
        WriteReply::Behind { .. } => Outcome::TimedOut,
    }
}

/// If a `before-write` pause is armed, stop the world now: log it, then SIGSTOP this
/// whole process (every thread, keepalive included). The supervisor sees the process
/// stopped, waits out the pause and sends SIGCONT; execution resumes right here, and the
/// write goes out with the token checked before the pause.
fn strike_armed_pause(ctx: &WorkCtx) {
    let Some(index) = ctx.pause_armed.lock().unwrap().take() else {
        return;
    };
    ctx.log.record(Event::FaultApplied {
        index,
        kind: baton_model::fault::FaultKind::Pause,
        target: ctx.node.to_string(),
    });
    ctx.log.record(Event::NodePaused {
        node: ctx.node.clone(),
    });
    // SAFETY: plain syscalls on this process.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGSTOP);
    }
}
