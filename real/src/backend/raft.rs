//! Raft across processes: openraft's messages between node processes over HTTP, and
//! where a raft node reports its elections.
//!
//! The elector is the simulator's (`baton_protocols::raft`), unchanged: its
//! [`RaftTransport`] here is a `POST /raft` of the message as JSON to the peer's node
//! process, through this node's proxy to that peer (so a partition between two nodes
//! is a cut of their proxies), bounded by the elector's own timeout; no answer in time,
//! or none at all, is a lost message ([`PeerTimeout`]), as in the simulator. The peer's
//! node answers with [`RaftReply`] as JSON ([`handle`]). Each node's log and vote live in
//! a file of the run directory (`n<i>.raft.json`, see `RaftDisk::durable`), so a killed
//! node restarts with them, as a Raft node restarts from its fsynced files.

use crate::events::{Event, EventLog};
use async_trait::async_trait;
use baton_model::NodeId;
use baton_protocols::peer::{ElectionLog, PeerTimeout};
use baton_protocols::raft::{RaftElector, RaftMsg, RaftReply, RaftTransport};
use std::time::Duration;

/// A node's peers over HTTP. See the module doc.
pub struct HttpRaft {
    /// Each node's `/raft` URL through this node's proxy, in fleet order (1-based id
    /// `i` at `i - 1`; its own is empty).
    pub urls: Vec<String>,
    /// The HTTP client (one connection pool for every peer).
    pub http: reqwest::Client,
}

#[async_trait]
impl RaftTransport for HttpRaft {
    async fn call(&self, to: u64, msg: RaftMsg, timeout_ms: u64) -> Result<RaftReply, PeerTimeout> {
        let url = self
            .urls
            .get(to as usize - 1)
            .filter(|u| !u.is_empty())
            .ok_or(PeerTimeout)?;
        let send = async {
            let r = self.http.post(url).json(&msg).send().await.ok()?;
            if !r.status().is_success() {
                return None;
            }
            r.json::<RaftReply>().await.ok()
        };
        match tokio::time::timeout(Duration::from_millis(timeout_ms.max(1)), send).await {
            Ok(Some(reply)) => Ok(reply),
            _ => Err(PeerTimeout),
        }
    }
}

/// Answers a peer's message with this node's elector (`NotReady` until it has one).
pub async fn handle(elector: Option<&RaftElector>, msg: RaftMsg) -> RaftReply {
    match elector {
        Some(e) => e.handle(msg).await,
        None => RaftReply::NotReady,
    }
}

/// Where a raft node reports each election round it starts: its event log, as
/// `campaign_started` (the simulator's timeline gets the same).
pub struct EventElectionLog {
    /// The node.
    pub node: NodeId,
    /// Its event log.
    pub log: EventLog,
}

impl ElectionLog for EventElectionLog {
    fn election_started(&self) {
        self.log.record(Event::CampaignStarted {
            node: self.node.clone(),
        });
    }
}
