//! The SWIM failure detector (`[swim]`): how fast it confirms a death, against how fast
//! the lease service vacates a dead leader's seat, and what it gets wrong.
//!
//! For each `node_killed`, **detection** runs from the kill to the first `swim_down` of
//! that process (any observer); for a kill of the leader, **vacancy** runs from the kill
//! to its seat being vacated at the backend (its election key deleted, or its seat
//! vacated: a lease expired, or revoked by a node whose detector declared it down).
//! Without SWIM the vacancy is the lease service's own expiry; with it, whichever came
//! first.
//!
//! A **false suspicion** (`swim_suspected`) or **false down** (`swim_down`) names a
//! process that was running: not killed (a paused one is running; that is what GC noise
//! makes the detector get wrong). News of a process that has since been restarted
//! (an older `start`) is late, not false.
//!
//! Property: with `expect.swim_detection_ms_max` and the detector running, every killed
//! process that stays down for the bound must be declared down within it
//! ([`Property::DeathUndetected`]).

use super::failover::LatencyStats;
use super::{us_to_ms, Property, Violation};
use crate::scenario::Resolved;
use crate::timeline::{Entry, Event, Role};
use crate::NodeId;
use serde::Serialize;
use std::collections::BTreeMap;

/// One kill and what followed it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Detection {
    /// The node killed.
    pub node: NodeId,
    /// When.
    pub killed_at_ms: f64,
    /// Its token, if it led when it was killed.
    pub leader_token: Option<u64>,
    /// Kill to its first `swim_down`, if any.
    pub detected_ms: Option<f64>,
    /// Kill to its seat vacated at the backend (a leader only).
    pub vacated_ms: Option<f64>,
    /// When it started again, if it did.
    #[serde(skip)]
    restarted_us: Option<i64>,
}

/// `swim` in report.json.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SwimSummary {
    /// Every kill, in order.
    pub kills: Vec<Detection>,
    /// Kill to the first `swim_down`, over the kills detected.
    pub detection_ms: LatencyStats,
    /// A leader's kill to its seat vacated, over the leaders' kills.
    pub vacancy_ms: LatencyStats,
    /// Each detection, in order of the kills (for pooling over runs).
    pub detections_ms: Vec<f64>,
    /// Each vacancy, in order of the leaders' kills (for pooling over runs).
    pub vacancies_ms: Vec<f64>,
    /// Suspicions of a running process.
    pub false_suspicions: u64,
    /// Downs of a running process.
    pub false_downs: u64,
    /// Seats taken from a leader declared down (`swim_evicted`).
    pub evictions: u64,
    /// SWIM messages sent by every node.
    pub messages: u64,
    /// The same per simulated second of the run.
    pub messages_per_s: f64,
}

/// The detector's figures, read one event at a time.
#[derive(Default)]
pub(crate) struct Swim {
    /// node -> (its process's start number, killed and not restarted).
    processes: BTreeMap<NodeId, (u64, bool)>,
    /// node -> the token it leads under, while it believes it does.
    leading: BTreeMap<NodeId, u64>,
    kills: Vec<Detection>,
    kill_us: Vec<i64>,
    false_suspicions: u64,
    false_downs: u64,
    evictions: u64,
    messages: u64,
}

