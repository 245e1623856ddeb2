//! The world: every process of a run inside one madsim runtime, and the verbs that hurt
//! them. Mechanism only; when to call the verbs is the driver's business.

pub mod client;
pub mod clock;
pub mod driver;
pub mod net;
pub mod node;
pub mod noise;
pub mod protocol;
pub mod requests;
pub mod rpc;
pub mod service;
pub mod timeline;

use crate::world::clock::NodeClock;
use crate::world::net::{LinkConfig, Net};
use crate::world::protocol::BackendCtx;
use crate::world::rpc::{node_addr, CLIENT_ADDR, RESOURCE_ADDR};
use crate::world::service::{etcd_cluster, resource};
use crate::world::timeline::{Event, Role, Timeline};
use baton_model::scenario::etcd_cluster::{CLIENTS, PEERS};
use baton_model::scenario::Resolved;
use client::ClientRecord;
use madsim::runtime::Handle;
use madsim::task::NodeId;
use node::{NodeControl, NodeEnv};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock};

/// Every process of a run and the verbs to fault them.
pub struct World {
    handle: Handle,
    /// The run's timeline.
    pub timeline: Timeline,
    /// The fleet, `n1` first.
    pub nodes: Vec<Arc<NodeControl>>,
    /// The protocol's backend node (none for peer-to-peer protocols) and its clock.
    backend: (Option<NodeId>, NodeClock),
    /// Requests the backend served.
    pub backend_requests: Arc<crate::world::requests::RequestCounter>,
    /// The lease service's members, when it is a cluster (then `backend` is none).
    cluster: Option<Arc<etcd_cluster::Cluster>>,
    resource: NodeId,
    client: NodeId,
    chaos: NodeId,
    /// Links cut by partitions, by process name: (from, to).
    cut: Mutex<BTreeSet<(String, String)>>,
    /// The sequencer client's record.
    pub client_record: ClientRecord,
}

impl World {
    /// Builds every process of `resolved` in the current runtime and starts them; they
    /// record into `timeline`.
    pub fn build(resolved: &Resolved, seed: u64, timeline: Timeline) -> World {
        World::build_with(resolved, seed, timeline, None)
    }

    /// As [`World::build`], with `protocol` in place of the one the scenario names when
    /// it is given (a library run's user node: [`crate::library`]).
    pub fn build_with(
        resolved: &Resolved,
        seed: u64,
        timeline: Timeline,
        protocol: Option<Arc<dyn crate::world::protocol::Protocol>>,
    ) -> World {
        let s = &resolved.scenario;
        let handle = Handle::current();
        Net::current().set_config(link_config(
            s.network.latency_ms_min,
            s.network.latency_ms_max,
            s.network.loss_ppm,
        ));
        let backend_requests = Arc::new(crate::world::requests::RequestCounter::default());
        let env = Arc::new(NodeEnv {
            timeline: timeline.clone(),
            backend_requests: backend_requests.clone(),
            seed,
            protocol: protocol.unwrap_or_else(|| crate::world::protocol::build(&resolved.scenario)),
            nodes: s.nodes as usize,
            tick_interval_ms: s.work.tick_interval_ms,
            resource_timeout_ms: s.work.resource_timeout_ms,
            start_delay_ms_max: s.start_delay_ms_max,
            job: s.work.job.clone(),
            swim: s.swim.clone(),
            partitions: s.partitions,
            etcd_cluster: (!s.etcd_members().is_empty()).then(|| s.etcd_cluster()),
            chaos_node: OnceLock::new(),
        });
        // A node of the world's own, for timers that must run while a node is paused.
        let chaos = handle
            .create_node()
            .name("chaos")
            .ip("10.0.0.9".parse().unwrap())
            .build();
        env.chaos_node.set(chaos.id()).expect("set once");

        let backend_clock = NodeClock::new();

        let (cluster, backend) = start_lease_service(&env, resolved, &handle, &backend_clock, seed);
        let (tl, fencing) = (timeline.clone(), s.fencing);
        let res = handle
            .create_node()
            .name("resource")
            .ip(RESOURCE_ADDR.ip())
            .init(move || resource::serve(tl.clone(), fencing))
            .build();

        let mut nodes = vec![];
        for i in 1..=s.nodes as usize {
            let ctl = Arc::new(NodeControl::new(i));
            let (c, e) = (ctl.clone(), env.clone());
            let h = handle
                .create_node()
                .name(ctl.name.clone())
                .ip(node_addr(i).ip())
                .init(move || node::run(c.clone(), e.clone()))
                .build();
            ctl.id.set(h.id()).expect("set once");
            nodes.push(ctl);
        }
        let record = ClientRecord::new(s.nodes as usize);
        let (r, rate, reads, t, q) = (
            record.clone(),
            s.work.rate_per_s,
            s.work.read_rate_per_s,
            s.work.client_timeout_ms,
            s.work.client_quantum_ms,
        );
        let client = handle
            .create_node()
            .name("client")
            .ip(CLIENT_ADDR.ip())
            .init(move || client::run(r.clone(), rate, reads, t, q))
            .build();
        World {
            handle,
            timeline,
            nodes,
            backend: (backend, backend_clock),
            backend_requests,
            cluster,
            resource: res.id(),
            client: client.id(),
            chaos: chaos.id(),
            cut: Mutex::new(BTreeSet::new()),
            client_record: record,
        }
    }

