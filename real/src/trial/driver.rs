//! Real mode's hands for the fault plan: the [`Driver`] carries out the plan's verbs
//! ([`baton_model::fault::plan`]) through the supervisor, on the run's clock, as the
//! simulator's `SimFaults` carries them out on the madsim world. When a fault fires,
//! whom it hits, what repeats and how it heals are the plan's; this file only maps its
//! verbs onto processes and proxies and answers what the plan asks: `leader` is the
//! running node that believes it leads (the highest token if several), by its
//! `/status`; `follower` the first running node, in fleet order, that does not.
//!
//! Triggers (`after = "leader-elected"`, `"previous-fault-ended"`) are read from the
//! processes' event logs as they grow (a [`Tail`]): the same events the simulator's
//! timeline holds.
//!
//! Ends of faults (a pause's resume, a partition's mend, a kill's restart) are kept in a
//! queue and run while the driver waits, so one task owns the supervisor: a
//! `before-write` pause is the exception, resumed by the supervisor itself (see
//! [`Supervisor::arm_pause_before_write`]).
//!
//! A verb that cannot act on a live process (a resign or clock change sent to a node that
//! is stopped or gone) is not a broken run: the fault is logged as applied, as in the
//! simulator, and what went wrong is kept as a note for the report ([`Driver::notes`]).
//! A verb that breaks the run (a node that cannot be started again) ends it with an error.

use crate::events::{Entry, Event};
use crate::node::ClockChange;
use crate::run_clock::RunClock;
use crate::supervisor::{Direction, Link, RealError, Supervisor};
use crate::trial::noise::GcNoise;
use baton_model::fault::plan::{Acted, FaultPlan, Verb};
use baton_model::fault::world::{self, FaultWorld};
use baton_model::fault::Firing;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// New lines of the processes' event logs, read as they grow; keeps the events a
/// trigger may wait for (role changes and fault records), as the simulator's timeline
/// keeps its notable events.
pub struct Tail {
    files: Vec<(PathBuf, u64, Vec<u8>)>,
    notable: Vec<Entry>,
}

impl Tail {
    /// Reads `paths` from their start (a missing file is read once it appears).
    pub fn new(paths: Vec<PathBuf>) -> Tail {
        Tail {
            files: paths.into_iter().map(|p| (p, 0, vec![])).collect(),
            notable: vec![],
        }
    }

    /// Reads what the files gained since the last poll.
    pub fn poll(&mut self) {
        for (path, offset, partial) in &mut self.files {
            let Ok(mut f) = std::fs::File::open(&*path) else {
                continue;
            };
            if f.seek(SeekFrom::Start(*offset)).is_err() {
                continue;
            }
            let mut buf = vec![];
            if f.read_to_end(&mut buf).is_err() {
                continue;
            }
            *offset += buf.len() as u64;
            partial.extend_from_slice(&buf);
            // Only whole lines: a process may be writing the last one.
            let Some(end) = partial.iter().rposition(|b| *b == b'\n') else {
                continue;
            };
            let whole: Vec<u8> = partial.drain(..=end).collect();
            for line in whole.split(|b| *b == b'\n') {
                let Ok(e) = serde_json::from_slice::<Entry>(line) else {
                    continue;
                };
                if matches!(
                    e.event,
                    Event::RoleChanged { .. }
                        | Event::FaultApplied { .. }
                        | Event::FaultHealed { .. }
                        | Event::FaultSkipped { .. }
                ) {
                    self.notable.push(e);
                }
            }
        }
    }

    /// True if an event read so far, stamped at or after `since_us`, satisfies `pred`.
    pub fn any_since(&self, since_us: i64, pred: impl Fn(&Event) -> bool) -> bool {
        self.notable
            .iter()
            .any(|e| e.at_us >= since_us && pred(&e.event))
    }
}

/// Whether a fault's end names an etcd member (`etcd-<i>`).
fn is_member(end: &str) -> bool {
    baton_model::scenario::etcd_cluster::member_index(end).is_some()
}

