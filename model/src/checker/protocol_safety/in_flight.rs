//! A leadership's writes that were in flight when its grant ended and reached the
//! resource after another leader's claim: the leader was still acting (a write counts
//! from its send until the resource answers it, or until its sender gives it up), so each
//! is an act past the grant, judged here.
//!
//! What excuses one, in order:
//! - a protocol that promises nothing (bully, ring, redis-naive) is the fence's to guard;
//! - a write that landed after its sender gave it up (its resource timeout ran out) was
//!   held by the network longer than any leader waits: only the fence can stop it;
//! - a leader that let its grant go on purpose (a resign, a release, a transfer) while
//!   the write was in flight, before giving it up, chose to: nothing excuses that (no
//!   pause or clock fault makes a leader release early; its wait for a write runs on the
//!   world's time, not its clock);
//! - a grant that ended without the leader's say (its deadline passed, the backend
//!   expired or revoked it, another node won) while the write travelled is excused when
//!   the write's flight was longer than the pause the protocol tolerates between its
//!   last check of its deadline and its act (`pause_ms`: a write in flight is that act,
//!   delayed), or by a pause or clock fault beyond the bounds.

use super::excuses::Excuses;
use crate::checker::us_to_ms;
use crate::NodeId;
use baton_protocols::SafetyBounds;

/// A leadership's claim accepted by the resource: the newest tells whether a late write
/// landed after another leader had begun.
#[derive(Clone, Debug)]
pub(super) struct Claim {
    /// The claiming node.
    pub node: NodeId,
    /// Its token.
    pub token: u64,
    /// When the resource accepted it.
    pub at_us: i64,
}

/// One write in flight when its leadership's grant ended, landed after another claim.
pub(super) struct LateWrite {
    /// When it was sent.
    pub sent_us: i64,
    /// When it reached the resource.
    pub landed_us: i64,
    /// When its sender gave it up.
    pub give_up_us: i64,
    /// Whether the resource took it.
    pub accepted: bool,
    /// The claim it landed after.
    pub claim: Claim,
}

impl LateWrite {
    /// What it was, for a human: the second half of "it ...".
    pub fn describe(&self) -> String {
        format!(
            "had a write in flight (sent at {} ms) that reached the resource at {} ms, after {}'s claim (token {}) at {} ms, and was {}",
            us_to_ms(self.sent_us),
            us_to_ms(self.landed_us),
            self.claim.node,
            self.claim.token,
            us_to_ms(self.claim.at_us),
            if self.accepted {
                "accepted"
            } else {
                "rejected by the fence"
            }
        )
    }
}

/// Judges one leadership's late writes.
pub(super) struct Judge<'a> {
    /// The protocol's declared bounds.
    pub bounds: SafetyBounds,
    /// Its name.
    pub protocol: &'static str,
    /// The run's pauses and clock faults.
    pub excuses: &'a Excuses,
    /// The leadership's node.
    pub node: &'a NodeId,
    /// When it won.
    pub win_us: i64,
    /// When its grant ended.
    pub grant_end_us: i64,
    /// Whether it let the grant go on purpose.
    pub released: bool,
}

impl Judge<'_> {
    /// The excuse for `w` (report.json's words, the summary's), if there is one.
    pub fn excuse(&self, w: &LateWrite) -> Option<(String, String)> {
        let protocol = self.protocol;
        if !self.bounds.self_safe {
            let why = format!("{protocol} promises nothing without the fence");
            return Some((why.clone(), why));
        }
        let flight_ms = us_to_ms(w.landed_us - w.sent_us);
        if w.landed_us > w.give_up_us {
            let timeout_ms = us_to_ms(w.give_up_us - w.sent_us);
            return Some((
                format!("the network held that write {flight_ms} ms, past the {timeout_ms} ms its sender waited for it"),
                format!(
                    "the network held {}'s write for {flight_ms} ms, longer than the {timeout_ms} ms a node waits for a write before it gives it up",
                    self.node
                ),
            ));
        }
        if self.released {
            return None;
        }
        let pause_ms = self.bounds.pause_ms;
        if flight_ms > pause_ms as f64 {
            return Some((
                format!("that write was in flight {flight_ms} ms, beyond the {pause_ms} ms {protocol} tolerates between a check of its deadline and its act"),
                format!(
                    "{}'s write was in flight for {flight_ms} ms when its grant ended, longer than the {pause_ms} ms {protocol} tolerates between a check of its deadline and its act",
                    self.node
                ),
            ));
        }
        self.excuses
            .of(self.node, self.win_us, self.grant_end_us)
            .map(|x| (x.what.clone(), x.plain.clone()))
    }
}
