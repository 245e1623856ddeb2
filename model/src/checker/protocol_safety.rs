//! Protocol safety: does the protocol itself keep its leader inside its grant, or only
//! the fence? (See [`baton_protocols::safety`] for what each protocol declares.)
//!
//! A leadership is a node's win under a token until it stops (a role change, its
//! `StoppedActing`, or its death). Its **grant ends** at the backend's own judgement:
//! the first `KeyDeleted` whose create revision is its token or `SeatVacated` naming its
//! token, after the win, or, first, another node's win under a token at least as high
//! (the backend, or the peers' quorum, gave the seat away). The leadership **acts past its grant** when it still
//! believes it leads after that instant, or starts a protected write (`WriteAttempted`
//! under its token) after it.
//!
//! Such an act is **excused** when, before it and during the leadership, the node was
//! paused longer than the protocol's `pause_ms` (a scripted pause or GC noise; the
//! pause's start counts, once its length is known), or its clock jumped beyond
//! `offset_ms` or was made to drift beyond `drift_ppm` (either way), or the backend's
//! clock was (a clock fault on any target that is not a node), or, where the peers'
//! clocks judge the grant (raft's followers time the election), any node's, or the
//! backend restarted without its data (Redis without persistence forgets the lock and
//! the token counter: no protocol on top of it can keep its promise). A jump is judged by what
//! the clock read before and after: setting an offset inside the bound on a clock that
//! had drifted far moves it far (the checker keeps each clock's [`Skew`]). Excused acts are the fence's to
//! stop: they are counted ("fence-saved"), and the run passes as the other checkers
//! say. An act that is not excused is a bug in the protocol: one
//! [`Property::ActedPastGrant`] per leadership, whatever the fence did. A protocol that
//! promises nothing (`self_safe: false`: bully, ring) has every act excused.
//!
//! The run's outcome: **unsafe** when any safety property failed (this one, or what the
//! resource saw: double leaders, stale tokens, sequence, handoff, election safety, stale
//! reads), else **fence-saved** when some leadership acted past its grant, else
//! **protocol-safe**.

use super::{us_to_ms, Property, Violation};
use crate::clock_model::{ClockChange, Skew};
use crate::scenario::Resolved;
use crate::timeline::{Entry, Event, Role};
use baton_protocols::safety::SafetyBounds;
use serde::Serialize;
use std::collections::BTreeMap;

/// The three outcomes of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// No leader acted past its grant, and no safety property failed.
    #[default]
    ProtocolSafe,
    /// Some leader acted past its grant beyond the protocol's bounds, and the fence kept
    /// the resource right.
    FenceSaved,
    /// A safety property failed.
    Unsafe,
}

impl Outcome {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::ProtocolSafe => "protocol-safe",
            Outcome::FenceSaved => "fence-saved",
            Outcome::Unsafe => "unsafe",
        }
    }
}

/// What `report.json` says under `protocol_safety`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ProtocolSafetySummary {
    /// protocol-safe, fence-saved or unsafe.
    pub outcome: Outcome,
    /// The bounds the protocol declares.
    pub bounds: Option<SafetyBounds>,
    /// Leaderships that acted past their grant inside the bounds (each a violation).
    pub past_grant_in_bounds: u64,
    /// Leaderships that acted past their grant beyond the bounds (the fence's to stop).
    pub past_grant_fence_saved: u64,
    /// Protected writes started past the grant, over both.
    pub writes_past_grant: u64,
    /// Each fence-saved leadership: who, when, and the excuse.
    pub fence_saved: Vec<String>,
}

/// Why a leadership's grant ended.
#[derive(Clone, Debug)]
struct GrantEnd {
    at_us: i64,
    why: String,
}

struct Lead {
    node: String,
    token: u64,
    win_us: i64,
    grant_end: Option<GrantEnd>,
    /// Still leading.
    open: bool,
    /// The first act past the grant, and how many writes.
    first_act_us: Option<i64>,
    believed_past_ms: f64,
    writes_past: u64,
}

