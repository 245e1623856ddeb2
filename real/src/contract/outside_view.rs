//! The timeline of a run whose nodes write no event log (`--node-cmd`), completed from
//! what Baton sees of them from outside, before the checkers read it.
//!
//! Such a run's merged timeline holds the supervisor's faults and the backend
//! observer's grant ends (exact), the resource's verdict on every protected write
//! (exact, stamped when the write arrived), and the nodes' beliefs as the status poller
//! saw them ([`crate::contract::status_poll`]: stamped in the node's favour, good to one poll).
//! [`complete`] adds what follows from them:
//!
//! - each write the resource saw was **attempted** by its node no later than it
//!   arrived: a `write_attempted` is put just before it, at its arrival time (on
//!   loopback, with no fault on the resource link, within about a millisecond of its
//!   send; the protocol-safety check reads these);
//! - a node that had a write accepted or refused under token T **believed it led** with
//!   T no later than that write arrived: when the poller first saw that leadership
//!   later (or never), the leadership starts at its first write;
//! - a leadership the polls never saw ends right after its last write;
//! - a stopped process (SIGSTOP) answers nothing and changes no belief: a step-down the
//!   poller stamped while the node was stopped (the send of a poll its frozen process
//!   answered only after it was continued) happened after it ran again, and is moved to
//!   just after its `node_resumed` (see [`after_pauses`]).
//!
//! [`NOTES`] says, for the report, what such a run cannot see.

use crate::events::{Entry, Event, Role, WriteOp};
use baton_model::NodeId;
use std::collections::BTreeMap;

/// What a run of foreign nodes cannot see, one sentence each, for the report's notes.
pub const NOTES: &[&str] = &[
    "the nodes were run by --node-cmd and write no event log: their beliefs were polled from GET /status every 15 ms (a step-up stamped at the first poll that saw it, a step-down at the last poll that still saw the old role, or when the node ran again if that poll found it stopped), so a belief is good to about one poll, and two beliefs overlapping for less than that are not seen; a handoff counts the step-down from the first poll that proved it over (against the node), and after a POST /resign or a SIGCONT the node was polled every 1 ms for 1 s",
    "a write's attempt is stamped when it reached the resource (an upper bound on its send); a leadership starts no later than its first write the resource saw",
    "campaign starts, lease grants and renewals, and why a leader stopped are not seen from outside: election latency is timed from the seat falling vacant (the backend's observer: an etcd key or a znode gone, a Redis lock or a row lease ended) to the first poll that saw the winner",
];

/// The write an event records at the resource: its node, token and op.
fn write_of(e: &Event) -> Option<(&NodeId, u64, WriteOp)> {
    match e {
        Event::WriteAccepted {
            node, token, op, ..
        }
        | Event::WriteRejected {
            node, token, op, ..
        } => Some((node, *token, *op)),
        Event::SeqRefused {
            node,
            token,
            first,
            last,
            ..
        } => Some((
            node,
            *token,
            WriteOp::Seq {
                first: *first,
                last: *last,
            },
        )),
        _ => None,
    }
}

fn role_change(node: &str, role: Role, token: Option<u64>) -> Event {
    Event::RoleChanged {
        node: node.into(),
        role,
        token,
    }
}

/// Where each leadership's writes sit: (node, token) -> (first index, last index).
fn write_spans(entries: &[Entry]) -> BTreeMap<(NodeId, u64), (usize, usize)> {
    let mut spans: BTreeMap<(NodeId, u64), (usize, usize)> = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        if let Some((node, token, _)) = write_of(&e.event) {
            spans
                .entry((node.clone(), token))
                .and_modify(|s| s.1 = i)
                .or_insert((i, i));
        }
    }
    spans
}

