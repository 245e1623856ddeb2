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
use crate::scenario::{Resolved, ScenarioError, WorkConfig};
use crate::NodeId;
use baton_protocols::SafetyBounds;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

pub use table::{Swarm, KINDS, MEMBER_KINDS};

/// What a swarm's draws depend on besides its table and the seed.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    /// The scenario's nodes.
    pub nodes: u32,
    /// The lease service's member count when it is a cluster (0 otherwise: the member
    /// kinds are not drawn).
    pub members: u32,
    /// The run's length, ms.
    pub duration_ms: u64,
    /// The scenario's lowest latency: a network fault's ceiling is never below it.
    pub base_latency_ms: u64,
    /// The node's timeout on a call to the fenced resource, ms (a slow write's latency
    /// is drawn around it).
    pub resource_timeout_ms: u64,
    /// The protocol's declared bounds: half the clock faults are drawn inside them.
    pub bounds: SafetyBounds,
}

/// The faults `swarm` draws for a run under `seed`, in time order.
pub fn draw(swarm: &Swarm, seed: u64, at: &Setting) -> Vec<FaultSpec> {
    // Every draw below comes from this one stream, in a fixed order: this seed's kinds,
    // then for each fault its gap, its kind and its values.
    let mut rng = crate::seed::fork(seed, "swarm");
    let kinds = kinds_for_seed(swarm, at.members > 1, &mut rng);
    let total: f64 = kinds.iter().map(|(_, w)| w).sum();
    let gap = Exp::new(swarm.faults_per_minute / 60_000.0).expect("validated rate");
    let end = swarm.end(at.duration_ms);
    let mut draws = Draws {
        swarm,
        at: *at,
        rng,
    };
    let mut out = vec![];
    let mut t = swarm.start_ms as f64;
    loop {
        t += gap.sample(&mut draws.rng);
        let when = t.round() as u64;
        if when >= end {
            // A fault's second part (a resign after its slow write) may come later.
            out.sort_by_key(|f: &FaultSpec| f.at_ms);
            return out;
        }
        let kind = pick(&kinds, total, &mut draws.rng);
        draws.faults(kind, when, &mut out);
    }
}

/// The work timeouts `swarm` draws for a seed (client's, resource's), where its table
/// asks for them; `None` keeps the scenario's. From a stream of their own, so that
/// asking for them leaves the fault draws as they were.
pub fn draw_timeouts(swarm: &Swarm, seed: u64) -> (Option<u64>, Option<u64>) {
    let mut rng = crate::seed::fork(seed, "swarm/timeouts");
    let mut one = |r: Option<[u64; 2]>| r.map(|[lo, hi]| rng.gen_range(lo..=hi));
    let client = one(swarm.client_timeout_ms);
    (client, one(swarm.resource_timeout_ms))
}

