//! Swarm fault schedules (`[swarm]`): the seed draws the faults.
//!
//! A scenario with a `[swarm]` table lists which fault kinds may occur, their weights and
//! ranges, and a rate. Under each seed, [`materialize`] draws a schedule from
//! `seed::fork(seed, "swarm")` and writes it into the scenario as ordinary `[[faults]]`,
//! dropping the table, so that every run's resolved `scenario.toml` is a plain scenario
//! that `sim run` repeats as it is. As in swarm testing (Groce et al., ISSTA 2012), each
//! seed also switches some kinds off entirely (each with `off_probability`): a schedule
//! of only pauses and partitions finds what a schedule diluted by every kind would not.

pub mod table;

use crate::fault::{FaultKind, FaultSpec, PausePoint};
use crate::scenario::{Resolved, ScenarioError};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

pub use table::{Swarm, KINDS, MEMBER_KINDS};

/// The faults `swarm` draws for a run of `duration_ms` with `nodes` nodes under `seed`,
/// in time order. `members` is the lease service's member count when it is a cluster
/// (0 otherwise: the member kinds are not drawn).
pub fn draw(
    swarm: &Swarm,
    seed: u64,
    nodes: u32,
    members: u32,
    duration_ms: u64,
    base_latency_ms: u64,
) -> Vec<FaultSpec> {
    // Every draw below comes from this one stream, in a fixed order: this seed's kinds,
    // then for each fault its gap, its kind and its values.
    let mut rng = crate::seed::fork(seed, "swarm");
    let kinds = kinds_for_seed(swarm, members > 1, &mut rng);
    let total: f64 = kinds.iter().map(|(_, w)| w).sum();
    let gap = Exp::new(swarm.faults_per_minute / 60_000.0).expect("validated rate");
    let end = swarm.end(duration_ms);
    let mut draws = Draws {
        swarm,
        nodes,
        members,
        base_latency_ms,
        rng,
    };
    let mut out = vec![];
    let mut t = swarm.start_ms as f64;
    loop {
        t += gap.sample(&mut draws.rng);
        let at = t.round() as u64;
        if at >= end {
            return out;
        }
        let kind = pick(&kinds, total, &mut draws.rng);
        out.push(draws.fault(kind, at));
    }
}

/// Swarm testing: the kinds this seed keeps, each switched off with `off_probability`
/// (one draw per kind with a weight, in [`KINDS`] order; the member kinds only with a
/// `cluster`); when every one is off, one drawn at random stays, since a seed with no
/// kinds would test nothing.
fn kinds_for_seed(swarm: &Swarm, cluster: bool, rng: &mut ChaCha8Rng) -> Vec<(&'static str, f64)> {
    let kinds: Vec<(&str, f64)> = KINDS
        .iter()
        .filter(|k| cluster || !MEMBER_KINDS.contains(k))
        .filter_map(|k| swarm.weights.get(*k).map(|w| (*k, *w)))
        .filter(|(_, w)| *w > 0.0)
        .collect();
    if kinds.is_empty() {
        return kinds;
    }
    let on: Vec<(&str, f64)> = kinds
        .iter()
        .copied()
        .filter(|_| !rng.gen_bool(swarm.off_probability))
        .collect();
    if !on.is_empty() {
        on
    } else {
        let i = rng.gen_range(0..kinds.len());
        vec![kinds[i]]
    }
}