/// Moves each node's step-downs stamped while it was stopped to just after it ran again
/// (its `node_resumed`, or its `node_killed`: a process killed while stopped never ran
/// again, and the kill ends its belief anyway). Keeps time order.
pub fn after_pauses(entries: Vec<Entry>) -> Vec<Entry> {
    let mut stopped: BTreeMap<NodeId, Vec<Entry>> = BTreeMap::new();
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        match &e.event {
            Event::NodePaused { node } => {
                stopped.entry(node.clone()).or_default();
                out.push(e);
            }
            Event::NodeResumed { node } | Event::NodeKilled { node } => {
                let held = stopped.remove(node).unwrap_or_default();
                let at_us = e.at_us;
                out.push(e);
                out.extend(held.into_iter().map(|h| Entry { at_us, ..h }));
            }
            Event::RoleChanged { node, role, .. }
                if *role != Role::Leader && stopped.contains_key(node) =>
            {
                stopped.get_mut(node).expect("checked").push(e);
            }
            _ => out.push(e),
        }
    }
    // A pause still open at the end (the run ended first): its step-downs stay last.
    out.extend(stopped.into_values().flatten());
    out
}

/// The merged timeline of a `--node-cmd` run, completed as the module doc says; still
/// in time order.
pub fn complete(entries: Vec<Entry>) -> Vec<Entry> {
    after_pauses(fill_in(entries))
}