/// The node-side proxies that carry `from -> to`: a node's own link, or, when one end is
/// an etcd member, each node's proxy to that member (`clients`: every node's). Other
/// member links (to its peers) are refused before the run (see crate::trial::refusals). Where
/// the nodes are the service (raft, `peers_are_backend`), `backend` is every other node,
/// as in the simulator.
fn links_of(
    nodes: &[String],
    from: &str,
    to: &str,
    one_way: bool,
    peers_are_backend: bool,
) -> Vec<(String, Link, Direction)> {
    if peers_are_backend && (from == "backend" || to == "backend") {
        let node = if from == "backend" { to } else { from };
        return nodes
            .iter()
            .filter(|n| *n != node)
            .flat_map(|peer| {
                let (f, t) = if from == "backend" {
                    (peer.as_str(), node)
                } else {
                    (node, peer.as_str())
                };
                node_links(nodes, f, t, one_way)
            })
            .collect();
    }
    let member =
        |e: &str| baton_model::scenario::etcd_cluster::member_index(e).map(|i| i as usize - 1);
    let (m, other, dir) = match (member(from), member(to)) {
        (Some(m), None) => (m, to, Direction::ToNode),
        (None, Some(m)) => (m, from, Direction::FromNode),
        _ => return node_links(nodes, from, to, one_way),
    };
    let dir = if one_way { dir } else { Direction::Both };
    let hit: Vec<&String> = if other == baton_model::scenario::etcd_cluster::CLIENTS {
        nodes.iter().collect()
    } else {
        nodes.iter().filter(|n| *n == other).collect()
    };
    hit.into_iter()
        .map(|n| (n.clone(), Link::Member(m), dir))
        .collect()
}

/// The proxies that carry `from -> to` when neither end is an etcd member: the node's
/// own link to a service, or, between two nodes (raft), each one's proxy to the other:
/// what `from` sends travels on its proxy to `to`, and its answers to `to`'s messages
/// on `to`'s proxy to it.
fn node_links(
    nodes: &[String],
    from: &str,
    to: &str,
    one_way: bool,
) -> Vec<(String, Link, Direction)> {
    let index = |n: &str| nodes.iter().position(|x| x == n);
    let (Some(a), Some(b)) = (index(from), index(to)) else {
        return vec![link_of(nodes, from, to, one_way)];
    };
    let (out, back) = if one_way {
        (Direction::FromNode, Direction::ToNode)
    } else {
        (Direction::Both, Direction::Both)
    };
    vec![
        (from.to_string(), Link::Peer(b), out),
        (to.to_string(), Link::Peer(a), back),
    ]
}

/// Which end of a link is the node, which link, and which way: the proxy that carries it.
fn link_of(nodes: &[String], from: &str, to: &str, one_way: bool) -> (String, Link, Direction) {
    let link = |t: &str| match t {
        "backend" => Link::Backend,
        "resource" => Link::Resource,
        _ => Link::Client,
    };
    let dir = |d| if one_way { d } else { Direction::Both };
    if nodes.iter().any(|n| n == from) {
        (from.to_string(), link(to), dir(Direction::FromNode))
    } else {
        (to.to_string(), link(from), dir(Direction::ToNode))
    }
}

/// Carries out one run's fault plan; see the module doc.
pub struct Driver<'a> {
    sup: &'a mut Supervisor,
    clock: RunClock,
    seed: u64,
    tail: Tail,
    nodes: Vec<String>,
    /// Heals the plan asked for: (due on the run's clock, µs; the fault's index), kept
    /// in the order they were asked.
    pending: Vec<(i64, usize)>,
    plan: Arc<Mutex<FaultPlan>>,
    base_latency_ms: (u64, u64),
    latency_ms: (u64, u64),
    end_us: i64,
    notes: Vec<String>,
    /// The scenario's `[noise.gc]` pauses, carried out while the driver waits.
    noise: GcNoise,
}

