//! `ring` in the simulator: no backend; the nodes' RPCs to each other carry the ring
//! messages, and each node's endpoint hands them to its elector.

use super::peer::{names, peer_rpc, serve, SimPeerNet, TimelineLog};
use super::{require_positive, BackendCtx, Bound, ElectorCtx, Protocol, ProtocolName};
use crate::scenario::Scenario;
use baton_protocols::ring::{RingConfig, RingElector, RingMsg, RingReply};
use baton_protocols::Elector;
use madsim::task::NodeId;
use std::sync::Arc;

peer_rpc!(
    /// A ring message between two nodes.
    RingRpc(RingMsg) => RingReply
);

/// The ring protocol with its scenario table.
#[derive(Clone, Debug)]
pub struct Ring(pub RingConfig);

impl Protocol for Ring {
    fn name(&self) -> ProtocolName {
        ProtocolName::Ring
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let c = &self.0;
        require_positive(&[
            ("heartbeat_interval_ms", c.heartbeat_interval_ms),
            ("failure_timeout_ms", c.failure_timeout_ms),
            ("hop_timeout_ms", c.hop_timeout_ms),
            ("election_timeout_ms", c.election_timeout_ms),
        ])?;
        if c.failure_timeout_ms <= c.heartbeat_interval_ms {
            return Err((
                "failure_timeout_ms".into(),
                format!(
                    "{} must be above heartbeat_interval_ms {}, or every coordinator is suspected between heartbeats",
                    c.failure_timeout_ms, c.heartbeat_interval_ms
                ),
            ));
        }
        Ok(())
    }

    fn start_backend(&self, _: BackendCtx) -> Option<NodeId> {
        None
    }

    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector> {
        let e = Arc::new(RingElector::new(
            ctx.index,
            names(ctx.nodes),
            SimPeerNet::<RingRpc>::new(&ctx),
            ctx.clock.clone(),
            self.0.clone(),
            TimelineLog::new(&ctx),
        ));
        let h = e.clone();
        serve::<RingRpc>(&ctx.ep, move |m| h.handle(m));
        e
    }

    /// A killed coordinator's last heartbeat left no earlier than its last write, so a
    /// node suspects it at most one failure timeout (plus the heartbeat's flight) later.
    /// The round then passes the dead node at most twice (ELECTION, then ELECTION with
    /// the winner's id), each time waiting one hop timeout, and crosses the live nodes
    /// in at most two laps; the winner claims the resource in one round trip.
    fn failover_bound(&self, s: &Scenario) -> Bound {
        let c = &self.0;
        let lat = s.network.latency_ms_max;
        let laps = 2 * s.nodes as u64 * lat;
        let ms = c.failure_timeout_ms + lat + 2 * c.hop_timeout_ms + laps + 2 * lat;
        Bound {
            ms,
            formula: format!(
                "failure timeout + 2 hop timeouts = failure timeout {} ms + heartbeat flight {lat} ms + the dead node skipped twice (2 x {} ms) + two laps of {} hops at <= {lat} ms one way ({laps} ms) + claim round trip ({} ms)",
                c.failure_timeout_ms,
                c.hop_timeout_ms,
                s.nodes,
                2 * lat
            ),
        }
    }

    fn default_liveness_bound_ms(&self, _: &Scenario) -> u64 {
        let c = &self.0;
        2 * (c.failure_timeout_ms + c.election_timeout_ms) + 1000
    }
}
