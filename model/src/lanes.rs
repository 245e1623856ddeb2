//! Per-node lanes: who believed it led, with which token, and when; what the resource did
//! with its writes; what hit it. The data behind the lanes of `leaders_acting.svg` and
//! `timeline.html`.
//!
//! A [`LaneBuilder`] reads a run's timeline one event at a time, as the checkers do, and
//! [`LaneBuilder::finish`] returns [`Lanes`]: a pure function of the events (plus the
//! scenario's clock-fault values, which the events name only by index), with no
//! dependence on the simulated world, so that a timeline from anywhere draws the same way.
//!
//! What it keeps stays bounded however long the run: accepted writes are counted in
//! buckets of a fixed width (about 1/2000 of the run) per node and token, and other events
//! are kept up to a cap per kind, with what was left out counted, so a page can say so.
//! Everything is kept in timeline order or in `BTreeMap`s: identical events give identical
//! lanes.

use crate::clock_model::Skew;
use crate::timeline::{Entry, Event, Role, WriteOp};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

/// How many buckets of accepted writes a run is cut into (per node and token).
pub const WRITE_BUCKETS_PER_RUN: i64 = 2000;
/// The most events of one kind kept for drawing; later ones are counted in
/// [`Lanes::capped`].
pub const MAX_EVENTS_PER_KIND: usize = 2000;
/// The most windows, marks or rejections kept.
pub const MAX_ITEMS: usize = 20_000;
/// The service lanes, in the order they are shown after the nodes (each only when
/// something hit it).
pub const SERVICE_LANES: [&str; 3] = ["backend", "resource", "client"];

/// A clock fault's value, by its index in the scenario's faults (the timeline names a
/// fault by index only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockChange {
    /// The clock is set this far ahead of global time.
    OffsetMs(i64),
    /// The clock runs this many parts per million fast from now on.
    DriftPpm(i64),
    /// The clock jumps by this much.
    StepMs(i64),
}

impl ClockChange {
    /// A short label: `offset +200 ms`, `drift -400000 ppm`, `step -300 ms`.
    pub fn label(&self) -> String {
        match self {
            ClockChange::OffsetMs(v) => format!("offset {v:+} ms"),
            ClockChange::DriftPpm(v) => format!("drift {v:+} ppm"),
            ClockChange::StepMs(v) => format!("step {v:+} ms"),
        }
    }
}

/// Where leadership was believed: one node, one token, from its win to its loss.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Span {
    /// Index into [`Lanes::lanes`].
    pub lane: usize,
    /// The fencing token it won with.
    pub token: Option<u64>,
    /// When it came to believe it led (global µs).
    pub from_us: i64,
    /// When it stopped believing (or the run ended).
    pub to_us: i64,
    /// What ended it: the new role (`follower`, `candidate`), `killed`, `new token`, or
    /// `run ended`.
    pub end: String,
    /// When it stopped its protected writes, if it said so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_us: Option<i64>,
    /// Why it stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// A stretch of time a lane spent in a faulty state.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Window {
    /// Index into [`Lanes::lanes`].
    pub lane: usize,
    /// `down` (killed, until restarted), `pause` (a scripted stop-the-world), `gc-pause`
    /// (background GC noise), `partition` or `slow-link`.
    pub kind: String,
    /// When it began (global µs).
    pub from_us: i64,
    /// When it ended, or the run's end.
    pub to_us: i64,
    /// True when it had not ended by the run's end.
    pub open_at_end: bool,
    /// What the fault said it hit (`n1<->backend`), or the node.
    pub label: String,
    /// The scripted fault's index, when a fault caused it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<usize>,
}

/// Something that hit a lane at one instant: a kill, a restart, a resignation, a clock
/// fault.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mark {
    /// Index into [`Lanes::lanes`].
    pub lane: usize,
    /// `kill`, `restart`, `resign`, `clock-offset`, `clock-drift` or `clock-step`.
    pub kind: String,
    /// When (global µs).
    pub at_us: i64,
    /// What to print beside it (`drift -400000 ppm`).
    pub label: String,
    /// The scripted fault's index, when a fault caused it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<usize>,
}

