//! The singleton work a leader does: a scheduler tick and a sequencer, every write fenced.
//!
//! One task does all of a leader's protected writes, one at a time, so that when it
//! returns no write it sent is still awaiting an answer: the node can then release
//! leadership knowing it has stopped. A write that timed out may still be in the network
//! and land later; nothing but the fence at the resource can stop that one.
//!
//! Sequencer requests are batched: each batch is one fenced write of the `sequence` row
//! (`last_seq` advanced by the batch size), and only once the resource accepted it are
//! the numbers handed out.
//!
//! A protocol with its own replicated log (raft with `sequencer = "log"`) takes the batches
//! instead: each is a log entry, the state machine assigns its numbers, and they are
//! handed out once it is committed. The claim and the ticks still go to the resource.

use crate::world::net::Endpoint;
use crate::world::node::control::NodeControl;
use crate::world::node::env::NodeEnv;
use crate::world::node::transfer::{self, Handover, Preparing};
use crate::world::rpc::{
    call, FencedWrite, NextAnswers, NextBatch, NextReply, WriteReply, RESOURCE_ADDR,
};
use crate::world::timeline::{Event, WriteOp};
use baton_model::scenario::StepOnStop;
use baton_model::NodeId;
use baton_protocols::sleep_until_local;
use baton_protocols::{Clock, Elector, Leadership, LossReason, ReplicatedLog};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// A client batch of `next` requests waiting for the leader's next write.
pub(super) struct Queued {
    /// Who sent it.
    from: SocketAddr,
    /// The client's id for it.
    batch: u64,
    /// Requests in it.
    pub(super) count: u64,
}

/// The sequencer's queue and the node's answer for followers.
pub struct LeaderWork {
    /// The node's endpoint, to answer clients.
    ep: Endpoint,
    /// `Some(token)` while this node leads and accepts `next`.
    leading: Mutex<Option<u64>>,
    /// Waiting `next` batches, in arrival order.
    queue: Mutex<Vec<Queued>>,
    /// Wakes the leader when a batch is queued.
    pub(super) queued: Notify,
    /// Who this node last saw leading, for `NotLeader` hints.
    pub hint: Mutex<Option<NodeId>>,
}

impl LeaderWork {
    /// The work of the node whose endpoint is `ep`.
    pub fn new(ep: Endpoint) -> Self {
        LeaderWork {
            ep,
            leading: Mutex::new(None),
            queue: Mutex::new(vec![]),
            queued: Notify::new(),
            hint: Mutex::new(None),
        }
    }

    /// Serves one client batch of `next`: queue it for the leader's next write, or say
    /// who leads.
    pub fn handle_next(&self, b: NextBatch, from: SocketAddr) {
        if self.leading.lock().unwrap().is_none() {
            let hint = self.hint.lock().unwrap().clone();
            let reply = NextReply::NotLeader { hint };
            self.ep.send(from, NextAnswers(vec![(b.batch, reply)]));
            return;
        }
        self.queue.lock().unwrap().push(Queued {
            from,
            batch: b.batch,
            count: b.count,
        });
        self.queued.notify_waiters();
    }

    /// Accepts `next` from now on, for the leader of `token`.
    pub(super) fn lead(&self, token: u64) {
        *self.leading.lock().unwrap() = Some(token);
    }

    pub(super) fn take(&self) -> Vec<Queued> {
        std::mem::take(&mut *self.queue.lock().unwrap())
    }

    /// Answers `batches` (in queue order): one message to each sender, each batch with
    /// the reply `reply_for` gives it.
    pub(super) fn answer(
        &self,
        batches: Vec<Queued>,
        mut reply_for: impl FnMut(&Queued) -> NextReply,
    ) {
        let mut to: Vec<(SocketAddr, Vec<(u64, NextReply)>)> = vec![];
        for q in &batches {
            let reply = reply_for(q);
            match to.iter_mut().find(|(a, _)| *a == q.from) {
                Some((_, answers)) => answers.push((q.batch, reply)),
                None => to.push((q.from, vec![(q.batch, reply)])),
            }
        }
        for (addr, answers) in to {
            self.ep.send(addr, NextAnswers(answers));
        }
    }