impl Lead {
    /// What it did past its grant `g`, for a human.
    fn acts(&self, g: &GrantEnd) -> String {
        let mut acts = vec![];
        if self.believed_past_ms > 0.0 {
            acts.push(format!(
                "believed it led {} ms longer",
                self.believed_past_ms
            ));
        }
        match self.writes_past {
            0 => {}
            1 => acts.push("started 1 protected write after it".to_string()),
            n => acts.push(format!("started {n} protected writes after it")),
        }
        format!(
            "{} (token {}) acted past its grant, which ended at {} ms ({}): it {}",
            self.node,
            self.token,
            us_to_ms(g.at_us),
            g.why,
            acts.join(" and ")
        )
    }
}

/// An excuse: from `start_us`, for a node (`None`: every node), while its cause lasted
/// over `[start_us, end_us]` (`None`: for good).
struct Excuse {
    node: Option<String>,
    start_us: i64,
    end_us: Option<i64>,
    what: String,
}

/// The checker, read one event at a time.
pub(crate) struct ProtocolSafety {
    bounds: SafetyBounds,
    protocol: &'static str,
    nodes: Vec<String>,
    /// Clock faults by fault index.
    clock_faults: BTreeMap<usize, ClockChange>,
    /// Every clock a clock fault touched, by target, as the world keeps it.
    clocks: BTreeMap<String, Skew>,
    /// The backend's server loses its data when it restarts.
    server_forgets: bool,
    leads: Vec<Lead>,
    excuses: Vec<Excuse>,
    /// Pauses under way: node -> (start of the first, pauses in force). A pause may
    /// land on a node already paused (two scripted pauses, or GC during one); the node
    /// runs again only when the last ends, and the whole stretch is one pause.
    paused: BTreeMap<String, (i64, u32)>,
}

impl ProtocolSafety {
    /// A checker for a run of `r`.
    pub fn new(r: &Resolved) -> Self {
        let clock_faults = r
            .faults
            .iter()
            .enumerate()
            .filter_map(|(i, f)| Some((i, f.fault.clock_change()?)))
            .collect();
        ProtocolSafety {
            bounds: r.protocol.safety_bounds(),
            protocol: r.scenario.protocol.name(),
            nodes: (1..=r.scenario.nodes).map(|i| format!("n{i}")).collect(),
            clock_faults,
            clocks: BTreeMap::new(),
            server_forgets: r
                .scenario
                .protocol
                .server_faults(r.scenario.etcd_cluster().is_cluster())
                .is_some_and(|f| !f.keeps_data),
            leads: vec![],
            excuses: vec![],
            paused: BTreeMap::new(),
        }
    }

    fn end_grant(&mut self, pick: impl Fn(&Lead) -> bool, at_us: i64, why: &str) {
        for l in self
            .leads
            .iter_mut()
            .filter(|l| l.open && l.grant_end.is_none())
        {
            if pick(l) {
                l.grant_end = Some(GrantEnd {
                    at_us,
                    why: why.to_string(),
                });
            }
        }
    }

    fn close(&mut self, node: &str, token: Option<u64>, at_us: i64) {
        for l in self.leads.iter_mut().filter(|l| l.open && l.node == node) {
            if token.is_some_and(|t| t != l.token) {
                continue;
            }
            l.open = false;
            if let Some(g) = &l.grant_end {
                if at_us > g.at_us {
                    l.believed_past_ms = us_to_ms(at_us - g.at_us);
                    l.first_act_us = Some(l.first_act_us.map_or(g.at_us, |a| a.min(g.at_us)));
                }
            }
        }
    }

    /// One pause on `node` ended: the node runs again when it was the last in force.
    fn resumed(&mut self, node: &str, at_us: i64) {
        if let Some((_, depth)) = self.paused.get_mut(node) {
            *depth = depth.saturating_sub(1);
            if *depth == 0 {
                self.pause_ended(node, at_us);
            }
        }
    }