/// Counts of accepted writes by what they wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpCounts {
    /// A new leader's claim.
    pub claim: u32,
    /// Scheduler ticks.
    pub tick: u32,
    /// Sequencer batches (at the resource, or committed in a Raft log).
    pub seq: u32,
    /// Job checkpoints.
    pub checkpoint: u32,
}

/// Accepted writes of one node under one token in one bucket of time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WriteBucket {
    /// Index into [`Lanes::lanes`].
    pub lane: usize,
    /// The token the writes carried.
    pub token: u64,
    /// The first write's time (global µs).
    pub from_us: i64,
    /// The last write's time.
    pub to_us: i64,
    /// How many writes.
    pub count: u32,
    /// What they wrote.
    pub ops: OpCounts,
    /// The lowest and highest sequence numbers handed out, if any batch was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<(u64, u64)>,
}

/// A write the resource (or the Raft log) refused.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rejection {
    /// Index into [`Lanes::lanes`].
    pub lane: usize,
    /// When (global µs).
    pub at_us: i64,
    /// `write_rejected` (a token below `max_token`), `batch_refused` (the log refused a
    /// deposed leader's batch) or `seq_refused` (a late batch below the row's `last_seq`).
    pub kind: String,
    /// The token the write carried.
    pub token: u64,
    /// The highest token accepted before it (`write_rejected` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_token: Option<u64>,
    /// What it tried to write.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<WriteOp>,
    /// More, for a person (`batch 10..20 below last_seq 25`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// Any other event, drawn as a dot on its lane (when it has one).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LaneEvent {
    /// Index into [`Lanes::lanes`]; `None` when the event names no node (a skipped fault).
    pub lane: Option<usize>,
    /// The event as `timeline.jsonl` writes it.
    #[serde(flatten)]
    pub entry: Entry,
}

/// One clock's offset from global time over the run: straight lines between points.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClockSeries {
    /// Index into [`Lanes::lanes`].
    pub lane: usize,
    /// `(at_us, offset_us)`: at each change, the offset just before and just after, then
    /// the offset at the run's end.
    pub points: Vec<(i64, i64)>,
}

/// Everything the lanes show.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Lanes {
    /// When the run stopped (global µs).
    pub end_us: i64,
    /// The lanes' names: every node, then `backend`, `resource`, `client` when something
    /// hit them.
    pub lanes: Vec<String>,
    /// Leadership by belief, in order of the wins.
    pub spans: Vec<Span>,
    /// Faulty stretches, in order of their starts.
    pub windows: Vec<Window>,
    /// Faults at an instant, in order.
    pub marks: Vec<Mark>,
    /// Fault windows that hit every lane (`network`), in order.
    pub global_windows: Vec<Window>,
    /// Accepted writes, bucketed, by lane then time.
    pub writes: Vec<WriteBucket>,
    /// How wide a write bucket is (µs).
    pub write_bucket_us: i64,
    /// Accepted writes in all.
    pub writes_accepted: u64,
    /// Refused writes, in order.
    pub rejections: Vec<Rejection>,
    /// Other events, in order, up to [`MAX_EVENTS_PER_KIND`] of each kind.
    pub events: Vec<LaneEvent>,
    /// Clocks a fault moved (empty when no clock was faulted).
    pub clocks: Vec<ClockSeries>,
    /// Events deliberately not drawn, by kind (their outcome is: `write_attempted` is
    /// drawn as its acceptance or rejection), with their counts.
    pub not_drawn: BTreeMap<String, u64>,
    /// Events beyond a cap, by kind, with how many were left out.
    pub capped: BTreeMap<String, u64>,
    /// Events read.
    pub events_read: u64,
}

impl Lanes {
    /// The index of a lane by name.
    pub fn lane(&self, name: &str) -> Option<usize> {
        self.lanes.iter().position(|l| l == name)
    }
}

/// Applies a clock fault to a clock's state, as the world applies it to the node's clock.
fn apply(s: &mut Skew, change: ClockChange, global_us: i64) {
    match change {
        ClockChange::OffsetMs(ms) => s.set_offset_ms(global_us, ms),
        ClockChange::StepMs(ms) => s.step_ms(global_us, ms),
        ClockChange::DriftPpm(ppm) => s.set_drift_ppm(global_us, ppm),
    }
}

