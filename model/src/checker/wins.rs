//! Who won the elections, who never did although it could have, and how long the fleet
//! went without a leader. Measurements only: nothing here fails a run.
//!
//! **Wins by node** (`elections.wins_by_node`). A win is a node's first `RoleChanged` to
//! leader under a token it did not already believe in (as in [`super::failover`]). For
//! each node the report gives its wins and the number of wins, by any node, that
//! happened while it was running (not killed): the elections it could have won.
//!
//! **Starved** (`elections.starved`). The issue's "a node that never wins although
//! eligible": a node with no win although it was running during at least
//! [`STARVED_MIN_ELECTIONS`] elections. With fewer elections than that, a node without a
//! win is chance, not starvation (a 3-node failover has one winner and two losers).
//!
//! **Leaderless time** (`elections.leaderless_ms`). Each span, after the first win, in
//! which no node believed it led: from the moment the last believer stopped (its
//! `RoleChanged` away from leader, or its `NodeKilled`) to the next win. After a kill of
//! the leader it is the dark time the issue asks for: the leader's death to the next
//! leader, lease wait included, which election latency (timed from the winner's
//! campaign) leaves out.

use super::failover::LatencyStats;
use super::{us_to_ms, CheckInput};
use crate::timeline::{Entry, Event, Role};
use crate::NodeId;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// A node that never won while running during at least this many elections is starved.
pub const STARVED_MIN_ELECTIONS: u64 = 10;

/// One node's record.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NodeWins {
    /// Elections it won.
    pub wins: u64,
    /// Elections won (by any node) while it was running.
    pub elections_running: u64,
}

/// The election measurements of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WinsSummary {
    /// Every node's wins, by name (every node that ran, winner or not).
    pub wins_by_node: BTreeMap<NodeId, NodeWins>,
    /// Nodes that never won although running during at least
    /// [`STARVED_MIN_ELECTIONS`] elections, by name.
    pub starved: Vec<NodeId>,
    /// Wins after the first: how often leadership changed hands (or was won again).
    pub leader_changes: u64,
    /// Spans without any leader, after the first win (last leader gone -> next win).
    pub leaderless_ms: LatencyStats,
    /// Each such span, in order (for aggregating across runs).
    pub leaderless_spans_ms: Vec<f64>,
}

/// Measures the run's wins and leaderless spans.
pub fn check(input: &CheckInput) -> WinsSummary {
    of_entries(&input.resolved.node_names(), input.entries)
}

/// As [`check`], for a fleet named `nodes`, all running at the start.
pub fn of_entries(nodes: &[NodeId], entries: &[Entry]) -> WinsSummary {
    let mut w = Wins::new(nodes);
    for e in entries {
        w.entry(e);
    }
    w.finish()
}

/// Wins and leaderless spans, read one event at a time.
pub(crate) struct Wins {
    by_node: BTreeMap<NodeId, NodeWins>,
    running: BTreeSet<NodeId>,
    /// node -> the token it believes it leads under.
    leading: BTreeMap<NodeId, u64>,
    wins: u64,
    /// When the fleet last became leaderless, once a first leader existed.
    vacant_since_us: Option<i64>,
    gaps_ms: Vec<f64>,
}