    fn pause_ended(&mut self, node: &str, at_us: i64) {
        if let Some((start, _)) = self.paused.remove(node) {
            let ms = us_to_ms(at_us - start);
            if ms > self.bounds.pause_ms as f64 {
                self.excuses.push(Excuse {
                    node: Some(node.to_string()),
                    start_us: start,
                    end_us: Some(at_us),
                    what: format!("paused {ms} ms from {} ms", us_to_ms(start)),
                });
            }
        }
    }

    /// A fault fired: if it is a clock fault beyond the bounds (a jump of the reading, or
    /// a drift), it excuses its target from then on (every node, when it hit the backend).
    fn clock_fault(&mut self, index: usize, target: &str, t: i64) {
        let Some(&change) = self.clock_faults.get(&index) else {
            return;
        };
        let jump_us = self
            .clocks
            .entry(target.to_string())
            .or_default()
            .apply(t, change);
        let drift_ppm = match change {
            ClockChange::Drift(ppm) => ppm,
            _ => 0,
        };
        let b = &self.bounds;
        if jump_us.unsigned_abs() > b.offset_ms * 1000 || drift_ppm.unsigned_abs() > b.drift_ppm {
            let what = match change {
                ClockChange::Drift(_) => {
                    format!("its clock drifting {drift_ppm} ppm from {} ms", us_to_ms(t))
                }
                ClockChange::Offset(ms) if jump_us != ms * 1000 => format!(
                    "its clock set to {ms} ms off at {} ms, a jump of {} ms",
                    us_to_ms(t),
                    us_to_ms(jump_us)
                ),
                _ => format!(
                    "its clock moved {} ms at {} ms",
                    us_to_ms(jump_us),
                    us_to_ms(t)
                ),
            };
            // A node's own clock excuses that node, unless the peers' clocks judge the
            // grant (raft): then, like the backend's clock, it excuses every node.
            let node = (self.nodes.iter().any(|n| n == target) && !b.peers_judge)
                .then(|| target.to_string());
            self.excuses.push(Excuse {
                what: match &node {
                    Some(_) => what,
                    None => format!("{target}: {}", what.replacen("its", "the", 1)),
                },
                node,
                start_us: t,
                end_us: None,
            });
        }
    }

    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        let t = e.at_us;
        match &e.event {
            Event::RoleChanged {
                node,
                role: Role::Leader,
                token: Some(token),
            } => {
                if self
                    .leads
                    .iter()
                    .any(|l| l.open && l.node == *node && l.token == *token)
                {
                    return;
                }
                let why = format!("{node} won (token {token})");
                // A win under an older token (a stale term learned late) gives nothing
                // away: the newer leadership's grant stands.
                self.end_grant(|l| l.node != *node && l.token <= *token, t, &why);
                self.close(node, None, t);
                self.leads.push(Lead {
                    node: node.clone(),
                    token: *token,
                    win_us: t,
                    grant_end: None,
                    open: true,
                    first_act_us: None,
                    believed_past_ms: 0.0,
                    writes_past: 0,
                });
            }
            Event::RoleChanged { node, .. } => {
                self.close(node, None, t);
                self.paused.remove(node);
            }
            // A node killed while paused was paused until then at least: the pause still
            // excuses what its leadership did past the grant meanwhile.
            Event::NodeKilled { node } => {
                self.close(node, None, t);
                self.pause_ended(node, t);
            }
            Event::StoppedActing {
                node,
                token,
                lost_at_us,
                ..
            } => self.close(node, Some(*token), lost_at_us.map_or(t, |l| l.min(t))),
            Event::KeyDeleted {
                create_revision,
                cause,
                key,
            } => {
                let why = format!("{key} {cause}");
                let rev = *create_revision;
                self.end_grant(|l| i64::try_from(l.token) == Ok(rev), t, &why);
            }
            Event::SeatVacated { key, token, cause } => {
                let why = format!("{key} {cause}");
                self.end_grant(|l| l.token == *token, t, &why);
            }
            Event::WriteAttempted { node, token, .. } => {
                if let Some(l) = self
                    .leads
                    .iter_mut()
                    .rev()
                    .find(|l| l.node == *node && l.token == *token)
                {
                    if l.grant_end.as_ref().is_some_and(|g| t > g.at_us) {
                        l.writes_past += 1;
                        l.first_act_us = Some(l.first_act_us.map_or(t, |a| a.min(t)));
                    }
                }
            }
            Event::NodePaused { node } | Event::GcPaused { node, .. } => {
                self.paused.entry(node.clone()).or_insert((t, 0)).1 += 1;
            }
            Event::NodeResumed { node } | Event::GcResumed { node } => self.resumed(node, t),
            Event::FaultApplied { index, target, .. } => self.clock_fault(*index, target, t),
            Event::MemberRestarted { member } if member == "backend" && self.server_forgets => {
                self.excuses.push(Excuse {
                    node: None,
                    start_us: t,
                    end_us: None,
                    what: format!(
                        "backend: restarted without its data at {} ms (its locks and token counter gone)",
                        us_to_ms(t)
                    ),
                });
            }
            _ => {}
        }
    }

    /// The excuse for an act of `l` at `act_us`, if there is one.
    fn excuse(&self, l: &Lead, act_us: i64) -> Option<&Excuse> {
        self.excuses.iter().find(|x| {
            x.node.as_ref().is_none_or(|n| *n == l.node)
                && x.start_us <= act_us
                && x.end_us.is_none_or(|end| end >= l.win_us)
        })
    }

    /// Appends a violation per leadership that acted past its grant inside the bounds;
    /// returns the summary (its outcome judged later, by [`ProtocolSafetySummary::judge`]).
    pub fn finish(mut self, end_us: i64, out: &mut Vec<Violation>) -> ProtocolSafetySummary {
        let open: Vec<String> = self.paused.keys().cloned().collect();
        for node in open {
            self.pause_ended(&node, end_us);
        }
        let nodes: Vec<String> = self
            .leads
            .iter()
            .filter(|l| l.open)
            .map(|l| l.node.clone())
            .collect();
        for node in nodes {
            self.close(&node, None, end_us);
        }
        let b = self.bounds;
        let mut s = ProtocolSafetySummary {
            bounds: Some(b),
            ..Default::default()
        };
        for l in &self.leads {
            let (Some(act), Some(g)) = (l.first_act_us, &l.grant_end) else {
                continue;
            };
            s.writes_past_grant += l.writes_past;
            let excuse = match self.excuse(l, act) {
                Some(x) => Some(x.what.clone()),
                None if !b.self_safe => Some(format!(
                    "{} promises nothing without the fence",
                    self.protocol
                )),
                None => None,
            };
            if let Some(why) = excuse {
                s.past_grant_fence_saved += 1;
                s.fence_saved.push(format!("{}; excused: {why}", l.acts(g)));
                continue;
            }
            s.past_grant_in_bounds += 1;
            out.push(Violation {
property: Property::ActedPastGrant,
                at_ms: us_to_ms(act),
                detail: format!(
                    "{}, with no pause or clock fault beyond {}'s bounds (pause {} ms, drift {} ppm, offset {} ms)",
                    l.acts(g),
                    self.protocol,
                    b.pause_ms,
                    b.drift_ppm,
                    b.offset_ms
                ),
            });
        }
        s
    }
}