    /// Stops accepting `next` and turns the queued ones away.
    pub fn stop_leading(&self) {
        *self.leading.lock().unwrap() = None;
        let queued = self.take();
        self.answer(queued, |_| NextReply::NotLeader { hint: None });
    }
}

#[derive(Clone, Copy)]
pub(super) enum Outcome {
    /// Accepted: `sequence.last_seq` and the job's cursor after the write.
    Written(u64, u64),
    TimedOut,
    Fenced,
    NotActing,
}

/// The job step a leader is working on.
struct Step {
    segment: u64,
    started_us: i64,
    /// When it is done, on the node's clock.
    ends_us: i64,
}

/// The leader's share of the job (`[work.job]`): where the cursor stands and the step
/// in progress.
struct Job {
    cfg: baton_model::scenario::JobConfig,
    cursor: u64,
    step: Option<Step>,
    rng: rand_chacha::ChaCha8Rng,
}

impl Job {
    /// Starts the next step if none is in progress; returns when it ends (node clock).
    fn ensure_step(&mut self, ctl: &NodeControl, env: &NodeEnv, token: u64) -> i64 {
        use rand::Rng;
        if let Some(s) = &self.step {
            return s.ends_us;
        }
        let len_ms = self
            .rng
            .gen_range(self.cfg.step_ms_min..=self.cfg.step_ms_max);
        let now = ctl.clock.now_us();
        env.timeline.record(Event::JobStepStarted {
            node: ctl.name.clone(),
            token,
            segment: self.cursor,
        });
        let ends_us = now + len_ms as i64 * 1000;
        self.step = Some(Step {
            segment: self.cursor,
            started_us: now,
            ends_us,
        });
        ends_us
    }

    /// Gives the step in progress up (the node stops leading).
    fn abandon(&mut self, ctl: &NodeControl, env: &NodeEnv, token: u64) {
        if let Some(s) = self.step.take() {
            env.timeline.record(Event::JobStepAbandoned {
                node: ctl.name.clone(),
                token,
                segment: s.segment,
                elapsed_ms: ((ctl.clock.now_us() - s.started_us).max(0) / 1000) as u64,
            });
        }
    }

    /// The step in progress finished its work: record it and take it off the job.
    fn finish(&mut self, ctl: &NodeControl, env: &NodeEnv, token: u64) -> Option<u64> {
        let s = self.step.take()?;
        env.timeline.record(Event::JobStepDone {
            node: ctl.name.clone(),
            token,
            segment: s.segment,
            elapsed_ms: ((ctl.clock.now_us() - s.started_us).max(0) / 1000) as u64,
        });
        Some(s.segment)
    }
}

/// Does the leader's work until it must stop; returns why it stopped.
///
/// With `seq_log` (raft with `sequencer = "log"`) the sequencer's batches are committed
/// through the protocol's replicated log instead of written to the resource; the claim
/// and the scheduler ticks still go to the resource. With a job (`[work.job]`), a step in
/// progress when the leader must stop is abandoned before this returns, so the node
/// releases leadership only once it has stopped the step (the `release-before-stop`
/// canary releases first, through `elector`, and finishes the step after). A leader
/// asked to transfer (see [`crate::world::node::transfer`]) stops with [`LossReason::Transferred`]
/// and returns what it hands over.
pub async fn lead(
    ctl: &Arc<NodeControl>,
    env: &NodeEnv,
    ep: &Endpoint,
    l: &Leadership,
    work: &LeaderWork,
    seq_log: Option<&dyn ReplicatedLog>,
    elector: &Arc<dyn Elector>,
) -> (LossReason, Option<Handover>) {
    let (last_seq, cursor) = match claim(ctl, env, ep, l).await {
        Ok(claimed) => claimed,
        Err(reason) => return (reason, None),
    };
    let job = env.job.clone().map(|cfg| Job {
        cfg,
        cursor,
        step: None,
        rng: baton_model::seed::fork(env.seed, &format!("job/{}/{}", ctl.name, l.token)),
    });
    work.lead(l.token);
    let mut term = Term {
        ctl,
        env,
        ep,
        l,
        work,
        seq_log,
        elector,
        job,
        last_seq,
        next_tick_us: ctl.clock.now_us(),
        tick_n: 0,
        transfer: None,
        cursor,
    };
    let reason = if l.drains_writes_before_release() {
        term.work().await
    } else {
        // The release-in-flight canary: a resign ends the leader's work at once, dropping
        // its wait for the write in flight, which the network still delivers later.
        tokio::select! {
            // Biased: polling in written order keeps runs deterministic.
            biased;
            _ = ctl.resign_asked() => LossReason::Resigned,
            reason = term.work() => reason,
        }
    };
    let handover = (reason == LossReason::Transferred)
        .then(|| term.transfer.take())
        .flatten()
        .map(|p| Handover {
            to: p.to,
            cursor: term.job.as_ref().map_or(term.cursor, |j| j.cursor),
        });
    if let Some(j) = term.job.as_mut() {
        match j.cfg.on_stop {
            // Stop the step before the node releases leadership.
            StepOnStop::AbandonStep => j.abandon(ctl, env, l.token),
            // The bug: a stop hook that finishes the step and checkpoints it, with no
            // look at the leadership it has lost.
            StepOnStop::FinishStep => {
                if let Some(ends_us) = j.step.as_ref().map(|s| s.ends_us) {
                    sleep_until_local(&ctl.clock, ends_us).await;
                    if let Some(segment) = j.finish(ctl, env, l.token) {
                        send_write(ctl, env, ep, l, WriteOp::Checkpoint { segment }).await;
                    }
                }
            }
        }
    }
    (reason, handover)
}

