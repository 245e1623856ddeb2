//! What the simulated peer-to-peer protocols (`bully`, `ring`, `raft`) share: their
//! messages travel as RPCs between the nodes, and their election rounds go into the
//! timeline.

use super::ElectorCtx;
use crate::world::net::Endpoint;
use crate::world::net::Request;
use crate::world::rpc::{call, node_addr};
use crate::world::timeline::{Event, Timeline};
use async_trait::async_trait;
use baton_model::NodeId;
use baton_protocols::peer::{ElectionLog, PeerNet, PeerTimeout};
use std::marker::PhantomData;
use std::sync::Arc;

/// A peer protocol's message as it travels between nodes: a madsim RPC wrapping the
/// protocol's own message type. Declare one with the `peer_rpc!` macro of this module.
pub trait PeerRpc: Request {
    /// The protocol's message.
    type Msg: Send + 'static;
    /// Wraps a message for the network.
    fn wrap(msg: Self::Msg) -> Self;
    /// The message inside.
    fn into_msg(self) -> Self::Msg;
}

/// Declares `Name(pub Msg)`, a peer RPC answered by `Reply`, with its [`PeerRpc`] impl.
macro_rules! peer_rpc {
    ($(#[$doc:meta])* $name:ident($msg:ty) => $reply:ty) => {
        $(#[$doc])*
        #[derive(Debug, serde::Serialize, serde::Deserialize)]
        pub struct $name(pub $msg);
        crate::world::rpc::request!($name => $reply);
        impl crate::world::protocol::peer::PeerRpc for $name {
            type Msg = $msg;
            fn wrap(msg: $msg) -> Self {
                $name(msg)
            }
            fn into_msg(self) -> $msg {
                self.0
            }
        }
    };
}
pub(crate) use peer_rpc;

/// The peers as one node reaches them: each call is one RPC `R` to the peer's endpoint.
pub struct SimPeerNet<R> {
    ep: Arc<Endpoint>,
    _rpc: PhantomData<fn(R)>,
}

impl<R> SimPeerNet<R> {
    /// The network of the node `ctx` builds an elector for.
    pub fn new(ctx: &ElectorCtx) -> Arc<Self> {
        Arc::new(SimPeerNet {
            ep: ctx.ep.clone(),
            _rpc: PhantomData,
        })
    }
}

#[async_trait]
impl<R: PeerRpc> PeerNet<R::Msg, R::Response> for SimPeerNet<R> {
    async fn call(
        &self,
        to: usize,
        msg: R::Msg,
        timeout_ms: u64,
    ) -> Result<R::Response, PeerTimeout> {
        call(&self.ep, node_addr(to), R::wrap(msg), timeout_ms)
            .await
            .map_err(|_| PeerTimeout)
    }
}

/// Hands every `R` that reaches the node's endpoint to `answer`, which replies at once.
pub fn serve<R: PeerRpc>(ep: &Endpoint, answer: impl Fn(R::Msg) -> R::Response + Send + 'static) {
    ep.add_rpc_handler(move |r: R| {
        let reply = answer(r.into_msg());
        async move { reply }
    });
}

/// Records each election round a node starts as a `CampaignStarted`, so election
/// latency is timed from the round that won, not from when the node first campaigned
/// (a peer elector campaigns for as long as it follows).
pub struct TimelineLog {
    /// The run's timeline.
    pub timeline: Timeline,
    /// The node.
    pub node: NodeId,
}

impl TimelineLog {
    /// The log of the node `ctx` builds an elector for.
    pub fn new(ctx: &ElectorCtx) -> Arc<Self> {
        Arc::new(TimelineLog {
            timeline: ctx.timeline.clone(),
            node: ctx.node.clone(),
        })
    }
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
                node: NodeId::nth(leader as usize),
                token: term,
                index,
                first,
                last,
            },
        );
    }
}