    fn node(&self, name: &str) -> Option<&Arc<NodeControl>> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The processes a partition end stands for, seen from the other end `peer`.
    /// `backend` is the protocol's service; a peer-to-peer protocol has none, and there
    /// its election runs among the nodes themselves, so `backend` means every other node.
    fn ids_of(&self, name: &str, peer: &str) -> Vec<NodeId> {
        if let Some(c) = &self.cluster {
            let member_ids = |keep: &dyn Fn(&str) -> bool| -> Vec<NodeId> {
                c.members
                    .iter()
                    .filter(|m| keep(m.name()))
                    .map(|m| *m.node.get().expect("built"))
                    .collect()
            };
            match name {
                "backend" => return member_ids(&|_| true),
                PEERS => return member_ids(&|m| m != peer),
                CLIENTS => {
                    return self
                        .nodes
                        .iter()
                        .map(|n| *n.id.get().expect("built"))
                        .collect()
                }
                m if c.by_name(m).is_some() => return member_ids(&|x| x == m),
                _ => {}
            }
        }
        match name {
            "backend" => match self.backend.0 {
                Some(id) => vec![id],
                None => self
                    .nodes
                    .iter()
                    .filter(|n| n.name != peer)
                    .map(|n| *n.id.get().expect("built"))
                    .collect(),
            },
            "resource" => vec![self.resource],
            "client" => vec![self.client],
            _ => vec![*self.node(name).expect("validated").id.get().expect("built")],
        }
    }

    /// Kills every process of the run (no timeline events: the run is over), so that
    /// the runtime can drop their tasks before it is dropped itself.
    pub fn shutdown(&self) {
        let mut ids: Vec<NodeId> = self
            .nodes
            .iter()
            .map(|n| *n.id.get().expect("built"))
            .collect();
        ids.extend(self.backend.0);
        if let Some(c) = &self.cluster {
            ids.extend(c.members.iter().map(|m| *m.node.get().expect("built")));
        }
        ids.extend([self.resource, self.client, self.chaos]);
        for id in ids {
            self.handle.kill(id);
        }
    }

    /// The node that leads now by its own belief (the highest token if several do).
    pub fn leader(&self) -> Option<baton_model::NodeId> {
        self.nodes
            .iter()
            .filter_map(|n| {
                let s = *n.status.lock().unwrap();
                (s.role == Role::Leader && !s.dead).then(|| (s.token.unwrap_or(0), n.name.clone()))
            })
            .max()
            .map(|(_, name)| name)
    }

