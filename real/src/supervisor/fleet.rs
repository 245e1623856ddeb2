//! The fleet of a run: the resource, the nodes (each behind its own proxies) and the
//! load client, as the supervisor starts them.

use super::config::RealConfig;
use super::error::RealError;
use super::spawn::{spawn_child, spawn_load, write_json};
use crate::backend::Backend;
use crate::contract::placeholders::PeerWires;
use crate::load::LoadConfig;
use crate::node::{NodeConfig, Peer};
use crate::process::ManagedChild;
use crate::resource::ResourceConfig;
use crate::run_clock::RunClock;
use crate::supervisor::proxy::{Flow, Proxy};
use baton_model::NodeId;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A node's process, shared with the watchers that act on it (a `before-write` pause).
pub(super) type SharedChild = Arc<Mutex<Option<ManagedChild>>>;

/// One node of the fleet: its config, its current process, and its proxies, which
/// outlive its processes.
pub(super) struct NodeSlot {
    pub(super) cfg: NodeConfig,
    pub(super) config_path: PathBuf,
    pub(super) child: SharedChild,
    /// Where the current process listens (the supervisor's direct line).
    pub(super) addr: Option<SocketAddr>,
    /// To each etcd member, in member order, or to the one server.
    pub(super) backend_proxies: Vec<Proxy>,
    pub(super) resource_proxy: Proxy,
    pub(super) client_proxy: Proxy,
    /// To each peer, by its 0-based index (raft only: the nodes talk to each other).
    pub(super) peer_proxies: Vec<(usize, Proxy)>,
    /// Where a `--node-cmd` node listens for its peers (`{raft_port}`, raft only): the
    /// same at every start, so that the address a Raft node keeps of itself in its
    /// configuration stays true across restarts; its peers' proxies to it point there.
    pub(super) raft_port: Option<u16>,
    /// Incremented at every start, so a pause watcher knows its process is gone.
    pub(super) incarnation: Arc<AtomicU64>,
}

impl NodeSlot {
    /// Every proxy of the node: to the backend, to the resource, from the client, to
    /// its peers.
    pub(super) fn all_proxies(&self) -> impl Iterator<Item = &Proxy> {
        self.backend_proxies
            .iter()
            .chain([&self.resource_proxy, &self.client_proxy])
            .chain(self.peer_proxies.iter().map(|(_, p)| p))
    }

    /// The proxy to peer `j` (0-based), for a protocol whose nodes talk to each other.
    pub(super) fn peer_proxy(&self, j: usize) -> Option<&Proxy> {
        self.peer_proxies
            .iter()
            .find(|(k, _)| *k == j)
            .map(|(_, p)| p)
    }
}

/// Starts the resource process on the run's ledger; returns it and where it listens.
pub(super) fn start_resource(
    cfg: &RealConfig,
    clock: RunClock,
) -> Result<(ManagedChild, SocketAddr), RealError> {
    let rcfg = ResourceConfig {
        db_path: cfg.run_dir.join("ledger.db"),
        fencing: cfg.fencing,
        log_path: cfg.run_dir.join("resource.jsonl"),
        epoch_us: clock.epoch_us(),
    };
    let rpath = cfg.run_dir.join("resource.json");
    write_json(&rpath, &rcfg)?;
    spawn_child(cfg, "resource", "resource", &rpath)
}

/// Every node's slot, its proxies started (their ports added to `ports`) and its config
/// written out, peers and network latency included; no node process runs yet.
pub(super) async fn node_slots(
    cfg: &RealConfig,
    clock: RunClock,
    backend: &Backend,
    resource_addr: SocketAddr,
    ports: &mut Vec<u16>,
) -> Result<Vec<NodeSlot>, RealError> {
    // Proxies first: every node's client-facing address must be known before any
    // node starts, for its peers' 409 hints.
    let mut slots = vec![];
    for i in 1..=cfg.nodes {
        slots.push(node_slot(cfg, clock, i, backend, resource_addr, ports).await?);
    }
    let peers = peers(&slots);
    for s in &mut slots {
        s.cfg.peers = peers.clone();
    }
    if cfg.protocol.nodes_talk() {
        // Baton's own nodes take their peers' messages on their HTTP port, fresh at
        // every start: until a peer runs, its proxies point at the resource (nothing
        // answers a Raft message there), and each start points them at the new process.
        // A `--node-cmd` node listens for its peers on a port of its own that stays the
        // same (`{raft_port}`), so its proxies point there from the start.
        if cfg.node_cmd.is_some() {
            for (s, port) in slots.iter_mut().zip(crate::ports::free_ports(cfg.nodes)?) {
                s.raft_port = Some(port);
                ports.push(port);
            }
        }
        for i in 0..slots.len() {
            for j in (0..slots.len()).filter(|j| *j != i) {
                let upstream = slots[j].raft_port.map_or(resource_addr, |p| {
                    SocketAddr::from((crate::ports::LOOPBACK, p))
                });
                let p = Proxy::start(upstream).await?;
                ports.push(p.addr().port());
                slots[i].peer_proxies.push((j, p));
            }
            slots[i].cfg.raft_peers = (0..slots.len())
                .map(|j| {
                    slots[i]
                        .peer_proxy(j)
                        .map_or(String::new(), |p| format!("http://{}/raft", p.addr()))
                })
                .collect();
            let disk = format!("{}.raft.json", slots[i].cfg.name);
            slots[i].cfg.raft_disk = Some(cfg.run_dir.join(disk));
        }
    }
    let (lo, hi) = cfg.network_latency_ms;
    if hi > 0 {
        for p in slots.iter().flat_map(NodeSlot::all_proxies) {
            p.set_latency_ms(Flow::Both, lo, hi);
        }
    }
    Ok(slots)
}