/// A kind drawn by weight (`total` is the weights' sum).
fn pick(kinds: &[(&'static str, f64)], total: f64, rng: &mut ChaCha8Rng) -> &'static str {
    let mut pick = rng.gen_range(0.0..total);
    kinds
        .iter()
        .find(|(_, w)| {
            pick -= w;
            pick < 0.0
        })
        .map_or(kinds[kinds.len() - 1].0, |(k, _)| *k)
}

/// One fault's values, drawn from the swarm's stream.
struct Draws<'a> {
    swarm: &'a Swarm,
    nodes: u32,
    /// The lease service's members (0: not a cluster).
    members: u32,
    /// The scenario's lowest latency: a network fault's ceiling is never below it.
    base_latency_ms: u64,
    rng: ChaCha8Rng,
}

impl Draws<'_> {
    fn range_u(&mut self, [lo, hi]: [u64; 2]) -> u64 {
        self.rng.gen_range(lo..=hi)
    }

    fn range_i(&mut self, [lo, hi]: [i64; 2]) -> i64 {
        self.rng.gen_range(lo..=hi)
    }

    /// A target: `leader` with `leader_probability`, else a node drawn uniformly.
    fn node(&mut self) -> String {
        if self.rng.gen_bool(self.swarm.leader_probability) {
            "leader".into()
        } else {
            format!("n{}", self.rng.gen_range(1..=self.nodes))
        }
    }

    /// A target member: `etcd-leader` with `leader_probability`, else one drawn
    /// uniformly.
    fn member(&mut self) -> String {
        if self.rng.gen_bool(self.swarm.leader_probability) {
            "etcd-leader".into()
        } else {
            format!("etcd-{}", self.rng.gen_range(1..=self.members))
        }
    }

    /// A fault of `kind` at `at`.
    fn fault(&mut self, kind: &str, at: u64) -> FaultSpec {
        let sw = self.swarm;
        match kind {
            "member-kill" => FaultSpec {
                target: Some(self.member()),
                restart_after_ms: Some(self.range_u(sw.restart_after_ms)),
                ..FaultSpec::at(FaultKind::Kill, at)
            },
            "member-pause" => FaultSpec {
                target: Some(self.member()),
                duration_ms: Some(self.range_u(sw.pause_ms)),
                ..FaultSpec::at(FaultKind::Pause, at)
            },
            "member-slow-disk" => FaultSpec {
                target: Some(self.member()),
                duration_ms: Some(self.range_u(sw.pause_ms)),
                ..FaultSpec::at(FaultKind::SlowDisk, at)
            },
            "member-partition" => {
                // From the clients (silently: calls time out) or from its peers, either
                // way round, or both ways.
                let m = self.member();
                let other = if self.rng.gen_bool(0.5) {
                    "clients"
                } else {
                    "peers"
                };
                let one_way = self.rng.gen_bool(0.5);
                let (from, to) = if self.rng.gen_bool(0.5) {
                    (m, other.to_string())
                } else {
                    (other.to_string(), m)
                };
                FaultSpec {
                    from: Some(from),
                    to: Some(to),
                    one_way: Some(one_way),
                    duration_ms: Some(self.range_u(sw.partition_ms)),
                    ..FaultSpec::at(FaultKind::Partition, at)
                }
            }
            "kill" => FaultSpec {
                target: Some(self.node()),
                restart_after_ms: Some(self.range_u(sw.restart_after_ms)),
                ..FaultSpec::at(FaultKind::Kill, at)
            },
            "pause" | "pause-before-write" => FaultSpec {
                target: Some(self.node()),
                duration_ms: Some(self.range_u(sw.pause_ms)),
                point: (kind == "pause-before-write").then_some(PausePoint::BeforeWrite),
                ..FaultSpec::at(FaultKind::Pause, at)
            },
            "partition" | "one-way-partition" | "slow-link" => self.link(kind, at),
            "clock-offset" => FaultSpec {
                target: Some(self.node()),
                offset_ms: Some(self.range_i(sw.clock_ms)),
                ..FaultSpec::at(FaultKind::ClockOffset, at)
            },
            "clock-step" => FaultSpec {
                target: Some(self.node()),
                step_ms: Some(self.range_i(sw.clock_ms)),
                ..FaultSpec::at(FaultKind::ClockStep, at)
            },
            "clock-drift" => FaultSpec {
                target: Some(self.node()),
                drift_ppm: Some(self.range_i(sw.drift_ppm)),
                ..FaultSpec::at(FaultKind::ClockDrift, at)
            },
            "network" => {
                let hi = self
                    .range_u(sw.network_latency_ms)
                    .max(self.base_latency_ms);
                FaultSpec {
                    latency_ms_max: Some(hi),
                    loss_ppm: Some(self.range_u(sw.network_loss_ppm)),
                    duration_ms: Some(self.range_u(sw.network_ms)),
                    ..FaultSpec::at(FaultKind::Network, at)
                }
            }
            _ => FaultSpec {
                target: Some("leader".into()),
                ..FaultSpec::at(FaultKind::Resign, at)
            },
        }
    }

    /// A partition, one-way partition or slow link at `at`: one end a target, the other
    /// a service end or another node, in either direction.
    fn link(&mut self, kind: &str, at: u64) -> FaultSpec {
        let from = self.node();
        let ends = ["backend", "resource", "client"];
        let to = if self.rng.gen_bool(0.5) {
            ends[self.rng.gen_range(0..ends.len())].to_string()
        } else {
            let n = format!("n{}", self.rng.gen_range(1..=self.nodes));
            if n == from || self.nodes == 1 {
                "backend".into()
            } else {
                n
            }
        };
        // Either direction: the far end may be the sender.
        let (from, to) = if self.rng.gen_bool(0.5) {
            (from, to)
        } else {
            (to, from)
        };
        let duration = self.range_u(self.swarm.partition_ms);
        if kind == "slow-link" {
            let a = self.range_u(self.swarm.slow_latency_ms);
            let b = self.range_u(self.swarm.slow_latency_ms);
            FaultSpec {
                from: Some(from),
                to: Some(to),
                latency_ms_min: Some(a.min(b)),
                latency_ms_max: Some(a.max(b)),
                duration_ms: Some(duration),
                ..FaultSpec::at(FaultKind::SlowLink, at)
            }
        } else {
            FaultSpec {
                from: Some(from),
                to: Some(to),
                one_way: Some(kind == "one-way-partition"),
                duration_ms: Some(duration),
                ..FaultSpec::at(FaultKind::Partition, at)
            }
        }
    }
}

/// The scenario `resolved` with its swarm drawn under `seed`: the drawn faults join the
/// file's own (all in time order) and the `[swarm]` table is gone. Without a swarm, the
/// scenario as it is.
pub fn materialize(resolved: &Resolved, seed: u64) -> Result<Resolved, ScenarioError> {
    let Some(swarm) = &resolved.scenario.swarm else {
        return Ok(resolved.clone());
    };
    let s = &resolved.scenario;
    let mut scenario = s.clone();
    scenario.swarm = None;
    let members = s.etcd_members().len() as u32;
    scenario.faults.extend(draw(
        swarm,
        seed,
        s.nodes,
        members,
        s.duration_ms,
        s.network.latency_ms_min,
    ));
    // Stable: the file's own faults come first at equal times.
    scenario.faults.sort_by_key(|f| f.at_ms);
    resolved.with_scenario(scenario)
}

#[cfg(test)]
mod tests {
    //! Methodology: draw schedules from the default table and check they are seeded,
    //! in the window, time-ordered, and that seeds switch kinds off.
    use super::*;

    #[test]
    fn schedules_are_seeded_windowed_and_swarmed() {
        let sw = Swarm::default();
        let a = draw(&sw, 1, 3, 0, 60_000, 1);
        assert_eq!(a, draw(&sw, 1, 3, 0, 60_000, 1));
        assert_ne!(a, draw(&sw, 2, 3, 0, 60_000, 1));
        let mut kinds_per_seed = vec![];
        for seed in 0..50 {
            let d = draw(&sw, seed, 3, 0, 60_000, 1);
            assert!(d
                .iter()
                .all(|f| (2_000..40_000).contains(&f.at_ms.unwrap())));
            assert!(d.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
            let mut k: Vec<FaultKind> = d.iter().map(|f| f.kind).collect();
            k.dedup();
            kinds_per_seed.push(k.len());
        }
        // About 6 faults a minute over 38 s; and seeds differ in the kinds they use.
        assert!(kinds_per_seed.iter().any(|&n| n <= 2));
        assert!(kinds_per_seed.iter().any(|&n| n >= 3));
    }

    /// Member kinds hit `etcd-leader` or `etcd-1..=N` only with a cluster, never without
    /// one; unweighted (the default), they never occur, and a swarm without them draws
    /// the same schedule with or without a cluster.
    #[test]
    fn member_faults_only_on_a_cluster() {
        let mut sw = Swarm::default();
        for k in MEMBER_KINDS {
            sw.weights.insert(k.to_string(), 4.0);
        }
        let member_target = |f: &FaultSpec| {
            [&f.target, &f.from, &f.to]
                .iter()
                .any(|t| t.as_deref().is_some_and(|t| t.starts_with("etcd-")))
        };
        let with: Vec<FaultSpec> = (0..20)
            .flat_map(|s| draw(&sw, s, 3, 3, 60_000, 1))
            .collect();
        assert!(with.iter().filter(|f| member_target(f)).count() > 10);
        assert!(with.iter().any(|f| f.kind == FaultKind::SlowDisk));
        let without: Vec<FaultSpec> = (0..20)
            .flat_map(|s| draw(&sw, s, 3, 0, 60_000, 1))
            .collect();
        assert!(!without.iter().any(member_target));
        let plain = Swarm::default();
        assert_eq!(
            draw(&plain, 7, 3, 3, 60_000, 1),
            draw(&plain, 7, 3, 0, 60_000, 1)
        );
    }
}