impl<'a> Driver<'a> {
    /// A driver for `sup`'s run under `seed`, whose links carry `base_latency_ms`.
    pub fn new(sup: &'a mut Supervisor, seed: u64, base_latency_ms: (u64, u64)) -> Driver<'a> {
        let mut paths = sup.log_paths();
        // The resource's log holds no event a trigger waits for.
        paths.retain(|p| !p.ends_with("resource.jsonl"));
        Driver {
            clock: sup.clock(),
            // The plan names its targets as text: a node, an etcd member, `backend`.
            nodes: sup.node_names().into_iter().map(String::from).collect(),
            sup,
            seed,
            tail: Tail::new(paths),
            pending: vec![],
            plan: Arc::new(Mutex::new(FaultPlan::new(vec![], seed, (0, 0, 0), vec![]))),
            base_latency_ms,
            latency_ms: base_latency_ms,
            end_us: 0,
            notes: vec![],
            noise: GcNoise::default(),
        }
    }

    /// What went wrong applying faults without breaking the run, one sentence each (and
    /// the GC noise's pauses not run as scheduled).
    pub fn notes(&self) -> Vec<String> {
        self.notes
            .iter()
            .cloned()
            .chain(self.noise.note())
            .collect()
    }

    /// Carries out `pauses` (background GC noise, [`crate::trial::noise`]) during the run.
    pub fn set_noise(&mut self, pauses: Vec<crate::trial::noise::Pause>) {
        self.noise = GcNoise::new(pauses);
    }

    /// Fires `faults` by the plan until the run's clock reaches `end_us`, then returns
    /// (faults not yet fired by then never fire, as in a simulated run that ended).
    /// Packet loss was refused before the run (see crate::trial::refusals), so the network the
    /// plan restores is the latency alone.
    pub async fn run(&mut self, faults: &[Firing], end_us: i64) -> Result<(), RealError> {
        let (lo, hi) = self.base_latency_ms;
        let plan = FaultPlan::new(faults.to_vec(), self.seed, (lo, hi, 0), self.nodes.clone());
        self.plan = Arc::new(Mutex::new(plan));
        self.end_us = end_us;
        let plan = self.plan.clone();
        world::drive(self, &plan).await?;
        self.wait_until(end_us).await?;
        Ok(())
    }

    /// Runs the ends of faults that come due until the run's clock reaches `t_us`;
    /// returns false if the run ends first.
    async fn wait_until(&mut self, t_us: i64) -> Result<bool, RealError> {
        loop {
            self.heal_due().await?;
            self.noise.due(self.sup, self.clock.now_us())?;
            let now = self.clock.now_us();
            if now >= self.end_us {
                return Ok(t_us <= now && t_us < self.end_us);
            }
            if now >= t_us {
                return Ok(true);
            }
            let next_heal = self.pending.iter().map(|(due, _)| *due).min();
            let next_heal = next_heal.into_iter().chain(self.noise.next_due_us()).min();
            let wake = next_heal.map_or(t_us, |h| h.min(t_us)).min(self.end_us);
            if wake > now {
                tokio::time::sleep(Duration::from_micros((wake - now) as u64)).await;
            }
        }
    }

    /// Ends every fault whose time has come, earliest first (ties in the order they
    /// were asked), as the plan says.
    async fn heal_due(&mut self) -> Result<(), RealError> {
        loop {
            let now = self.clock.now_us();
            let Some(i) = self
                .pending
                .iter()
                .enumerate()
                .filter(|(_, (due, _))| *due <= now)
                .min_by_key(|(i, (due, _))| (*due, *i))
                .map(|(i, _)| i)
            else {
                return Ok(());
            };
            let (_, index) = self.pending.remove(i);
            let steps = self.plan.lock().expect("the plan's lock").heal(index);
            world::carry_out(self, steps).await?;
        }
    }

    /// Notes a verb that could not act on a node that is stopped or gone (the fault
    /// stays applied, as in the simulator); any other error breaks the run.
    fn could_not(
        &mut self,
        index: usize,
        what: &str,
        r: Result<(), RealError>,
    ) -> Result<Acted, RealError> {
        match r {
            Ok(()) => Ok(Acted::Done),
            Err(e @ (RealError::NotRunning(_) | RealError::Control { .. })) => {
                let at_ms = self.clock.now_us() as f64 / 1000.0;
                self.notes.push(format!(
                    "fault {index} ({what}) at {at_ms:.1} ms had no effect: {e}"
                ));
                Ok(Acted::Done)
            }
            Err(e) => Err(e),
        }
    }

    /// Carries out `verb` when it acts on the backend's processes: its one server
    /// (`backend`) or an etcd member. Gives the verb back otherwise.
    async fn act_on_backend(
        &mut self,
        index: usize,
        verb: Verb,
    ) -> Result<Result<Acted, RealError>, Verb> {
        Ok(match verb {
            Verb::Kill(s) if s == "backend" => {
                let r = self.sup.kill_server();
                self.could_not(index, "kill backend", r)
            }
            Verb::Restart(s) if s == "backend" => {
                self.sup.restart_server().await.map(|()| Acted::Done)
            }
            Verb::Pause { node: s, .. } if s == "backend" => {
                let r = self.sup.signal_server(true);
                self.could_not(index, "pause backend", r)
            }
            Verb::Resume { node: s, .. } if s == "backend" => {
                let _ = self.sup.signal_server(false);
                Ok(Acted::Done)
            }
            Verb::Kill(m) if is_member(&m) => {
                let r = self.sup.kill_member(&m);
                self.could_not(index, &format!("kill {m}"), r)
            }
            Verb::Restart(m) if is_member(&m) => self.sup.restart_member(&m).map(|()| Acted::Done),
            Verb::Pause { node: m, .. } if is_member(&m) => {
                let r = self.sup.pause_member(&m);
                self.could_not(index, &format!("pause {m}"), r)
            }
            Verb::Resume { node: m, .. } if is_member(&m) => {
                let _ = self.sup.resume_member(&m);
                Ok(Acted::Done)
            }
            other => return Err(other),
        })
    }

    /// The node-side proxies that carry `from -> to` (both ways unless `one_way`).
    fn links(&self, from: &str, to: &str, one_way: bool) -> Vec<(String, Link, Direction)> {
        links_of(&self.nodes, from, to, one_way, self.sup.nodes_talk())
    }
}

impl FaultWorld for Driver<'_> {
    type Error = RealError;

