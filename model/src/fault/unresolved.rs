//! Why a fault's end (`leader`, `follower`, `previous`...) names no node when the fault
//! fires. Not an error of the run: the fault is skipped, and the timeline records why.

/// A role a fault names that no node fills at the moment it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unresolved {
    /// `leader`: no node believes it leads.
    #[error("target `leader`: no node believes it leads")]
    Leader,
    /// `etcd-leader`: the etcd cluster has no leader.
    #[error("target `etcd-leader`: no etcd member leads")]
    EtcdLeader,
    /// `leader-member`: no node believes it leads, so no member shares its host.
    #[error("target `leader-member`: no node believes it leads")]
    LeaderMember,
    /// `follower`: every running node believes it leads.
    #[error("target `follower`: every running node believes it leads")]
    Follower,
    /// A transfer's `next`: no other node is running.
    #[error("successor `next`: no other node is running")]
    Next,
    /// `previous`: no earlier fault had a target.
    #[error("target `previous`: no earlier fault had a target")]
    Previous,
}