    /// The first running node, in fleet order, that does not believe it leads.
    pub fn follower(&self) -> Option<baton_model::NodeId> {
        self.nodes
            .iter()
            .find(|n| {
                let s = *n.status.lock().unwrap();
                s.role != Role::Leader && !s.dead
            })
            .map(|n| n.name.clone())
    }

    /// The etcd member that leads now, when the lease service is a cluster.
    pub fn etcd_leader(&self) -> Option<String> {
        self.cluster.as_ref()?.leader()
    }

    /// The etcd member the Baton leader's client talks to (see
    /// `baton_model::scenario::etcd_cluster::LEADER_MEMBER`), when a node leads and the lease
    /// service is a cluster.
    pub fn leader_member(&self) -> Option<String> {
        self.cluster.as_ref()?;
        let leader = self.leader()?;
        let at = self
            .node(&leader)?
            .etcd_member
            .load(std::sync::atomic::Ordering::SeqCst);
        (at > 0).then(|| baton_model::scenario::etcd_cluster::member_name(at as u32))
    }

    /// The etcd member named `name`, when the lease service is a cluster and it is one.
    fn member(&self, name: &str) -> Option<(&etcd_cluster::Cluster, &etcd_cluster::Member)> {
        let c = self.cluster.as_ref()?;
        c.by_name(name).map(|m| (c.as_ref(), m.as_ref()))
    }

    /// Stalls (or un-stalls) an etcd member's disk.
    pub fn stall_disk(&self, name: &str, stalled: bool) {
        if let Some((c, _)) = self.member(name) {
            c.stall_disk(name, stalled);
        }
    }

    /// The backend's one server, when a fault names it (`backend`).
    fn server(&self, name: &str) -> Option<NodeId> {
        (name == "backend").then_some(self.backend.0).flatten()
    }

    /// Kills a node (or an etcd member, or the backend server): its tasks are dropped and
    /// its sockets closed.
    pub fn kill(&self, name: &str) {
        if let Some(id) = self.server(name) {
            self.handle.kill(id);
            self.timeline.record(Event::MemberKilled {
                member: name.to_string(),
            });
            return;
        }
        if let Some((c, m)) = self.member(name) {
            if m.up.load(std::sync::atomic::Ordering::SeqCst) {
                self.handle.kill(*m.node.get().expect("built"));
                c.killed(name);
                self.timeline.record(Event::MemberKilled {
                    member: name.to_string(),
                });
            }
            return;
        }
        let n = self.node(name).expect("validated node name");
        self.handle.kill(*n.id.get().expect("built"));
        n.clear_holds();
        self.record_belief_end(n);
        *n.status.lock().unwrap() = node::NodeStatus {
            role: Role::Follower,
            token: None,
            dead: true,
        };
        self.timeline.record(Event::NodeKilled {
            node: n.name.clone(),
        });
    }

    /// A leader killed after its belief ended by its own judgement, before it recorded
    /// its stop (a write in flight held it): the timeline says when it stopped acting.
    fn record_belief_end(&self, n: &NodeControl) {
        if let Some((token, reason, at_us)) = n.belief_ended(crate::world::clock::global_now_us()) {
            self.timeline.record(Event::StoppedActing {
                node: n.name.clone(),
                token,
                reason: reason.as_str().to_string(),
                lost_at_us: Some(at_us),
            });
        }
    }

