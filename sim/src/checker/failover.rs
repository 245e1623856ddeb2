//! Failover, election latency and handoff: how long leadership changes take, and
//! whether the old leader stopped before the new one started.
//!
//! **Failover** (`failover_ms`). Over accepted writes in timeline order, each time a
//! write carries a token higher than every earlier one, the failover is the time from the
//! accepted write just before it (the last write of the token that acted until then) to
//! it. That is the time the protected resource went without work across a leadership
//! change, as the resource saw it. With `expect.failover_ms_max` set, each failover above
//! it is a [`Violation::FailoverTooSlow`].
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
//! the old leader's stop (its `StoppedActing` for the old token or its `NodeKilled`,
//! whichever comes first after its win) to the new leader's first accepted write. When
//! the old leader had not stopped by then, the gap is measured from the old leader's
//! last accepted write (from its win if it never wrote) and marked `overlap`; it is
//! negative when the old leader's writes went on being accepted. Only that last case is
//! a [`Violation::NegativeHandoffGap`]: both leaders' writes took effect interleaved. An
//! old leader that merely believed too long, with its writes rejected, is the fence
//! working, not a violation.

use super::{accepted_writes, us_to_ms, Accepted, CheckInput, Step, Succession, Violation};
use crate::timeline::{Event, Role};
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

impl LatencyStats {
    /// Nearest-rank statistics of `values`; all zeros when empty.
    pub fn of(values: &[f64]) -> LatencyStats {
        if values.is_empty() {
            return LatencyStats::default();
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        // Nearest rank: the smallest value with at least p% of values at or below it.
        let rank = |p: usize| sorted[(p * n).div_ceil(100).clamp(1, n) - 1];
        LatencyStats {
            p50: rank(50),
            p99: rank(99),
            max: sorted[n - 1],
            count: n as u64,
        }
    }
}

/// One change of leadership and the gap between the two leaders' activity.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HandoffGap {
    /// The old leader.
    pub old_node: String,
    /// Its token.
    pub old_token: u64,
    /// The new leader.
    pub new_node: String,
    /// Its token.
    pub new_token: u64,
    /// New leader's first accepted write minus old leader's stop (or last accepted
    /// write, when `overlap`).
    pub gap_ms: f64,
    /// The old leader had not stopped acting when the new one first wrote.
    pub overlap: bool,
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
    /// One per change of leadership where the new leader wrote.
    pub handoff_gaps: Vec<HandoffGap>,
}

/// A win: a node's first belief that it leads under a token.
struct Win<'a> {
    idx: usize,
    at_us: i64,
    node: &'a str,
    token: u64,
}

/// Appends the violations and returns the measurements.
pub fn check(input: &CheckInput, out: &mut Vec<Violation>) -> FailoverSummary {
    let writes = accepted_writes(input.entries);
    let failover_ms = failovers(input, &writes, out);
    let (wins, latencies) = wins_and_latencies(input);
    let handoff_gaps = handoffs(input, &writes, &wins, out);
    FailoverSummary {
        failover_ms,
        election_latency_ms: LatencyStats::of(&latencies),
        election_latencies_ms: latencies,
        handoff_gaps,
    }
}

fn failovers(input: &CheckInput, writes: &[Accepted], out: &mut Vec<Violation>) -> Vec<f64> {
    let bound_ms = input.resolved.scenario.expect.failover_ms_max;
    let mut result = vec![];
    let mut succession = Succession::default();
    let mut prev: Option<&Accepted> = None;
    for w in writes {
        if let (
            Step::Newer {
                previous: Some(old),
            },
            Some(p),
        ) = (succession.step(w), prev)
        {
            let ms = us_to_ms(w.at_us - p.at_us);
            result.push(ms);
            if let Some(bound) = bound_ms.filter(|&b| ms > b as f64) {
                out.push(Violation::FailoverTooSlow {
                    at_ms: us_to_ms(w.at_us),
                    detail: format!(
                        "failover from {} (token {}) to {} (token {}) took {ms} ms, above failover_ms_max {bound}",
                        old.node, old.token, w.node, w.token
                    ),
                });
            }
        }
        prev = Some(w);
    }
    result
}