impl Wins {
    /// Counting for a fleet of `nodes`.
    pub fn new(nodes: &[NodeId]) -> Self {
        Wins {
            by_node: nodes
                .iter()
                .map(|n| (n.clone(), NodeWins::default()))
                .collect(),
            running: nodes.iter().cloned().collect(),
            leading: BTreeMap::new(),
            wins: 0,
            vacant_since_us: None,
            gaps_ms: vec![],
        }
    }

    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        match &e.event {
            Event::NodeKilled { node } => {
                self.running.remove(node.as_str());
                if self.leading.remove(node.as_str()).is_some() && self.leading.is_empty() {
                    self.vacant_since_us = Some(e.at_us);
                }
            }
            Event::NodeRestarted { node } => {
                self.running.insert(node.clone());
            }
            Event::RoleChanged {
                node,
                role: Role::Leader,
                token,
            } => {
                let token = token.unwrap_or(0);
                if self.leading.insert(node.clone(), token) == Some(token) {
                    return;
                }
                self.wins += 1;
                self.by_node.entry(node.clone()).or_default().wins += 1;
                for n in &self.running {
                    self.by_node.entry(n.clone()).or_default().elections_running += 1;
                }
                if let Some(since) = self.vacant_since_us.take() {
                    self.gaps_ms.push(us_to_ms(e.at_us - since));
                }
            }
            Event::RoleChanged { node, .. } => {
                let was_leading = self.leading.remove(node.as_str()).is_some();
                if was_leading && self.leading.is_empty() {
                    self.vacant_since_us = Some(e.at_us);
                }
            }
            _ => {}
        }
    }

    /// The summary over the run.
    pub fn finish(self) -> WinsSummary {
        let starved = self
            .by_node
            .iter()
            .filter(|(_, w)| w.wins == 0 && w.elections_running >= STARVED_MIN_ELECTIONS)
            .map(|(n, _)| n.clone())
            .collect();
        WinsSummary {
            wins_by_node: self.by_node,
            starved,
            leader_changes: self.wins.saturating_sub(1),
            leaderless_ms: LatencyStats::of(&self.gaps_ms),
            leaderless_spans_ms: self.gaps_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built timelines. Canary: a node that runs through many
    //! elections without winning is reported starved; one killed through them is not.
    //! Leaderless spans run from the leader's death or step-down to the next win, and a
    //! leader that renews its own belief opens no span.
    use super::super::testing::*;
    use super::*;

    #[test]
    fn a_node_that_never_wins_is_starved() {
        // n1 and n2 take turns for 12 elections; n3 runs throughout and never wins.
        let mut entries = vec![];
        for i in 0..12u64 {
            let winner = if i % 2 == 0 { "n1" } else { "n2" };
            let t = i as i64 * 1000;
            entries.push(leader(t + 100, winner, i + 1));
            entries.push(follower(t + 900, winner));
        }
        let s = of_entries(&NodeId::fleet(3), &entries);
        assert_eq!(s.starved, vec!["n3"]);
        assert_eq!(s.wins_by_node["n3"].wins, 0);
        assert_eq!(s.wins_by_node["n3"].elections_running, 12);
        assert_eq!(s.wins_by_node["n1"].wins, 6);
        assert_eq!(s.leader_changes, 11);
        // Each step-down at +900 ms leaves the fleet leaderless until +1100 ms.
        assert_eq!(s.leaderless_ms.count, 11);
        assert_eq!(s.leaderless_ms.max, 200.0);
    }

    #[test]
    fn a_killed_node_is_not_eligible_and_a_renewal_is_not_a_win() {
        let mut entries = vec![killed(0, "n3")];
        for i in 0..12u64 {
            let t = i as i64 * 1000;
            entries.push(leader(t + 100, "n1", i + 1));
            // The same belief again (a lease renewed) is not another election.
            entries.push(leader(t + 200, "n1", i + 1));
            entries.push(killed(t + 500, "n1"));
            entries.push(at(t + 600, Event::NodeRestarted { node: "n1".into() }));
        }
        let s = of_entries(&NodeId::fleet(3), &entries);
        assert_eq!(s.wins_by_node["n1"].wins, 12);
        assert_eq!(s.wins_by_node["n3"].elections_running, 0);
        // n2 ran through all 12 and never won: starved. n3 was down: not.
        assert_eq!(s.starved, vec!["n2"]);
        // Death at +500 ms to the next win at +1100 ms.
        assert_eq!(s.leaderless_ms.p50, 600.0);
        assert_eq!(s.leaderless_ms.count, 11);
    }

    #[test]
    fn few_elections_starve_nobody() {
        let s = of_entries(&NodeId::fleet(3), &[leader(100, "n1", 1)]);
        assert!(s.starved.is_empty());
        assert_eq!(s.leader_changes, 0);
        assert_eq!(s.leaderless_ms.count, 0);
    }
}