    /// Starts a node (or an etcd member, or the backend server) again from scratch
    /// (killing it first if it still runs); what survives is its disk's.
    pub fn restart(&self, name: &str) {
        if let Some(id) = self.server(name) {
            self.handle.kill(id);
            self.timeline.record(Event::MemberRestarted {
                member: name.to_string(),
            });
            self.handle.restart(id);
            return;
        }
        if let Some((_, m)) = self.member(name) {
            self.kill(name);
            // The member records its own start, once its process runs.
            self.handle.restart(*m.node.get().expect("built"));
            return;
        }
        let n = self.node(name).expect("validated node name");
        let id = *n.id.get().expect("built");
        // madsim's restart does not close the old sockets; a kill does. Restarting a live
        // node kills it first, and the timeline says so: its beliefs die with it.
        if !n.status.lock().unwrap().dead {
            self.record_belief_end(n);
            self.timeline.record(Event::NodeKilled {
                node: n.name.clone(),
            });
        }
        self.handle.kill(id);
        n.clear_holds();
        self.timeline.record(Event::NodeRestarted {
            node: n.name.clone(),
        });
        n.status.lock().unwrap().dead = false;
        self.handle.restart(id);
    }

    /// Stops the world on a node (a scripted pause) until [`World::resume`] with what
    /// this returns.
    pub fn pause(&self, name: &str) -> Option<u64> {
        if let Some(id) = self.server(name) {
            self.handle.pause(id);
            self.timeline.record(Event::MemberPaused {
                member: name.to_string(),
            });
            return None;
        }
        if let Some((_, m)) = self.member(name) {
            self.handle.pause(*m.node.get().expect("built"));
            self.timeline.record(Event::MemberPaused {
                member: name.to_string(),
            });
            return None;
        }
        let held = self.hold(name);
        self.timeline
            .record(Event::NodePaused { node: name.into() });
        held
    }

    /// Ends a scripted pause.
    pub fn resume(&self, name: &str, held: Option<u64>) {
        if let Some(id) = self.server(name) {
            self.handle.resume(id);
            self.timeline.record(Event::MemberResumed {
                member: name.to_string(),
            });
            return;
        }
        if let Some((_, m)) = self.member(name) {
            self.handle.resume(*m.node.get().expect("built"));
            self.timeline.record(Event::MemberResumed {
                member: name.to_string(),
            });
            return;
        }
        if let Some(incarnation) = held {
            self.release(name, incarnation);
        }
        self.timeline
            .record(Event::NodeResumed { node: name.into() });
    }

    /// One more pause in force on a node (see [`NodeControl::hold`]); `None` when the
    /// node is down.
    pub fn hold(&self, name: &str) -> Option<u64> {
        self.node(name).expect("validated node name").hold()
    }

    /// Ends a pause taken by [`World::hold`].
    pub fn release(&self, name: &str, incarnation: u64) {
        self.node(name)
            .expect("validated node name")
            .release(incarnation);
    }

    /// Arms a pause that strikes at the node's next protected write.
    pub fn arm_pause(&self, name: &str, index: usize, duration_ms: u64) {
        *self
            .node(name)
            .expect("validated node name")
            .pause_armed
            .lock()
            .unwrap() = Some((index, duration_ms));
    }

    /// Cuts the link `from -> to`.
    pub fn cut(&self, from: &str, to: &str) {
        for a in self.ids_of(from, to) {
            for b in self.ids_of(to, from) {
                Net::current().cut(a, b);
            }
        }
        self.cut
            .lock()
            .unwrap()
            .insert((from.to_string(), to.to_string()));
    }

    /// Restores the link `from -> to`.
    pub fn mend(&self, from: &str, to: &str) {
        for a in self.ids_of(from, to) {
            for b in self.ids_of(to, from) {
                Net::current().mend(a, b);
            }
        }
        self.cut
            .lock()
            .unwrap()
            .remove(&(from.to_string(), to.to_string()));
    }

