//! Each leadership's grant, followed one event at a time: when the backend's grant to it
//! ended, and what it did past that instant (believed it led, started protected writes,
//! or had a write in flight that landed after another leader's claim: see
//! [`super::in_flight`]). At the end of the run, each act past a grant is excused (see
//! [`super::excuses`]) or a violation.

use super::excuses::Excuses;
use super::in_flight::{Claim, Judge, LateWrite};
use super::ProtocolSafetySummary;
use crate::checker::{us_to_ms, Landed, Property, Violation};
use crate::scenario::Resolved;
use crate::timeline::{Entry, Event, Role, WriteOp};
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
    /// When it gave its grant up on purpose (`Released`, `HandedOver`), if it did.
    released_us: Option<i64>,
    /// Its writes in flight when its grant ended that landed after another's claim.
    landed_late: Vec<LateWrite>,
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
        acts.extend(self.landed_late.iter().map(LateWrite::describe));
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
    /// The newest claim the resource accepted.
    last_claim: Option<Claim>,
}

impl ProtocolSafety {
    /// A checker for a run of `r`.
    pub fn new(r: &Resolved) -> Self {
        ProtocolSafety {
            bounds: r.protocol.safety_bounds(),
            protocol: r.scenario.protocol.name(),
            leads: vec![],
            excuses: Excuses::new(r),
            last_claim: None,
        }
    }

    /// Ends the grant of every leadership `pick` chooses whose grant still stands, whether
    /// or not it still leads: one that stopped may have a write in flight.
    fn end_grant(&mut self, pick: impl Fn(&Lead) -> bool, at_us: i64, why: &str) {
        for l in self.leads.iter_mut().filter(|l| l.grant_end.is_none()) {
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
                    released_us: None,
                    landed_late: vec![],
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
            Event::Released { node, token } | Event::HandedOver { node, token, .. } => {
                self.released(node, *token, t)
            }
            Event::WriteAccepted {
                node,
                token,
                op: WriteOp::Claim,
                ..
            } => self.claimed(node, *token, t),
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

    /// `node`'s leadership under `token` gave its grant up on purpose at `at_us`.
    fn released(&mut self, node: &NodeId, token: u64, at_us: i64) {
        if let Some(l) = self
            .leads
            .iter_mut()
            .rev()
            .find(|l| l.node == *node && l.token == token)
        {
            l.released_us.get_or_insert(at_us);
        }
    }

    /// The resource accepted `node`'s claim under `token` at `at_us`: the newest leader
    /// has begun.
    fn claimed(&mut self, node: &NodeId, token: u64, at_us: i64) {
        self.last_claim = Some(Claim {
            node: node.clone(),
            token,
            at_us,
        });
    }

    /// Reads a write that reached the resource: an act past its leadership's grant when
    /// it was in flight as the grant ended (sent before, not yet given up) and landed
    /// after another leader's claim.
    pub fn landed(&mut self, w: &Landed) {
        let Some(claim) = self
            .last_claim
            .clone()
            .filter(|c| (c.node != w.node || c.token != w.token) && c.token >= w.token)
        else {
            return;
        };
        let Some(l) = self
            .leads
            .iter_mut()
            .rev()
            .find(|l| l.node == w.node && l.token == w.token && l.win_us <= w.sent_us)
        else {
            return;
        };
        let Some(g) = &l.grant_end else {
            return;
        };
        // Sent after the grant ended: counted as a write started past it. Given up before
        // it ended, or landed after a claim made before it ended: not this case.
        if w.sent_us > g.at_us || w.give_up_us <= g.at_us || claim.at_us < g.at_us {
            return;
        }
        l.landed_late.push(LateWrite {
            sent_us: w.sent_us,
            landed_us: w.landed_us,
            give_up_us: w.give_up_us,
            accepted: w.accepted,
            claim,
        });
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
            let Some(g) = &l.grant_end else {
                continue;
            };
            if l.first_act_us.is_none() && l.landed_late.is_empty() {
                continue;
            }
            s.writes_past_grant += l.writes_past;
            s.writes_landed_past_grant += l.landed_late.len() as u64;
            let (excuses, unexcused_us) = self.judge(l, g);
            let Some(act) = unexcused_us else {
                let (why, plain): (Vec<String>, Vec<String>) = excuses.into_iter().unzip();
                s.past_grant_fence_saved += 1;
                s.fence_saved
                    .push(format!("{}; excused: {}", l.acts(g), why.join("; ")));
                s.fence_saved_plain.push(format!(
                    "{}; not the protocol's fault: {}",
                    l.acts(g),
                    plain.join("; ")
                ));
                continue;
            };
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

    /// The excuses (report.json's words, the summary's) of `l`'s acts past its grant `g`,
    /// each once, and the first act nothing excuses, if any.
    #[allow(clippy::type_complexity)]
    fn judge(&self, l: &Lead, g: &GrantEnd) -> (Vec<(String, String)>, Option<i64>) {
        let mut excuses: Vec<(String, String)> = vec![];
        let mut unexcused: Option<i64> = None;
        let mut note = |excuse: Option<(String, String)>, at_us: i64| match excuse {
            Some(x) if !excuses.contains(&x) => excuses.push(x),
            Some(_) => {}
            None => unexcused = Some(unexcused.map_or(at_us, |u| u.min(at_us))),
        };
        if let Some(act) = l.first_act_us {
            let excuse = match self.excuses.of(&l.node, l.win_us, act) {
                Some(x) => Some((x.what.clone(), x.plain.clone())),
                None if !self.bounds.self_safe => {
                    let why = format!("{} promises nothing without the fence", self.protocol);
                    Some((why.clone(), why))
                }
                None => None,
            };
            note(excuse, act);
        }
        let judge = Judge {
            bounds: self.bounds,
            protocol: self.protocol,
            excuses: &self.excuses,
            node: &l.node,
            win_us: l.win_us,
            grant_end_us: g.at_us,
            released: l.released_us.is_some_and(|r| r <= g.at_us),
        };
        for w in &l.landed_late {
            note(judge.excuse(w), w.landed_us);
        }
        (excuses, unexcused)
    }
}