impl ProtocolSafetySummary {
    /// Sets the outcome from every violation of the run.
    pub fn judge(&mut self, violations: &[Violation]) {
        self.outcome = if violations.iter().any(|v| v.property.is_safety()) {
            Outcome::Unsafe
        } else if self.past_grant_fence_saved > 0 {
            Outcome::FenceSaved
        } else {
            Outcome::ProtocolSafe
        };
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built timelines on the default scenario (etcd-lease, declared
    //! bounds 0 ms / 0 ppm / 0 ms). Canary: a leader still believing after its key
    //! expired, and writing, with nothing to excuse it: one violation, unsafe. Quiet: the
    //! same after a pause (fence-saved, counted), after a drift fault on its clock, and a
    //! leader that stops in time (protocol-safe). A stop recorded after an in-flight write
    //! counts from when its belief ended (`lost_at_us`).
    use super::super::testing::*;
    use super::*;
    use crate::timeline::WriteOp;

    fn judge(entries: &[Entry]) -> (ProtocolSafetySummary, Vec<Violation>) {
        let r = resolved();
        let mut c = ProtocolSafety::new(&r);
        for e in entries {
            c.entry(e);
        }
        let mut v = vec![];
        let mut s = c.finish(10_000_000, &mut v);
        s.judge(&v);
        (s, v)
    }

    fn attempted(at_ms: i64, node: &str, token: u64) -> Entry {
        at(
            at_ms,
            Event::WriteAttempted {
                node: node.into(),
                token,
                op: WriteOp::Tick { n: 1 },
            },
        )
    }

    /// n1 leads under token 5; its key expires at 3000; it believes until 3400 and writes
    /// at 3200; `extra` goes in before the expiry.
    fn overrun(extra: Vec<Entry>) -> Vec<Entry> {
        let mut v = vec![leader(100, "n1", 5), attempted(1000, "n1", 5)];
        v.extend(extra);
        v.extend([
            key_deleted(3000, 5),
            attempted(3200, "n1", 5),
            stopped(3400, "n1", 5, "deadline_passed"),
        ]);
        v
    }

    #[test]
    fn acting_past_the_grant_inside_the_bounds_fails() {
        let (s, v) = judge(&overrun(vec![]));
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].property, Property::ActedPastGrant);
        assert_eq!(v[0].at_ms, 3000.0);
        assert!(
            v[0].detail
                .contains("believed it led 400 ms longer and started 1 protected write after it"),
            "{}",
            v[0].detail
        );
        assert_eq!(
            (s.outcome, s.past_grant_in_bounds, s.writes_past_grant),
            (Outcome::Unsafe, 1, 1)
        );
    }

