//! Failover, election latency and handoff: how long leadership changes take, and
//! whether the old leader stopped before the new one started.
//!
//! **Failover** (`failover_ms`). Over accepted writes in timeline order, each time a
//! write carries a token higher than every earlier one, the failover is the time from the
//! accepted write just before it (the last write of the token that acted until then) to
//! it. That is the time the protected resource went without work across a leadership
//! change, as the resource saw it. With `expect.failover_ms_max` set, each failover above
//! it is a [`Property::FailoverTooSlow`].
//!
//! **Election latency** (`election_latency_ms`). For each win (a node's first
//! `RoleChanged` to leader with token T), the latency runs from the later of
//! - the winner's latest `CampaignStarted` before the win, and
//! - the latest `KeyDeleted` before the win whose create revision is the previous
//!   winner's token, or `SeatVacated` naming that token (the moment the seat became
//!   vacant),
//!
//! to the win. A waiter queued long before the seat emptied is thus timed from the
//! vacancy, not from when it joined the queue. A win with neither (not produced by the
//! simulator) is timed from the start of the run. Percentiles are nearest-rank.
//!
//! **Handoff gaps.** For each change of leadership (consecutive wins), the gap runs from
//! the old leader's stop to the new leader's first accepted write. The old leader stops
//! at the later of the first of its `StoppedActing` for the old token, its step-down
//! (`RoleChanged` away from leader: every world records it, while a node that writes no
//! event log, run by `--node-cmd` and seen from its `/status` polls, records no
//! `StoppedActing`; such a step-down counts from its `StepDownSeen`, the first poll that
//! proved it, rather than the last poll that still saw the node lead, so that a handoff
//! never rests on the stamp that favours the node) or its `NodeKilled` after its win,
//! and the moment its last write
//! reached the resource,
//! accepted or rejected: a write in flight is the leader still acting (see
//! `checker/flight.rs`), unless it landed after its sender had given it up (its resource
//! timeout), which is the network's doing, not the leader's. When the old leader had not
//! stopped by then, the handoff is marked `overlap`: its gap runs from the old leader's
//! write that landed last, when that is what came after the new leader's first write
//! (`in_flight_sent_ms` says when it was sent), or else from its last accepted write (from
//! its win if it never wrote), the old leader still believing it led; it is negative
//! when the old leader's writes went on landing. Only accepted interleaving is a
//! [`Property::NegativeHandoffGap`]: both leaders' writes took effect. An old leader
//! whose late writes were rejected is the fence working, not a violation here (protocol
//! safety judges whether the protocol should have stopped it), unless it had given
//! leadership up on purpose (`Released`) before the new leader first wrote: a leader
//! that knows it stepped down has no excuse to act on, and that is a
//! [`Property::ActedAfterRelease`] (a long job step finished after the release, or a
//! release with a write still in flight, for two).

use super::{us_to_ms, Accepted, CheckInput, Landed, Property, Step, Succession, Violation};
use crate::scenario::Resolved;
use crate::timeline::{Entry, Event, Role};
use crate::NodeId;
use serde::Serialize;
use std::collections::BTreeMap;

/// Nearest-rank statistics of a set of durations.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyStats {
    /// The median (nearest rank).
    pub p50: f64,
    /// The 99th percentile (nearest rank).
    pub p99: f64,
    /// The largest.
    pub max: f64,
    /// How many durations.
    pub count: u64,
}

/// The nearest-rank `p`th percentile of `sorted` (ascending, not empty): the smallest
/// value with at least p% of the values at or below it.
pub fn nearest_rank(sorted: &[f64], p: usize) -> f64 {
    let n = sorted.len();
    sorted[(p * n).div_ceil(100).clamp(1, n) - 1]
}

impl LatencyStats {
    /// Nearest-rank statistics of `values`; all zeros when empty.
    pub fn of(values: &[f64]) -> LatencyStats {
        if values.is_empty() {
            return LatencyStats::default();
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let rank = |p: usize| nearest_rank(&sorted, p);
        LatencyStats {
            p50: rank(50),
            p99: rank(99),
            max: sorted[n - 1],
            count: n as u64,
        }
    }
}

/// Election latencies split by where they start, in order of the wins: two different
/// costs (a queued candidate takes a vacant seat with one notification and one read; a
/// campaign pays every call of the recipe, on a connection perhaps not yet open), whose
/// mixture's median falls between the two and says little.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ElectionsByStart {
    /// Timed from the winner's campaign start: it began campaigning after the seat fell
    /// vacant (or there was no leader before it).
    pub campaign: Vec<f64>,
    /// Timed from the vacancy: the winner was already queued when the seat fell vacant.
    pub vacancy: Vec<f64>,
}

