//! A node's client to an etcd cluster (`[etcd] members` of 2 or more), as clientv3
//! keeps one: the requests the cluster's members declare (`service/etcd_cluster.rs`),
//! sent to one member at a time.

use crate::world::net::{Endpoint, Net};
use crate::world::rpc::{call, EtcdWatch};
use crate::world::service::etcd_cluster::{member_addr, ClientOp, Op, Refusal, Reply};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The client side: a node's connection to the cluster, as clientv3 keeps one. It talks
/// to one member; when that member refuses (its process is dead: the connection is
/// reset) or has no leader, the client waits `retry_ms` and moves to the next member.
/// A silent member (cut off, paused) is not noticed: each call times out.
pub struct ClusterClient {
    ep: Arc<Endpoint>,
    members: usize,
    /// The member it talks to (1-based), shared with the node's control block.
    at: Arc<AtomicUsize>,
    retry_ms: u64,
}

impl ClusterClient {
    /// Node `n<node>`'s client (1-based), to `members` members, first to member
    /// `((node - 1) mod members) + 1`; it keeps the member it talks to in `at`.
    pub fn new(
        ep: Arc<Endpoint>,
        (node, at): (usize, Arc<AtomicUsize>),
        members: u32,
        retry_ms: u64,
    ) -> ClusterClient {
        at.store(
            baton_model::scenario::etcd_cluster::first_member_of(node, members) as usize,
            Ordering::SeqCst,
        );
        ClusterClient {
            ep,
            members: members as usize,
            at,
            retry_ms,
        }
    }

    /// The member it talks to now.
    fn current(&self) -> SocketAddr {
        member_addr(self.at.load(Ordering::SeqCst))
    }

    /// Waits `retry_ms`, then talks to the next member.
    async fn next_member(&self) {
        madsim::time::sleep(Duration::from_millis(self.retry_ms)).await;
        let at = self.at.load(Ordering::SeqCst);
        self.at.store(at % self.members + 1, Ordering::SeqCst);
    }

    /// Sends `op`; `Err(None)` on a timeout, `Err(Some(text))` on an error the member
    /// answered or a refused connection.
    pub async fn op(&self, op: Op, timeout_ms: u64) -> Result<Reply, Option<String>> {
        let to = self.current();
        if Net::current().refuses(to) {
            self.next_member().await;
            return Err(Some("connection refused".into()));
        }
        match call(&self.ep, to, ClientOp(op), timeout_ms).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(Refusal::NoLeader)) => {
                self.next_member().await;
                Err(Some("etcdserver: no leader".into()))
            }
            Ok(Err(Refusal::NotCommitted(e))) => Err(Some(e)),
            Err(_) => Err(None),
        }
    }

    /// A watch on the member it talks to.
    pub async fn watch(
        &self,
        w: EtcdWatch,
        timeout_ms: u64,
    ) -> Result<Vec<baton_protocols::WatchEvent>, Option<String>> {
        let to = self.current();
        if Net::current().refuses(to) {
            self.next_member().await;
            return Err(Some("connection refused".into()));
        }
        call(&self.ep, to, w, timeout_ms).await.map_err(|_| None)
    }
}