    /// Slows the link `from -> to` to `latency_ms` (min, max); `None` restores it (the
    /// network's latency, or between two etcd members their peer latency).
    pub fn slow(&self, from: &str, to: &str, latency_ms: Option<(u64, u64)>) {
        let member_ids: Vec<NodeId> = self
            .cluster
            .as_ref()
            .map(|c| c.members.iter().map(|m| m.id()).collect())
            .unwrap_or_default();
        for a in self.ids_of(from, to) {
            for b in self.ids_of(to, from) {
                let restored = match &self.cluster {
                    Some(c) if member_ids.contains(&a) && member_ids.contains(&b) => {
                        Some(c.peer_latency_us())
                    }
                    _ => None,
                };
                let us = latency_ms.map(|(lo, hi)| (lo * 1000, hi * 1000));
                Net::current().slow(a, b, us.or(restored));
            }
        }
    }

    /// Restores every cut link.
    pub fn mend_all(&self) {
        let cut: Vec<(String, String)> = self.cut.lock().unwrap().iter().cloned().collect();
        for (a, b) in cut {
            self.mend(&a, &b);
        }
    }

    /// The clock of a node or of the backend. (The resource judges no time.)
    pub fn clock(&self, name: &str) -> &NodeClock {
        if let Some((_, m)) = self.member(name) {
            return &m.clock;
        }
        match name {
            "backend" => &self.backend.1,
            _ => &self.node(name).expect("validated node name").clock,
        }
    }

    /// Sets latency and loss for every message from now on.
    pub fn set_network(&self, latency_ms_min: u64, latency_ms_max: u64, loss_ppm: u64) {
        Net::current().set_config(link_config(latency_ms_min, latency_ms_max, loss_ppm));
    }

    /// Asks a node that believes it leads to hand over to `to`; false (nothing asked)
    /// when it does not lead.
    pub fn transfer(&self, name: &str, to: &str) -> bool {
        let n = self.node(name).expect("validated node name");
        let s = *n.status.lock().unwrap();
        if s.role != Role::Leader || s.dead {
            return false;
        }
        *n.transfer_to.lock().unwrap() = Some(to.into());
        n.resign_notify.notify_waiters();
        true
    }

    /// The next running node after `name` in fleet order, wrapping around.
    pub fn next_running(&self, name: &str) -> Option<baton_model::NodeId> {
        let at = self.nodes.iter().position(|n| n.name == name)?;
        let len = self.nodes.len();
        (1..len)
            .map(|k| &self.nodes[(at + k) % len])
            .find(|n| !n.status.lock().unwrap().dead)
            .map(|n| n.name.clone())
    }

    /// Asks a node to step down if it leads.
    pub fn resign(&self, name: &str) {
        let n = self.node(name).expect("validated node name");
        n.resign_requested
            .store(true, std::sync::atomic::Ordering::SeqCst);
        n.resign_notify.notify_waiters();
    }
}

/// Starts the protocol's service: a lease service of several members is the world's to
/// build (its members are processes that faults address by name); otherwise the
/// protocol starts its own backend, if it has one.
fn start_lease_service(
    env: &NodeEnv,
    resolved: &Resolved,
    handle: &Handle,
    backend_clock: &NodeClock,
    seed: u64,
) -> (Option<Arc<etcd_cluster::Cluster>>, Option<NodeId>) {
    if let Some(c) = &env.etcd_cluster {
        let lease = resolved.scenario.etcd_lease.clone().unwrap_or_default();
        let cluster = etcd_cluster::start(
            handle,
            c,
            env.timeline.clone(),
            env.backend_requests.clone(),
            seed,
            (lease.min_lease_ttl_ms, lease.expiry_check_interval_ms),
        );
        return (Some(cluster), None);
    }
    let backend = env.protocol.start_backend(BackendCtx {
        handle,
        timeline: env.timeline.clone(),
        clock: backend_clock.clone(),
        requests: env.backend_requests.clone(),
        seed,
    });
    (None, backend)
}

/// The network's latency range (`min..=max` ms) and loss.
pub fn link_config(latency_ms_min: u64, latency_ms_max: u64, loss_ppm: u64) -> LinkConfig {
    LinkConfig {
        latency_us_min: latency_ms_min * 1000,
        latency_us_max: latency_ms_max * 1000,
        loss_ppm,
    }
}
