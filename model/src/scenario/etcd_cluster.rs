//! The lease service as a cluster (`[etcd]`): how many etcd members serve the protocols
//! that run on etcd, their Raft timing and their disks, and the names faults address them
//! by (`etcd-1`..`etcd-N`, `etcd-leader`).
//!
//! What is modelled (the simulator's `service/etcd_cluster.rs` carries it out):
//! - each member is a process of its own, with its own clock, reached over the simulated
//!   network; one leads, elected Raft's way: a follower that hears no heartbeat for its
//!   election timeout (drawn in `[1x, 2x)` of `election_timeout_ms` from the seed) stands
//!   with a higher term; a majority of votes from members whose log is not newer makes
//!   it leader; the leader sends a heartbeat every `heartbeat_ms` and steps down when it
//!   has not heard from a majority for an election timeout (etcd's check-quorum). No
//!   pre-vote (etcd 3.4's default): a member back from a partition with a higher term
//!   deposes the leader.
//! - the cluster is up and led before the run starts (as real mode starts its fleet once
//!   the live cluster is healthy): at time 0 `etcd-1` leads term 1 and its lessor is
//!   promoted.
//! - member-to-member messages take `peer_latency_ms` (a LAN, or real mode's loopback),
//!   not the network's latency; a fault on a member link still slows or cuts it.
//! - every write (lease grant, revoke, the recipe's txns) is a proposal: the leader
//!   appends and fsyncs, the followers append and fsync, and the write applies and is
//!   answered once a majority has it on disk. An fsync takes a time drawn uniformly from
//!   `fsync_ms`; a `slow-disk` fault stalls a member's fsyncs until it heals.
//! - a linearizable read is a quorum round (read index) then the read; a keepalive goes
//!   to the leader (a follower forwards it) and is answered by its lessor at once.
//! - the lessor runs on the leader: its expiry loop looks every 500 ms and revokes an
//!   expired lease by a proposal; a new leader promotes its lessor once its first entry
//!   commits, and every lease then expires one election timeout plus its full TTL later
//!   (etcd's `lessor.Promote(ElectionTimeout)`), so leases outlive a leader change; a
//!   member that steps down stops expiring.
//! - lease ids carry the granting member's id in their high bits.
//! - a client holds the list of members and talks to one (node `n<i>` to member
//!   `((i - 1) mod N) + 1` first). When that member refuses (its process is dead) or has no
//!   leader, the client tries the next member `client_retry_ms` later; a member that is
//!   silent (partitioned, paused) is not noticed: each call just times out.
//!
//! Not modelled: the log's contents (the state machine is applied once, by the leader,
//! when a write commits; a member's log is its length and last term), snapshots,
//! membership changes, learners, compaction.

use crate::scenario::key_error::KeyError;
use serde::{Deserialize, Serialize};

/// The most members a cluster may have.
pub const MAX_MEMBERS: u32 = 9;

/// `[etcd]`: the lease service's members and timing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EtcdCluster {
    /// How many members: 3 by default (etcd's usual deployment, and real mode's live
    /// cluster); 1 is one service that answers at once, without Raft (the model Baton
    /// had before clusters, kept for comparison).
    pub members: u32,
    /// The leader's heartbeat interval (etcd: 100 ms).
    pub heartbeat_ms: u64,
    /// The election timeout (etcd: 1000 ms); each member waits a seeded draw in
    /// `[1x, 2x)` of it.
    pub election_timeout_ms: u64,
    /// An fsync's duration, drawn uniformly from `[min, max]` ms (at µs resolution) for
    /// each write on each member. The default, [0, 1], is what `bash
    /// nightly/etcd-fsync.sh` measured on this machine kind: a live 3-member etcd's
    /// `etcd_disk_wal_fsync_duration_seconds` over 600 puts, 1,824 fsyncs, 98% under
    /// 1 ms (p5 0.05, p50 0.51, p95 0.97 ms).
    pub fsync_ms: [u64; 2],
    /// One-way latency between two members, drawn uniformly from `[min, max]` ms (at µs
    /// resolution) for each message, in place of the network's: the members of a
    /// cluster usually share a LAN, and real mode's live members share the loopback.
    /// Default [0, 1].
    pub peer_latency_ms: [u64; 2],
    /// How long a client waits before trying the next member after one refused it or had
    /// no leader (clientv3 retries a broken keepalive stream after about 500 ms).
    pub client_retry_ms: u64,
}