    #[test]
    fn a_pause_that_lands_on_a_paused_node_extends_it() {
        // Paused at 2 s for 4.6 s, paused again at 6.6 s (while still paused) until 11 s;
        // the grant ends at 3 s and the node stops only at 11 s, as it wakes (the swarm's seed
        // 1207 on raft). One pause of 9 s excuses it; the first pause's end must not
        // close it, nor the second's start hide the first.
        let v = vec![
            leader(100, "n1", 5),
            at(2000, Event::NodePaused { node: "n1".into() }),
            key_deleted(3000, 5),
            at(6600, Event::NodePaused { node: "n1".into() }),
            at(6640, Event::NodeResumed { node: "n1".into() }),
            at(11000, Event::NodeResumed { node: "n1".into() }),
            stopped(11000, "n1", 5, "lease-expired"),
        ];
        let (s, v) = judge(&v);
        assert!(v.is_empty(), "{v:?}");
        assert_eq!(s.outcome, Outcome::FenceSaved);
        assert!(
            s.fence_saved[0].contains("paused 9000 ms"),
            "{:?}",
            s.fence_saved
        );
    }

    #[test]
    fn a_leader_killed_while_paused_is_excused_by_its_pause() {
        // Paused at 2 s, the grant ends at 3 s, killed at 3.5 s while still paused (the
        // swarm's seed 226 on consul-session): the pause excuses its belief past the
        // grant; forgetting it at the kill made the run fail.
        let v = vec![
            leader(100, "n1", 5),
            at(2000, Event::NodePaused { node: "n1".into() }),
            key_deleted(3000, 5),
            at(3500, Event::NodeKilled { node: "n1".into() }),
        ];
        let (s, v) = judge(&v);
        assert!(v.is_empty(), "{v:?}");
        assert_eq!(s.outcome, Outcome::FenceSaved);
    }

