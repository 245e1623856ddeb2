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

use crate::fault::{FaultKind, FaultSpec};
use crate::scenario::{Resolved, ScenarioError};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

pub use table::{Swarm, KINDS};

fn range_u(rng: &mut ChaCha8Rng, [lo, hi]: [u64; 2]) -> u64 {
    rng.gen_range(lo..=hi)
}

fn range_i(rng: &mut ChaCha8Rng, [lo, hi]: [i64; 2]) -> i64 {
    rng.gen_range(lo..=hi)
}

/// The faults `swarm` draws for a run of `duration_ms` with `nodes` nodes under `seed`,
/// in time order.
pub fn draw(
    swarm: &Swarm,
    seed: u64,
    nodes: u32,
    duration_ms: u64,
    base_latency_ms: u64,
) -> Vec<FaultSpec> {
    let mut rng = crate::seed::fork(seed, "swarm");
    // Swarm testing: this seed's kinds.
    let mut kinds: Vec<(&str, f64)> = KINDS
        .iter()
        .filter_map(|k| swarm.weights.get(*k).map(|w| (*k, *w)))
        .filter(|(_, w)| *w > 0.0)
        .collect();
    let on: Vec<(&str, f64)> = kinds
        .iter()
        .copied()
        .filter(|_| !rng.gen_bool(swarm.off_probability))
        .collect();
    if !on.is_empty() {
        kinds = on;
    } else {
        // Keep one: a seed with no kinds would test nothing.
        let i = rng.gen_range(0..kinds.len());
        kinds = vec![kinds[i]];
    }
    let total: f64 = kinds.iter().map(|(_, w)| w).sum();
    let gap = Exp::new(swarm.faults_per_minute / 60_000.0).expect("validated rate");
    let end = swarm.end(duration_ms);
    let node = |rng: &mut ChaCha8Rng| -> String {
        if rng.gen_bool(swarm.leader_probability) {
            "leader".into()
        } else {
            format!("n{}", rng.gen_range(1..=nodes))
        }
    };
    let mut out = vec![];
    let mut t = swarm.start_ms as f64;
    loop {
        t += gap.sample(&mut rng);
        let at = t.round() as u64;
        if at >= end {
            return out;
        }
        let mut pick = rng.gen_range(0.0..total);
        let kind = kinds
            .iter()
            .find(|(_, w)| {
                pick -= w;
                pick < 0.0
            })
            .map_or(kinds[kinds.len() - 1].0, |(k, _)| *k);
        let f = match kind {
            "kill" => FaultSpec {
                target: Some(node(&mut rng)),
                restart_after_ms: Some(range_u(&mut rng, swarm.restart_after_ms)),
                ..FaultSpec::at(FaultKind::Kill, at)
            },
            "pause" | "pause-before-write" => FaultSpec {
                target: Some(node(&mut rng)),
                duration_ms: Some(range_u(&mut rng, swarm.pause_ms)),
                point: (kind == "pause-before-write")
                    .then_some(crate::fault::PausePoint::BeforeWrite),
                ..FaultSpec::at(FaultKind::Pause, at)
            },
            "partition" | "one-way-partition" | "slow-link" => {
                let from = node(&mut rng);
                let ends = ["backend", "resource", "client"];
                let to = if rng.gen_bool(0.5) {
                    ends[rng.gen_range(0..ends.len())].to_string()
                } else {
                    let n = format!("n{}", rng.gen_range(1..=nodes));
                    if n == from || nodes == 1 {
                        "backend".into()
                    } else {
                        n
                    }
                };
                // Either direction: the far end may be the sender.
                let (from, to) = if rng.gen_bool(0.5) {
                    (from, to)
                } else {
                    (to, from)
                };
                let duration = range_u(&mut rng, swarm.partition_ms);
                if kind == "slow-link" {
                    let a = range_u(&mut rng, swarm.slow_latency_ms);
                    let b = range_u(&mut rng, swarm.slow_latency_ms);
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
            "clock-offset" => FaultSpec {
                target: Some(node(&mut rng)),
                offset_ms: Some(range_i(&mut rng, swarm.clock_ms)),
                ..FaultSpec::at(FaultKind::ClockOffset, at)
            },
            "clock-step" => FaultSpec {
                target: Some(node(&mut rng)),
                step_ms: Some(range_i(&mut rng, swarm.clock_ms)),
                ..FaultSpec::at(FaultKind::ClockStep, at)
            },
            "clock-drift" => FaultSpec {
                target: Some(node(&mut rng)),
                drift_ppm: Some(range_i(&mut rng, swarm.drift_ppm)),
                ..FaultSpec::at(FaultKind::ClockDrift, at)
            },
            "network" => {
                let hi = range_u(&mut rng, swarm.network_latency_ms).max(base_latency_ms);
                FaultSpec {
                    latency_ms_max: Some(hi),
                    loss_ppm: Some(range_u(&mut rng, swarm.network_loss_ppm)),
                    duration_ms: Some(range_u(&mut rng, swarm.network_ms)),
                    ..FaultSpec::at(FaultKind::Network, at)
                }
            }
            _ => FaultSpec {
                target: Some("leader".into()),
                ..FaultSpec::at(FaultKind::Resign, at)
            },
        };
        out.push(f);
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
    scenario.faults.extend(draw(
        swarm,
        seed,
        s.nodes,
        s.duration_ms,
        s.network.latency_ms_min,
    ));
    // Stable: the file's own faults come first at equal times.
    scenario.faults.sort_by_key(|f| f.at_ms);
    let text = toml::to_string(&scenario).expect("a scenario always serializes");
    let mut out = crate::scenario::load_str(&resolved.path, &scenario.name, &text, &[])?;
    out.path = resolved.path.clone();
    out.overrides = resolved.overrides.clone();
    Ok(out)
}

#[cfg(test)]
mod tests {
    //! Methodology: draw schedules from the default table and check they are seeded,
    //! in the window, time-ordered, and that seeds switch kinds off.
    use super::*;

    #[test]
    fn schedules_are_seeded_windowed_and_swarmed() {
        let sw = Swarm::default();
        let a = draw(&sw, 1, 3, 60_000, 1);
        assert_eq!(a, draw(&sw, 1, 3, 60_000, 1));
        assert_ne!(a, draw(&sw, 2, 3, 60_000, 1));
        let mut kinds_per_seed = vec![];
        for seed in 0..50 {
            let d = draw(&sw, seed, 3, 60_000, 1);
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
}