    fn now_us(&self) -> i64 {
        self.clock.now_us()
    }

    async fn sleep_until_us(&mut self, t_us: i64) -> Result<bool, RealError> {
        self.wait_until(t_us).await
    }

    async fn sleep_ms(&mut self, ms: u64) -> Result<bool, RealError> {
        let t = self.clock.now_us() + ms as i64 * 1000;
        self.wait_until(t).await
    }

    async fn leader(&mut self) -> Option<String> {
        self.sup.leader().await.map(String::from)
    }

    async fn follower(&mut self) -> Option<String> {
        self.sup.follower().await.map(String::from)
    }

    async fn etcd_leader(&mut self) -> Option<String> {
        self.sup.etcd_leader().await
    }

    // Refused before a real run starts (support.rs): the live client spreads its calls
    // over every member.
    async fn leader_member(&mut self) -> Option<String> {
        None
    }

    fn seen_since(&mut self, since_us: i64, pred: &dyn Fn(&Event) -> bool) -> bool {
        self.tail.poll();
        self.tail.any_since(since_us, pred)
    }

    fn record(&mut self, event: Event) {
        self.sup.record(event);
    }

    async fn act(&mut self, index: usize, verb: Verb) -> Result<Acted, RealError> {
        let verb = match self.act_on_backend(index, verb).await {
            Ok(done) => return done,
            Err(verb) => verb,
        };
        match verb {
            Verb::Kill(n) => {
                self.noise.forget(&n);
                let r = self.sup.kill(&n);
                self.could_not(index, &format!("kill {n}"), r)
            }
            Verb::Restart(n) => {
                self.noise.forget(&n);
                self.sup.restart(&n).await.map(|()| Acted::Done)
            }
            // Refused before the run starts (support.rs): never reached.
            Verb::Transfer { node, .. } => Ok(Acted::Skipped(format!(
                "transfer {node}: real mode has no transfer"
            ))),
            Verb::Resign(n) => {
                let r = self.sup.resign(&n).await;
                self.could_not(index, &format!("resign {n}"), r)
            }
            // One hold beside the GC noise's: see crate::trial::noise.
            Verb::Pause { node, .. } => {
                let r = self.noise.pause(self.sup, &node);
                self.could_not(index, &format!("pause {node}"), r)
            }
            Verb::Resume { node, .. } => {
                self.noise.resume(self.sup, &node);
                Ok(Acted::Done)
            }
            Verb::ArmPauseBeforeWrite {
                node,
                index,
                duration_ms,
            } => match self
                .sup
                .arm_pause_before_write(&node, index, duration_ms)
                .await
            {
                Ok(()) => Ok(Acted::Done),
                Err(e @ (RealError::NotRunning(_) | RealError::Control { .. })) => {
                    Ok(Acted::Skipped(format!("pause before write on {node}: {e}")))
                }
                Err(e) => Err(e),
            },
            Verb::Cut { from, to, one_way } => {
                for (node, link, dir) in self.links(&from, &to, one_way) {
                    self.sup.cut(&node, link, dir)?;
                }
                Ok(Acted::Done)
            }
            Verb::Mend { from, to, one_way } => {
                for (node, link, dir) in self.links(&from, &to, one_way) {
                    self.sup.mend(&node, link, dir)?;
                }
                Ok(Acted::Done)
            }
            Verb::MendAll => {
                self.sup.mend_all();
                Ok(Acted::Done)
            }
            Verb::Slow {
                from,
                to,
                latency_ms,
            } => {
                let (lo, hi) = latency_ms.unwrap_or(self.latency_ms);
                for (node, link, dir) in self.links(&from, &to, true) {
                    self.sup.set_latency_ms(&node, link, dir, lo, hi)?;
                }
                Ok(Acted::Done)
            }
            Verb::Network {
                latency_ms_min,
                latency_ms_max,
                ..
            } => {
                self.latency_ms = (latency_ms_min, latency_ms_max);
                self.sup.set_latency_ms_all(latency_ms_min, latency_ms_max);
                Ok(Acted::Done)
            }
            Verb::StallDisk(member, _) => Ok(Acted::Skipped(format!(
                "real mode cannot stall {member}'s disk (refused before the run)"
            ))),
            Verb::Clock(n, change) => {
                let (kind, c) = clock_change(change);
                let r = self.sup.skew_clock(&n, c).await.map(|_| ());
                self.could_not(index, &format!("{kind} {n}"), r)
            }
        }
    }

