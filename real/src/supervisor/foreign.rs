//! Nodes Baton did not write (`--node-cmd`): how the supervisor starts one in a node's
//! slot, behind the same proxies as its own, and watches it from outside (see
//! [`crate::contract::node_cmd`], [`crate::contract::status_poll`]).

use super::error::RealError;
use super::Supervisor;
use crate::contract::grant_check::GrantSource;
use crate::contract::placeholders::NodeParams;
use crate::contract::status_poll::{self, Target};
use crate::ports::{free_ports, LOOPBACK};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

impl Supervisor {
    /// Whether the nodes are run by `--node-cmd`.
    pub fn foreign(&self) -> bool {
        self.cfg.node_cmd.is_some()
    }

    /// The path of the step-down request: the contract's `/resign` for a foreign node,
    /// Baton's own `/control/resign` otherwise.
    pub(super) fn resign_path(&self) -> &'static str {
        if self.foreign() {
            "resign"
        } else {
            "control/resign"
        }
    }

    /// Where the preflight reads the backend's record of a foreign leader's grant (node
    /// contract version 2's backend rules); `None` on etcd, or for Baton's own nodes.
    pub fn grant_source(&self) -> Option<GrantSource> {
        use crate::backend::Backend;
        use crate::protocol::RealProtocol;
        if !self.foreign() {
            return None;
        }
        match (self.backend.as_ref()?, &self.cfg.protocol) {
            (Backend::Redis(s), RealProtocol::RedisFenced(c)) => Some(GrantSource::Redis {
                addr: s.addr(),
                key: c.key.clone(),
            }),
            (Backend::Zk(s), RealProtocol::ZkSequential(c)) => Some(GrantSource::Zookeeper {
                connect: s.addr().to_string(),
                path: c.election_path.clone(),
            }),
            (Backend::Postgres(s), RealProtocol::DbRow(_)) => Some(GrantSource::Postgres {
                conninfo: crate::backend::conninfo(s.addr()),
            }),
            _ => None,
        }
    }

    /// For a foreign node on no backend (raft): each peer's name with how many
    /// connections `node`'s proxy to that peer has accepted so far (rule `raft-peers`);
    /// `None` for Baton's own nodes or on a backend.
    pub fn peer_connections(&self, node: &str) -> Option<Vec<(String, u64)>> {
        let s = &self.nodes[self.slot(node).ok()?];
        s.raft_port?;
        Some(
            s.peer_proxies
                .iter()
                .map(|(j, p)| (self.nodes[*j].cfg.name.to_string(), p.accepted()))
                .collect(),
        )
    }

    /// Starts node `i` from the `--node-cmd` template on a fresh port, waits until it
    /// answers `/status` as the contract says, and points its client proxy and its
    /// poller at it.
    pub(super) async fn start_foreign_node(&mut self, i: usize) -> Result<(), RealError> {
        let cmd = self
            .cfg
            .node_cmd
            .clone()
            .expect("called for --node-cmd runs");
        if self.foreign.is_empty() {
            self.foreign = self.nodes.iter().map(|_| Arc::default()).collect();
            self.hurry = self.nodes.iter().map(|_| Arc::default()).collect();
        }
        let wires = super::fleet::peer_wires(&self.nodes, i);
        let s = &mut self.nodes[i];
        let incarnation = s.incarnation.load(Ordering::SeqCst) + 1;
        s.cfg.incarnation = incarnation;
        let port = free_ports(1)?[0];
        let dir = self.cfg.run_dir.join(s.cfg.name.as_str());
        std::fs::create_dir_all(&dir)?;
        let params = NodeParams::of(&s.cfg, port, dir, wires.as_ref());
        let mut child = crate::process::ManagedChild::spawn(
            &s.cfg.name,
            cmd.command(&params, &self.cfg.run_dir)?,
        )
        .map_err(|e| RealError::Child {
            what: s.cfg.name.to_string(),
            why: format!("--node-cmd {:?}: {e}", cmd.template),
            stderr: self
                .cfg
                .run_dir
                .join(format!("{}.stderr", s.cfg.name))
                .display()
                .to_string(),
        })?;
        self.pids.lock().unwrap().push(child.pid());
        self.ports.push(port);
        let addr = SocketAddr::from((LOOPBACK, port));
        let stderr = self.cfg.run_dir.join(format!("{}.stderr", s.cfg.name));
        crate::contract::node_cmd::wait_ready(
            &self.http,
            &mut child,
            (&s.cfg.name, addr),
            Duration::from_millis(self.cfg.process_start_timeout_ms),
            &stderr,
        )
        .await
        .map_err(RealError::Contract)?;
        s.client_proxy.set_upstream(addr);
        s.addr = Some(addr);
        s.incarnation.fetch_add(1, Ordering::SeqCst);
        *s.child.lock().unwrap() = Some(child);
        *self.foreign[i].lock().unwrap() = Some((addr, incarnation));
        Ok(())
    }

    /// Polls foreign node `node` every [`status_poll::HURRY_INTERVAL_MS`] for the next
    /// [`status_poll::HURRY_MS`]: its step-down is due (Baton asked it to resign, or
    /// continued it from a pause). Nothing for Baton's own nodes.
    pub(super) fn hurry_poll(&self, node: &str) {
        let Ok(i) = self.slot(node) else {
            return;
        };
        if let Some(h) = self.hurry.get(i) {
            let until = self.clock.now_us() + status_poll::HURRY_MS as i64 * 1000;
            h.store(until, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// Starts polling every foreign node's `/status` into the supervisor's log (nothing
    /// for Baton's own nodes, which log their beliefs themselves).
    pub(super) fn poll_foreign_nodes(&mut self) {
        if !self.foreign() {
            return;
        }
        let targets: Vec<Target> = self
            .nodes
            .iter()
            .zip(self.foreign.iter().zip(&self.hurry))
            .map(|(s, (current, hurry))| Target {
                name: s.cfg.name.clone(),
                current: current.clone(),
                child: s.child.clone(),
                hurry: hurry.clone(),
            })
            .collect();
        for t in status_poll::spawn(targets, &self.log) {
            self.tasks.push(t);
        }
    }
}