    #[test]
    fn a_pause_or_a_clock_fault_beyond_the_bounds_excuses_it() {
        let paused = overrun(vec![
            at(2000, Event::NodePaused { node: "n1".into() }),
            at(3100, Event::NodeResumed { node: "n1".into() }),
        ]);
        let (s, v) = judge(&paused);
        assert!(v.is_empty(), "{v:?}");
        assert_eq!(
            (s.outcome, s.past_grant_fence_saved),
            (Outcome::FenceSaved, 1)
        );
        assert!(
            s.fence_saved[0].contains("paused 1100 ms"),
            "{:?}",
            s.fence_saved
        );
        // A drift fault (fault 0 of a scenario that has one) on n1's clock.
        let mut r = resolved();
        r.faults.push(crate::fault::Firing {
            when: crate::fault::When::At(2000),
            jitter_ms: 0,
            fault: crate::fault::Fault::ClockDrift {
                target: "n1".into(),
                drift_ppm: -200_000,
            },
        });
        let mut c = ProtocolSafety::new(&r);
        for e in overrun(vec![at(
            2000,
            Event::FaultApplied {
                index: 0,
                kind: crate::fault::FaultKind::ClockDrift,
                target: "n1".into(),
            },
        )]) {
            c.entry(&e);
        }
        let mut v = vec![];
        let s = c.finish(10_000_000, &mut v);
        assert!(v.is_empty(), "{v:?}");
        assert!(
            s.fence_saved[0].contains("drifting -200000 ppm"),
            "{:?}",
            s.fence_saved
        );
    }

    #[test]
    fn an_offset_inside_the_bounds_set_on_a_drifted_clock_is_judged_by_its_jump() {
        // k8s-lease's defaults tolerate 5,000 ms and 333,333 ppm. n1 runs 200,000 ppm
        // fast from 0 (inside), then at 30 s its clock is set to -13 ms (inside as a
        // value): it had gained 6 s, so it jumps back 6,013 ms, beyond the bound (raft
        // swarm seed 4586). The same offset on a true clock excuses nothing.
        let faults = |drift: bool| {
            let mut text = String::from("protocol = \"k8s-lease\"\n");
            if drift {
                text += "[[faults]]\nkind = \"clock-drift\"\ntarget = \"n1\"\ndrift_ppm = 200000\nat_ms = 0\n";
            }
            text += "[[faults]]\nkind = \"clock-offset\"\ntarget = \"n1\"\noffset_ms = -13\nat_ms = 30000\n";
            crate::scenario::load_str("t.toml", "t", &text, &[]).expect("loads")
        };
        let applied = |index: usize, kind| {
            at(
                if index == 0 && kind == crate::fault::FaultKind::ClockDrift {
                    0
                } else {
                    30_000
                },
                Event::FaultApplied {
                    index,
                    kind,
                    target: "n1".into(),
                },
            )
        };
        let run = |r: &Resolved, extra: Vec<Entry>| {
            let mut c = ProtocolSafety::new(r);
            let mut v = vec![leader(100, "n1", 5)];
            v.extend(extra);
            v.extend([
                key_deleted(31_000, 5),
                stopped(31_400, "n1", 5, "deadline_passed"),
            ]);
            for e in &v {
                c.entry(e);
            }
            let mut out = vec![];
            let s = c.finish(40_000_000, &mut out);
            (s, out)
        };
        use crate::fault::FaultKind::{ClockDrift, ClockOffset};
        let (s, v) = run(
            &faults(true),
            vec![applied(0, ClockDrift), applied(1, ClockOffset)],
        );
        assert!(v.is_empty(), "{v:?}");
        assert!(
            s.fence_saved[0].contains("set to -13 ms off at 30000 ms, a jump of -6013 ms"),
            "{:?}",
            s.fence_saved
        );
        let (_, v) = run(&faults(false), vec![applied(0, ClockOffset)]);
        assert_eq!(v.len(), 1, "{v:?}");
    }