    fn heal_later(&mut self, index: usize, after_ms: u64) {
        self.pending
            .push((self.clock.now_us() + after_ms as i64 * 1000, index));
    }
}

/// A plan's clock change as the supervisor's, with its fault kind's name.
fn clock_change(change: baton_model::fault::plan::ClockChange) -> (&'static str, ClockChange) {
    use baton_model::fault::plan::ClockChange as C;
    match change {
        C::Offset(ms) => (
            "clock-offset",
            ClockChange {
                offset_ms: Some(ms),
                ..Default::default()
            },
        ),
        C::Drift(ppm) => (
            "clock-drift",
            ClockChange {
                drift_ppm: Some(ppm),
                ..Default::default()
            },
        ),
        C::Step(ms) => (
            "clock-step",
            ClockChange {
                step_ms: Some(ms),
                ..Default::default()
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Role;

    #[test]
    fn links_map_to_the_node_side_proxy() {
        let nodes = vec!["n1".to_string(), "n2".to_string()];
        assert_eq!(
            link_of(&nodes, "n2", "backend", true),
            ("n2".into(), Link::Backend, Direction::FromNode)
        );
        assert_eq!(
            link_of(&nodes, "resource", "n1", true),
            ("n1".into(), Link::Resource, Direction::ToNode)
        );
        assert_eq!(
            link_of(&nodes, "client", "n1", false),
            ("n1".into(), Link::Client, Direction::Both)
        );
    }

    #[test]
    fn a_member_cut_from_the_clients_is_every_node_s_proxy_to_it() {
        let nodes = vec!["n1".to_string(), "n2".to_string()];
        assert_eq!(
            links_of(&nodes, "etcd-2", "clients", true, false),
            vec![
                ("n1".into(), Link::Member(1), Direction::ToNode),
                ("n2".into(), Link::Member(1), Direction::ToNode)
            ]
        );
        assert_eq!(
            links_of(&nodes, "n2", "etcd-1", false, false),
            vec![("n2".into(), Link::Member(0), Direction::Both)]
        );
        // Between two nodes (raft): what n1 sends goes on its proxy to n2, its answers
        // to n2's messages on n2's proxy to it.
        assert_eq!(
            links_of(&nodes, "n1", "n2", true, false),
            vec![
                ("n1".into(), Link::Peer(1), Direction::FromNode),
                ("n2".into(), Link::Peer(0), Direction::ToNode)
            ]
        );
        // Under raft, `backend` is every other node.
        assert_eq!(
            links_of(&nodes, "n1", "backend", true, true),
            vec![
                ("n1".into(), Link::Peer(1), Direction::FromNode),
                ("n2".into(), Link::Peer(0), Direction::ToNode)
            ]
        );
        assert_eq!(
            links_of(&nodes, "n2", "n1", false, false),
            vec![
                ("n2".into(), Link::Peer(0), Direction::Both),
                ("n1".into(), Link::Peer(1), Direction::Both)
            ]
        );
    }

    #[test]
    fn the_tail_reads_whole_lines_as_they_come() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("n1.jsonl");
        let mut tail = Tail::new(vec![p.clone(), dir.path().join("absent.jsonl")]);
        tail.poll();
        std::fs::write(
            &p,
            "{\"at_us\":5,\"event\":\"role_changed\",\"node\":\"n1\",\"role\":\"leader\",\"token\":3}\n{\"at_us\":9,\"event\":\"fault_app",
        )
        .unwrap();
        tail.poll();
        let leader = |e: &Event| {
            matches!(
                e,
                Event::RoleChanged {
                    role: Role::Leader,
                    ..
                }
            )
        };
        assert!(tail.any_since(5, leader));
        assert!(!tail.any_since(6, leader));
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"lied\",\"index\":0,\"kind\":\"kill\",\"target\":\"n1\"}\n")
            .unwrap();
        tail.poll();
        let applied = |e: &Event| matches!(e, Event::FaultApplied { index: 0, .. });
        assert!(tail.any_since(9, applied));
        assert!(!tail.any_since(10, applied));
    }
}