/// Claim: announce the token to the resource (raising max_token, which fences every
/// older leader from here on) and read where the sequence and the job's cursor stand.
/// Returns `sequence.last_seq` and the cursor, or why the leader must stop instead.
async fn claim(
    ctl: &Arc<NodeControl>,
    env: &NodeEnv,
    ep: &Endpoint,
    l: &Leadership,
) -> Result<(u64, u64), LossReason> {
    loop {
        if ctl.resign_requested.swap(false, Ordering::SeqCst) {
            return Err(LossReason::Resigned);
        }
        match write(ctl, env, ep, l, WriteOp::Claim).await {
            Outcome::Written(s, c) => return Ok((s, c)),
            Outcome::TimedOut => continue,
            Outcome::Fenced => return Err(LossReason::Fenced),
            Outcome::NotActing => return Err(l.loss_reason()),
        }
    }
}

/// What one kind of a leader's work tells its loop.
enum Turn {
    /// Nothing of this kind was due: go on to the next kind.
    Idle,
    /// It made a write: look at everything again from the top.
    Again,
    /// The leader must stop, for this reason.
    Stop(LossReason),
}

/// A leader's term once its claim is accepted: what its loop reads, and the state it
/// carries from one write to the next.
struct Term<'a> {
    ctl: &'a Arc<NodeControl>,
    env: &'a NodeEnv,
    ep: &'a Endpoint,
    l: &'a Leadership,
    work: &'a LeaderWork,
    seq_log: Option<&'a dyn ReplicatedLog>,
    elector: &'a Arc<dyn Elector>,
    job: Option<Job>,
    /// `sequence.last_seq` as this leader last wrote it (the resource's sequencer).
    last_seq: u64,
    /// When the next scheduler tick is due, on the node's clock.
    next_tick_us: i64,
    /// The last scheduler tick's number.
    tick_n: u64,
    /// A transfer the leader prepares while it works.
    transfer: Option<Preparing>,
    /// The job's cursor as the claim read it (what a leader without a job publishes).
    cursor: u64,
}