/// Builds [`Lanes`] from a timeline read one event at a time. Items name their lane while
/// building; [`LaneBuilder::finish`] orders the lanes and turns names into indices.
pub struct LaneBuilder {
    nodes: Vec<String>,
    clock_changes: Vec<Option<ClockChange>>,
    bucket_us: i64,
    spans: Vec<(String, Span)>,
    open_span: BTreeMap<String, usize>,
    windows: Vec<(String, Window)>,
    /// Open windows by (lane, kind), oldest first.
    open_state: BTreeMap<(String, String), VecDeque<usize>>,
    /// Open fault windows by fault index, oldest application first (each application's
    /// windows: one per lane it hit).
    open_fault: BTreeMap<usize, VecDeque<Vec<usize>>>,
    global_windows: Vec<Window>,
    open_global: BTreeMap<usize, VecDeque<usize>>,
    marks: Vec<(String, Mark)>,
    writes: Vec<(String, WriteBucket)>,
    last_bucket: BTreeMap<String, usize>,
    writes_accepted: u64,
    rejections: Vec<(String, Rejection)>,
    events: Vec<(Option<String>, Entry)>,
    kept_by_kind: BTreeMap<String, usize>,
    clocks: BTreeMap<String, (Skew, Vec<(i64, i64)>)>,
    lease_holder: BTreeMap<i64, String>,
    token_holder: BTreeMap<u64, String>,
    not_drawn: BTreeMap<String, u64>,
    capped: BTreeMap<String, u64>,
    events_read: u64,
}

/// The event's kind as `timeline.jsonl` names it (`write_accepted`).
pub fn event_kind(e: &Event) -> &'static str {
    match e {
        Event::FaultApplied { .. } => "fault_applied",
        Event::FaultHealed { .. } => "fault_healed",
        Event::FaultSkipped { .. } => "fault_skipped",
        Event::CampaignStarted { .. } => "campaign_started",
        Event::CampaignFailed { .. } => "campaign_failed",
        Event::RoleChanged { .. } => "role_changed",
        Event::StoppedActing { .. } => "stopped_acting",
        Event::NodeKilled { .. } => "node_killed",
        Event::NodeRestarted { .. } => "node_restarted",
        Event::NodePaused { .. } => "node_paused",
        Event::NodeResumed { .. } => "node_resumed",
        Event::GcPaused { .. } => "gc_paused",
        Event::GcResumed { .. } => "gc_resumed",
        Event::JobStepStarted { .. } => "job_step_started",
        Event::JobStepDone { .. } => "job_step_done",
        Event::JobStepAbandoned { .. } => "job_step_abandoned",
        Event::Released { .. } => "released",
        Event::LeaseGranted { .. } => "lease_granted",
        Event::LeaseExpired { .. } => "lease_expired",
        Event::LeaseRevoked { .. } => "lease_revoked",
        Event::KeyDeleted { .. } => "key_deleted",
        Event::SeatVacated { .. } => "seat_vacated",
        Event::WriteAttempted { .. } => "write_attempted",
        Event::WriteAccepted { .. } => "write_accepted",
        Event::BatchCommitted { .. } => "batch_committed",
        Event::BatchHandedOut { .. } => "batch_handed_out",
        Event::BatchRefused { .. } => "batch_refused",
        Event::ReadServed { .. } => "read_served",
        Event::SeqRefused { .. } => "seq_refused",
        Event::WriteRejected { .. } => "write_rejected",
    }
}

/// The two ends of a link fault's target (`a<->b` or `a->b`).
fn link_ends(target: &str) -> Option<(&str, &str)> {
    target.split_once("<->").or_else(|| target.split_once("->"))
}

