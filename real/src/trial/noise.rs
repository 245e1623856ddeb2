//! Background GC noise on live processes (`[noise.gc]`): the simulator's pauses, drawn
//! from the same seed by the same function ([`baton_model::noise::gc_schedule`]), carried
//! out with SIGSTOP and SIGCONT to each node's process group.
//!
//! The driver ([`crate::trial::driver`]) owns a [`GcNoise`] and, while it waits, starts and
//! ends every pause whose time has come on the run's clock, as it heals faults. Each pause
//! logs `gc_paused` (with its length) and `gc_resumed`, the events the simulator's
//! `world/noise.rs` logs, so `checker/false_failover.rs` counts false failovers on a real
//! run as on a simulated one.
//!
//! As in the simulator, a node that is down when its pause is due is skipped, and a
//! pause counts as one hold on the node beside a scripted `pause` fault's: the process
//! runs again only when the last hold ends (see [`GcNoise::hold`]). A kill or restart
//! drops the node's holds, as a new incarnation ends the simulator's. A `before-write`
//! pause is resumed by the supervisor itself and is not counted: a GC pause that ends
//! during one resumes the node early.
//!
//! One difference the report notes: the run's clock starts before the nodes do, and the
//! driver starts once they listen, so a pause due before it started is applied late, for
//! what remains of it, or, when it has already ended, not at all.

use crate::supervisor::{RealError, Supervisor};
use baton_model::noise::gc_schedule;
use baton_model::scenario::Scenario;
use std::collections::BTreeMap;

/// How far past its start a pause is run short, for what remains of it: the driver was
/// not running yet. Below it the driver only woke late, and the pause runs whole.
const LATE_US: i64 = 100_000;

/// One scheduled pause of one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pause {
    /// The node.
    pub node: String,
    /// When it starts, on the run's clock (µs).
    pub start_us: i64,
    /// How long it lasts.
    pub len_ms: u64,
}

impl Pause {
    fn end_us(&self) -> i64 {
        self.start_us + self.len_ms as i64 * 1000
    }
}

/// Every pause of scenario `s`'s `[noise.gc]` under `seed` on `nodes` (all, or those the
/// table names), over the run's `duration_ms`, in time order (ties in fleet order): the
/// simulator's schedule, node by node.
pub fn schedule(s: &Scenario, seed: u64, nodes: &[String]) -> Vec<Pause> {
    let Some(cfg) = &s.noise.gc else {
        return vec![];
    };
    let mut out: Vec<Pause> = nodes
        .iter()
        .filter(|n| cfg.nodes.is_empty() || cfg.nodes.iter().any(|x| x.as_str() == n.as_str()))
        .flat_map(|n| {
            gc_schedule(cfg, seed, n, s.duration_ms)
                .into_iter()
                .map(move |(start, len)| Pause {
                    node: n.clone(),
                    start_us: start as i64 * 1000,
                    len_ms: len,
                })
        })
        .collect();
    out.sort_by_key(|p| p.start_us);
    out
}

/// The pauses still to start or end, and who holds each node stopped now.
#[derive(Debug, Default)]
pub struct GcNoise {
    /// Pauses not yet started, latest first (popped from the end).
    waiting: Vec<Pause>,
    /// Pauses in force: (end on the run's clock, node).
    open: Vec<(i64, String)>,
    /// Holds per node: GC pauses and scripted pauses in force.
    holds: BTreeMap<String, u32>,
    /// Pauses that ended before the driver could start them.
    missed: u64,
    /// Pauses started after their time, for what remained of them.
    late: u64,
}

impl GcNoise {
    /// Noise that will carry out `pauses` (in time order).
    pub fn new(mut pauses: Vec<Pause>) -> GcNoise {
        pauses.reverse();
        GcNoise {
            waiting: pauses,
            ..GcNoise::default()
        }
    }

    /// When the next pause starts or ends, on the run's clock.
    pub fn next_due_us(&self) -> Option<i64> {
        let start = self.waiting.last().map(|p| p.start_us);
        let end = self.open.iter().map(|(end, _)| *end).min();
        start.into_iter().chain(end).min()
    }

    /// Takes one hold on `node`: true when it was the first (the process must be
    /// stopped now).
    pub fn hold(&mut self, node: &str) -> bool {
        let n = self.holds.entry(node.to_string()).or_default();
        *n += 1;
        *n == 1
    }

    /// Gives back one hold on `node`: true when it was the last (the process must run
    /// again now). A node without holds (killed meanwhile) gives false.
    pub fn release(&mut self, node: &str) -> bool {
        match self.holds.get_mut(node) {
            Some(n) if *n > 0 => {
                *n -= 1;
                *n == 0
            }
            _ => false,
        }
    }

    /// Drops `node`'s holds: it was killed or restarted, its stopped process is gone.
    pub fn forget(&mut self, node: &str) {
        self.holds.remove(node);
    }

