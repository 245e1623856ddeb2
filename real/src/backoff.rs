//! Bounded exponential backoff with seeded jitter: how a real process pauses between
//! tries at a server that fails at once.
//!
//! Why. In the simulation every failed call to a service is a timeout, so a retry loop
//! that tries again at once still waits its call's timeout per try; the protocol code
//! (shared by both worlds) is written that way, and its simulated runs must not change.
//! A real server that refuses connections (down, restarting, or behind a proxy whose
//! upstream is gone) answers at once instead, and the same loop spins a core until
//! something else stops it. So the real world's glue pauses after a failure, before it
//! hands the failure back: the loop above it then retries no faster than this policy.
//!
//! The policy. After the n-th failure in a row the pause is drawn uniformly from
//! `c/2 ..= c`, where `c = min(first_ms * 2^(n-1), max_ms)` ("equal jitter": at least
//! half the ceiling, so a refusing server is never hammered, and never in lockstep with
//! another process, since each draws from its own generator). A success starts over.
//! The jitter comes from a ChaCha8 generator that the caller forks from the run's seed
//! (`baton_model::seed::fork(seed, "backoff/<what>/<node>/<incarnation>")`), so a pause
//! never takes a draw from any other subsystem's sequence.
//!
//! [`Pacer`] applies the policy to calls that may run concurrently on one client: a
//! failed call returns once its pause has passed since the call began, so a call that
//! already took that long (one that timed out) is not delayed further. With `max_ms` at
//! most the call's timeout, a refused call then costs its caller no more than a
//! timed-out one, which is what the simulation shows the protocol.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// The pauses of one retry loop (see the module doc).
#[derive(Clone, Debug)]
pub struct Backoff {
    first_ms: u64,
    max_ms: u64,
    failures: u32,
    rng: ChaCha8Rng,
}

impl Backoff {
    /// Pauses that start at `first_ms` (at most; half of it at least) and double after
    /// every failure in a row up to `max_ms`, jittered by draws from `rng`.
    pub fn new(first_ms: u64, max_ms: u64, rng: ChaCha8Rng) -> Backoff {
        Backoff {
            first_ms: first_ms.min(max_ms),
            max_ms,
            failures: 0,
            rng,
        }
    }

    /// Records a failure and returns the pause to take before the next try.
    pub fn failed(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let doublings = self.failures - 1;
        let ceiling_ms = if doublings >= 63 {
            self.max_ms
        } else {
            self.first_ms
                .saturating_mul(1 << doublings)
                .min(self.max_ms)
        };
        Duration::from_millis(self.rng.gen_range(ceiling_ms / 2..=ceiling_ms))
    }

    /// Records a success: the next failure pauses the shortest again. Returns how many
    /// failures in a row it ended (0: none).
    pub fn succeeded(&mut self) -> u32 {
        std::mem::take(&mut self.failures)
    }

    /// Failures in a row so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

/// A [`Backoff`] shared by the concurrent calls of one client to one server.
#[derive(Debug)]
pub struct Pacer {
    backoff: Mutex<Backoff>,
}

impl Pacer {
    /// Paces calls with `backoff`.
    pub fn new(backoff: Backoff) -> Pacer {
        Pacer {
            backoff: Mutex::new(backoff),
        }
    }

    /// A call that began at `started` failed: waits until the next pause has passed since
    /// then (not at all if the call took that long). Returns the failures in a row so
    /// far, this one included.
    pub async fn failed(&self, started: Instant) -> u32 {
        let (pause, failures) = {
            let mut b = self.backoff.lock().unwrap();
            (b.failed(), b.failures())
        };
        tokio::time::sleep_until(started + pause).await;
        failures
    }

    /// A call succeeded. Returns how many failures in a row it ended (0: none).
    pub fn succeeded(&self) -> u32 {
        self.backoff.lock().unwrap().succeeded()
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: the policy is pure arithmetic over a seeded generator, so it is
    //! checked exactly; the pacer is checked for its lower bound only (a loaded machine
    //! can only make a pause longer).
    use super::*;
    use rand::SeedableRng;

    fn backoff(first_ms: u64, max_ms: u64) -> Backoff {
        Backoff::new(first_ms, max_ms, ChaCha8Rng::seed_from_u64(7))
    }

    #[test]
    fn pauses_double_up_to_the_bound_with_equal_jitter_and_start_over_on_success() {
        let mut b = backoff(20, 500);
        for ceiling in [20, 40, 80, 160, 320, 500, 500, 500] {
            let p = b.failed().as_millis() as u64;
            assert!(
                (ceiling / 2..=ceiling).contains(&p),
                "{p} ms, ceiling {ceiling}"
            );
        }
        assert_eq!(b.succeeded(), 8);
        assert_eq!(b.succeeded(), 0);
        assert!(b.failed() <= Duration::from_millis(20));
        for _ in 0..200 {
            assert!(b.failed() <= Duration::from_millis(500));
        }
    }

    #[test]
    fn the_same_generator_draws_the_same_pauses() {
        let (mut a, mut b) = (backoff(20, 500), backoff(20, 500));
        for _ in 0..10 {
            assert_eq!(a.failed(), b.failed());
        }
    }

    #[tokio::test]
    async fn a_fast_failure_waits_out_its_pause_and_a_slow_one_does_not() {
        let pacer = Pacer::new(backoff(40, 40));
        let started = Instant::now();
        assert_eq!(pacer.failed(started).await, 1);
        assert!(started.elapsed() >= Duration::from_millis(20));
        assert_eq!(pacer.succeeded(), 1);
        // Pauses of 30 to 60 s: a call that already took 61 s returns at once, where
        // waiting out a pause would take 30 s at least.
        let pacer = Pacer::new(backoff(60_000, 60_000));
        let long_ago = Instant::now() - Duration::from_secs(61);
        let before = Instant::now();
        pacer.failed(long_ago).await;
        assert!(before.elapsed() < Duration::from_secs(30));
    }
}