/// One change of leadership and the gap between the two leaders' activity.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HandoffGap {
    /// The old leader.
    pub old_node: NodeId,
    /// Its token.
    pub old_token: u64,
    /// The new leader.
    pub new_node: NodeId,
    /// Its token.
    pub new_token: u64,
    /// New leader's first accepted write minus old leader's stop (or last accepted
    /// write, when `overlap`).
    pub gap_ms: f64,
    /// The old leader had not stopped acting when the new one first wrote.
    pub overlap: bool,
    /// When the overlap was a write in flight: when the old leader sent the write that
    /// landed after the new leader's first (the gap runs from its landing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight_sent_ms: Option<f64>,
}

/// Failover, election and handoff measurements of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FailoverSummary {
    /// Each failover, in order.
    pub failover_ms: Vec<f64>,
    /// Campaign (or vacancy) to win.
    pub election_latency_ms: LatencyStats,
    /// Each election's latency, in order of the wins (for aggregating across runs).
    pub election_latencies_ms: Vec<f64>,
    /// The same latencies split by what they were timed from.
    pub election_latencies_by_start: ElectionsByStart,
    /// One per change of leadership where the new leader wrote.
    pub handoff_gaps: Vec<HandoffGap>,
}

/// A win: a node's first belief that it leads under a token.
struct Win {
    idx: usize,
    at_us: i64,
    node: NodeId,
    token: u64,
    /// Its leadership's first accepted write: (timeline position, time).
    first_write: Option<(usize, i64)>,
    /// Its leadership's last accepted write, over the whole run.
    last_write_us: Option<i64>,
    /// Its first stop after the win (`StoppedActing` for its token, its step-down, or its
    /// node killed).
    stop: Option<(usize, i64)>,
    /// Its stop is a polled step-down not yet moved to its `StepDownSeen`.
    stop_polled: bool,
    /// Its leadership's first write accepted after the next win's first write.
    late_us: Option<i64>,
    /// When it gave the leadership up on purpose (`Released`), if it did.
    released: Option<(usize, i64)>,
    /// Its write that reached the resource last, before its sender gave it up:
    /// (timeline position, landed at, sent at).
    last_landed: Option<(usize, i64, i64)>,
}

impl Win {
    /// Whether `w` was written under this win's leadership.
    fn owns(&self, w: &Accepted) -> bool {
        self.node == *w.node
            && w.token == self.token
            // Hand-built timelines may lack the win a write belongs to.
            && w.leadership.win_idx.is_none_or(|i| i == self.idx)
    }
}

/// Appends the violations and returns the measurements.
pub fn check(input: &CheckInput, out: &mut Vec<Violation>) -> FailoverSummary {
    let mut f = Failover::default();
    let mut t = super::AcceptedTracker::default();
    let mut flights = super::Flights::new(input.resolved);
    for (idx, e) in input.entries.iter().enumerate() {
        f.entry(idx, e);
        if let Some(w) = flights.entry(idx, e) {
            f.landed(&w);
        }
        for w in t.entry(idx, e) {
            f.write(&w, input.resolved);
        }
    }
    for w in t.finish() {
        f.write(&w, input.resolved);
    }
    f.finish(out)
}

/// Failover, election latency and handoffs, read one event and one accepted write at a
/// time.
#[derive(Default)]
pub(crate) struct Failover {
    succession: Succession,
    prev_write_us: Option<i64>,
    failover_ms: Vec<f64>,
    too_slow: Vec<Violation>,
    wins: Vec<Win>,
    /// Win position in the timeline -> its index in `wins`.
    win_at: BTreeMap<usize, usize>,
    latencies: Vec<f64>,
    by_start: ElectionsByStart,
    /// node -> token of the leadership it currently believes in: a repeated belief is
    /// not a new win, but winning again later (even under the same token) is.
    leading: BTreeMap<NodeId, u64>,
    campaign_at: BTreeMap<NodeId, i64>,
    deleted_at: BTreeMap<i64, i64>,
}