    #[test]
    fn a_followers_clock_jump_excuses_the_leader_only_where_peers_judge_the_grant() {
        // n1 leads; follower n2's clock steps 1,490 ms ahead (beyond 50 ms); n3 wins at
        // 26.655 s with n2's early vote and n1 believes 31 ms longer (raft swarm seeds
        // 1020 and 8978). Under raft, whose followers' clocks time the election, the jump
        // excuses n1; under k8s-lease, where the Lease API's clock judges, it does not.
        let run = |protocol: &str| {
            let text = format!(
                "protocol = \"{protocol}\"\n[[faults]]\nkind = \"clock-step\"\ntarget = \"n2\"\nstep_ms = 1490\nat_ms = 26623\n"
            );
            let r = crate::scenario::load_str("t.toml", "t", &text, &[]).expect("loads");
            let mut c = ProtocolSafety::new(&r);
            for e in [
                leader(100, "n1", 2),
                at(
                    26_623,
                    Event::FaultApplied {
                        index: 0,
                        kind: crate::fault::FaultKind::ClockStep,
                        target: "n2".into(),
                    },
                ),
                leader(26_655, "n3", 3),
                stopped(26_687, "n1", 2, "lease_lost"),
            ] {
                c.entry(&e);
            }
            let mut v = vec![];
            let s = c.finish(40_000_000, &mut v);
            (s, v)
        };
        let (s, v) = run("raft");
        assert!(v.is_empty(), "{v:?}");
        assert!(
            s.fence_saved[0].contains("n2: the clock moved 1490 ms"),
            "{:?}",
            s.fence_saved
        );
        let (_, v) = run("k8s-lease");
        assert_eq!(v.len(), 1, "{v:?}");
    }

    #[test]
    fn a_backend_restarted_without_its_data_excuses_every_leader() {
        // Redis without persistence forgets the lock at a restart: n1 acting past the
        // next win is the backend's doing. The database keeps its row: no excuse.
        let run = |protocol: &str| {
            let text = format!("protocol = \"{protocol}\"\n");
            let r = crate::scenario::load_str("t.toml", "t", &text, &[]).expect("loads");
            let mut c = ProtocolSafety::new(&r);
            for e in [
                leader(100, "n1", 1),
                at(
                    10_000,
                    Event::MemberRestarted {
                        member: "backend".into(),
                    },
                ),
                leader(10_030, "n2", 1),
                stopped(10_110, "n1", 1, "revoked"),
            ] {
                c.entry(&e);
            }
            let mut v = vec![];
            let s = c.finish(20_000_000, &mut v);
            (s, v)
        };
        let (s, v) = run("redis-fenced");
        assert!(v.is_empty(), "{v:?}");
        assert!(
            s.fence_saved[0].contains("backend: restarted without its data"),
            "{:?}",
            s.fence_saved
        );
        let (_, v) = run("db-row");
        assert_eq!(v.len(), 1, "{v:?}");
    }

    #[test]
    fn a_stale_win_under_an_older_token_gives_nothing_away() {
        // n2 learns late that it won term 4; n1 already leads term 5.
        let (s, v) = judge(&[
            leader(100, "n1", 5),
            leader(200, "n2", 4),
            attempted(300, "n1", 5),
            stopped(400, "n1", 5, "resigned"),
        ]);
        assert!(v.is_empty(), "{v:?}");
        assert_eq!(s.outcome, Outcome::ProtocolSafe);
    }

    #[test]
    fn stopping_in_time_is_protocol_safe_even_after_an_in_flight_write() {
        let (s, v) = judge(&[
            leader(100, "n1", 5),
            attempted(2990, "n1", 5),
            key_deleted(3000, 5),
            // Its deadline passed at 2995; the write in flight finished at 3050.
            at(
                3050,
                Event::StoppedActing {
                    node: "n1".into(),
                    token: 5,
                    reason: "deadline_passed".into(),
                    lost_at_us: Some(2_995_000),
                },
            ),
            leader(3100, "n2", 6),
        ]);
        assert!(v.is_empty(), "{v:?}");
        assert_eq!(s.outcome, Outcome::ProtocolSafe);
    }
}