impl Swim {
    /// Whether `member`'s process `start` was running when news of it came.
    fn running(&self, member: &NodeId, start: u64) -> bool {
        let (current, dead) = self.processes.get(member).copied().unwrap_or((1, false));
        start == current && !dead
    }

    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        match &e.event {
            Event::RoleChanged { node, role, token } => match (role, token) {
                (Role::Leader, Some(t)) => {
                    self.leading.insert(node.clone(), *t);
                }
                _ => {
                    self.leading.remove(node);
                }
            },
            Event::NodeKilled { node } => {
                self.processes.entry(node.clone()).or_insert((1, false)).1 = true;
                self.kills.push(Detection {
                    node: node.clone(),
                    killed_at_ms: us_to_ms(e.at_us),
                    leader_token: self.leading.remove(node),
                    detected_ms: None,
                    vacated_ms: None,
                    restarted_us: None,
                });
                self.kill_us.push(e.at_us);
            }
            Event::NodeRestarted { node } => {
                let p = self.processes.entry(node.clone()).or_insert((1, false));
                *p = (p.0 + 1, false);
                for k in self.kills.iter_mut().filter(|k| k.node == *node) {
                    k.restarted_us.get_or_insert(e.at_us);
                }
            }
            Event::SwimSuspected { member, start, .. } if self.running(member, *start) => {
                self.false_suspicions += 1
            }
            Event::SwimDown { member, start, .. } => {
                if self.running(member, *start) {
                    self.false_downs += 1;
                }
                self.note_detected(member, e.at_us);
            }
            Event::KeyDeleted {
                create_revision, ..
            } => self.note_vacated(*create_revision as u64, e.at_us),
            Event::SeatVacated { token, .. } => self.note_vacated(*token, e.at_us),
            Event::SwimEvicted { .. } => self.evictions += 1,
            Event::SwimTraffic { messages, .. } => self.messages += messages,
            _ => {}
        }
    }

    fn note_vacated(&mut self, token: u64, at_us: i64) {
        let kills = self
            .kills
            .iter()
            .map(|k| k.leader_token)
            .collect::<Vec<_>>();
        for (i, t) in kills.into_iter().enumerate() {
            if t == Some(token) && self.kills[i].vacated_ms.is_none() {
                self.kills[i].vacated_ms = Some(us_to_ms(at_us - self.kill_us[i]));
            }
        }
    }

    /// Dates the detection of the latest kill of `member` not restarted before `at_us`,
    /// if it has none yet.
    fn note_detected(&mut self, member: &NodeId, at_us: i64) {
        let at = self
            .kills
            .iter()
            .rposition(|k| k.node == *member && k.restarted_us.is_none_or(|r| r >= at_us));
        if let Some(i) = at {
            let since = us_to_ms(at_us - self.kill_us[i]);
            self.kills[i].detected_ms.get_or_insert(since);
        }
    }

    /// Appends the violations and returns the figures.
    pub fn finish(self, r: &Resolved, end_us: i64, out: &mut Vec<Violation>) -> SwimSummary {
        let running = crate::scenario::swim::SwimConfig::running(&r.scenario.swim).is_some();
        if let Some(bound) = r.scenario.expect.swim_detection_ms_max.filter(|_| running) {
            for (k, &at) in self.kills.iter().zip(&self.kill_us) {
                let down_until = k.restarted_us.unwrap_or(end_us);
                let due = at + bound as i64 * 1000;
                let late = k.detected_ms.is_none_or(|d| d > bound as f64);
                if late && down_until >= due {
                    out.push(Violation {
property: Property::DeathUndetected,
                        at_ms: us_to_ms(due),
                        detail: format!(
                            "{} killed at {} ms: not declared down within expect.swim_detection_ms_max {bound} ms{}",
                            k.node,
                            k.killed_at_ms,
                            k.detected_ms.map_or(String::new(), |d| format!(" (after {d} ms)"))
                        ),
                    });
                }
            }
        }
        let detected: Vec<f64> = self.kills.iter().filter_map(|k| k.detected_ms).collect();
        let vacated: Vec<f64> = self.kills.iter().filter_map(|k| k.vacated_ms).collect();
        let secs = r.scenario.duration_ms as f64 / 1000.0;
        SwimSummary {
            detection_ms: LatencyStats::of(&detected),
            vacancy_ms: LatencyStats::of(&vacated),
            detections_ms: detected,
            vacancies_ms: vacated,
            kills: self.kills,
            false_suspicions: self.false_suspicions,
            false_downs: self.false_downs,
            evictions: self.evictions,
            messages: self.messages,
            messages_per_s: (self.messages as f64 / secs * 10.0).round() / 10.0,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: a hand-built run: the leader killed and detected, its lease revoked,
    //! a paused follower falsely suspected and declared down; then the same with no
    //! detection and a bound, which must fire.
    use super::super::testing::*;
    use super::super::{check, Property, Violation};
    use crate::timeline::{Entry, Event};
    use crate::NodeId;

    fn swim(at_ms: i64, down: bool, member: &str) -> Entry {
        let (node, member, start) = (NodeId::from("n2"), NodeId::from(member), 1);
        at(
            at_ms,
            if down {
                Event::SwimDown {
                    node,
                    member,
                    start,
                }
            } else {
                Event::SwimSuspected {
                    node,
                    member,
                    start,
                }
            },
        )
    }

    fn run(detected: bool) -> Vec<Entry> {
        let mut e = vec![leader(100, "n1", 7), killed(1000, "n1")];
        if detected {
            e.push(swim(1800, true, "n1"));
        }
        e.push(key_deleted(3500, 7));
        e.push(swim(5000, false, "n3"));
        e.push(swim(5600, true, "n3"));
        e
    }

    #[test]
    fn detection_vacancy_and_false_downs_are_measured() {
        let r = resolved();
        let f = check(&input(&r, &run(true), 20_000));
        let s = &f.swim;
        assert_eq!(s.kills[0].detected_ms, Some(800.0));
        assert_eq!(s.kills[0].vacated_ms, Some(2500.0));
        assert_eq!((s.false_suspicions, s.false_downs), (1, 1));
        assert!(!f
            .violations
            .iter()
            .any(|v| v.property == Property::DeathUndetected));
    }

    #[test]
    fn an_undetected_death_past_the_bound_fails() {
        let mut r = resolved();
        r.scenario.swim = Some(crate::scenario::swim::SwimConfig::default());
        r.scenario.expect.swim_detection_ms_max = Some(2000);
        let f = check(&input(&r, &run(false), 20_000));
        let v: Vec<&Violation> = f
            .violations
            .iter()
            .filter(|v| v.property == Property::DeathUndetected)
            .collect();
        assert_eq!(v.len(), 1, "{:?}", f.violations);
        assert_eq!(v[0].at_ms, 3000.0);
    }
}
