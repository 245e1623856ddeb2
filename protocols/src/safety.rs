//! What a protocol promises about its own safety, without the fence.
//!
//! A leader must stop acting (believing it leads, starting protected writes) before the
//! grant its backend gave it ends by the backend's own judgement: the lease or lock key
//! deleted, the session or Lease record expired, or (for elections among peers) another
//! node elected. A protocol keeps that promise only within bounds: a stop-the-world
//! pause of the leader, or a leader clock that runs slow or jumps, can outlast any
//! margin it computed. Each protocol declares its bounds next to its code, and
//! `baton_model`'s `protocol_safety` checker judges every run by them: acting past the
//! grant inside the bounds is a bug in the protocol, even when the fence rejected every
//! stale write; beyond them, only the fence keeps the resource right.

use serde::Serialize;

/// The faults inside which a protocol's leader stops acting before its grant ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SafetyBounds {
    /// Whether the protocol promises it at all. `false`: its leaders may overlap
    /// whenever messages are lost or late (an election among peers with no lease), so
    /// every act past the grant is the fence's to stop, and the bounds below are zero.
    pub self_safe: bool,
    /// The longest stop-the-world pause of the leader it tolerates, ms. 0: any pause may
    /// land between the leader's last check of its deadline and its next act.
    pub pause_ms: u64,
    /// The largest clock drift of the leader it tolerates, parts per million either way.
    pub drift_ppm: u64,
    /// The largest clock offset or jump of the leader it tolerates, ms either way.
    pub offset_ms: u64,
    /// Whether the grant is judged by the other nodes' clocks (raft: a follower votes
    /// for no one until its own election timer has run out), so that a clock fault
    /// beyond the bounds on any node, not only the leader, can end the grant early.
    pub peers_judge: bool,
}

impl SafetyBounds {
    /// A protocol that keeps its leader inside the grant while its clock is true and it
    /// is not paused, and promises nothing beyond: the lease recipes, whose leader's
    /// deadline starts from before its request left (the backend's own TTL starts no
    /// earlier) and has no margin beyond that.
    pub const LEASE_WITHOUT_MARGIN: SafetyBounds = SafetyBounds {
        self_safe: true,
        pause_ms: 0,
        drift_ppm: 0,
        offset_ms: 0,
        peers_judge: false,
    };

    /// A protocol whose leader stops `margin_ms` before its grant can end, on a clock
    /// that counts `period_ms` for the grant: a pause or a clock jump up to the margin,
    /// and a slow clock up to `margin / period`, still stop it in time.
    pub fn with_margin(margin_ms: u64, period_ms: u64) -> SafetyBounds {
        SafetyBounds {
            self_safe: true,
            pause_ms: margin_ms,
            drift_ppm: margin_ms * 1_000_000 / period_ms.max(1),
            offset_ms: margin_ms,
            peers_judge: false,
        }
    }

    /// The same bounds, judged by the peers' clocks too (see [`SafetyBounds::peers_judge`]).
    pub fn judged_by_peers(self) -> SafetyBounds {
        SafetyBounds {
            peers_judge: true,
            ..self
        }
    }

    /// A protocol that promises nothing: its safety is the fence's.
    pub const FENCE_ONLY: SafetyBounds = SafetyBounds {
        self_safe: false,
        pause_ms: 0,
        drift_ppm: 0,
        offset_ms: 0,
        peers_judge: false,
    };
}
