//! `raft` in the model: the scenario table's checks and the failover bound.

#[allow(unused_imports)]
use super::{require_positive, Bound, Fleet, ProtocolModel, ProtocolName};
use crate::scenario::key_error::KeyError;
use baton_protocols::raft::{RaftConfig, SequencerPath};

/// The raft protocol with its scenario table and the fleet its bounds are for.
#[derive(Clone, Debug)]
pub struct RaftProtocol(pub RaftConfig, pub Fleet);

impl ProtocolModel for RaftProtocol {
    fn name(&self) -> ProtocolName {
        ProtocolName::Raft
    }

    fn safety_bounds(&self) -> baton_protocols::SafetyBounds {
        self.0.safety_bounds()
    }

    fn validate(&self) -> Result<(), KeyError> {
        let c = &self.0;
        require_positive(&[
            ("election_timeout_min_ms", c.election_timeout_min_ms),
            ("heartbeat_interval_ms", c.heartbeat_interval_ms),
            ("leader_lease_ms", c.leader_lease_ms),
        ])?;
        // openraft's own Config::validate rules, checked here so a scenario fails with a
        // key instead of a panic inside a node.
        if c.election_timeout_max_ms <= c.election_timeout_min_ms {
            return Err(KeyError::new(
                "election_timeout_max_ms",
                format!(
                    "{} must be above election_timeout_min_ms {}",
                    c.election_timeout_max_ms, c.election_timeout_min_ms
                ),
            ));
        }
        if c.election_timeout_min_ms <= c.heartbeat_interval_ms {
            return Err(KeyError::new(
                "election_timeout_min_ms",
                format!(
                    "{} must be above heartbeat_interval_ms {}",
                    c.election_timeout_min_ms, c.heartbeat_interval_ms
                ),
            ));
        }
        let [lo, hi] = c.fsync_ms;
        if lo > hi {
            return Err(KeyError::new(
                "fsync_ms",
                format!("[{lo}, {hi}]: the first is the least, at most the second"),
            ));
        }
        if c.leader_lease_ms >= c.election_timeout_min_ms {
            return Err(KeyError::new(
                "leader_lease_ms",
                format!(
                    "{} must be below election_timeout_min_ms {}: the leader's lease must end before any follower can vote for another",
                    c.leader_lease_ms, c.election_timeout_min_ms
                ),
            ));
        }
        Ok(())
    }

    /// A killed leader's last heartbeat left no earlier than its last write. Its
    /// followers refuse other candidates for their lease (election timeout max) and their
    /// timers first wait out that lease, then a random election timeout (at most the
    /// max). Two followers that time out together split the vote; each re-election after
    /// a fresh random timeout costs at most the max again. Splits are chance events, so
    /// no hard bound exists: this one allows two (over seeds 0..100 of clean-kill, at
    /// most two happened). The winner then needs a pre-vote round trip (when on), a vote
    /// round trip, a quorum heartbeat round for its own lease, and a claim round trip at
    /// the resource; the vote and the leader's first entry are each stored (an fsync)
    /// at the candidate and at a voter before the round goes on.
    fn failover_bound(&self) -> Bound {
        let c = &self.0;
        let lat = self.1.latency_ms_max;
        let trips = if c.pre_vote { 4 } else { 3 };
        let fsyncs = 4 * c.fsync_ms[1];
        let ms = 4 * c.election_timeout_max_ms + trips * 2 * lat + fsyncs;
        Bound {
            ms,
            formula: format!(
                "followers' lease + election timeout max + two split votes = followers' lease {} ms + election timeout {} ms + re-elections after two split votes (2 x {} ms) + {}vote, lease and claim round trips ({trips} x {} ms) + the vote's and the first entry's fsyncs at candidate and voter (4 x {} ms)",
                c.election_timeout_max_ms,
                c.election_timeout_max_ms,
                c.election_timeout_max_ms,
                if c.pre_vote { "pre-vote, " } else { "" },
                2 * lat,
                c.fsync_ms[1]
            ),
        }
    }

    fn default_liveness_bound_ms(&self) -> u64 {
        2 * self.failover_bound().ms + 1000
    }

    /// With openraft's `single-term-leader` feature a term has at most one leader, so
    /// the term is the token.
    fn token_is_term(&self) -> bool {
        true
    }

    fn stepdown_method(&self) -> Option<&'static str> {
        Some("a resign names no successor: the leader stops its heartbeats and elections, and a follower campaigns once its lease and election timeout have run, so the dark time is about one follower lease plus an election timeout (a `transfer` fault hands over instead)")
    }

    fn transfer_method(&self) -> &'static str {
        match self.0.transfer {
            baton_protocols::raft::RaftTransfer::Vote => "openraft 0.9.25 has no transfer call: once the successor's log matches, the leader sends a committed vote for it in the next term, in an empty AppendEntries, to itself and a majority, then to the successor, which becomes leader on receiving it (no vote round, no wait for the followers' lease)",
            baton_protocols::raft::RaftTransfer::Elect => "raft.transfer = \"elect\": once the successor's log matches, the leader sends it TimeoutNow and it calls Raft::trigger().elect(); the voters refuse it until their followers' lease from the old leader's last heartbeat has run out",
        }
    }

    fn has_replicated_log(&self) -> bool {
        self.0.sequencer == SequencerPath::Log
    }

    /// A leader's lease starts before the heartbeat round that a quorum acknowledged;
    /// each of those followers then refuses to vote for anyone else for its own lease
    /// (`election_timeout_max_ms`) from when it received it. So no other leader can exist
    /// before the leader's lease ends as long as `leader_lease / leader clock rate <=
    /// follower lease / follower clock rate`: with followers at true rate, the leader's
    /// clock may run slow by at most `1 - leader_lease / follower_lease`.
    fn read_lease_bound(&self) -> Option<String> {
        let c = &self.0;
        if c.sequencer != SequencerPath::Log {
            return None;
        }
        let ratio = c.leader_lease_ms as f64 / c.election_timeout_max_ms as f64;
        let ppm = ((1.0 - ratio) * 1e6).round() as i64;
        Some(format!(
            "leader lease {} ms on the leader's clock must end before the followers' lease (election timeout max) {} ms on theirs: safe while the leader's clock runs at least {:.3} times as fast as theirs (drift no slower than -{} ppm against true-rate followers)",
            c.leader_lease_ms, c.election_timeout_max_ms, ratio, ppm
        ))
    }
}
