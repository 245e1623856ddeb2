//! What the simulated peer-to-peer protocols (`bully`, `ring`) share: their election
//! rounds go into the timeline, and their bounds are built from the same terms.

use crate::timeline::{Event, Timeline};
use baton_protocols::peer::ElectionLog;

/// Records each election round a node starts as a `CampaignStarted`, so election
/// latency is timed from the round that won, not from when the node first campaigned
/// (a peer elector campaigns for as long as it follows).
pub struct TimelineLog {
    /// The run's timeline.
    pub timeline: Timeline,
    /// The node.
    pub node: String,
}

impl ElectionLog for TimelineLog {
    fn election_started(&self) {
        self.timeline.record(Event::CampaignStarted {
            node: self.node.clone(),
        });
    }

    fn batch_applied(&self, index: u64, term: u64, leader: u64, first: u64, last: u64) {
        self.timeline.record_first_apply(
            index,
            Event::BatchCommitted {
                node: format!("n{leader}"),
                token: term,
                index,
                first,
                last,
            },
        );
    }
}

/// The names of a fleet of `nodes`, id i first at index i - 1 (`n1`, `n2`, ...).
pub fn names(nodes: usize) -> Vec<String> {
    (1..=nodes).map(|i| format!("n{i}")).collect()
}