impl LaneBuilder {
    /// A builder for a run of `nodes` (their lanes come first, in this order) expected to
    /// last `duration_us`, whose clock faults, by index, set `clock_changes`.
    pub fn new(
        nodes: Vec<String>,
        duration_us: i64,
        clock_changes: Vec<Option<ClockChange>>,
    ) -> Self {
        LaneBuilder {
            nodes,
            clock_changes,
            bucket_us: (duration_us / WRITE_BUCKETS_PER_RUN).max(1000),
            spans: vec![],
            open_span: BTreeMap::new(),
            windows: vec![],
            open_state: BTreeMap::new(),
            open_fault: BTreeMap::new(),
            global_windows: vec![],
            open_global: BTreeMap::new(),
            marks: vec![],
            writes: vec![],
            last_bucket: BTreeMap::new(),
            writes_accepted: 0,
            rejections: vec![],
            events: vec![],
            kept_by_kind: BTreeMap::new(),
            clocks: BTreeMap::new(),
            lease_holder: BTreeMap::new(),
            token_holder: BTreeMap::new(),
            not_drawn: BTreeMap::new(),
            capped: BTreeMap::new(),
            events_read: 0,
        }
    }

    /// A builder for a run of `resolved`: its nodes, its length and its clock faults.
    pub fn for_scenario(resolved: &crate::scenario::Resolved) -> Self {
        use crate::fault::Fault;
        let clock_changes = resolved
            .faults
            .iter()
            .map(|f| match f.fault {
                Fault::ClockOffset { offset_ms, .. } => Some(ClockChange::OffsetMs(offset_ms)),
                Fault::ClockDrift { drift_ppm, .. } => Some(ClockChange::DriftPpm(drift_ppm)),
                Fault::ClockStep { step_ms, .. } => Some(ClockChange::StepMs(step_ms)),
                _ => None,
            })
            .collect();
        Self::new(
            resolved.node_names(),
            resolved.scenario.duration_ms as i64 * 1000,
            clock_changes,
        )
    }

    fn capped(&mut self, kind: &str) {
        *self.capped.entry(kind.to_string()).or_default() += 1;
    }

    fn open_window(
        &mut self,
        lane: &str,
        kind: &str,
        at_us: i64,
        label: &str,
        fault: Option<usize>,
    ) -> Option<usize> {
        if self.windows.len() >= MAX_ITEMS {
            self.capped(kind);
            return None;
        }
        let i = self.windows.len();
        self.windows.push((
            lane.to_string(),
            Window {
                lane: 0,
                kind: kind.to_string(),
                from_us: at_us,
                to_us: at_us,
                open_at_end: true,
                label: label.to_string(),
                fault,
            },
        ));
        Some(i)
    }

    fn close_window(&mut self, i: usize, at_us: i64) {
        let w = &mut self.windows[i].1;
        w.to_us = at_us;
        w.open_at_end = false;
    }

    /// A node state that opens with one event and closes with another (down, paused).
    fn open_state(&mut self, lane: &str, kind: &str, at_us: i64, label: &str) {
        if let Some(i) = self.open_window(lane, kind, at_us, label, None) {
            self.open_state
                .entry((lane.to_string(), kind.to_string()))
                .or_default()
                .push_back(i);
        }
    }

    fn close_state(&mut self, lane: &str, kind: &str, at_us: i64) {
        let key = (lane.to_string(), kind.to_string());
        if let Some(i) = self.open_state.get_mut(&key).and_then(VecDeque::pop_front) {
            self.close_window(i, at_us);
        }
    }

    fn mark(&mut self, lane: &str, kind: &str, at_us: i64, label: String, fault: Option<usize>) {
        if self.marks.len() >= MAX_ITEMS {
            self.capped(kind);
            return;
        }
        self.marks.push((
            lane.to_string(),
            Mark {
                lane: 0,
                kind: kind.to_string(),
                at_us,
                label,
                fault,
            },
        ));
    }

    fn close_span(&mut self, lane: &str, at_us: i64, end: &str) {
        if let Some(i) = self.open_span.remove(lane) {
            let s = &mut self.spans[i].1;
            s.to_us = at_us;
            s.end = end.to_string();
        }
    }