impl Term<'_> {
    /// The leader's loop: one write at a time, until the leader must stop; returns why.
    async fn work(&mut self) -> LossReason {
        loop {
            if !self.l.acting() {
                return self.l.loss_reason();
            }
            if self.ctl.resign_requested.swap(false, Ordering::SeqCst) {
                self.resign().await;
                return LossReason::Resigned;
            }
            if self.transfer_done() {
                return LossReason::Transferred;
            }
            // The scheduler's tick and the job's checkpoint come first when due: they are
            // rare, and under load the sequencer's queue is never empty, so after it they
            // would wait for ever.
            match self.tick().await {
                Turn::Idle => {}
                Turn::Again => continue,
                Turn::Stop(reason) => return reason,
            }
            // The job: a step's work runs while the leader also serves the load; when it
            // is done, its checkpoint is the leader's next write.
            let (ctl, env, token) = (self.ctl, self.env, self.l.token);
            // A leader preparing a transfer starts no new step: the one in progress
            // checkpoints the cursor it hands over.
            let step_ends_us = match self.transfer {
                None => self.job.as_mut().map(|j| j.ensure_step(ctl, env, token)),
                Some(_) => self
                    .job
                    .as_ref()
                    .and_then(|j| j.step.as_ref())
                    .map(|s| s.ends_us),
            };
            match self.checkpoint(step_ends_us).await {
                Turn::Idle => {}
                Turn::Again => continue,
                Turn::Stop(reason) => return reason,
            }
            match self.sequence().await {
                Turn::Idle => {}
                Turn::Again => continue,
                Turn::Stop(reason) => return reason,
            }
            self.wait(step_ends_us).await;
        }
    }

    /// Takes up a transfer the world asked for, and says whether one is ready to hand
    /// over: the backend ready and no job step in progress (its checkpoint published the
    /// cursor). An aborted transfer is recorded and dropped: the leader leads on.
    fn transfer_done(&mut self) -> bool {
        if let Some(to) = self.ctl.transfer_to.lock().unwrap().take() {
            if self.transfer.is_none() {
                let p = transfer::prepare(self.ctl, self.ep, self.elector, self.l, to);
                self.transfer = Some(p);
            }
        }
        let Some(p) = &self.transfer else {
            return false;
        };
        match p.next() {
            transfer::Next::Work => false,
            transfer::Next::Stop => self.job.as_ref().is_none_or(|j| j.step.is_none()),
            transfer::Next::Abort(reason) => {
                self.env.timeline.record(Event::TransferAborted {
                    node: self.ctl.name.clone(),
                    token: self.l.token,
                    to: p.to.clone(),
                    reason,
                });
                self.transfer = None;
                false
            }
        }
    }

    /// A resign was requested. An honest leader just stops; the `release-before-stop`
    /// canary gives leadership up first, then finishes the job's step.
    async fn resign(&mut self) {
        let (ctl, env, ep, l) = (self.ctl, self.env, self.ep, self.l);
        if let Some(j) = self
            .job
            .as_mut()
            .filter(|j| j.cfg.canary == baton_model::scenario::JobCanary::ReleaseBeforeStop)
        {
            // The canary: give leadership up first, then finish the step.
            env.timeline.record(Event::Released {
                node: ctl.name.clone(),
                token: l.token,
            });
            let _ = self.elector.resign(l).await;
            if let Some(ends_us) = j.step.as_ref().map(|s| s.ends_us) {
                sleep_until_local(&ctl.clock, ends_us).await;
                if let Some(segment) = j.finish(ctl, env, l.token) {
                    let _ = write(ctl, env, ep, l, WriteOp::Checkpoint { segment }).await;
                }
            }
        }
    }

    /// The scheduler's tick, when it is due.
    async fn tick(&mut self) -> Turn {
        if self.ctl.clock.now_us() < self.next_tick_us {
            return Turn::Idle;
        }
        self.tick_n += 1;
        self.next_tick_us += self.env.tick_interval_ms as i64 * 1000;
        let op = WriteOp::Tick { n: self.tick_n };
        match write(self.ctl, self.env, self.ep, self.l, op).await {
            Outcome::Fenced => Turn::Stop(LossReason::Fenced),
            Outcome::NotActing => Turn::Stop(self.l.loss_reason()),
            _ => Turn::Again,
        }
    }

    /// The job's checkpoint, once the step in progress (ending at `step_ends_us`) is done.
    async fn checkpoint(&mut self, step_ends_us: Option<i64>) -> Turn {
        let (ctl, env, ep, l) = (self.ctl, self.env, self.ep, self.l);
        let (Some(j), Some(ends_us)) = (self.job.as_mut(), step_ends_us) else {
            return Turn::Idle;
        };
        if ctl.clock.now_us() < ends_us {
            return Turn::Idle;
        }
        let segment = j.finish(ctl, env, l.token).expect("a step was in progress");
        match write(ctl, env, ep, l, WriteOp::Checkpoint { segment }).await {
            Outcome::Written(_, cursor) => j.cursor = cursor,
            // It may still land: doing the segment again is safe, skipping is not.
            Outcome::TimedOut => {}
            Outcome::Fenced => return Turn::Stop(LossReason::Fenced),
            Outcome::NotActing => return Turn::Stop(l.loss_reason()),
        }
        Turn::Again
    }

    /// The sequencer: every queued batch in one write, then each request its answer.
    async fn sequence(&mut self) -> Turn {
        let batch = self.work.take();
        if batch.is_empty() {
            return Turn::Idle;
        }
        let count = batch.iter().map(|q| q.count).sum();
        let (first, outcome) = match self.seq_log {
            Some(log) => commit(self.ctl, self.env, self.l, log, count).await,
            None => self.write_batch(count).await,
        };
        // Each request gets its own number, in queue order.
        let token = self.l.token;
        let mut next = first;
        self.work.answer(batch, |q| match outcome {
            Outcome::Written(..) => {
                let (first, last) = (next, next + q.count - 1);
                next += q.count;
                NextReply::Ok { token, first, last }
            }
            Outcome::TimedOut => NextReply::Unavailable,
            Outcome::Fenced | Outcome::NotActing => NextReply::NotLeader { hint: None },
        });
        match outcome {
            Outcome::Fenced => Turn::Stop(LossReason::Fenced),
            Outcome::NotActing => Turn::Stop(self.l.loss_reason()),
            _ => Turn::Again,
        }
    }

    /// One sequencer batch of `count` numbers written to the resource's `sequence` row.
    /// Returns the batch's first number and the write's outcome.
    async fn write_batch(&mut self, count: u64) -> (u64, Outcome) {
        let (first, last) = (self.last_seq + 1, self.last_seq + count);
        let op = WriteOp::Seq { first, last };
        let outcome = write(self.ctl, self.env, self.ep, self.l, op).await;
        // A timed-out write may still have landed: skip its numbers rather
        // than risk handing them out twice. Gaps are allowed; reuse is not.
        if matches!(outcome, Outcome::Written(..) | Outcome::TimedOut) {
            self.last_seq = last;
        }
        (first, outcome)
    }

    /// Waits for the next thing to do: leadership lost, a resign or transfer asked, a
    /// queued batch, the tick's time, the end of the job's step (at `step_ends_us`) or a
    /// transfer's preparation settled.
    async fn wait(&self, step_ends_us: Option<i64>) {
        let clock = &self.ctl.clock;
        let step_end = async {
            match step_ends_us {
                Some(t) => sleep_until_local(clock, t).await,
                None => futures::future::pending::<()>().await,
            }
        };
        // Only a preparation still running can wake the leader; once ready, it waits
        // for its step's end like any other wait.
        let transfer_settled = async {
            match &self.transfer {
                Some(p) if matches!(p.next(), transfer::Next::Work) => p.settled().await,
                _ => futures::future::pending::<()>().await,
            }
        };
        tokio::select! {
            // Biased: tokio would otherwise pick among ready branches with its own RNG, which
            // madsim does not seed; polling in written order keeps runs deterministic.
            biased;
            _ = self.l.lost() => {}
            _ = self.ctl.resign_notify.notified() => {}
            _ = self.work.queued.notified() => {}
            _ = sleep_until_local(clock, self.next_tick_us) => {}
            _ = step_end => {}
            _ = transfer_settled => {}
        }
    }
}

