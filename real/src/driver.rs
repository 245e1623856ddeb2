//! The policy side of a real run: fires a scenario's faults through the supervisor's
//! verbs, as the simulator's driver (`sim/src/driver.rs`) fires them through the world's.
//!
//! Faults fire in order, each at its `at_ms` on the run's clock (or `delay_ms` after its
//! trigger) plus its jitter, drawn from `seed::fork(seed, "fault/<index>")` as the
//! simulator draws it, so a seed lands each fault at the same offset in both worlds. A
//! fault logs `fault_applied` (and, for one with a duration, `fault_healed` when it ends)
//! with the same fields and index as the simulator's, or `fault_skipped` with the same
//! reasons when its target cannot be resolved. Targets resolve when the fault fires:
//! `leader` is the running node that believes it leads (the highest token if several),
//! by its `/status`; `follower` the first running node, in fleet order, that does not;
//! `previous` the node an earlier fault hit.
//!
//! Triggers (`after = "leader-elected"`, `"previous-fault-ended"`) are read from the
//! processes' event logs as they grow (a [`Tail`]): the same events the simulator's
//! driver reads from its timeline.
//!
//! Ends of faults (a pause's resume, a partition's mend, a kill's restart) are kept in a
//! queue and run by the same loop that waits for the next fault, so one task owns the
//! supervisor: a `before-write` pause is the exception, resumed by the supervisor itself
//! (see [`Supervisor::arm_pause_before_write`]).
//!
//! A verb that cannot act on a live process (a resign or clock change sent to a node that
//! is stopped or gone) is not a broken run: the fault is logged as applied, as in the
//! simulator, and what went wrong is kept as a note for the report ([`Driver::notes`]).
//! A verb that breaks the run (a node that cannot be started again) ends it with an error.

use crate::events::{Entry, Event, Role};
use crate::node::ClockChange;
use crate::run_clock::RunClock;
use crate::supervisor::{Direction, Link, RealError, Supervisor};
use baton_model::fault::{Fault, Firing, PausePoint, Trigger, When};
use rand::Rng;
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::Duration;

/// How often the driver reads the logs while waiting for a trigger.
const POLL_MS: u64 = 10;

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

/// The end of a fault, due at a time on the run's clock.
#[derive(Clone, Debug)]
enum Heal {
    /// A kill's `restart_after_ms`.
    Restart(String),
    /// The end of a pause anywhere.
    Resume(String),
    /// The end of a partition with a duration (if a `heal` did not end it first).
    Partition,
    /// The end of a slow link: back to the network's latency.
    SlowLink(String, Link, Direction),
    /// The end of a `network` fault: back to the scenario's network.
    Network,
}

#[derive(Debug)]
struct Pending {
    due_us: i64,
    index: usize,
    kind: &'static str,
    target: String,
    heal: Heal,
}

/// A partition in force: its label and the link it cut.
struct Open {
    label: String,
    node: String,
    link: Link,
    dir: Direction,
}

/// Fires one run's faults; see the module doc.
pub struct Driver<'a> {
    sup: &'a mut Supervisor,
    clock: RunClock,
    seed: u64,
    tail: Tail,
    pending: Vec<Pending>,
    open: BTreeMap<usize, Open>,
    base_latency_ms: (u64, u64),
    latency_ms: (u64, u64),
    notes: Vec<String>,
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

impl<'a> Driver<'a> {
    /// A driver for `sup`'s run under `seed`, whose links carry `base_latency_ms`.
    pub fn new(sup: &'a mut Supervisor, seed: u64, base_latency_ms: (u64, u64)) -> Driver<'a> {
        let mut paths = sup.log_paths();
        // The resource's log holds no event a trigger waits for.
        paths.retain(|p| !p.ends_with("resource.jsonl"));
        Driver {
            clock: sup.clock(),
            sup,
            seed,
            tail: Tail::new(paths),
            pending: vec![],
            open: BTreeMap::new(),
            base_latency_ms,
            latency_ms: base_latency_ms,
            notes: vec![],
        }
    }

    /// What went wrong applying faults without breaking the run, one sentence each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    fn record(&self, event: Event) {
        self.sup.record(event);
    }

    fn applied(&self, index: usize, kind: &str, target: &str) {
        self.record(Event::FaultApplied {
            index,
            kind: kind.into(),
            target: target.into(),
        });
    }

