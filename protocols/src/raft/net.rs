//! How openraft's messages travel: [`RaftMsg`] and [`RaftReply`] over a
//! [`RaftTransport`] that the caller provides (the simulator: RPCs between nodes), and
//! the adapter that makes that transport openraft's `RaftNetwork`. Every call is bounded
//! by openraft's own timeout; a peer that does not answer in time is a network error.

use super::TypeConfig;
use crate::peer::PeerTimeout;
use async_trait::async_trait;
use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{EmptyNode, LogId, RaftNetwork, RaftNetworkFactory};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Weak};

/// A Raft message from one node to another.
#[derive(Debug, Serialize, Deserialize)]
pub enum RaftMsg {
    /// AppendEntries (also the heartbeat).
    Append(AppendEntriesRequest<TypeConfig>),
    /// RequestVote.
    Vote(VoteRequest<u64>),
    /// InstallSnapshot (one chunk).
    Snapshot(InstallSnapshotRequest<TypeConfig>),
    /// Pre-vote: would the peer vote for the sender in the next term?
    PreVote(PreVoteRequest),
    /// A transferring leader tells its successor to start an election now (Raft thesis
    /// 3.10; `raft.transfer = "elect"`).
    TimeoutNow,
}

/// A pre-vote request (Raft thesis, section 9.6). It changes nothing at the receiver.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PreVoteRequest {
    /// The term the candidate would campaign in: its current term + 1.
    pub term: u64,
    /// The candidate's id.
    pub candidate: u64,
    /// The candidate's last log id, compared as in a real vote.
    pub last_log_id: Option<LogId<u64>>,
}

/// The answer to a [`PreVoteRequest`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PreVoteResponse {
    /// The peer would vote for the candidate.
    pub granted: bool,
    /// The peer's current term (for the reader of a trace).
    pub term: u64,
}

/// The answer to a [`RaftMsg`].
#[derive(Debug, Serialize, Deserialize)]
pub enum RaftReply {
    /// To AppendEntries.
    Append(Result<AppendEntriesResponse<u64>, RaftError<u64>>),
    /// To RequestVote.
    Vote(Result<VoteResponse<u64>, RaftError<u64>>),
    /// To InstallSnapshot.
    Snapshot(Result<InstallSnapshotResponse<u64>, RaftError<u64, InstallSnapshotError>>),
    /// To PreVote.
    PreVote(PreVoteResponse),
    /// To TimeoutNow: the election was started.
    TimeoutNow,
    /// The node has not finished starting its Raft instance.
    NotReady,
}

/// The network seen from one node: a call to peer `to` (1-based id) that waits at most
/// `timeout_ms`. The simulator implements it with RPCs between nodes.
#[async_trait]
pub trait RaftTransport: Send + Sync {
    /// Sends `msg` to `to` and waits for its reply.
    async fn call(&self, to: u64, msg: RaftMsg, timeout_ms: u64) -> Result<RaftReply, PeerTimeout>;
}

/// Who learns of every AppendEntries a peer accepted: the leader lease is renewed from
/// openraft's own heartbeats and replication, with no round of its own.
pub(super) trait AckSink: Send + Sync {
    /// The node's local time, in microseconds.
    fn now_us(&self) -> i64;
    /// `peer` accepted (did not answer with a higher vote) an AppendEntries of `term`
    /// that left this node at local time `sent_us`.
    fn acked(&self, peer: u64, term: u64, sent_us: i64);
}

/// openraft's network factory over a [`RaftTransport`], telling `acks` of each accepted
/// AppendEntries.
pub(super) struct Net {
    pub(super) transport: Arc<dyn RaftTransport>,
    pub(super) acks: Weak<dyn AckSink>,
}

/// One peer as openraft reaches it.
pub(super) struct Conn {
    t: Arc<dyn RaftTransport>,
    acks: Weak<dyn AckSink>,
    to: u64,
}

impl RaftNetworkFactory<TypeConfig> for Net {
    type Network = Conn;
    async fn new_client(&mut self, to: u64, _: &EmptyNode) -> Conn {
        Conn {
            t: self.transport.clone(),
            acks: self.acks.clone(),
            to,
        }
    }
}

#[derive(Debug)]
struct Silent;
impl std::fmt::Display for Silent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no answer in time")
    }
}
impl std::error::Error for Silent {}

fn silent<E: std::error::Error>() -> RPCError<u64, EmptyNode, E> {
    RPCError::Network(NetworkError::new(&Silent))
}

impl Conn {
    async fn send(&self, msg: RaftMsg, option: &RPCOption) -> Option<RaftReply> {
        let ms = (option.hard_ttl().as_millis() as u64).max(1);
        match self.t.call(self.to, msg, ms).await {
            Ok(RaftReply::NotReady) | Err(_) => None,
            Ok(r) => Some(r),
        }
    }
}

type RpcResult<T, E = openraft::error::Infallible> =
    Result<T, RPCError<u64, EmptyNode, RaftError<u64, E>>>;

impl RaftNetwork<TypeConfig> for Conn {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<u64>> {
        // Only a leader sends AppendEntries, under its committed vote; the send time is
        // taken before the message leaves, so the lease it anchors is never too long.
        let term = rpc.vote.leader_id().get_term();
        let sent_us = self.acks.upgrade().map(|a| a.now_us());
        match self.send(RaftMsg::Append(rpc), &option).await {
            Some(RaftReply::Append(r)) => {
                if let (Ok(resp), Some(sent_us)) = (&r, sent_us) {
                    // Anything but HigherVote means the peer accepted our vote, and with
                    // it restarted its own lease: it refuses other candidates for the
                    // followers' lease from now.
                    if !matches!(resp, AppendEntriesResponse::HigherVote(_)) {
                        if let Some(a) = self.acks.upgrade() {
                            a.acked(self.to, term, sent_us);
                        }
                    }
                }
                r.map_err(|e| RemoteError::new(self.to, e).into())
            }
            _ => Err(silent()),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<u64>, InstallSnapshotError> {
        match self.send(RaftMsg::Snapshot(rpc), &option).await {
            Some(RaftReply::Snapshot(r)) => r.map_err(|e| RemoteError::new(self.to, e).into()),
            _ => Err(silent()),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<u64>> {
        match self.send(RaftMsg::Vote(rpc), &option).await {
            Some(RaftReply::Vote(r)) => r.map_err(|e| RemoteError::new(self.to, e).into()),
            _ => Err(silent()),
        }
    }
}