impl Default for EtcdCluster {
    fn default() -> Self {
        EtcdCluster {
            members: 3,
            heartbeat_ms: 100,
            election_timeout_ms: 1000,
            fsync_ms: [0, 1],
            peer_latency_ms: [0, 1],
            client_retry_ms: 500,
        }
    }
}

impl EtcdCluster {
    /// The members' names, `etcd-1` first.
    pub fn member_names(&self) -> Vec<String> {
        (1..=self.members).map(member_name).collect()
    }

    /// Whether the service runs as a cluster (more than one member).
    pub fn is_cluster(&self) -> bool {
        self.members > 1
    }

    /// A majority of the members.
    pub fn quorum(&self) -> usize {
        self.members as usize / 2 + 1
    }

    /// The table's checks.
    pub fn validate(&self) -> Result<(), KeyError> {
        if !(1..=MAX_MEMBERS).contains(&self.members) {
            return Err(KeyError::new(
                "members",
                format!(
                    "{} is out of range: a whole number of members from 1 to {MAX_MEMBERS}",
                    self.members
                ),
            ));
        }
        for (key, v) in [
            ("heartbeat_ms", self.heartbeat_ms),
            ("election_timeout_ms", self.election_timeout_ms),
            ("client_retry_ms", self.client_retry_ms),
        ] {
            if v == 0 || i128::from(v) > crate::fault::MAX_MS {
                return Err(KeyError::new(
                    key,
                    format!("{v} is out of range: 1 to 3600000 (one simulated hour)"),
                ));
            }
        }
        if self.heartbeat_ms >= self.election_timeout_ms {
            return Err(KeyError::new(
                "heartbeat_ms",
                format!(
                    "{} must be below election_timeout_ms {}",
                    self.heartbeat_ms, self.election_timeout_ms
                ),
            ));
        }
        for (key, [lo, hi]) in [
            ("fsync_ms", self.fsync_ms),
            ("peer_latency_ms", self.peer_latency_ms),
        ] {
            if lo > hi || i128::from(hi) > crate::fault::MAX_MS {
                return Err(KeyError::new(
                    key,
                    format!("[{lo}, {hi}]: give [min, max] with min <= max <= 3600000"),
                ));
            }
        }
        Ok(())
    }
}

/// Member `i`'s name (1-based).
pub fn member_name(i: u32) -> String {
    format!("etcd-{i}")
}

/// The member a name addresses (`etcd-3` -> 3), if it is one.
pub fn member_index(name: &str) -> Option<u32> {
    name.strip_prefix("etcd-")?.parse().ok().filter(|&i| i >= 1)
}

/// The fault target that means whichever member leads etcd when the fault fires.
pub const ETCD_LEADER: &str = "etcd-leader";

/// The fault target that means the member the Baton leader's client talks to when the
/// fault fires: node `n<i>`'s client talks to member `first_member_of(i)` until that
/// member refuses it or has no leader (see the module doc).
pub const LEADER_MEMBER: &str = "leader-member";
/// The partition end that means every node of the fleet (the clients of the service).
pub const CLIENTS: &str = "clients";

/// The partition end that means every other member (a member cut from its peers).
pub const PEERS: &str = "peers";

/// The member node `n<node>`'s client talks to first (1-based both).
pub fn first_member_of(node: usize, members: u32) -> u32 {
    ((node as u32 - 1) % members) + 1
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-written tables, each with one problem; the error names its key.
    use super::*;

    #[test]
    fn bad_tables_name_the_key() {
        assert!(EtcdCluster::default().validate().is_ok());
        let c = EtcdCluster {
            members: 0,
            ..Default::default()
        };
        assert_eq!(c.validate().unwrap_err().key, "members");
        let c = EtcdCluster {
            heartbeat_ms: 1000,
            ..Default::default()
        };
        assert_eq!(c.validate().unwrap_err().key, "heartbeat_ms");
        let c = EtcdCluster {
            fsync_ms: [5, 1],
            ..Default::default()
        };
        assert_eq!(c.validate().unwrap_err().key, "fsync_ms");
    }

    #[test]
    fn names_and_quorum() {
        let c = EtcdCluster {
            members: 5,
            ..Default::default()
        };
        assert_eq!(c.member_names()[4], "etcd-5");
        assert_eq!(c.quorum(), 3);
        assert_eq!(member_index("etcd-3"), Some(3));
        assert_eq!(member_index("etcd-0"), None);
        assert_eq!(member_index(ETCD_LEADER), None);
        assert_eq!(first_member_of(4, 3), 1);
    }
}
