//! Each leadership's grant, followed one event at a time: when the backend's grant to it
//! ended, and what it did past that instant (believed it led, or started protected
//! writes). At the end of the run, each act past a grant is excused (see [`super::excuses`])
//! or a violation.

use super::excuses::Excuses;
use super::ProtocolSafetySummary;
use crate::checker::{us_to_ms, Property, Violation};
use crate::scenario::Resolved;
use crate::timeline::{Entry, Event, Role};
use crate::NodeId;
use baton_protocols::SafetyBounds;

/// Why a leadership's grant ended.
#[derive(Clone, Debug)]
struct GrantEnd {
    at_us: i64,
    why: String,
}

struct Lead {
    node: NodeId,
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

/// The checker, read one event at a time.
pub(crate) struct ProtocolSafety {
    bounds: SafetyBounds,
    protocol: &'static str,
    leads: Vec<Lead>,
    excuses: Excuses,
}

impl ProtocolSafety {
    /// A checker for a run of `r`.
    pub fn new(r: &Resolved) -> Self {
        ProtocolSafety {
            bounds: r.protocol.safety_bounds(),
            protocol: r.scenario.protocol.name(),
            leads: vec![],
            excuses: Excuses::new(r),
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
                self.excuses.forget_pause(node);
            }
            // A node killed while paused was paused until then at least: the pause still
            // excuses what its leadership did past the grant meanwhile.
            Event::NodeKilled { node } => {
                self.close(node, None, t);
                self.excuses.pause_ended(node, t);
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
                self.excuses.paused(node, t)
            }
            Event::NodeResumed { node } | Event::GcResumed { node } => {
                self.excuses.resumed(node, t)
            }
            Event::FaultApplied { index, target, .. } => {
                self.excuses.clock_fault(*index, target, t)
            }
            Event::MemberRestarted { member } if member == "backend" => {
                self.excuses.backend_restarted(t)
            }
            _ => {}
        }
    }

    /// Appends a violation per leadership that acted past its grant inside the bounds;
    /// returns the summary (its outcome judged later, by [`ProtocolSafetySummary::judge`]).
    pub fn finish(mut self, end_us: i64, out: &mut Vec<Violation>) -> ProtocolSafetySummary {
        self.excuses.finish(end_us);
        let nodes: Vec<NodeId> = self
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
            let excuse = match self.excuses.of(&l.node, l.win_us, act) {
                Some(x) => Some((x.what.clone(), x.plain.clone())),
                None if !b.self_safe => {
                    let why = format!("{} promises nothing without the fence", self.protocol);
                    Some((why.clone(), why))
                }
                None => None,
            };
            if let Some((why, plain)) = excuse {
                s.past_grant_fence_saved += 1;
                s.fence_saved.push(format!("{}; excused: {why}", l.acts(g)));
                s.fence_saved_plain
                    .push(format!("{}; not the protocol's fault: {plain}", l.acts(g)));
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