    /// A scripted `pause` of `node`: SIGSTOP (logging `node_paused`) unless a GC pause
    /// holds it stopped already, then only the event.
    pub fn pause(&mut self, sup: &Supervisor, node: &str) -> Result<(), RealError> {
        if !self.hold(node) {
            sup.record(crate::events::Event::NodePaused { node: node.into() });
            return Ok(());
        }
        let r = sup.pause(node);
        if r.is_err() {
            self.release(node);
        }
        r
    }

    /// The end of a scripted `pause`: SIGCONT (logging `node_resumed`) unless a GC pause
    /// still holds the node, then only the event.
    pub fn resume(&mut self, sup: &Supervisor, node: &str) {
        if self.release(node) {
            // A node killed meanwhile has nothing to resume; the pause ends all the same.
            let _ = sup.resume(node);
        } else {
            sup.record(crate::events::Event::NodeResumed { node: node.into() });
        }
    }

    /// Starts and ends every pause due by `now_us`, in time order (an end before a start
    /// at the same time).
    pub fn due(&mut self, sup: &Supervisor, now_us: i64) -> Result<(), RealError> {
        loop {
            let end = self
                .open
                .iter()
                .enumerate()
                .min_by_key(|(_, (end, _))| *end)
                .map(|(i, (end, _))| (i, *end));
            let start = self.waiting.last().map(|p| p.start_us);
            match (end, start) {
                (Some((i, e)), s) if e <= now_us && s.is_none_or(|s| e <= s) => {
                    let (_, node) = self.open.remove(i);
                    let last = self.release(&node);
                    sup.gc_resume(&node, last);
                }
                (_, Some(s)) if s <= now_us => {
                    let p = self.waiting.pop().expect("peeked");
                    self.start(sup, p, now_us)?;
                }
                _ => return Ok(()),
            }
        }
    }

    fn start(&mut self, sup: &Supervisor, p: Pause, now_us: i64) -> Result<(), RealError> {
        let scheduled_end = p.end_us();
        if scheduled_end <= now_us {
            self.missed += 1;
            return Ok(());
        }
        // Late (due before the driver started): what remains of it. A driver that wakes
        // a little after the start (a sleep's slack, a status call) runs it whole.
        let (len_ms, end) = if now_us - p.start_us > LATE_US {
            self.late += 1;
            (
                ((scheduled_end - now_us) as u64).div_ceil(1000),
                scheduled_end,
            )
        } else {
            (p.len_ms, now_us + p.len_ms as i64 * 1000)
        };
        let first = self.hold(&p.node);
        match sup.gc_pause(&p.node, len_ms, first) {
            Ok(()) => {
                self.open.push((end, p.node));
                Ok(())
            }
            // Down (killed, not yet restarted): skipped, as the simulator skips it.
            Err(RealError::NotRunning(_)) => {
                self.release(&p.node);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// What the report should say about pauses not run as scheduled, if any.
    pub fn note(&self) -> Option<String> {
        (self.missed + self.late > 0).then(|| {
            format!(
                "GC noise: {} pause(s) due while the fleet was starting, before the fault driver ran, were not applied, and {} were applied late for what remained of them",
                self.missed, self.late
            )
        })
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: the schedule against the simulator's function; holds by hand.
    use super::*;
    use baton_model::scenario;

    #[test]
    fn the_schedule_is_the_simulator_s_node_by_node() {
        let text = "name = \"x\"\nprotocol = \"etcd-lease\"\nduration_ms = 120000\nnodes = 3\n[noise.gc]\nmean_interval_ms = 2000\npause_p50_ms = 50\npause_p99_ms = 1500\npause_max_ms = 15000\n";
        let r = scenario::load_str("x.toml", "x", text, &[]).unwrap();
        let nodes: Vec<String> = ["n1", "n2", "n3"].map(String::from).to_vec();
        let all = schedule(&r.scenario, 7, &nodes);
        assert!(all.windows(2).all(|w| w[0].start_us <= w[1].start_us));
        for n in &nodes {
            let mine: Vec<(u64, u64)> = all
                .iter()
                .filter(|p| &p.node == n)
                .map(|p| ((p.start_us / 1000) as u64, p.len_ms))
                .collect();
            let cfg = r.scenario.noise.gc.as_ref().unwrap();
            assert_eq!(mine, gc_schedule(cfg, 7, n, 120_000));
            assert!(!mine.is_empty());
        }
    }

    #[test]
    fn a_node_runs_again_when_its_last_hold_ends() {
        let mut g = GcNoise::new(vec![]);
        assert!(g.hold("n1"), "the first hold stops it");
        assert!(!g.hold("n1"), "a second does not signal again");
        assert!(!g.release("n1"));
        assert!(g.release("n1"), "the last one lets it run");
        assert!(!g.release("n1"), "no hold left");
        g.hold("n2");
        g.forget("n2");
        assert!(!g.release("n2"), "a killed node has none");
        assert_eq!(g.next_due_us(), None);
    }
}
