//! Reading a run's timeline into lanes, one event at a time: each kind of event goes to
//! the step that updates what its lane shows. This file holds the builder, the steps for
//! leadership (a span of belief per win) and for the events kept as dots; what hit a lane
//! (windows and marks) is `windows.rs`, what the resource did with the writes is
//! `writes.rs`. Items carry their lane's name while building; [`LaneBuilder::finish`] (in
//! `order.rs`) orders the lanes and turns names into indices.

use super::clock::{ClockChange, Clocks};
use super::{
    Mark, Rejection, Span, Window, WriteBucket, MAX_EVENTS_PER_KIND, WRITE_BUCKETS_PER_RUN,
};
use crate::timeline::{Entry, Event, Role};
use std::collections::{BTreeMap, VecDeque};

/// Builds [`super::Lanes`] from a timeline read one event at a time. Items name their lane
/// while building; [`LaneBuilder::finish`] orders the lanes and turns names into indices.
pub struct LaneBuilder {
    pub(super) nodes: Vec<String>,
    pub(super) bucket_us: i64,
    pub(super) spans: Vec<(String, Span)>,
    open_span: BTreeMap<String, usize>,
    pub(super) windows: Vec<(String, Window)>,
    /// Open windows by (lane, kind), oldest first.
    pub(super) open_state: BTreeMap<(String, String), VecDeque<usize>>,
    /// Open fault windows by fault index, oldest application first (each application's
    /// windows: one per lane it hit).
    pub(super) open_fault: BTreeMap<usize, VecDeque<Vec<usize>>>,
    pub(super) global_windows: Vec<Window>,
    pub(super) open_global: BTreeMap<usize, VecDeque<usize>>,
    pub(super) marks: Vec<(String, Mark)>,
    pub(super) writes: Vec<(String, WriteBucket)>,
    /// Each lane's latest bucket of writes, which the next write joins if it fits.
    pub(super) last_bucket: BTreeMap<String, usize>,
    pub(super) writes_accepted: u64,
    pub(super) rejections: Vec<(String, Rejection)>,
    pub(super) events: Vec<(Option<String>, Entry)>,
    kept_by_kind: BTreeMap<String, usize>,
    pub(super) clocks: Clocks,
    lease_holder: BTreeMap<i64, String>,
    token_holder: BTreeMap<u64, String>,
    pub(super) not_drawn: BTreeMap<String, u64>,
    pub(super) capped: BTreeMap<String, u64>,
    pub(super) events_read: u64,
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
        Event::HandedOver { .. } => "handed_over",
        Event::TransferAborted { .. } => "transfer_aborted",
        Event::SwimSuspected { .. } => "swim_suspected",
        Event::SwimDown { .. } => "swim_down",
        Event::SwimEvicted { .. } => "swim_evicted",
        Event::SwimTraffic { .. } => "swim_traffic",
        Event::Shard { .. } => "shard",
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
        Event::EtcdLeaderElected { .. } => "etcd_leader_elected",
        Event::EtcdLeaderLost { .. } => "etcd_leader_lost",
        Event::EtcdLessorPromoted { .. } => "etcd_lessor_promoted",
        Event::MemberKilled { .. } => "member_killed",
        Event::MemberRestarted { .. } => "member_restarted",
        Event::MemberPaused { .. } => "member_paused",
        Event::MemberResumed { .. } => "member_resumed",
        Event::LeaseRenewed { .. } => "lease_renewed",
        Event::ContractBroken { .. } => "contract_broken",
        Event::StepDownSeen { .. } => "step_down_seen",
    }
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
            clocks: Clocks::new(clock_changes),
            lease_holder: BTreeMap::new(),
            token_holder: BTreeMap::new(),
            not_drawn: BTreeMap::new(),
            capped: BTreeMap::new(),
            events_read: 0,
        }
    }

    /// A builder for a run of `resolved`: its nodes (then its etcd members, each a lane
    /// from the start, whether or not anything happens to it), its length and its clock
    /// faults.
    pub fn for_scenario(resolved: &crate::scenario::Resolved) -> Self {
        let clock_changes = resolved
            .faults
            .iter()
            .map(|f| f.fault.clock_change())
            .collect();
        let nodes = resolved.node_names().into_iter().map(String::from);
        let mut lanes: Vec<String> = nodes.collect();
        lanes.extend(resolved.scenario.etcd_members());
        Self::new(
            lanes,
            resolved.scenario.duration_ms as i64 * 1000,
            clock_changes,
        )
    }

    /// Reads the next event: each kind goes to the step that draws it.
    pub fn entry(&mut self, e: &Entry) {
        self.events_read += 1;
        let at = e.at_us;
        match &e.event {
            Event::FaultApplied {
                index,
                kind,
                target,
            } => self.fault_applied(*index, *kind, target, at),
            Event::FaultHealed { index, .. } => self.fault_healed(*index, at),
            Event::FaultSkipped { .. } => self.keep_event(None, e),
            Event::RoleChanged { node, role, token } => self.role_changed(node, *role, *token, e),
            Event::StoppedActing {
                node,
                token,
                reason,
                ..
            } => self.stopped_acting(node, *token, reason, e),
            Event::NodeKilled { node } => self.killed(node, at),
            Event::NodeRestarted { node } => self.restarted(node, at),
            Event::NodePaused { node } => self.open_state(node, "pause", at, node),
            Event::NodeResumed { node } => self.close_state(node, "pause", at),
            Event::GcPaused { node, .. } => self.open_state(node, "gc-pause", at, node),
            Event::GcResumed { node } => self.close_state(node, "gc-pause", at),
            // The lease service's members have lanes of their own: who leads etcd, when,
            // and what hit each member.
            Event::EtcdLeaderElected { member, term } => self.open_state(
                member,
                "etcd-leader",
                at,
                &format!("etcd leader, term {term}"),
            ),
            Event::EtcdLeaderLost { member, .. } => self.close_state(member, "etcd-leader", at),
            Event::MemberKilled { member } => self.killed(member, at),
            Event::MemberRestarted { member } => self.restarted(member, at),
            Event::MemberPaused { member } => self.open_state(member, "pause", at, member),
            Event::MemberResumed { member } => self.close_state(member, "pause", at),
            Event::EtcdLessorPromoted { member, .. } => self.keep_event(Some(member.clone()), e),
            Event::LeaseRenewed { .. } => self.not_drawn(&e.event),
            Event::WriteAccepted {
                node, token, op, ..
            } => self.accepted(node, at, *token, *op),
            Event::BatchCommitted {
                node,
                token,
                first,
                last,
                ..
            } => self.committed(node, at, *token, (*first, *last)),
            Event::WriteRejected { .. } | Event::BatchRefused { .. } | Event::SeqRefused { .. } => {
                self.refused(e)
            }
            // Drawn as their outcome: an acceptance, a rejection, a committed batch.
            Event::WriteAttempted { .. }
            | Event::BatchHandedOut { .. }
            | Event::ReadServed { .. }
            | Event::SwimTraffic { .. }
            | Event::Shard { .. } => self.not_drawn(&e.event),
            Event::LeaseGranted { node, lease_id, .. } => self.lease_granted(node, *lease_id, e),
            Event::LeaseExpired { lease_id } | Event::LeaseRevoked { lease_id } => {
                self.lease_ended(*lease_id, e)
            }
            Event::KeyDeleted {
                create_revision, ..
            } => self.key_deleted(*create_revision, e),
            Event::SeatVacated { token, .. } => self.seat_vacated(*token, e),
            Event::CampaignStarted { node }
            | Event::CampaignFailed { node, .. }
            | Event::Released { node, .. }
            | Event::HandedOver { node, .. }
            | Event::TransferAborted { node, .. }
            | Event::SwimSuspected { node, .. }
            | Event::SwimDown { node, .. }
            | Event::SwimEvicted { node, .. }
            | Event::JobStepStarted { node, .. }
            | Event::JobStepDone { node, .. }
            | Event::JobStepAbandoned { node, .. }
            | Event::ContractBroken { node, .. }
            | Event::StepDownSeen { node } => self.keep_event(Some(node.to_string()), e),
        }
    }

    /// A node won: its span opens (ending the one it held, if any, as a new token).
    fn won(&mut self, node: &str, token: Option<u64>, at_us: i64) {
        self.close_span(node, at_us, "new token");
        if let Some(t) = token {
            self.token_holder.insert(t, node.to_string());
        }
        self.open_span.insert(node.to_string(), self.spans.len());
        self.spans.push((
            node.to_string(),
            Span {
                lane: 0,
                token,
                from_us: at_us,
                to_us: at_us,
                end: "run ended".into(),
                stopped_us: None,
                stop_reason: None,
            },
        ));
    }

    /// A node's role changed: a win opens its span (see [`Self::won`]); becoming a
    /// candidate or a follower ends its span, if any, with that role.
    fn role_changed(&mut self, node: &str, role: Role, token: Option<u64>, e: &Entry) {
        let end = match role {
            Role::Leader => return self.won(node, token, e.at_us),
            Role::Candidate => "candidate",
            Role::Follower => "follower",
        };
        self.close_span(node, e.at_us, end);
        self.keep_event(Some(node.to_string()), e);
    }

    /// A leader said it stopped its protected writes: its latest span under that token
    /// says when and why.
    fn stopped_acting(&mut self, node: &str, token: u64, reason: &str, e: &Entry) {
        if let Some((_, s)) = self
            .spans
            .iter_mut()
            .rev()
            .find(|(l, s)| l == node && s.token == Some(token) && s.stopped_us.is_none())
        {
            s.stopped_us = Some(e.at_us);
            s.stop_reason = Some(reason.to_string());
        }
        self.keep_event(Some(node.to_string()), e);
    }

    /// A killed node's span ends, and it is down until restarted.
    fn killed(&mut self, node: &str, at_us: i64) {
        self.close_span(node, at_us, "killed");
        self.open_state(node, "down", at_us, node);
    }

    fn restarted(&mut self, node: &str, at_us: i64) {
        self.close_state(node, "down", at_us);
        self.mark(node, "restart", at_us, "restart".into(), None);
    }

    /// An event drawn as its outcome instead, only counted.
    fn not_drawn(&mut self, e: &Event) {
        *self.not_drawn.entry(event_kind(e).to_string()).or_default() += 1;
    }

    /// A granted lease is kept on its holder's lane, which its expiry or revocation then
    /// goes to.
    fn lease_granted(&mut self, node: &str, lease_id: i64, e: &Entry) {
        self.lease_holder.insert(lease_id, node.to_string());
        self.keep_event(Some(node.to_string()), e);
    }

    fn lease_ended(&mut self, lease_id: i64, e: &Entry) {
        let lane = self.lease_holder.get(&lease_id).cloned();
        self.keep_event(lane, e);
    }

    /// A deleted key goes to the lane of the leader whose token its create revision was.
    fn key_deleted(&mut self, create_revision: i64, e: &Entry) {
        let lane = u64::try_from(create_revision)
            .ok()
            .and_then(|t| self.token_holder.get(&t).cloned());
        self.keep_event(lane, e);
    }

    /// A vacated seat goes to the lane of the leader that held its token.
    fn seat_vacated(&mut self, token: u64, e: &Entry) {
        let lane = self.token_holder.get(&token).cloned();
        self.keep_event(lane, e);
    }

    /// One more item of `kind` left out beyond its cap.
    pub(super) fn capped(&mut self, kind: &str) {
        *self.capped.entry(kind.to_string()).or_default() += 1;
    }

    fn close_span(&mut self, lane: &str, at_us: i64, end: &str) {
        if let Some(i) = self.open_span.remove(lane) {
            let s = &mut self.spans[i].1;
            s.to_us = at_us;
            s.end = end.to_string();
        }
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
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built timelines with one of each thing a lane shows, checked
    //! field by field; and a long dense run whose buckets must stay within the bound.
    use super::*;
    use crate::checker::testing::*;
    use crate::render::lanes::build;
    use crate::timeline::Event;

    fn builder() -> LaneBuilder {
        LaneBuilder::new(
            vec!["n1".into(), "n2".into(), "n3".into()],
            30_000_000,
            vec![None, Some(ClockChange::Drift(-400_000)), None],
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
                    kind: crate::fault::FaultKind::Partition,
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