impl Failover {
    /// Reads the next event (position `idx`).
    pub fn entry(&mut self, idx: usize, e: &Entry) {
        match &e.event {
            Event::CampaignStarted { node } => {
                self.campaign_at.insert(node.clone(), e.at_us);
            }
            Event::KeyDeleted {
                create_revision, ..
            } => {
                self.deleted_at.insert(*create_revision, e.at_us);
            }
            Event::SeatVacated { token, .. } => {
                self.deleted_at.insert(*token as i64, e.at_us);
            }
            Event::RoleChanged { node, role, .. } if *role != Role::Leader => {
                // The belief's end stops the leadership it ends, when nothing stopped it
                // before (Baton's own nodes record `StoppedActing` just before; a foreign
                // node, seen from outside, records only this).
                if let Some(token) = self.leading.remove(node.as_str()) {
                    for w in self.wins.iter_mut() {
                        if w.stop.is_none() && w.node == *node && w.token == token && w.idx < idx {
                            w.stop = Some((idx, e.at_us));
                            w.stop_polled = true;
                        }
                    }
                }
            }
            Event::StepDownSeen { node } => {
                // A polled step-down is judged at its first proof, against the node.
                if let Some(w) = self
                    .wins
                    .iter_mut()
                    .rev()
                    .find(|w| w.node == *node && w.stop_polled)
                {
                    w.stop = Some((idx, e.at_us));
                    w.stop_polled = false;
                }
            }
            Event::NodeKilled { node } => {
                self.leading.remove(node.as_str());
                for w in self.wins.iter_mut() {
                    if w.stop.is_none() && w.node == *node && w.idx < idx {
                        w.stop = Some((idx, e.at_us));
                    }
                }
            }
            Event::Released { node, token } => {
                for w in self.wins.iter_mut() {
                    if w.released.is_none() && w.node == *node && w.token == *token && w.idx < idx {
                        w.released = Some((idx, e.at_us));
                    }
                }
            }
            Event::StoppedActing { node, token, .. } => {
                for w in self.wins.iter_mut() {
                    if w.stop.is_none() && w.node == *node && w.token == *token && w.idx < idx {
                        w.stop = Some((idx, e.at_us));
                    }
                }
            }
            Event::RoleChanged {
                node,
                role: Role::Leader,
                token: Some(token),
            } if self.leading.insert(node.clone(), *token) != Some(*token) => {
                let vacated = self
                    .wins
                    .last()
                    .and_then(|prev| i64::try_from(prev.token).ok())
                    .and_then(|rev| self.deleted_at.get(&rev).copied());
                let campaign = self.campaign_at.get(node.as_str()).copied();
                let start = campaign.max(vacated);
                let ms = us_to_ms(e.at_us - start.unwrap_or(0));
                self.latencies.push(ms);
                if vacated.is_some() && vacated > campaign {
                    self.by_start.vacancy.push(ms);
                } else {
                    self.by_start.campaign.push(ms);
                }
                self.win_at.insert(idx, self.wins.len());
                self.wins.push(Win {
                    idx,
                    at_us: e.at_us,
                    node: node.clone(),
                    token: *token,
                    first_write: None,
                    last_write_us: None,
                    stop: None,
                    stop_polled: false,
                    late_us: None,
                    released: None,
                    last_landed: None,
                });
            }
            _ => {}
        }
    }

    /// Reads the next accepted write.
    pub fn write(&mut self, w: &Accepted, resolved: &Resolved) {
        if let (
            Step::Newer {
                previous: Some(old),
            },
            Some(prev_us),
        ) = (self.succession.step(w), self.prev_write_us)
        {
            let ms = us_to_ms(w.at_us - prev_us);
            self.failover_ms.push(ms);
            let bound_ms = resolved.scenario.expect.failover_ms_max;
            if let Some(bound) = bound_ms.filter(|&b| ms > b as f64) {
                self.too_slow.push(Violation {
property: Property::FailoverTooSlow,
                    at_ms: us_to_ms(w.at_us),
                    detail: format!(
                        "failover from {} (token {}) to {} (token {}) took {ms} ms, above failover_ms_max {bound}",
                        old.node, old.token, w.node, w.token
                    ),
                });
            }
        }
        self.prev_write_us = Some(w.at_us);
        // The wins this write belongs to: its own, or (hand-built timelines, no win
        // recorded for it) every win of its node and token.
        let owners: Vec<usize> = match w.leadership.win_idx {
            Some(i) => self.win_at.get(&i).copied().into_iter().collect(),
            None => (0..self.wins.len()).collect(),
        };
        for k in owners {
            if !self.wins[k].owns(w) {
                continue;
            }
            let next_first = self.wins.get(k + 1).and_then(|n| n.first_write);
            let win = &mut self.wins[k];
            win.first_write.get_or_insert((w.idx, w.at_us));
            win.last_write_us = Some(w.at_us);
            if win.late_us.is_none() && next_first.is_some_and(|(i, _)| w.idx > i) {
                win.late_us = Some(w.at_us);
            }
        }
    }