/// One protected write: check the lease, then send. A pause armed by the scenario strikes
/// between the two, which is where a real GC pause does its damage.
pub(super) async fn write(
    ctl: &Arc<NodeControl>,
    env: &NodeEnv,
    ep: &Endpoint,
    l: &Leadership,
    op: WriteOp,
) -> Outcome {
    if !l.acting() {
        return Outcome::NotActing;
    }
    strike_armed_pause(ctl, env).await;
    send_write(ctl, env, ep, l, op).await
}

/// Sends one protected write under `l`'s token, whether or not `l` still holds: the
/// write itself, after [`write`]'s check (or, for a stop hook, with none).
async fn send_write(
    ctl: &Arc<NodeControl>,
    env: &NodeEnv,
    ep: &Endpoint,
    l: &Leadership,
    op: WriteOp,
) -> Outcome {
    env.timeline.record(Event::WriteAttempted {
        node: ctl.name.clone(),
        token: l.token,
        op,
    });
    let req = FencedWrite {
        partition: None,
        node: ctl.name.clone(),
        token: l.token,
        op,
    };
    let reply = match call(ep, RESOURCE_ADDR, req, env.resource_timeout_ms).await {
        // The combination canary's planted bug: write once more under the resource's
        // max_token. Honest leaderships never retry a rejected write.
        Ok(WriteReply::Rejected { max_token }) => match l.retry_token_after_rejection(max_token) {
            Some(token) => {
                env.timeline.record(Event::WriteAttempted {
                    node: ctl.name.clone(),
                    token,
                    op,
                });
                let retry = FencedWrite {
                    partition: None,
                    node: ctl.name.clone(),
                    token,
                    op,
                };
                call(ep, RESOURCE_ADDR, retry, env.resource_timeout_ms).await
            }
            None => Ok(WriteReply::Rejected { max_token }),
        },
        other => other,
    };
    match reply {
        Ok(WriteReply::Accepted { last_seq, cursor }) => Outcome::Written(last_seq, cursor),
        Ok(WriteReply::Rejected { .. }) => Outcome::Fenced,
        // Only a late batch is behind the row, and nobody waits for its answer; were one
        // awaited, its numbers are skipped as a timed-out batch's are.
        Ok(WriteReply::Behind { .. }) => Outcome::TimedOut,
        Err(_) => Outcome::TimedOut,
    }
}

