//! `bully` in the simulator: no backend; the nodes' RPCs to each other carry the bully
//! messages, and each node's endpoint hands them to its elector.

use super::peer::{peer_rpc, serve, SimPeerNet, TimelineLog};
use super::{BackendCtx, ElectorCtx, Protocol};
pub use baton_model::protocol::bully::Bully;
use baton_protocols::bully::{BullyElector, BullyMsg, BullyReply};
use baton_protocols::Elector;
use madsim::task::NodeId;
use std::sync::Arc;

peer_rpc!(
    /// A bully message between two nodes.
    BullyRpc(BullyMsg) => BullyReply
);

impl Protocol for Bully {
    fn start_backend(&self, _: BackendCtx) -> Option<NodeId> {
        None
    }

    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector> {
        let e = Arc::new(BullyElector::new(
            ctx.index,
            baton_model::NodeId::fleet(ctx.nodes),
            SimPeerNet::<BullyRpc>::new(&ctx),
            ctx.clock.clone(),
            self.0.clone(),
            TimelineLog::new(&ctx),
        ));
        let h = e.clone();
        serve::<BullyRpc>(&ctx.ep, move |m| h.handle(m));
        e
    }
}
