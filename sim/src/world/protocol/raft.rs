//! `raft` in the simulator: no backend; openraft's messages travel as RPCs between the
//! nodes, and each node's log and vote live on its [`super::DiskSlot`], so they survive
//! kill and restart.

use super::peer::TimelineLog;
use super::{BackendCtx, ElectorCtx, Protocol};
use crate::world::net::Endpoint;
use crate::world::rpc::{call, node_addr, request};
use async_trait::async_trait;
pub use baton_model::protocol::raft::RaftProtocol;
use baton_protocols::peer::PeerTimeout;
use baton_protocols::raft::{RaftDisk, RaftElector, RaftMsg, RaftNode, RaftReply, RaftTransport};
use baton_protocols::Elector;
use madsim::task::NodeId;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// An openraft message between two nodes.
#[derive(Debug, Serialize, Deserialize)]
pub struct RaftRpc(pub RaftMsg);

request!(RaftRpc => RaftReply);

/// The peers as one node reaches them.
pub struct SimRaftNet {
    ep: Arc<Endpoint>,
}

#[async_trait]
impl RaftTransport for SimRaftNet {
    async fn call(&self, to: u64, msg: RaftMsg, timeout_ms: u64) -> Result<RaftReply, PeerTimeout> {
        call(&self.ep, node_addr(to as usize), RaftRpc(msg), timeout_ms)
            .await
            .map_err(|_| PeerTimeout)
    }
}

impl Protocol for RaftProtocol {
    fn start_backend(&self, _: BackendCtx) -> Option<NodeId> {
        None
    }

    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector> {
        let net = Arc::new(SimRaftNet { ep: ctx.ep.clone() });
        let log = TimelineLog::new(&ctx);
        let disk = ctx.disk.get_or_default::<RaftDisk>();
        let rng =
            baton_model::seed::fork(ctx.seed, &format!("raft/{}/{}", ctx.node, ctx.incarnation));
        let node = RaftNode {
            me: ctx.index as u64,
            names: baton_model::NodeId::fleet(ctx.nodes),
            transport: net,
            clock: ctx.clock,
            rng,
            disk,
            log,
        };
        let e = RaftElector::start(node, self.0.clone());
        let (h, requests) = (e.clone(), ctx.requests.clone());
        ctx.ep.add_rpc_handler(move |r: RaftRpc| {
            // Raft's "backend" is its peers: the election requests they serve (votes and
            // pre-votes, not heartbeats) are the load an election puts on them.
            if matches!(r.0, RaftMsg::Vote(_) | RaftMsg::PreVote(_)) {
                requests.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            let h = h.clone();
            async move { h.handle(r.0).await }
        });
        e
    }
}