fn wins_and_latencies<'a>(input: &CheckInput<'a>) -> (Vec<Win<'a>>, Vec<f64>) {
    let mut wins: Vec<Win> = vec![];
    let mut latencies = vec![];
    // node -> token of the leadership it currently believes in: a repeated belief is
    // not a new win, but winning again later (even under the same token) is.
    let mut leading: BTreeMap<&str, u64> = BTreeMap::new();
    let mut campaign_at: BTreeMap<&str, i64> = BTreeMap::new();
    let mut deleted_at: BTreeMap<i64, i64> = BTreeMap::new();
    for (idx, e) in input.entries.iter().enumerate() {
        match &e.event {
            Event::CampaignStarted { node } => {
                campaign_at.insert(node, e.at_us);
            }
            Event::KeyDeleted {
                create_revision, ..
            } => {
                deleted_at.insert(*create_revision, e.at_us);
            }
            Event::SeatVacated { token, .. } => {
                deleted_at.insert(*token as i64, e.at_us);
            }
            Event::RoleChanged { node, role, .. } if *role != Role::Leader => {
                leading.remove(node.as_str());
            }
            Event::NodeKilled { node } => {
                leading.remove(node.as_str());
            }
            Event::RoleChanged {
                node,
                role: Role::Leader,
                token: Some(token),
            } if leading.insert(node, *token) != Some(*token) => {
                let vacated = wins
                    .last()
                    .and_then(|prev| i64::try_from(prev.token).ok())
                    .and_then(|rev| deleted_at.get(&rev).copied());
                let start = campaign_at.get(node.as_str()).copied().max(vacated);
                latencies.push(us_to_ms(e.at_us - start.unwrap_or(0)));
                wins.push(Win {
                    idx,
                    at_us: e.at_us,
                    node,
                    token: *token,
                });
            }
            _ => {}
        }
    }
    (wins, latencies)
}

/// Matches the accepted writes of one leadership: the win's node, token and position.
fn by<'w>(win: &'w Win) -> impl Fn(&&Accepted) -> bool + 'w {
    move |w| {
        w.node == win.node
            && w.token == win.token
            // Hand-built timelines may lack the win a write belongs to.
            && w.leadership.win_idx.is_none_or(|i| i == win.idx)
    }
}

fn handoffs(
    input: &CheckInput,
    writes: &[Accepted],
    wins: &[Win],
    out: &mut Vec<Violation>,
) -> Vec<HandoffGap> {
    let mut gaps = vec![];
    for pair in wins.windows(2) {
        let (old, new) = (&pair[0], &pair[1]);
        let Some(new_first) = writes.iter().find(by(new)) else {
            continue;
        };
        let stop = input.entries[old.idx + 1..]
            .iter()
            .enumerate()
            .find(|(_, e)| match &e.event {
                Event::StoppedActing { node, token, .. } => node == old.node && *token == old.token,
                Event::NodeKilled { node } => node == old.node,
                _ => false,
            })
            .map(|(i, e)| (old.idx + 1 + i, e.at_us));
        let (gap_us, overlap) = match stop {
            Some((stop_idx, stop_us)) if stop_idx < new_first.idx => {
                (new_first.at_us - stop_us, false)
            }
            _ => {
                let old_last_us = writes.iter().rfind(by(old)).map_or(old.at_us, |w| w.at_us);
                (new_first.at_us - old_last_us, true)
            }
        };
        if overlap {
            let late = writes
                .iter()
                .filter(|w| w.idx > new_first.idx)
                .find(by(old));
            if let Some(late) = late {
                out.push(Violation::NegativeHandoffGap {
                    at_ms: us_to_ms(late.at_us),
                    detail: format!(
                        "{} (token {}) had a write accepted at {} ms, after {} (token {}) \
                         first wrote at {} ms, and had not stopped acting",
                        old.node,
                        old.token,
                        us_to_ms(late.at_us),
                        new.node,
                        new.token,
                        us_to_ms(new_first.at_us)
                    ),
                });
            }
        }
        gaps.push(HandoffGap {
            old_node: old.node.to_string(),
            old_token: old.token,
            new_node: new.node.to_string(),
            new_token: new.token,
            gap_ms: us_to_ms(gap_us),
            overlap,
        });
    }
    gaps
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
        assert_eq!(v[0].property(), "failover_too_slow");
        assert_eq!(v[0].at_ms(), 4100.0);
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
        assert_eq!(v[0].property(), "negative_handoff_gap");
        assert_eq!(v[0].at_ms(), 3200.0);
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

    #[test]
    fn nearest_rank_percentiles() {
        let values: Vec<f64> = (1..=200).rev().map(f64::from).collect();
        let s = LatencyStats::of(&values);
        assert_eq!((s.p50, s.p99, s.max, s.count), (100.0, 198.0, 200.0, 200));
        assert_eq!(LatencyStats::of(&[]), LatencyStats::default());
        assert_eq!(LatencyStats::of(&[7.0]).p99, 7.0);
    }
}
