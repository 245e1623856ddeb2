//! Background noise drawn from the seed: the schedule of `[noise.gc]`'s pauses.
//!
//! Both worlds draw a node's pauses here, so that the simulator (sim's `world/noise.rs`,
//! which holds the node's madsim runtime) and real mode (`real/src/trial/noise.rs`,
//! which stops its process with SIGSTOP) pause the same node at the same times for the
//! same lengths under one seed.

use crate::scenario::GcNoise;
use rand_distr::{Distribution, Exp, LogNormal};

/// The 99th percentile of the standard normal distribution: a log-normal's p99 is
/// `p50 * exp(Z99 * sigma)`.
const Z99: f64 = 2.326_347_874;

/// One node's GC pauses over a run of `duration_ms`: (start, length), both in ms, in
/// time order and never overlapping.
pub fn gc_schedule(cfg: &GcNoise, seed: u64, node: &str, duration_ms: u64) -> Vec<(u64, u64)> {
    let mut rng = crate::seed::fork(seed, &format!("noise/gc/{node}"));
    let gap = Exp::new(1.0 / cfg.mean_interval_ms as f64).expect("validated: mean >= 1 ms");
    let sigma = (cfg.pause_p99_ms as f64 / cfg.pause_p50_ms as f64).ln() / Z99;
    let length = LogNormal::new((cfg.pause_p50_ms as f64).ln(), sigma)
        .expect("validated: p99 >= p50 >= 1 ms");
    let mut out = vec![];
    let mut t = 0.0f64;
    loop {
        t += gap.sample(&mut rng);
        let len = length
            .sample(&mut rng)
            .round()
            .clamp(1.0, cfg.pause_max_ms as f64) as u64;
        let start = t.round() as u64;
        if start >= duration_ms {
            return out;
        }
        out.push((start, len));
        t += len as f64;
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: draw long schedules and compare their statistics with the table.
    use super::*;

    #[test]
    fn schedule_follows_the_table() {
        let cfg = GcNoise {
            mean_interval_ms: 1_000,
            pause_p50_ms: 50,
            pause_p99_ms: 800,
            pause_max_ms: 5_000,
            nodes: vec![],
        };
        let s = gc_schedule(&cfg, 7, "n1", 3_600_000);
        assert_eq!(s, gc_schedule(&cfg, 7, "n1", 3_600_000), "seeded");
        assert_ne!(s, gc_schedule(&cfg, 7, "n2", 3_600_000), "per node");
        // About one pause per (mean gap + mean length) over an hour.
        assert!((2_500..4_000).contains(&s.len()), "{} pauses", s.len());
        let mut lens: Vec<u64> = s.iter().map(|p| p.1).collect();
        lens.sort();
        let p50 = lens[lens.len() / 2];
        let p99 = lens[lens.len() * 99 / 100];
        assert!((40..=60).contains(&p50), "p50 {p50}");
        assert!((550..=1_100).contains(&p99), "p99 {p99}");
        assert!(lens.iter().all(|&l| (1..=5_000).contains(&l)));
        // Pauses never overlap and come in time order.
        assert!(s.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0));
    }
}
