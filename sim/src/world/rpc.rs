//! The messages that cross the simulated network ([`crate::world::net`]), and the addresses they
//! go to.
//!
//! Every call goes through [`call`], which always has a timeout: a lost message is only
//! ever noticed as silence.

use crate::world::net::Endpoint;
use crate::world::net::Request;
use crate::world::timeline::WriteOp;
use baton_model::NodeId;
use baton_protocols::{LeaseGrant, RangeRequest, RangeResponse, Txn, TxnResponse, WatchEvent};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// The protocol backend's address (etcd, Redis, Consul, ...): the scenario's `backend`.
pub const BACKEND_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 2379);
/// The fenced resource's address.
pub const RESOURCE_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 5432);
/// The sequencer client's address (its requests use ports 10000..60000 of this IP).
pub const CLIENT_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 3)), 9000);

/// The address of node `n<i>` (1-based).
pub fn node_addr(i: usize) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 1, i as u8)), 7000)
}

/// A call that failed: the only failure the caller can see is silence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedOut;

/// Calls `dst` and waits at most `timeout_ms`.
pub async fn call<R: Request>(
    ep: &Endpoint,
    dst: SocketAddr,
    req: R,
    timeout_ms: u64,
) -> Result<R::Response, TimedOut> {
    ep.call_timeout(dst, req, Duration::from_millis(timeout_ms))
        .await
        .map_err(|_| TimedOut)
}

/// Declares a madsim RPC: `request!(Req => Response);` gives `Req` a unique ID from its
/// name. Request names must be unique across the crate.
macro_rules! request {
    ($name:ident => $rsp:ty) => {
        impl crate::world::net::Request for $name {
            type Response = $rsp;
            const ID: u64 = madsim::net::rpc::hash_str(concat!("baton.", stringify!($name)));
        }
    };
}
pub(crate) use request;

/// etcd `LeaseGrant`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EtcdGrant {
    /// Who asks (for the timeline).
    pub node: NodeId,
    /// TTL asked for.
    pub ttl_ms: u64,
}
request!(EtcdGrant => LeaseGrant);

/// etcd `LeaseKeepAlive`; `None` in reply when the lease is gone.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EtcdKeepAlive {
    /// The lease.
    pub id: i64,
}
request!(EtcdKeepAlive => Option<u64>);

/// etcd `LeaseRevoke`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EtcdRevoke {
    /// The lease.
    pub id: i64,
}
request!(EtcdRevoke => ());

/// etcd `Txn`; an error when a put names a lease that does not exist.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EtcdTxn(pub Txn);
request!(EtcdTxn => Result<TxnResponse, EtcdServerError>);

/// etcd's error answers to a request, worded as etcd words them (its client shows the
/// words, as a live etcd's client does).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum EtcdServerError {
    /// A txn's put names a lease that does not exist.
    #[error("etcdserver: requested lease not found")]
    LeaseNotFound,
}

/// etcd `Range`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EtcdRange(pub RangeRequest);
request!(EtcdRange => RangeResponse);

/// A long-poll watch on one key.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EtcdWatch {
    /// The key.
    pub key: String,
    /// Report changes at or after this revision.
    pub start_revision: i64,
    /// Wait at most this long (service clock) for one.
    pub wait_ms: u64,
}
request!(EtcdWatch => Vec<WatchEvent>);

/// A protected write to the fenced resource.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FencedWrite {
    /// The partition whose rows it writes, in a sharded fleet (`None`: the one set).
    pub partition: Option<u32>,
    /// The writer.
    pub node: NodeId,
    /// Its fencing token.
    pub token: u64,
    /// What it writes.
    pub op: WriteOp,
}

/// The resource's answer to a protected write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WriteReply {
    /// Applied; the sequence row's `last_seq` after the write.
    Accepted {
        /// `sequence.last_seq` after the write.
        last_seq: u64,
        /// The job's cursor after the write: the first segment not yet checkpointed.
        cursor: u64,
    },
    /// A sequencer batch that did not start above `last_seq` (a late write): refused,
    /// without judging the token.
    Behind {
        /// `sequence.last_seq`.
        last_seq: u64,
    },
    /// The token is below the highest accepted one.
    Rejected {
        /// The highest token accepted so far.
        max_token: u64,
    },
}
request!(FencedWrite => WriteReply);

/// Declares a one-way message: `message!(Msg);` gives `Msg` a unique tag from its name.
macro_rules! message {
    ($name:ident) => {
        impl crate::world::net::Message for $name {
            const ID: u64 = crate::world::net::tag_of(concat!("baton.msg.", stringify!($name)));
        }
    };
}

/// The sequencer's `POST /next`, `count` times over: every request the client made in one
/// quantum (`work.client_quantum_ms`), sent as one message. Each request keeps its own
/// outcome: the batch's answer gives every one of them its own number, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextBatch {
    /// The client's id for the batch.
    pub batch: u64,
    /// How many `next` requests it carries.
    pub count: u64,
}
message!(NextBatch);

/// The answer to one [`NextBatch`]: the same for every request in it, since a node queues
/// and answers a batch as a whole.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NextReply {
    /// Sequence numbers `first..=last`, one per request in order, under the leader's
    /// token.
    Ok {
        /// The leader's token.
        token: u64,
        /// The first request's number.
        first: u64,
        /// The last request's number.
        last: u64,
    },
    /// Not the leader (the HTTP 409 of the spec), with whom this node believes leads.
    NotLeader {
        /// The believed leader.
        hint: Option<NodeId>,
    },
    /// The leader could not make its write durable in time; try again.
    Unavailable,
}

/// Answers to [`NextBatch`]es, by batch id: one message for every batch a node settled
/// at once (a leader settles all the batches of one write together).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextAnswers(pub Vec<(u64, NextReply)>);
message!(NextAnswers);

/// `count` reads of the sequencer's last number, sent together, answered by the leader
/// from its own state (a lease read; only protocols with a replicated log serve it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadBatch {
    /// The client's id for the batch.
    pub batch: u64,
    /// How many reads it carries.
    pub count: u64,
    /// When the client sent it (global simulated µs), for the stale-read check.
    pub sent_at_us: i64,
}
message!(ReadBatch);

/// The answer to a [`ReadBatch`], the same for every read in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReadReply {
    /// The last sequence number the leader's state machine has applied.
    Value {
        /// The leader's term.
        token: u64,
        /// The value.
        value: u64,
    },
    /// Not the leader, or its lease does not hold: with whom it believes leads.
    NotLeader {
        /// The believed leader.
        hint: Option<NodeId>,
    },
}

/// The answer to one [`ReadBatch`], by batch id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadAnswer(pub u64, pub ReadReply);
message!(ReadAnswer);

/// A transferring leader to a candidate queued ahead of its successor: queue again at
/// the back (see [`baton_protocols::Elector::requeue`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requeue;
message!(Requeue);

/// A leader that just handed over, to its successor: try for the seat now (see
/// [`baton_protocols::Elector::take_over_now`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TakeOverNow;
message!(TakeOverNow);

/// The address of `node` (`n3`), if it is one of the fleet's numbered nodes.
pub fn node_addr_of(node: &NodeId) -> Option<SocketAddr> {
    let i = node.number()?;
    (1..=255).contains(&i).then(|| node_addr(i))
}

/// A packet of the SWIM failure detector (`[swim]`), as foca encoded it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwimPacket(pub Vec<u8>);
message!(SwimPacket);