/// The `[work]` keys [`draw_timeouts`] may set, each as a copy from one `[work]` table to
/// another: a shrink sets each back to its default, and carries each from a candidate to
/// the same run with the fix on.
pub const DRAWN_WORK_KEYS: [fn(&mut WorkConfig, &WorkConfig); 2] = [
    |w, from| w.client_timeout_ms = from.client_timeout_ms,
    |w, from| w.resource_timeout_ms = from.resource_timeout_ms,
];

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
    at: Setting,
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
            NodeId::nth(self.rng.gen_range(1..=self.at.nodes) as usize).into_string()
        }
    }

    /// A clock offset, step (ms) or drift (ppm) from `range`: half the time inside the
    /// protocol's declared `bound` (where it must stay safe without the fence), else
    /// anywhere in the range (mostly beyond it). A bound of 0 has no inside.
    fn clock(&mut self, range: [i64; 2], bound: u64) -> i64 {
        let b = bound.min(i64::MAX as u64) as i64;
        let (lo, hi) = (range[0].max(-b), range[1].min(b));
        if b > 0 && lo <= hi && self.rng.gen_bool(0.5) {
            self.rng.gen_range(lo..=hi)
        } else {
            self.range_i(range)
        }
    }

    /// A slow write's latency, ms: `slow_write_pct` of the resource timeout (`inside`:
    /// at most the timeout itself, a write its node still waits for).
    fn slow_write_latency(&mut self, inside: bool) -> u64 {
        let [lo, hi] = self.swarm.slow_write_pct;
        let pct = if inside && lo <= 100 {
            [lo, hi.min(100)]
        } else {
            [lo, hi]
        };
        self.range_u(pct) * self.at.resource_timeout_ms / 100
    }

    /// A target member: `etcd-leader` with `leader_probability`, else one drawn
    /// uniformly.
    fn member(&mut self) -> String {
        if self.rng.gen_bool(self.swarm.leader_probability) {
            "etcd-leader".into()
        } else {
            format!("etcd-{}", self.rng.gen_range(1..=self.at.members))
        }
    }

    /// The faults of one draw of `kind` at `at` (two for a resign during a slow write).
    fn faults(&mut self, kind: &str, at: u64, out: &mut Vec<FaultSpec>) {
        match kind {
            "slow-write" => {
                let from = self.node();
                out.push(self.slow_write(from, at, false));
            }
            "resign-during-slow-write" => {
                // Half the time the write lands inside the node's resource timeout, so
                // that the node still waits for it when asked to step down (an honest
                // one answers the resign only once it landed): the race a leader that
                // lets go with a write in flight loses.
                let inside = self.rng.gen_bool(0.5);
                let slow = self.slow_write("leader".into(), at, inside);
                // While the write is on its way: before its latency has passed, and
                // while the link is slow.
                let window = slow
                    .latency_ms_min
                    .unwrap_or(0)
                    .min(slow.duration_ms.unwrap_or(0));
                let d = self.rng.gen_range(0..=window);
                out.push(slow);
                out.push(FaultSpec {
                    target: Some("leader".into()),
                    ..FaultSpec::at(FaultKind::Resign, at + d)
                });
            }
            _ => out.push(self.fault(kind, at)),
        }
    }

    /// `from`'s link to the fenced resource slowed at `at`: requests only, so a write
    /// lands late while its answer comes back at the usual speed.
    fn slow_write(&mut self, from: String, at: u64, inside: bool) -> FaultSpec {
        let a = self.slow_write_latency(inside);
        let b = self.slow_write_latency(inside);
        FaultSpec {
            from: Some(from),
            to: Some("resource".into()),
            latency_ms_min: Some(a.min(b)),
            latency_ms_max: Some(a.max(b)),
            duration_ms: Some(self.range_u(self.swarm.partition_ms)),
            ..FaultSpec::at(FaultKind::SlowLink, at)
        }
    }

    /// A fault of `kind` at `at`.
    fn fault(&mut self, kind: &str, at: u64) -> FaultSpec {
        let sw = self.swarm;
        let bounds = self.at.bounds;
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
                offset_ms: Some(self.clock(sw.clock_ms, bounds.offset_ms)),
                ..FaultSpec::at(FaultKind::ClockOffset, at)
            },
            "clock-step" => FaultSpec {
                target: Some(self.node()),
                step_ms: Some(self.clock(sw.clock_ms, bounds.offset_ms)),
                ..FaultSpec::at(FaultKind::ClockStep, at)
            },
            "clock-drift" => FaultSpec {
                target: Some(self.node()),
                drift_ppm: Some(self.clock(sw.drift_ppm, bounds.drift_ppm)),
                ..FaultSpec::at(FaultKind::ClockDrift, at)
            },
            "network" => {
                let hi = self
                    .range_u(sw.network_latency_ms)
                    .max(self.at.base_latency_ms);
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
            let n = NodeId::nth(self.rng.gen_range(1..=self.at.nodes) as usize).into_string();
            if n == from || self.at.nodes == 1 {
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
    let (client, resource) = draw_timeouts(swarm, seed);
    if let Some(ms) = client {
        scenario.work.client_timeout_ms = ms;
    }
    if let Some(ms) = resource {
        scenario.work.resource_timeout_ms = ms;
    }
    let setting = Setting {
        nodes: s.nodes,
        members: s.etcd_members().len() as u32,
        duration_ms: s.duration_ms,
        base_latency_ms: s.network.latency_ms_min,
        resource_timeout_ms: scenario.work.resource_timeout_ms,
        bounds: resolved.protocol.safety_bounds(),
    };
    scenario.faults.extend(draw(swarm, seed, &setting));
    // Stable: the file's own faults come first at equal times.
    scenario.faults.sort_by_key(|f| f.at_ms);
    resolved.with_scenario(scenario)
}

#[cfg(test)]
mod tests {
    //! Methodology: draw schedules from the default table and check they are seeded,
    //! in the window, time-ordered, and that seeds switch kinds off.
    use super::*;

    fn at(nodes: u32, members: u32) -> Setting {
        Setting {
            nodes,
            members,
            duration_ms: 60_000,
            base_latency_ms: 1,
            resource_timeout_ms: 500,
            bounds: SafetyBounds::with_margin(600, 2_000),
        }
    }

    #[test]
    fn schedules_are_seeded_windowed_and_swarmed() {
        let sw = Swarm::default();
        let a = draw(&sw, 1, &at(3, 0));
        assert_eq!(a, draw(&sw, 1, &at(3, 0)));
        assert_ne!(a, draw(&sw, 2, &at(3, 0)));
        let mut kinds_per_seed = vec![];
        for seed in 0..50 {
            let d = draw(&sw, seed, &at(3, 0));
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
        let with: Vec<FaultSpec> = (0..20).flat_map(|s| draw(&sw, s, &at(3, 3))).collect();
        assert!(with.iter().filter(|f| member_target(f)).count() > 10);
        assert!(with.iter().any(|f| f.kind == FaultKind::SlowDisk));
        let without: Vec<FaultSpec> = (0..20).flat_map(|s| draw(&sw, s, &at(3, 0))).collect();
        assert!(!without.iter().any(member_target));
        let plain = Swarm::default();
        assert_eq!(draw(&plain, 7, &at(3, 3)), draw(&plain, 7, &at(3, 0)));
    }

    /// The new draws: slow writes straddle the resource timeout, a resign lands while
    /// its slow write is in flight, clock faults fall inside the declared bounds and
    /// beyond them, and drawn timeouts come from their own stream.
    #[test]
    fn slow_writes_resigns_clocks_and_timeouts() {
        let sw = Swarm::default();
        let all: Vec<FaultSpec> = (0..200).flat_map(|s| draw(&sw, s, &at(3, 0))).collect();
        let only_slow_writes = Swarm {
            weights: [("slow-write".to_string(), 1.0)].into(),
            ..Swarm::default()
        };
        let slow: Vec<FaultSpec> = (0..50)
            .flat_map(|s| draw(&only_slow_writes, s, &at(3, 0)))
            .collect();
        assert!(slow.len() > 50);
        assert!(slow
            .iter()
            .all(|f| f.kind == FaultKind::SlowLink && f.to.as_deref() == Some("resource")));
        assert!(slow.iter().any(|f| f.latency_ms_max.unwrap() > 500));
        assert!(slow.iter().any(|f| f.latency_ms_min.unwrap() < 500));
        assert!(slow
            .iter()
            .all(|f| (250..=1_500).contains(&f.latency_ms_min.unwrap())));
        // A resign during a slow write lands while the leader's slow link is in force,
        // within the write's latency.
        let resigns_in_flight: usize = (0..200u64)
            .map(|s| {
                let d = draw(&sw, s, &at(3, 0));
                let slow: Vec<(u64, u64)> = d
                    .iter()
                    .filter(|f| {
                        f.kind == FaultKind::SlowLink
                            && f.from.as_deref() == Some("leader")
                            && f.to.as_deref() == Some("resource")
                    })
                    .map(|f| (f.at_ms.unwrap(), f.latency_ms_min.unwrap()))
                    .collect();
                d.iter()
                    .filter(|f| f.kind == FaultKind::Resign)
                    .filter(|f| {
                        let r = f.at_ms.unwrap();
                        slow.iter().any(|&(t, l)| t <= r && r <= t + l)
                    })
                    .count()
            })
            .sum();
        assert!(resigns_in_flight > 5, "{resigns_in_flight}");
        let drifts: Vec<i64> = all.iter().filter_map(|f| f.drift_ppm).collect();
        assert!(drifts.iter().any(|d| d.abs() <= 300_000));
        assert!(drifts.iter().any(|d| d.abs() > 300_000));
        let offsets: Vec<i64> = all
            .iter()
            .filter_map(|f| f.offset_ms.or(f.step_ms))
            .collect();
        assert!(offsets.iter().any(|o| o.abs() <= 600));
        assert!(offsets.iter().any(|o| o.abs() > 600));
        // Timeouts: none unless asked for; asked for, seeded and in range.
        assert_eq!(draw_timeouts(&sw, 3), (None, None));
        let sw = Swarm {
            client_timeout_ms: Some([100, 2_000]),
            resource_timeout_ms: Some([100, 2_000]),
            ..Swarm::default()
        };
        let t: Vec<(Option<u64>, Option<u64>)> = (0..50).map(|s| draw_timeouts(&sw, s)).collect();
        assert_eq!(t[7], draw_timeouts(&sw, 7));
        assert!(t.iter().any(|(c, r)| c > r) && t.iter().any(|(c, r)| c < r));
        assert!(t.iter().all(
            |(c, r)| (100..=2_000).contains(&c.unwrap()) && (100..=2_000).contains(&r.unwrap())
        ));
    }
}