    fn accepted(&mut self, lane: &str, at_us: i64, token: u64, op: WriteOp) {
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

    fn keep_event(&mut self, lane: Option<String>, e: &Entry) {
        let kind = event_kind(&e.event);
        let kept = self.kept_by_kind.entry(kind.to_string()).or_default();
        if *kept >= MAX_EVENTS_PER_KIND {
            self.capped(kind);
            return;
        }
        *kept += 1;
        self.events.push((lane, e.clone()));
    }

    fn clock_fault(&mut self, lane: &str, index: usize, kind: &str, at_us: i64) {
        let change = self.clock_changes.get(index).copied().flatten();
        let label = change
            .map(|c| c.label())
            .unwrap_or_else(|| kind.to_string());
        self.mark(lane, kind, at_us, label, Some(index));
        if let Some(change) = change {
            let (state, points) = self
                .clocks
                .entry(lane.to_string())
                .or_insert((Skew::default(), vec![(0, 0)]));
            points.push((at_us, state.offset_at(at_us)));
            apply(state, change, at_us);
            points.push((at_us, state.offset_at(at_us)));
        }
    }

    fn fault_applied(&mut self, index: usize, kind: &str, target: &str, at_us: i64) {
        match kind {
            "kill" | "resign" => self.mark(target, kind, at_us, kind.to_string(), Some(index)),
            "clock-offset" | "clock-drift" | "clock-step" => {
                self.clock_fault(target, index, kind, at_us)
            }
            "partition" | "slow-link" => {
                let Some((a, b)) = link_ends(target) else {
                    return;
                };
                let mut opened = vec![];
                for end in [a, b] {
                    if let Some(i) = self.open_window(end, kind, at_us, target, Some(index)) {
                        opened.push(i);
                    }
                }
                self.open_fault.entry(index).or_default().push_back(opened);
            }
            "network" => {
                if self.global_windows.len() < MAX_ITEMS {
                    self.open_global
                        .entry(index)
                        .or_default()
                        .push_back(self.global_windows.len());
                    self.global_windows.push(Window {
                        lane: 0,
                        kind: kind.to_string(),
                        from_us: at_us,
                        to_us: at_us,
                        open_at_end: true,
                        label: "every message".into(),
                        fault: Some(index),
                    });
                } else {
                    self.capped(kind);
                }
            }
            // A pause is drawn from the node's own `node_paused` (an armed pause strikes
            // later than its fault fires), a restart from `node_restarted`, and a heal by
            // the windows it closes.
            _ => {}
        }
    }

    fn fault_healed(&mut self, index: usize, at_us: i64) {
        if let Some(opened) = self
            .open_fault
            .get_mut(&index)
            .and_then(VecDeque::pop_front)
        {
            for i in opened {
                self.close_window(i, at_us);
            }
        }
        if let Some(i) = self
            .open_global
            .get_mut(&index)
            .and_then(VecDeque::pop_front)
        {
            let w = &mut self.global_windows[i];
            w.to_us = at_us;
            w.open_at_end = false;
        }
    }

    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        self.events_read += 1;
        let at = e.at_us;
        match &e.event {
            Event::FaultApplied {
                index,
                kind,
                target,
            } => self.fault_applied(*index, kind, target, at),
            Event::FaultHealed { index, .. } => self.fault_healed(*index, at),
            Event::FaultSkipped { .. } => self.keep_event(None, e),
            Event::RoleChanged {
                node,
                role: Role::Leader,
                token,
            } => {
                self.close_span(node, at, "new token");
                if let Some(t) = token {
                    self.token_holder.insert(*t, node.clone());
                }
                self.open_span.insert(node.clone(), self.spans.len());
                self.spans.push((
                    node.clone(),
                    Span {
                        lane: 0,
                        token: *token,
                        from_us: at,
                        to_us: at,
                        end: "run ended".into(),
                        stopped_us: None,
                        stop_reason: None,
                    },
                ));
            }
            Event::RoleChanged { node, role, .. } => {
                let end = match role {
                    Role::Candidate => "candidate",
                    Role::Follower => "follower",
                    Role::Leader => unreachable!("matched above"),
                };
                self.close_span(node, at, end);
                self.keep_event(Some(node.clone()), e);
            }
            Event::StoppedActing {
                node,
                token,
                reason,
            } => {
                if let Some((_, s)) =
                    self.spans.iter_mut().rev().find(|(l, s)| {
                        l == node && s.token == Some(*token) && s.stopped_us.is_none()
                    })
                {
                    s.stopped_us = Some(at);
                    s.stop_reason = Some(reason.clone());
                }
                self.keep_event(Some(node.clone()), e);
            }
            Event::NodeKilled { node } => {
                self.close_span(node, at, "killed");
                self.open_state(node, "down", at, node);
            }
            Event::NodeRestarted { node } => {
                self.close_state(node, "down", at);
                self.mark(node, "restart", at, "restart".into(), None);
            }
            Event::NodePaused { node } => self.open_state(node, "pause", at, node),
            Event::NodeResumed { node } => self.close_state(node, "pause", at),
            Event::GcPaused { node, .. } => self.open_state(node, "gc-pause", at, node),
            Event::GcResumed { node } => self.close_state(node, "gc-pause", at),
            Event::WriteAccepted {
                node, token, op, ..
            } => self.accepted(node, at, *token, *op),
            Event::BatchCommitted {
                node,
                token,
                first,
                last,
                ..
            } => self.accepted(
                node,
                at,
                *token,
                WriteOp::Seq {
                    first: *first,
                    last: *last,
                },
            ),
            Event::WriteRejected {
                node,
                token,
                max_token,
                op,
            } => self.rejected(
                node,
                Rejection {
                    lane: 0,
                    at_us: at,
                    kind: "write_rejected".into(),
                    token: *token,
                    max_token: Some(*max_token),
                    op: Some(*op),
                    detail: String::new(),
                },
            ),
            Event::BatchRefused { node, token } => self.rejected(
                node,
                Rejection {
                    lane: 0,
                    at_us: at,
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
            } => self.rejected(
                node,
                Rejection {
                    lane: 0,
                    at_us: at,
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
            // Drawn as their outcome: an acceptance, a rejection, a committed batch.
            Event::WriteAttempted { .. }
            | Event::BatchHandedOut { .. }
            | Event::ReadServed { .. } => {
                *self
                    .not_drawn
                    .entry(event_kind(&e.event).to_string())
                    .or_default() += 1;
            }
            Event::LeaseGranted { node, lease_id, .. } => {
                self.lease_holder.insert(*lease_id, node.clone());
                self.keep_event(Some(node.clone()), e);
            }
            Event::LeaseExpired { lease_id } | Event::LeaseRevoked { lease_id } => {
                let lane = self.lease_holder.get(lease_id).cloned();
                self.keep_event(lane, e);
            }
            Event::KeyDeleted {
                create_revision, ..
            } => {
                let lane = u64::try_from(*create_revision)
                    .ok()
                    .and_then(|t| self.token_holder.get(&t).cloned());
                self.keep_event(lane, e);
            }
            Event::SeatVacated { token, .. } => {
                let lane = self.token_holder.get(token).cloned();
                self.keep_event(lane, e);
            }
            Event::CampaignStarted { node }
            | Event::CampaignFailed { node, .. }
            | Event::Released { node, .. }
            | Event::JobStepStarted { node, .. }
            | Event::JobStepDone { node, .. }
            | Event::JobStepAbandoned { node, .. } => self.keep_event(Some(node.clone()), e),
        }
    }

    /// The lanes of a run that stopped at `end_us`.
    pub fn finish(self, end_us: i64) -> Lanes {
        // Lanes: the nodes in their order, then any other node named, then the services
        // something hit, then anything else, each group in name order.
        let mut named: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
        named.extend(self.spans.iter().map(|(l, _)| l.as_str()));
        named.extend(self.windows.iter().map(|(l, _)| l.as_str()));
        named.extend(self.marks.iter().map(|(l, _)| l.as_str()));
        named.extend(self.writes.iter().map(|(l, _)| l.as_str()));
        named.extend(self.rejections.iter().map(|(l, _)| l.as_str()));
        named.extend(self.events.iter().filter_map(|(l, _)| l.as_deref()));
        named.extend(self.clocks.keys().map(String::as_str));
        let mut lanes: Vec<String> = self.nodes.clone();
        let other = |n: &&str| !self.nodes.iter().any(|x| x == *n) && !SERVICE_LANES.contains(n);
        let unknown_nodes: Vec<&str> = named
            .iter()
            .copied()
            .filter(other)
            .filter(|n| n.starts_with('n') && n[1..].parse::<u32>().is_ok())
            .collect();
        lanes.extend(unknown_nodes.iter().map(|s| s.to_string()));
        lanes.extend(
            SERVICE_LANES
                .iter()
                .filter(|s| named.contains(*s))
                .map(|s| s.to_string()),
        );
        lanes.extend(
            named
                .iter()
                .copied()
                .filter(other)
                .filter(|n| !unknown_nodes.contains(n))
                .map(str::to_string),
        );
        let index: BTreeMap<&str, usize> = lanes
            .iter()
            .enumerate()
            .map(|(i, l)| (l.as_str(), i))
            .collect();
        let at = |l: &str| index[l];

        let spans = self
            .spans
            .into_iter()
            .map(|(l, mut s)| {
                if s.end == "run ended" {
                    s.to_us = end_us;
                }
                s.lane = at(&l);
                s
            })
            .collect();
        let windows = self
            .windows
            .into_iter()
            .map(|(l, mut w)| {
                if w.open_at_end {
                    w.to_us = end_us;
                }
                w.lane = at(&l);
                w
            })
            .collect();
        let global_windows = self
            .global_windows
            .into_iter()
            .map(|mut w| {
                if w.open_at_end {
                    w.to_us = end_us;
                }
                w
            })
            .collect();
        let marks = self
            .marks
            .into_iter()
            .map(|(l, mut m)| {
                m.lane = at(&l);
                m
            })
            .collect();
        let mut writes: Vec<WriteBucket> = self
            .writes
            .into_iter()
            .map(|(l, mut b)| {
                b.lane = at(&l);
                b
            })
            .collect();
        // By lane, then time: the order a drawing merges neighbouring buckets in.
        writes.sort_by_key(|b| (b.lane, b.from_us));
        let rejections = self
            .rejections
            .into_iter()
            .map(|(l, mut r)| {
                r.lane = at(&l);
                r
            })
            .collect();
        let events = self
            .events
            .into_iter()
            .map(|(l, entry)| LaneEvent {
                lane: l.map(|l| at(&l)),
                entry,
            })
            .collect();
        let clocks = self
            .clocks
            .into_iter()
            .map(|(l, (state, mut points))| {
                points.push((end_us, state.offset_at(end_us)));
                ClockSeries {
                    lane: at(&l),
                    points,
                }
            })
            .collect::<Vec<_>>();
        let mut clocks = clocks;
        clocks.sort_by_key(|c| c.lane);
        Lanes {
            end_us,
            lanes,
            spans,
            windows,
            marks,
            global_windows,
            writes,
            write_bucket_us: self.bucket_us,
            writes_accepted: self.writes_accepted,
            rejections,
            events,
            clocks,
            not_drawn: self.not_drawn,
            capped: self.capped,
            events_read: self.events_read,
        }
    }
}

/// The lanes of a timeline held in memory (tests, and tools that read `timeline.jsonl`).
pub fn build(builder: LaneBuilder, entries: &[Entry], end_us: i64) -> Lanes {
    let mut b = builder;
    for e in entries {
        b.entry(e);
    }
    b.finish(end_us)
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built timelines with one of each thing a lane shows, checked
    //! field by field; a clock series checked against the simulated clock's own
    //! arithmetic; and a long dense run whose buckets must stay within the bound.
    use super::*;
    use crate::checker::testing::*;
    use crate::timeline::Event;

    fn builder() -> LaneBuilder {
        LaneBuilder::new(
            vec!["n1".into(), "n2".into(), "n3".into()],
            30_000_000,
            vec![None, Some(ClockChange::DriftPpm(-400_000)), None],
        )
    }

    #[test]
    fn a_gc_pause_story_becomes_spans_windows_and_a_rejection() {
        let entries = vec![
            leader(100, "n1", 2),
            tick(200, "n1", 2),
            tick(205, "n1", 2),
            fault(10_000, 0, "pause"),
            at(10_000, Event::NodePaused { node: "n1".into() }),
            leader(12_500, "n3", 3),
            tick(12_510, "n3", 3),
            at(13_500, Event::NodeResumed { node: "n1".into() }),
            healed(13_500, 0, "pause"),
            rejected(13_503, "n1", 2, 3),
            stopped(13_504, "n1", 2, "rejected"),
            follower(13_504, "n1"),
            at(
                20_000,
                Event::FaultApplied {
                    index: 1,
                    kind: "partition".into(),
                    target: "n3<->backend".into(),
                },
            ),
            killed(25_000, "n2"),
        ];
        let l = build(builder(), &entries, 30_000_000);
        assert_eq!(l.lanes, ["n1", "n2", "n3", "backend"]);
        assert_eq!(l.spans.len(), 2);
        let (a, b) = (&l.spans[0], &l.spans[1]);
        assert_eq!(
            (a.lane, a.token, a.from_us, a.to_us),
            (0, Some(2), 100_000, 13_504_000)
        );
        assert_eq!(a.end, "follower");
        assert_eq!(a.stop_reason.as_deref(), Some("rejected"));
        assert_eq!(
            (b.lane, b.token, b.to_us, b.end.as_str()),
            (2, Some(3), 30_000_000, "run ended")
        );
        assert!(a.to_us > b.from_us, "the two beliefs overlap");
        assert_eq!(l.rejections.len(), 1);
        assert_eq!(
            (l.rejections[0].token, l.rejections[0].max_token),
            (2, Some(3))
        );
        // Two ticks 5 ms apart share a bucket (15 ms wide in a 30 s run); n3's has its own.
        assert_eq!(l.write_bucket_us, 15_000);
        assert_eq!(l.writes.len(), 2);
        assert_eq!((l.writes[0].lane, l.writes[0].count), (0, 2));
        assert_eq!(l.writes_accepted, 3);
        let kinds: Vec<(&str, usize, bool)> = l
            .windows
            .iter()
            .map(|w| (w.kind.as_str(), w.lane, w.open_at_end))
            .collect();
        assert_eq!(
            kinds,
            [
                ("pause", 0, false),
                ("partition", 2, true),
                ("partition", 3, true),
                ("down", 1, true)
            ]
        );
        assert_eq!(l.windows[0].to_us, 13_500_000);
        assert_eq!(l.windows[1].to_us, 30_000_000);
    }

    #[test]
    fn clock_series_follow_the_node_clock_arithmetic() {
        let entries = vec![at(
            10_000,
            Event::FaultApplied {
                index: 1,
                kind: "clock-drift".into(),
                target: "n2".into(),
            },
        )];
        let l = build(builder(), &entries, 30_000_000);
        assert_eq!(l.clocks.len(), 1);
        // 40% slow for 20 s: 8 s behind at the end.
        assert_eq!(
            l.clocks[0].points,
            [
                (0, 0),
                (10_000_000, 0),
                (10_000_000, 0),
                (30_000_000, -8_000_000)
            ]
        );
        assert_eq!(l.marks[0].label, "drift -400000 ppm");
        let mut s = Skew::default();
        apply(&mut s, ClockChange::OffsetMs(200), 1_000_000);
        assert_eq!(s.offset_at(2_000_000), 200_000);
        apply(&mut s, ClockChange::StepMs(-300), 2_000_000);
        assert_eq!(s.offset_at(2_000_000), -100_000);
        apply(&mut s, ClockChange::DriftPpm(-500_000), 2_000_000);
        assert_eq!(s.offset_at(3_000_000), -600_000);
    }

    #[test]
    fn a_dense_long_run_stays_within_its_buckets() {
        let mut b = LaneBuilder::new(vec!["n1".into()], 600_000_000, vec![]);
        b.entry(&leader(0, "n1", 1));
        let mut writes = 0;
        for ms in (1..600_000).step_by(2) {
            b.entry(&tick(ms, "n1", 1));
            writes += 1;
        }
        for i in 0..(MAX_EVENTS_PER_KIND + 10) {
            b.entry(&campaign(i as i64, "n1"));
        }
        let l = b.finish(600_000_000);
        assert_eq!(l.writes_accepted, writes);
        assert!(
            l.writes.len() <= WRITE_BUCKETS_PER_RUN as usize + 1,
            "{}",
            l.writes.len()
        );
        assert_eq!(
            l.writes.iter().map(|b| u64::from(b.count)).sum::<u64>(),
            writes
        );
        assert_eq!(l.capped.get("campaign_started"), Some(&10));
    }
}