    /// Reads a write that reached the resource (accepted or rejected), with its send.
    pub fn landed(&mut self, w: &Landed) {
        // Landed after its sender gave it up: the network held it, the leader had moved on.
        if w.after_give_up() {
            return;
        }
        let Some(win) = self
            .wins
            .iter_mut()
            .rev()
            .find(|win| win.node == w.node && win.token == w.token && win.idx < w.idx)
        else {
            return;
        };
        win.last_landed = Some((w.idx, w.landed_us, w.sent_us));
    }

    /// Appends the violations and returns the measurements.
    pub fn finish(self, out: &mut Vec<Violation>) -> FailoverSummary {
        out.extend(self.too_slow);
        let mut handoff_gaps = vec![];
        for pair in self.wins.windows(2) {
            let (old, new) = (&pair[0], &pair[1]);
            let Some((new_first_idx, new_first_us)) = new.first_write else {
                continue;
            };
            // The old leader stopped at the later of its stop and its last write's landing.
            let stop = match (old.stop, old.last_landed) {
                (Some((s_idx, _)), Some((l_idx, l_us, _))) if l_idx > s_idx => Some((l_idx, l_us)),
                (None, Some((l_idx, l_us, _))) => Some((l_idx, l_us)),
                (stop, _) => stop,
            };
            let landed_late = old.last_landed.filter(|(i, _, _)| *i > new_first_idx);
            let (gap_us, overlap, in_flight_sent_ms) = match (stop, landed_late) {
                (Some((stop_idx, stop_us)), _) if stop_idx < new_first_idx => {
                    (new_first_us - stop_us, false, None)
                }
                (_, Some((_, landed_us, sent_us))) => {
                    (new_first_us - landed_us, true, Some(us_to_ms(sent_us)))
                }
                _ => (
                    new_first_us - old.last_write_us.unwrap_or(old.at_us),
                    true,
                    None,
                ),
            };
            // A leader that gave leadership up knew it was no longer leader: it must have
            // stopped by then. Only one that lost it without knowing (a pause, a cut)
            // may still be acting when the next one starts.
            if let (true, Some((rel_idx, rel_us))) = (overlap, old.released) {
                if rel_idx < new_first_idx {
                    out.push(Violation {
property: Property::ActedAfterRelease,
                        at_ms: us_to_ms(new_first_us),
                        detail: format!(
                            "{} (token {}) released leadership at {} ms and was still acting when {} (token {}) first wrote at {} ms",
                            old.node,
                            old.token,
                            us_to_ms(rel_us),
                            new.node,
                            new.token,
                            us_to_ms(new_first_us)
                        ),
                    });
                }
            }
            if overlap {
                if let Some(late_us) = old.late_us {
                    out.push(Violation {
                        property: Property::NegativeHandoffGap,
                        at_ms: us_to_ms(late_us),
                        detail: format!(
                            "{} (token {}) had a write accepted at {} ms, after {} (token {}) \
                             first wrote at {} ms, and had not stopped acting",
                            old.node,
                            old.token,
                            us_to_ms(late_us),
                            new.node,
                            new.token,
                            us_to_ms(new_first_us)
                        ),
                    });
                }
            }
            handoff_gaps.push(HandoffGap {
                old_node: old.node.clone(),
                old_token: old.token,
                new_node: new.node.clone(),
                new_token: new.token,
                gap_ms: us_to_ms(gap_us),
                overlap,
                in_flight_sent_ms,
            });
        }
        FailoverSummary {
            failover_ms: self.failover_ms,
            election_latency_ms: LatencyStats::of(&self.latencies),
            election_latencies_ms: self.latencies,
            election_latencies_by_start: self.by_start,
            handoff_gaps,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built timelines. The clean failover (kill, vacancy, new win)
    //! pins every measurement by hand. Canaries: a failover above `failover_ms_max`, and
    //! a paused old leader whose write is accepted after the new leader's first. Quiet:
    //! the same pause with the late write rejected (overlap reported, no violation).
    use super::super::testing::*;
    use super::*;
    use crate::timeline::Entry;

    fn run(r: &crate::scenario::Resolved, entries: &[Entry]) -> (FailoverSummary, Vec<Violation>) {
        let mut v = vec![];
        let s = check(&input(r, entries, 10_000), &mut v);
        (s, v)
    }

    #[test]
    fn clean_failover_measurements() {
        let r = resolved();
        let (s, v) = run(&r, &clean_failover());
        assert!(v.is_empty(), "{v:?}");
        // n1's last write at 1200, n2's first at 4100.
        assert_eq!(s.failover_ms, vec![2900.0]);
        // n1: campaign 0 -> win 100. n2: campaign 0, seat vacated 4000 -> win 4010.
        assert_eq!(
            s.election_latency_ms,
            LatencyStats {
                p50: 10.0,
                p99: 100.0,
                max: 100.0,
                count: 2
            }
        );
        // n1 campaigned into an empty seat; n2 was queued when it fell vacant.
        assert_eq!(
            s.election_latencies_by_start,
            ElectionsByStart {
                campaign: vec![100.0],
                vacancy: vec![10.0]
            }
        );
        // n1 killed at 1500, n2 first wrote at 4100.
        assert_eq!(
            s.handoff_gaps,
            vec![HandoffGap {
                old_node: "n1".into(),
                old_token: 1,
                new_node: "n2".into(),
                new_token: 2,
                gap_ms: 2600.0,
                overlap: false,
                in_flight_sent_ms: None,
            }]
        );
    }

    #[test]
    fn slow_failover_fires() {
        let mut r = resolved();
        r.scenario.expect.failover_ms_max = Some(2000);
        let (s, v) = run(&r, &clean_failover());
        assert_eq!(s.failover_ms, vec![2900.0]);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].property, Property::FailoverTooSlow);
        assert_eq!(v[0].at_ms, 4100.0);
        r.scenario.expect.failover_ms_max = Some(2900);
        assert!(run(&r, &clean_failover()).1.is_empty());
    }

