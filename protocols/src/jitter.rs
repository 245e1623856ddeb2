//! client-go's `wait.Jitter(period, JitterFactor)`: a wait drawn uniformly from
//! `[period, period x (1 + JitterFactor))`, JitterFactor = 1.2, as its leader election
//! waits between a candidate's tries. Drawn from the node's seeded generator, so
//! candidates that started together drift apart: with a fixed period, nodes that
//! never restart keep the phases of their start order for ever, and on a first-come
//! backend (a row lease) the one that started last after another always polls just
//! after it and never wins.

use rand::{Rng, RngCore};
use std::time::Duration;

/// client-go's `JitterFactor`.
pub const JITTER_FACTOR: f64 = 1.2;

/// A wait of `period_ms` x [1, 1 + [`JITTER_FACTOR`]), at µs resolution.
pub fn jittered(period_ms: u64, rng: &mut dyn RngCore) -> Duration {
    let f: f64 = rng.gen_range(0.0..1.0);
    let ms = period_ms as f64 * (1.0 + f * JITTER_FACTOR);
    Duration::from_micros((ms * 1000.0) as u64)
}

/// The longest wait [`jittered`] draws for `period_ms`, in whole ms (rounded up, in
/// floating point: at most 1 ms above the exact value).
pub fn max_wait_ms(period_ms: u64) -> u64 {
    (period_ms as f64 * (1.0 + JITTER_FACTOR)).ceil() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn waits_lie_between_the_period_and_its_maximum_and_spread() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let waits: Vec<u64> = (0..1000)
            .map(|_| jittered(400, &mut rng).as_micros() as u64)
            .collect();
        assert!(waits.iter().all(|&w| (400_000..880_000).contains(&w)));
        // In floating point 400 x 2.2 is a hair above 880: the bound rounds up to 881,
        // 1 ms on the safe side (kept so, as k8s-lease's bounds have always read).
        assert_eq!(max_wait_ms(400), 881);
        let (lo, hi) = (waits.iter().min().unwrap(), waits.iter().max().unwrap());
        assert!(*lo < 420_000 && *hi > 860_000, "{lo}..{hi}");
    }
}
