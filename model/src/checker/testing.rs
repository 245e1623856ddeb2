//! Builders for hand-made timelines in the checkers' unit tests.

use super::*;
use crate::timeline::{Event, Role, WriteOp};

/// A default scenario, resolved, for tests to tweak through `.scenario`.
pub fn resolved() -> Resolved {
    crate::scenario::load_str("t.toml", "t", "", &[]).expect("the empty scenario loads")
}

/// An entry at `at_ms`.
pub fn at(at_ms: i64, event: Event) -> Entry {
    Entry {
        at_us: at_ms * 1000,
        event,
    }
}

pub fn leader(at_ms: i64, node: &str, token: u64) -> Entry {
    at(
        at_ms,
        Event::RoleChanged {
            node: node.into(),
            role: Role::Leader,
            token: Some(token),
        },
    )
}

pub fn follower(at_ms: i64, node: &str) -> Entry {
    at(
        at_ms,
        Event::RoleChanged {
            node: node.into(),
            role: Role::Follower,
            token: None,
        },
    )
}

pub fn killed(at_ms: i64, node: &str) -> Entry {
    at(at_ms, Event::NodeKilled { node: node.into() })
}

pub fn campaign(at_ms: i64, node: &str) -> Entry {
    at(at_ms, Event::CampaignStarted { node: node.into() })
}

pub fn stopped(at_ms: i64, node: &str, token: u64, reason: &str) -> Entry {
    at(
        at_ms,
        Event::StoppedActing {
            node: node.into(),
            token,
            reason: reason.into(),
            lost_at_us: None,
        },
    )
}

pub fn key_deleted(at_ms: i64, create_revision: i64) -> Entry {
    at(
        at_ms,
        Event::KeyDeleted {
            key: format!("election/{create_revision:x}"),
            create_revision,
            cause: "expired".into(),
        },
    )
}

pub fn accepted(at_ms: i64, node: &str, token: u64, max_token: u64, op: WriteOp) -> Entry {
    at(
        at_ms,
        Event::WriteAccepted {
            node: node.into(),
            token,
            max_token,
            op,
        },
    )
}

/// An accepted tick: the simplest accepted write.
pub fn tick(at_ms: i64, node: &str, token: u64) -> Entry {
    accepted(at_ms, node, token, token, WriteOp::Tick { n: 0 })
}

pub fn sent(at_ms: i64, node: &str, token: u64, op: WriteOp) -> Entry {
    at(
        at_ms,
        Event::WriteAttempted {
            node: node.into(),
            token,
            op,
        },
    )
}

pub fn rejected(at_ms: i64, node: &str, token: u64, max_token: u64) -> Entry {
    at(
        at_ms,
        Event::WriteRejected {
            node: node.into(),
            token,
            max_token,
            op: WriteOp::Tick { n: 0 },
        },
    )
}

pub fn fault(at_ms: i64, index: usize, kind: &str) -> Entry {
    at(
        at_ms,
        Event::FaultApplied {
            index,
            kind: crate::fault::FaultKind::parse(kind).expect("a fault kind"),
            target: "n1".into(),
        },
    )
}

pub fn healed(at_ms: i64, index: usize, kind: &str) -> Entry {
    at(
        at_ms,
        Event::FaultHealed {
            index,
            kind: crate::fault::FaultKind::parse(kind).expect("a fault kind"),
            target: "n1".into(),
        },
    )
}

/// A check input over `entries`, ending at `end_ms`, with a quiet client.
pub fn input<'a>(resolved: &'a Resolved, entries: &'a [Entry], end_ms: i64) -> CheckInput<'a> {
    CheckInput {
        resolved,
        entries,
        end_us: end_ms * 1000,
        client: ClientStats::default(),
    }
}

/// A clean run: n1 leads with token 1, is killed, n2 takes over with token 2.
pub fn clean_failover() -> Vec<Entry> {
    vec![
        campaign(0, "n1"),
        campaign(0, "n2"),
        leader(100, "n1", 1),
        tick(200, "n1", 1),
        tick(1200, "n1", 1),
        fault(1500, 0, "kill"),
        killed(1500, "n1"),
        key_deleted(4000, 1),
        leader(4010, "n2", 2),
        tick(4100, "n2", 2),
        tick(5100, "n2", 2),
    ]
}