    fn paused_leader(late: Entry) -> Vec<Entry> {
        vec![
            campaign(0, "n1"),
            leader(100, "n1", 1),
            tick(200, "n1", 1),
            campaign(300, "n2"),
            key_deleted(3000, 1),
            leader(3050, "n2", 2),
            tick(3100, "n2", 2),
            late,
            stopped(3300, "n1", 1, "lease-expired"),
        ]
    }

    #[test]
    fn old_leader_write_accepted_after_new_fires() {
        let r = resolved();
        let entries = paused_leader(accepted(3200, "n1", 1, 2, crate::timeline::WriteOp::Claim));
        let (s, v) = run(&r, &entries);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].property, Property::NegativeHandoffGap);
        assert_eq!(v[0].at_ms, 3200.0);
        assert_eq!(s.handoff_gaps[0].gap_ms, -100.0);
        assert!(s.handoff_gaps[0].overlap);
    }

    #[test]
    fn old_leader_write_rejected_is_quiet() {
        let r = resolved();
        let (s, v) = run(&r, &paused_leader(rejected(3200, "n1", 1, 2)));
        assert!(v.is_empty(), "{v:?}");
        // Measured from n1's last accepted write at 200.
        assert_eq!(s.handoff_gaps[0].gap_ms, 2900.0);
        assert!(s.handoff_gaps[0].overlap);
        // n2 queued at 300 but the seat was vacated at 3000: timed from the vacancy.
        assert_eq!(s.election_latency_ms.p50, 50.0);
    }

    /// n1 leads, sends a tick at 2900 ms, stops and releases at 2950 while it is in
    /// flight; n2 wins and first writes at 3000; n1's tick lands (rejected) at `landed`.
    fn released_in_flight(landed_ms: i64) -> Vec<Entry> {
        let op = crate::timeline::WriteOp::Tick { n: 0 };
        vec![
            campaign(0, "n1"),
            leader(100, "n1", 1),
            tick(200, "n1", 1),
            campaign(300, "n2"),
            sent(2900, "n1", 1, op),
            stopped(2950, "n1", 1, "resigned"),
            at(
                2950,
                Event::Released {
                    node: "n1".into(),
                    token: 1,
                },
            ),
            key_deleted(2960, 1),
            leader(2970, "n2", 2),
            accepted(3000, "n2", 2, 1, crate::timeline::WriteOp::Claim),
            rejected(landed_ms, "n1", 1, 2),
        ]
    }

    #[test]
    fn a_write_in_flight_at_the_release_is_the_old_leader_acting() {
        let r = resolved();
        // Sent at 2900, landed at 3200: inside its 500 ms timeout, after n2's first write.
        let (s, v) = run(&r, &released_in_flight(3200));
        let g = &s.handoff_gaps[0];
        assert_eq!((g.gap_ms, g.overlap), (-200.0, true));
        assert_eq!(g.in_flight_sent_ms, Some(2900.0));
        let props: Vec<Property> = v.iter().map(|v| v.property).collect();
        assert_eq!(props, vec![Property::ActedAfterRelease]);
    }

    #[test]
    fn a_write_landing_after_its_sender_gave_it_up_is_the_network() {
        let r = resolved();
        // Landed at 3500, past 2900 + 500 ms: n1 had given it up, and stopped at 2950.
        let (s, v) = run(&r, &released_in_flight(3500));
        let g = &s.handoff_gaps[0];
        assert_eq!(
            (g.gap_ms, g.overlap, g.in_flight_sent_ms),
            (50.0, false, None)
        );
        assert!(v.is_empty(), "{v:?}");
    }

    /// A node seen from outside (`--node-cmd`): its beliefs are the polls' role changes,
    /// each write's attempt is stamped at its arrival, and no `StoppedActing` is recorded.
    /// n1 steps down (seen at `n1_down`), n2 wins and first writes at 5,020 ms.
    fn foreign_step_down(n1_down: i64) -> Vec<Entry> {
        let op = crate::timeline::WriteOp::Tick { n: 1 };
        let mut t = vec![
            leader(100, "n1", 1),
            sent(4990, "n1", 1, op),
            accepted(4990, "n1", 1, 1, op),
            at(
                n1_down,
                Event::RoleChanged {
                    node: "n1".into(),
                    role: Role::Candidate,
                    token: None,
                },
            ),
            key_deleted(5005, 1),
            leader(5015, "n2", 2),
            sent(5020, "n2", 2, crate::timeline::WriteOp::Claim),
            accepted(5020, "n2", 2, 2, crate::timeline::WriteOp::Claim),
        ];
        t.sort_by_key(|e| e.at_us);
        t
    }

    #[test]
    fn a_foreign_step_down_seen_before_the_next_write_is_no_overlap() {
        let r = resolved();
        let (s, v) = run(&r, &foreign_step_down(5010));
        assert!(v.is_empty(), "{v:?}");
        let g = &s.handoff_gaps[0];
        // From the poll that saw n1 stepped down (5,010 ms) to n2's first write.
        assert_eq!(
            (g.gap_ms, g.overlap, g.in_flight_sent_ms),
            (10.0, false, None)
        );
    }

    #[test]
    fn a_foreign_step_down_seen_after_the_next_write_is_an_overlap() {
        let r = resolved();
        let (s, v) = run(&r, &foreign_step_down(5100));
        assert!(v.is_empty(), "{v:?}");
        let g = &s.handoff_gaps[0];
        // Still leading by its polls when n2 first wrote: measured from its last write.
        assert_eq!((g.gap_ms, g.overlap), (30.0, true));
    }

    /// A step-down polled at 5,008 ms counts from its first proof (`StepDownSeen`):
    /// before n2's first write, the gap runs from it; after it, the handoff overlaps.
    #[test]
    fn a_foreign_step_down_counts_from_its_first_proof() {
        let r = resolved();
        let seen = |at_ms: i64| {
            let mut t = foreign_step_down(5008);
            t.push(at(at_ms, Event::StepDownSeen { node: "n1".into() }));
            t.sort_by_key(|e| e.at_us);
            t
        };
        let (s, _) = run(&r, &seen(5012));
        let g = &s.handoff_gaps[0];
        assert_eq!((g.gap_ms, g.overlap), (8.0, false));
        let (s, v) = run(&r, &seen(5030));
        assert!(v.is_empty(), "{v:?}");
        assert!(s.handoff_gaps[0].overlap, "{:?}", s.handoff_gaps[0]);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let values: Vec<f64> = (1..=200).rev().map(f64::from).collect();
        let s = LatencyStats::of(&values);
        assert_eq!((s.p50, s.p99, s.max, s.count), (100.0, 198.0, 200.0, 200));
        assert_eq!(LatencyStats::of(&[]), LatencyStats::default());
        assert_eq!(LatencyStats::of(&[7.0]).p99, 7.0);
    }
}
