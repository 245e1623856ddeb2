//! What the supervisor can ask of the run: where a node listens, its `/status`, who
//! leads and who follows by the nodes' own belief, and which processes died on their
//! own.

use super::error::RealError;
use super::Supervisor;
use crate::events::Role;
use crate::node::StatusBody;
use baton_model::NodeId;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

impl Supervisor {
    /// Where node `node` serves HTTP directly (`/status`, `/metrics`), while it runs.
    pub fn node_addr(&self, node: &str) -> Result<SocketAddr, RealError> {
        let i = self.slot(node)?;
        let running = self.nodes[i].child.lock().unwrap().is_some();
        match (running, self.nodes[i].addr) {
            (true, Some(a)) => Ok(a),
            _ => Err(RealError::NotRunning(node.to_string())),
        }
    }

    /// Node `node`'s `/status`, or `None` if it does not answer within 300 ms (dead,
    /// paused).
    pub async fn status(&self, node: &str) -> Option<StatusBody> {
        let addr = self.node_addr(node).ok()?;
        let resp = self
            .http
            .get(format!("http://{addr}/status"))
            .timeout(Duration::from_millis(300))
            .send()
            .await
            .ok()?;
        resp.json().await.ok()
    }

    /// The node that leads by its own belief, asking every running node's `/status`;
    /// with several, the one with the highest token.
    pub async fn leader(&self) -> Option<NodeId> {
        let names = self.node_names();
        let answers = futures::future::join_all(names.iter().map(|n| self.status(n))).await;
        answers
            .into_iter()
            .flatten()
            .filter(|s| s.role == Role::Leader)
            .max_by_key(|s| s.fence_token)
            .map(|s| s.node_id)
    }

    /// Waits up to `timeout` for a leader other than any in `not`; polls every 50 ms.
    pub async fn wait_for_leader(&self, not: &[&str], timeout: Duration) -> Option<NodeId> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(l) = self.leader().await {
                if !not.contains(&l.as_str()) {
                    return Some(l);
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Whether node `node` has a process (started and not killed by a verb).
    pub fn is_running(&self, node: &str) -> Result<bool, RealError> {
        let i = self.slot(node)?;
        let running = self.nodes[i].child.lock().unwrap().is_some();
        Ok(running)
    }

    /// The first running node, in fleet order, that answers `/status` and does not
    /// believe it leads (a paused node does not answer and is passed over).
    pub async fn follower(&self) -> Option<NodeId> {
        for n in self.node_names() {
            if let Some(s) = self.status(&n).await {
                if s.role != Role::Leader {
                    return Some(n);
                }
            }
        }
        None
    }

    /// The processes of the run that exited by themselves (not killed by a verb or by
    /// [`Supervisor::stop`]), each with its stderr file: a run with any is broken.
    pub fn exited(&mut self) -> Vec<(String, PathBuf)> {
        let mut out = vec![];
        let err = |what: &str| self.cfg.run_dir.join(format!("{what}.stderr"));
        for s in &self.nodes {
            if let Some(c) = s.child.lock().unwrap().as_mut() {
                if !c.is_running() {
                    out.push((s.cfg.name.to_string(), err(&s.cfg.name)));
                }
            }
        }
        if let Some(r) = self.resource.as_mut() {
            if !r.is_running() {
                out.push(("resource".into(), err("resource")));
            }
        }
        if let Some(l) = self.load.as_mut() {
            if !l.is_running() {
                out.push(("load".into(), err("load")));
            }
        }
        if let Some(b) = &self.backend {
            out.extend(b.dead());
        }
        out
    }
}