/// Node `n<i>`'s slot: its proxies and its first config.
async fn node_slot(
    cfg: &RealConfig,
    clock: RunClock,
    i: usize,
    backend: &Backend,
    resource_addr: SocketAddr,
    ports: &mut Vec<u16>,
) -> Result<NodeSlot, RealError> {
    let mut backend_proxies = vec![];
    for a in backend.addrs() {
        backend_proxies.push(Proxy::start(a).await?);
    }
    let resource_proxy = Proxy::start(resource_addr).await?;
    // The node is not up yet: its proxy points at the resource's port until it is
    // set to the node's own (nothing connects before then).
    let client_proxy = Proxy::start(resource_addr).await?;
    for p in backend_proxies
        .iter()
        .chain([&resource_proxy, &client_proxy])
    {
        ports.push(p.addr().port());
    }
    let name = NodeId::nth(i);
    let ncfg = NodeConfig {
        write_margin_ms: 0,
        name: name.clone(),
        epoch_us: clock.epoch_us(),
        log_path: cfg.run_dir.join(format!("{name}.jsonl")),
        backend_endpoints: backend_proxies
            .iter()
            .map(|p| backend.endpoint(p.addr()))
            .collect(),
        resource_url: format!("http://{}/write", resource_proxy.addr()),
        protocol: cfg.protocol.clone(),
        tick_interval_ms: cfg.tick_interval_ms,
        resource_timeout_ms: cfg.resource_timeout_ms,
        peers: vec![],
        clock_offset_us: 0,
        clock_drift_ppm: 0,
        seed: cfg.seed,
        incarnation: 0,
        start_delay_ms_max: cfg.start_delay_ms_max,
        raft_peers: vec![],
        raft_disk: None,
    };
    Ok(NodeSlot {
        config_path: cfg.run_dir.join(format!("{name}.json")),
        cfg: ncfg,
        child: Arc::new(Mutex::new(None)),
        addr: None,
        backend_proxies,
        resource_proxy,
        client_proxy,
        peer_proxies: vec![],
        raft_port: None,
        incarnation: Arc::new(AtomicU64::new(0)),
    })
}

/// Where the `--node-cmd` node of slot `i` reaches its peers (`{raft_port}`,
/// `{raft_peers}`): `None` unless the nodes talk to each other.
pub(super) fn peer_wires(slots: &[NodeSlot], i: usize) -> Option<PeerWires> {
    let raft_port = slots[i].raft_port?;
    let raft_peers = slots
        .iter()
        .enumerate()
        .map(|(j, s)| {
            let port = slots[i]
                .peer_proxy(j)
                .map_or(raft_port, |p| p.addr().port());
            format!("{}={}:{port}", s.cfg.name, crate::ports::LOOPBACK)
        })
        .collect();
    Some(PeerWires {
        raft_port,
        raft_peers,
    })
}

/// The fleet as clients reach it: each node's name and client-facing (proxied) address.
pub(super) fn peers(slots: &[NodeSlot]) -> Vec<Peer> {
    slots
        .iter()
        .map(|s| Peer {
            name: s.cfg.name.clone(),
            url: format!("http://{}", s.client_proxy.addr()),
        })
        .collect()
}

/// Starts a fresh process for node `i` and points its client proxy, and its peers'
/// proxies to it, at it; the new process's pid and port go to `pids` and `ports`.
pub(super) fn start_node(
    cfg: &RealConfig,
    slots: &mut [NodeSlot],
    i: usize,
    pids: &Mutex<Vec<u32>>,
    ports: &mut Vec<u16>,
) -> Result<(), RealError> {
    let addr = start_process(cfg, &mut slots[i], pids, ports)?;
    for s in slots.iter() {
        if let Some(p) = s.peer_proxy(i) {
            p.set_upstream(addr);
        }
    }
    Ok(())
}

/// Starts a fresh process for `s` and points its client proxy at it; returns where it
/// listens.
fn start_process(
    cfg: &RealConfig,
    s: &mut NodeSlot,
    pids: &Mutex<Vec<u32>>,
    ports: &mut Vec<u16>,
) -> Result<SocketAddr, RealError> {
    s.cfg.incarnation = s.incarnation.load(Ordering::SeqCst) + 1;
    write_json(&s.config_path, &s.cfg)?;
    let (child, addr) = spawn_child(cfg, &s.cfg.name, "node", &s.config_path)?;
    pids.lock().unwrap().push(child.pid());
    ports.push(addr.port());
    s.client_proxy.set_upstream(addr);
    s.addr = Some(addr);
    s.incarnation.fetch_add(1, Ordering::SeqCst);
    *s.child.lock().unwrap() = Some(child);
    Ok(addr)
}

/// Starts the load client against `peers`, unless the run has no load (`rate_per_s`
/// 0).
pub(super) fn start_load(
    cfg: &RealConfig,
    clock: RunClock,
    peers: Vec<Peer>,
) -> Result<Option<ManagedChild>, RealError> {
    if cfg.rate_per_s == 0 {
        return Ok(None);
    }
    let lcfg = LoadConfig {
        nodes: peers,
        rate_per_s: cfg.rate_per_s,
        quantum_ms: cfg.client_quantum_ms,
        client_timeout_ms: cfg.client_timeout_ms,
        stats_path: cfg.run_dir.join("load-stats.json"),
        epoch_us: clock.epoch_us(),
    };
    let lpath = cfg.run_dir.join("load.json");
    write_json(&lpath, &lcfg)?;
    spawn_load(cfg, &lpath).map(Some)
}