/// Write attempts and leadership starts and ends, from the resource's log.
fn fill_in(entries: Vec<Entry>) -> Vec<Entry> {
    let spans = write_spans(&entries);
    // Entries to put before / after an index, and the leader events moved away.
    let mut before: BTreeMap<usize, Vec<Entry>> = BTreeMap::new();
    let mut after: BTreeMap<usize, Vec<Entry>> = BTreeMap::new();
    let mut moved = vec![false; entries.len()];
    let mut seen_wins = std::collections::BTreeSet::new();
    // The last role change (or kill) of each node so far: a leadership starts after it.
    let mut last_change: BTreeMap<&NodeId, usize> = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        match &e.event {
            Event::RoleChanged {
                node,
                role: Role::Leader,
                token: Some(token),
            } => {
                seen_wins.insert((node.clone(), *token));
                if let Some(&(first, _)) = spans.get(&(node.clone(), *token)) {
                    let floor = last_change.get(node).copied();
                    if first < i && floor.is_none_or(|f| f < first) {
                        moved[i] = true;
                        let mut win = e.clone();
                        win.at_us = entries[first].at_us;
                        before.entry(first).or_default().push(win);
                    }
                }
                last_change.insert(node, i);
            }
            Event::RoleChanged { node, .. } | Event::NodeKilled { node } => {
                last_change.insert(node, i);
            }
            _ => {}
        }
    }
    for ((node, token), (first, last)) in &spans {
        if seen_wins.contains(&(node.clone(), *token)) {
            continue;
        }
        let at = |i: usize| entries[i].at_us;
        before.entry(*first).or_default().push(Entry {
            at_us: at(*first),
            event: role_change(node, Role::Leader, Some(*token)),
        });
        after.entry(*last).or_default().push(Entry {
            at_us: at(*last),
            event: role_change(node, Role::Follower, None),
        });
    }
    let mut out = Vec::with_capacity(entries.len() * 2);
    for (i, e) in entries.into_iter().enumerate() {
        out.extend(before.remove(&i).unwrap_or_default());
        if let Some((node, token, op)) = write_of(&e.event) {
            out.push(Entry {
                at_us: e.at_us,
                event: Event::WriteAttempted {
                    node: node.clone(),
                    token,
                    op,
                },
            });
        }
        if !moved[i] {
            out.push(e);
        }
        out.extend(after.remove(&i).unwrap_or_default());
    }
    out
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-made timelines of a foreign run (poller role changes, resource
    //! writes); the completed one must stay in time order, attempt every write just
    //! before it, start a leadership at its first write when the poll saw it later, and
    //! give a leadership the polls missed a start and an end around its writes.
    use super::*;

    fn at(at_us: i64, event: Event) -> Entry {
        Entry { at_us, event }
    }

    fn accepted(at_us: i64, node: &str, token: u64) -> Entry {
        at(
            at_us,
            Event::WriteAccepted {
                node: node.into(),
                token,
                max_token: token,
                op: WriteOp::Claim,
            },
        )
    }

    fn kinds(es: &[Entry]) -> Vec<(i64, &'static str)> {
        es.iter()
            .map(|e| (e.at_us, baton_model::render::lanes::event_kind(&e.event)))
            .collect()
    }

    #[test]
    fn a_leadership_starts_no_later_than_its_first_write() {
        let t = vec![
            accepted(100, "n1", 5),
            at(110, role_change("n1", Role::Leader, Some(5))),
            accepted(120, "n1", 5),
        ];
        let c = complete(t);
        assert_eq!(
            kinds(&c),
            vec![
                (100, "role_changed"),
                (100, "write_attempted"),
                (100, "write_accepted"),
                (120, "write_attempted"),
                (120, "write_accepted"),
            ]
        );
        assert!(c.windows(2).all(|w| w[0].at_us <= w[1].at_us));
    }

    #[test]
    fn a_win_is_not_pulled_back_past_the_node_s_last_change() {
        // n1 led under 5 and stepped down; a late write of token 5 is no reason to
        // move anything.
        let t = vec![
            at(10, role_change("n1", Role::Leader, Some(5))),
            accepted(20, "n1", 5),
            at(30, role_change("n1", Role::Follower, None)),
            accepted(40, "n1", 5),
        ];
        let c = complete(t.clone());
        let roles: Vec<i64> = c
            .iter()
            .filter(|e| matches!(e.event, Event::RoleChanged { .. }))
            .map(|e| e.at_us)
            .collect();
        assert_eq!(roles, vec![10, 30]);
        assert_eq!(c.len(), t.len() + 2);
    }

    #[test]
    fn a_step_down_stamped_while_stopped_comes_after_the_resume() {
        // n1 was stopped 100..300; the poller's last leader sighting was sent at 250
        // (answered after the resume), so it stamped the step-down at 250.
        let t = vec![
            at(10, role_change("n1", Role::Leader, Some(2))),
            at(100, Event::NodePaused { node: "n1".into() }),
            at(200, role_change("n2", Role::Leader, Some(3))),
            at(250, role_change("n1", Role::Follower, None)),
            at(300, Event::NodeResumed { node: "n1".into() }),
            at(310, role_change("n2", Role::Follower, None)),
        ];
        let c = after_pauses(t);
        let order: Vec<(i64, &'static str)> = kinds(&c);
        assert_eq!(
            order,
            vec![
                (10, "role_changed"),
                (100, "node_paused"),
                (200, "role_changed"),
                (300, "node_resumed"),
                (300, "role_changed"),
                (310, "role_changed"),
            ]
        );
        assert!(matches!(&c[4].event, Event::RoleChanged { node, .. } if node == "n1"));
    }

    #[test]
    fn a_leadership_the_polls_missed_is_put_around_its_writes() {
        let t = vec![
            accepted(100, "n2", 7),
            at(
                150,
                Event::WriteRejected {
                    node: "n2".into(),
                    token: 7,
                    max_token: 8,
                    op: WriteOp::Tick { n: 1 },
                },
            ),
            accepted(160, "n3", 8),
        ];
        let c = complete(t);
        let n2: Vec<(i64, Role)> = c
            .iter()
            .filter_map(|e| match &e.event {
                Event::RoleChanged { node, role, .. } if node == "n2" => Some((e.at_us, *role)),
                _ => None,
            })
            .collect();
        assert_eq!(n2, vec![(100, Role::Leader), (150, Role::Follower)]);
        assert!(c.windows(2).all(|w| w[0].at_us <= w[1].at_us));
    }
}
