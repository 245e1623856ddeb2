//! The requests an etcd cluster's members answer: their clients' (and a follower's
//! forward to the leader), and Raft's between members.

use crate::world::rpc::{request, EtcdServerError};
use crate::world::service::etcd::v3_messages::{V3Answer, V3Request};
use crate::world::service::etcd::watch_messages::{WatchBatch, WatchPoll};
use baton_protocols::{LeaseGrant, RangeRequest, RangeResponse, Txn, TxnResponse};
use serde::{Deserialize, Serialize};

/// A client's request to a member (or a member's, forwarded to the leader).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Op {
    /// `LeaseGrant` for `node`.
    Grant {
        /// Who asks (for the timeline).
        node: baton_model::NodeId,
        /// TTL asked for.
        ttl_ms: u64,
    },
    /// `LeaseKeepAlive`.
    KeepAlive(i64),
    /// `LeaseRevoke`.
    Revoke(i64),
    /// `Txn`.
    Txn(Txn),
    /// A linearizable `Range`.
    Range(RangeRequest),
    /// A full etcd v3 request, as the `baton-etcd-client` crate sends it (boxed: every
    /// message moves an `Op`, and the v3 request would grow it from 72 to 96 bytes).
    V3(Box<V3Request>),
}

/// A member's answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Reply {
    /// To a grant.
    Granted(LeaseGrant),
    /// To a keepalive: the TTL, or `None` when the lease is gone.
    KeptAlive(Option<u64>),
    /// To a revoke.
    Revoked,
    /// To a txn.
    Txn(Result<TxnResponse, EtcdServerError>),
    /// To a range.
    Range(RangeResponse),
    /// To a full etcd v3 request (boxed, as its request: 104 bytes against 40).
    V3(Box<V3Answer>),
}

/// Why a member could not answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Refusal {
    /// It knows no leader (`etcdserver: no leader`): the client tries another member.
    NoLeader,
    /// The write did not commit in time, or leadership changed under it.
    NotCommitted(String),
}

/// A client's request to a member.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClientOp(pub Op);
request!(ClientOp => Result<Reply, Refusal>);

// A client's watch stream polls the member it talks to, which answers from its own
// applied store: a watch is never forwarded to the leader, as etcd's is not.
request!(WatchPoll => WatchBatch);

/// A follower's forward of a client's request to the leader.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Forward(pub Op);
request!(Forward => Result<Reply, Refusal>);

/// Raft `RequestVote`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Vote {
    pub(super) term: u64,
    pub(super) candidate: usize,
    pub(super) log: (u64, u64),
}
request!(Vote => (u64, bool));

/// Raft `AppendEntries`: a heartbeat (`entry` false) or one new entry to persist.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Append {
    pub(super) term: u64,
    pub(super) leader: usize,
    pub(super) log: (u64, u64),
    pub(super) entry: bool,
}
request!(Append => (u64, bool));