    fn later(
        &mut self,
        after_ms: u64,
        index: usize,
        kind: &'static str,
        target: String,
        heal: Heal,
    ) {
        self.pending.push(Pending {
            due_us: self.clock.now_us() + after_ms as i64 * 1000,
            index,
            kind,
            target,
            heal,
        });
    }

    /// Fires `faults` in order until the run's clock reaches `end_us`, then returns
    /// (faults not yet fired by then never fire, as in a simulated run that ended).
    pub async fn run(&mut self, faults: &[Firing], end_us: i64) -> Result<(), RealError> {
        let nodes = self.sup.node_names();
        let mut prev_fired_us = 0i64;
        let mut prev_target: Option<String> = None;
        for (index, firing) in faults.iter().enumerate() {
            let jitter_ms = if firing.jitter_ms > 0 {
                baton_model::seed::fork(self.seed, &format!("fault/{index}"))
                    .gen_range(0..=firing.jitter_ms)
            } else {
                0
            };
            let reached = match firing.when {
                When::At(t_ms) => {
                    self.wait_until((t_ms + jitter_ms) as i64 * 1000, end_us)
                        .await?
                }
                When::After(trigger, delay_ms) => {
                    let seen = loop {
                        self.tail.poll();
                        let seen = match trigger {
                            Trigger::LeaderElected => self.tail.any_since(prev_fired_us, |e| {
                                matches!(
                                    e,
                                    Event::RoleChanged {
                                        role: Role::Leader,
                                        ..
                                    }
                                )
                            }),
                            Trigger::PreviousFaultEnded => {
                                index == 0 || ended(&self.tail, index - 1, prev_fired_us)
                            }
                        };
                        if seen {
                            break true;
                        }
                        let step = self.clock.now_us() + POLL_MS as i64 * 1000;
                        if !self.wait_until(step, end_us).await? {
                            break false;
                        }
                    };
                    seen && {
                        let t = self.clock.now_us() + (delay_ms + jitter_ms) as i64 * 1000;
                        self.wait_until(t, end_us).await?
                    }
                }
            };
            if !reached {
                return Ok(());
            }
            prev_fired_us = self.clock.now_us();
            prev_target = self
                .apply(index, &firing.fault, prev_target, &nodes)
                .await?;
        }
        self.wait_until(end_us, end_us).await?;
        Ok(())
    }

    /// Runs the ends of faults that come due until the run's clock reaches `t_us`;
    /// returns false if the run ends (`end_us`) first.
    async fn wait_until(&mut self, t_us: i64, end_us: i64) -> Result<bool, RealError> {
        loop {
            self.heal_due().await?;
            let now = self.clock.now_us();
            if now >= end_us {
                return Ok(t_us <= now && t_us < end_us);
            }
            if now >= t_us {
                return Ok(true);
            }
            let next_heal = self.pending.iter().map(|p| p.due_us).min();
            let wake = next_heal.map_or(t_us, |h| h.min(t_us)).min(end_us);
            if wake > now {
                tokio::time::sleep(Duration::from_micros((wake - now) as u64)).await;
            }
        }
    }

    /// Ends every fault whose time has come, earliest first (ties in the order they
    /// were scheduled).
    async fn heal_due(&mut self) -> Result<(), RealError> {
        loop {
            let now = self.clock.now_us();
            let Some(i) = self
                .pending
                .iter()
                .enumerate()
                .filter(|(_, p)| p.due_us <= now)
                .min_by_key(|(i, p)| (p.due_us, *i))
                .map(|(i, _)| i)
            else {
                return Ok(());
            };
            let p = self.pending.remove(i);
            let healed = match &p.heal {
                Heal::Restart(node) => {
                    self.sup.restart(node).await?;
                    true
                }
                Heal::Resume(node) => {
                    // A node killed meanwhile has nothing to resume; the pause ends all
                    // the same, as in the simulator.
                    let _ = self.sup.resume(node);
                    true
                }
                Heal::Partition => match self.open.remove(&p.index) {
                    Some(o) => {
                        self.sup.mend(&o.node, o.link, o.dir)?;
                        true
                    }
                    None => false, // a `heal` ended it already, and recorded that
                },
                Heal::SlowLink(node, link, dir) => {
                    let (lo, hi) = self.latency_ms;
                    self.sup.set_latency_ms(node, *link, *dir, lo, hi)?;
                    true
                }
                Heal::Network => {
                    self.latency_ms = self.base_latency_ms;
                    let (lo, hi) = self.latency_ms;
                    self.sup.set_latency_ms_all(lo, hi);
                    true
                }
            };
            if healed {
                self.record(Event::FaultHealed {
                    index: p.index,
                    kind: p.kind.into(),
                    target: p.target,
                });
            }
        }
    }