/// One sequencer batch of `count` numbers through the replicated log: check the lease,
/// then propose. Returns the batch's first number (0 unless written) and the outcome,
/// `Written(last)` once committed. The numbers are the state machine's, assigned in log
/// order; a batch that timed out may still commit later, and then its numbers are simply
/// never handed out. An entry proposed by a deposed leader never commits: the log is its
/// own fence, so a refusal is reported as `Fenced`.
async fn commit(
    ctl: &Arc<NodeControl>,
    env: &NodeEnv,
    l: &Leadership,
    log: &dyn ReplicatedLog,
    count: u64,
) -> (u64, Outcome) {
    if !l.acting() {
        return (0, Outcome::NotActing);
    }
    // The batch's numbers are known only once applied: the log records the effect
    // (`BatchCommitted`), so there is no attempt to record here.
    strike_armed_pause(ctl, env).await;
    let bound = std::time::Duration::from_millis(env.resource_timeout_ms);
    match madsim::time::timeout(bound, log.advance(l.token, count)).await {
        Ok(Ok((first, last))) => {
            env.timeline.record(Event::BatchHandedOut {
                node: ctl.name.clone(),
                token: l.token,
                first,
                last,
            });
            (first, Outcome::Written(last, 0))
        }
        Ok(Err(_)) => {
            env.timeline.record(Event::BatchRefused {
                node: ctl.name.clone(),
                token: l.token,
            });
            (0, Outcome::Fenced)
        }
        Err(_) => (0, Outcome::TimedOut),
    }
}

/// If a `point = "before-write"` pause is armed on this node, stop the world now: pause
/// this madsim node (every task on it, keepalive included) and have the chaos node
/// resume it after the pause's duration.
async fn strike_armed_pause(ctl: &Arc<NodeControl>, env: &NodeEnv) {
    let Some((index, duration_ms)) = ctl.pause_armed.lock().unwrap().take() else {
        return;
    };
    let chaos = *env.chaos_node.get().expect("chaos node set at build");
    let timeline = env.timeline.clone();
    let name = ctl.name.clone();
    timeline.record(Event::FaultApplied {
        index,
        kind: baton_model::fault::FaultKind::Pause,
        target: name.to_string(),
    });
    timeline.record(Event::NodePaused { node: name.clone() });
    let held = ctl.hold();
    let ctl2 = ctl.clone();
    madsim::runtime::Handle::current()
        .get_node(chaos)
        .expect("chaos node exists")
        .spawn(async move {
            madsim::time::sleep(std::time::Duration::from_millis(duration_ms)).await;
            if let Some(incarnation) = held {
                ctl2.release(incarnation);
            }
            timeline.record(Event::NodeResumed { node: name.clone() });
            timeline.record(Event::FaultHealed {
                index,
                kind: baton_model::fault::FaultKind::Pause,
                target: name.to_string(),
            });
        });
    // The next poll of this task finds its node paused and parks it until the resume.
    madsim::task::yield_now().await;
}
