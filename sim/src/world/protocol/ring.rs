//! `ring` in the simulator: no backend; the nodes' RPCs to each other carry the ring
//! messages, and each node's endpoint hands them to its elector.

use super::peer::{peer_rpc, serve, SimPeerNet, TimelineLog};
use super::{BackendCtx, ElectorCtx, Protocol};
pub use baton_model::protocol::ring::Ring;
use baton_protocols::ring::{RingElector, RingMsg, RingReply};
use baton_protocols::Elector;
use madsim::task::NodeId;
use std::sync::Arc;

peer_rpc!(
    /// A ring message between two nodes.
    RingRpc(RingMsg) => RingReply
);

impl Protocol for Ring {
    fn start_backend(&self, _: BackendCtx) -> Option<NodeId> {
        None
    }

    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector> {
        let e = Arc::new(RingElector::new(
            ctx.index,
            baton_model::NodeId::fleet(ctx.nodes),
            SimPeerNet::<RingRpc>::new(&ctx),
            ctx.clock.clone(),
            self.0.clone(),
            TimelineLog::new(&ctx),
        ));
        let h = e.clone();
        serve::<RingRpc>(&ctx.ep, move |m| h.handle(m));
        e
    }
}