    async fn resolve(&self, t: &str, prev: &Option<String>) -> Result<String, String> {
        match t {
            "leader" => self
                .sup
                .leader()
                .await
                .ok_or_else(|| "target `leader`: no node believes it leads".to_string()),
            "follower" => self.sup.follower().await.ok_or_else(|| {
                "target `follower`: every running node believes it leads".to_string()
            }),
            "previous" => prev
                .clone()
                .ok_or_else(|| "target `previous`: no earlier fault had a target".to_string()),
            other => Ok(other.to_string()),
        }
    }

    /// Notes a verb that could not act (the fault stays applied, as in the simulator).
    fn could_not(&mut self, index: usize, what: &str, e: RealError) -> Result<(), RealError> {
        match e {
            RealError::NotRunning(_) | RealError::Control { .. } => {
                let at_ms = self.clock.now_us() as f64 / 1000.0;
                self.notes.push(format!(
                    "fault {index} ({what}) at {at_ms:.1} ms had no effect: {e}"
                ));
                Ok(())
            }
            e => Err(e),
        }
    }

    /// Applies one fault; returns the node it hit (for a later `previous`).
    async fn apply(
        &mut self,
        index: usize,
        fault: &Fault,
        prev: Option<String>,
        nodes: &[String],
    ) -> Result<Option<String>, RealError> {
        // Resolve every end first: a fault whose target cannot be resolved is skipped.
        let ends: Vec<&String> = match fault {
            Fault::Kill { target, .. }
            | Fault::Restart { target }
            | Fault::Resign { target }
            | Fault::Pause { target, .. }
            | Fault::ClockOffset { target, .. }
            | Fault::ClockDrift { target, .. }
            | Fault::ClockStep { target, .. } => vec![target],
            Fault::Partition { from, to, .. } | Fault::SlowLink { from, to, .. } => vec![from, to],
            Fault::Heal | Fault::Network { .. } => vec![],
        };
        let mut resolved = vec![];
        for t in ends {
            match self.resolve(t, &prev).await {
                Ok(r) => resolved.push(r),
                Err(reason) => {
                    self.record(Event::FaultSkipped { index, reason });
                    return Ok(prev);
                }
            }
        }
        let hit: Option<String> = match fault {
            Fault::Kill {
                restart_after_ms, ..
            } => {
                let t = resolved[0].clone();
                self.applied(index, "kill", &t);
                if let Err(e) = self.sup.kill(&t) {
                    self.could_not(index, &format!("kill {t}"), e)?;
                }
                if let Some(d) = restart_after_ms {
                    self.later(*d, index, "kill", t.clone(), Heal::Restart(t.clone()));
                }
                Some(t)
            }
            Fault::Restart { .. } => {
                let t = resolved[0].clone();
                self.applied(index, "restart", &t);
                self.sup.restart(&t).await?;
                Some(t)
            }
            Fault::Resign { .. } => {
                let t = resolved[0].clone();
                self.applied(index, "resign", &t);
                if let Err(e) = self.sup.resign(&t).await {
                    self.could_not(index, &format!("resign {t}"), e)?;
                }
                Some(t)
            }
            Fault::Pause {
                duration_ms, point, ..
            } => {
                let t = resolved[0].clone();
                match point {
                    // Logged as applied by the node when it strikes; resumed by the
                    // supervisor.
                    PausePoint::BeforeWrite => {
                        if let Err(e) = self
                            .sup
                            .arm_pause_before_write(&t, index, *duration_ms)
                            .await
                        {
                            match e {
                                RealError::NotRunning(_) | RealError::Control { .. } => {
                                    self.record(Event::FaultSkipped {
                                        index,
                                        reason: format!("pause before write on {t}: {e}"),
                                    });
                                }
                                e => return Err(e),
                            }
                        }
                    }
                    PausePoint::Anywhere => {
                        self.applied(index, "pause", &t);
                        if let Err(e) = self.sup.pause(&t) {
                            self.could_not(index, &format!("pause {t}"), e)?;
                        }
                        self.later(
                            *duration_ms,
                            index,
                            "pause",
                            t.clone(),
                            Heal::Resume(t.clone()),
                        );
                    }
                }
                Some(t)
            }
            Fault::Partition {
                one_way,
                duration_ms,
                ..
            } => {
                let (a, b) = (&resolved[0], &resolved[1]);
                let label = if *one_way {
                    format!("{a}->{b}")
                } else {
                    format!("{a}<->{b}")
                };
                self.applied(index, "partition", &label);
                let (node, link, dir) = link_of(nodes, a, b, *one_way);
                self.sup.cut(&node, link, dir)?;
                self.open.insert(
                    index,
                    Open {
                        label: label.clone(),
                        node: node.clone(),
                        link,
                        dir,
                    },
                );
                if let Some(d) = duration_ms {
                    self.later(*d, index, "partition", label, Heal::Partition);
                }
                Some(node)
            }
            Fault::SlowLink {
                latency_ms_min,
                latency_ms_max,
                duration_ms,
                ..
            } => {
                let (a, b) = (&resolved[0], &resolved[1]);
                let label = format!("{a}->{b}");
                self.applied(index, "slow-link", &label);
                let (node, link, dir) = link_of(nodes, a, b, true);
                self.sup
                    .set_latency_ms(&node, link, dir, *latency_ms_min, *latency_ms_max)?;
                if let Some(d) = duration_ms {
                    self.later(
                        *d,
                        index,
                        "slow-link",
                        label,
                        Heal::SlowLink(node.clone(), link, dir),
                    );
                }
                Some(node)
            }
            Fault::Heal => {
                self.applied(index, "heal", "all");
                for (i, o) in std::mem::take(&mut self.open) {
                    self.record(Event::FaultHealed {
                        index: i,
                        kind: "partition".into(),
                        target: o.label,
                    });
                }
                self.sup.mend_all();
                None
            }
            Fault::ClockOffset { offset_ms, .. } => {
                self.clock_fault(
                    index,
                    "clock-offset",
                    &resolved[0],
                    ClockChange {
                        offset_ms: Some(*offset_ms),
                        ..ClockChange::default()
                    },
                )
                .await?
            }
            Fault::ClockDrift { drift_ppm, .. } => {
                self.clock_fault(
                    index,
                    "clock-drift",
                    &resolved[0],
                    ClockChange {
                        drift_ppm: Some(*drift_ppm),
                        ..ClockChange::default()
                    },
                )
                .await?
            }
            Fault::ClockStep { step_ms, .. } => {
                self.clock_fault(
                    index,
                    "clock-step",
                    &resolved[0],
                    ClockChange {
                        step_ms: Some(*step_ms),
                        ..ClockChange::default()
                    },
                )
                .await?
            }
            Fault::Network {
                latency_ms_min,
                latency_ms_max,
                duration_ms,
                ..
            } => {
                // Loss was refused before the run (see crate::support).
                self.applied(index, "network", "all");
                self.latency_ms = (*latency_ms_min, *latency_ms_max);
                self.sup
                    .set_latency_ms_all(*latency_ms_min, *latency_ms_max);
                if let Some(d) = duration_ms {
                    self.later(*d, index, "network", "all".into(), Heal::Network);
                }
                None
            }
        };
        // Only a node can be a later fault's `previous`.
        Ok(match hit {
            Some(t) if nodes.contains(&t) => Some(t),
            _ => prev,
        })
    }

    async fn clock_fault(
        &mut self,
        index: usize,
        kind: &str,
        target: &str,
        change: ClockChange,
    ) -> Result<Option<String>, RealError> {
        self.applied(index, kind, target);
        if let Err(e) = self.sup.skew_clock(target, change).await {
            self.could_not(index, &format!("{kind} {target}"), e)?;
        }
        Ok(Some(target.to_string()))
    }
}

/// Whether fault `index` ended at or after `fired_us`: healed or skipped, or applied if
/// it has no duration (the simulator's rule).
fn ended(tail: &Tail, index: usize, fired_us: i64) -> bool {
    tail.any_since(fired_us, |e| match e {
        Event::FaultHealed { index: i, .. } | Event::FaultSkipped { index: i, .. } => *i == index,
        Event::FaultApplied { index: i, kind, .. } => *i == index && !lasting(kind),
        _ => false,
    })
}

/// Kinds whose end is a separate `FaultHealed` event.
fn lasting(kind: &str) -> bool {
    matches!(kind, "pause" | "partition" | "network" | "slow-link")
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(ended(&tail, 0, 9));
        assert!(!ended(&tail, 0, 10));
    }
}
