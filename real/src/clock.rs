//! A node's clock in a real run: the machine's monotonic clock, skewable on purpose.
//!
//! The same model as the simulator's `NodeClock` (`sim/src/clock.rs`), over the run's
//! clock instead of madsim's: local time is
//! `base_local + (run - base_run) * (1 + drift_ppm / 1e6)`, an offset or a step moves
//! `base_local`, and changing the drift re-bases so local time stays continuous. Protocol
//! code reads it through [`baton_protocols::Clock`] and sleeps through
//! [`Clock::global_duration_for`], so a node whose clock runs fast renews, and gives up,
//! early by its own reckoning, as a node with a bad oscillator would. The fault verbs
//! reach it through the node's control endpoint (`POST /control/clock`).

use crate::run_clock::RunClock;
use baton_protocols::Clock;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone, Copy, Debug)]
struct State {
    base_run_us: i64,
    base_local_us: i64,
    drift_ppm: i64,
}

/// A skewable clock over the run's monotonic clock. Cloning shares it.
#[derive(Clone, Debug)]
pub struct RealClock {
    run: RunClock,
    state: Arc<Mutex<State>>,
}

impl RealClock {
    /// A clock that reads the run's clock exactly.
    pub fn new(run: RunClock) -> Self {
        RealClock {
            run,
            state: Arc::new(Mutex::new(State {
                base_run_us: 0,
                base_local_us: 0,
                drift_ppm: 0,
            })),
        }
    }

    fn local_at(s: &State, run_us: i64) -> i64 {
        let elapsed = run_us - s.base_run_us;
        s.base_local_us + elapsed + (elapsed as i128 * s.drift_ppm as i128 / 1_000_000) as i64
    }

    /// Sets the clock `offset_ms` ahead of the run's clock now (negative: behind).
    pub fn set_offset_ms(&self, offset_ms: i64) {
        let g = self.run.now_us();
        let mut s = self.state.lock().unwrap();
        *s = State {
            base_run_us: g,
            base_local_us: g + offset_ms * 1000,
            drift_ppm: s.drift_ppm,
        };
    }

    /// Jumps the clock by `step_ms` (negative: backwards).
    pub fn step_ms(&self, step_ms: i64) {
        let g = self.run.now_us();
        let mut s = self.state.lock().unwrap();
        let now = Self::local_at(&s, g);
        *s = State {
            base_run_us: g,
            base_local_us: now + step_ms * 1000,
            drift_ppm: s.drift_ppm,
        };
    }

    /// From now on, runs `drift_ppm` parts per million fast (negative: slow).
    pub fn set_drift_ppm(&self, drift_ppm: i64) {
        let g = self.run.now_us();
        let mut s = self.state.lock().unwrap();
        let now = Self::local_at(&s, g);
        *s = State {
            base_run_us: g,
            base_local_us: now,
            drift_ppm,
        };
    }

    /// How far the clock reads ahead of the run's clock, in microseconds.
    pub fn offset_us(&self) -> i64 {
        self.now_us() - self.run.now_us()
    }
}

impl Clock for RealClock {
    fn now_us(&self) -> i64 {
        let s = *self.state.lock().unwrap();
        Self::local_at(&s, self.run.now_us())
    }

    fn global_duration_for(&self, local: Duration) -> Duration {
        let drift = self.state.lock().unwrap().drift_ppm;
        let us = local.as_micros() as i128 * 1_000_000 / (1_000_000 + drift as i128).max(1);
        Duration::from_micros(us.max(0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Offsets and steps are exact; drift is checked over a real sleep with a tolerance
    /// for scheduling, since this clock runs on the machine's time.
    #[test]
    fn offset_step_and_drift_move_local_time() {
        let c = RealClock::new(RunClock::start());
        assert!(c.offset_us().abs() < 1_000);
        c.set_offset_ms(200);
        assert!((c.offset_us() - 200_000).abs() < 1_000);
        c.step_ms(-300);
        assert!((c.offset_us() + 100_000).abs() < 1_000);
        c.set_drift_ppm(-500_000);
        let before = c.now_us();
        std::thread::sleep(Duration::from_millis(200));
        let local = c.now_us() - before;
        assert!((95_000..=130_000).contains(&local), "half speed: {local}");
        assert_eq!(
            c.global_duration_for(Duration::from_millis(500)),
            Duration::from_millis(1000)
        );
        let at = c.now_us();
        c.set_drift_ppm(0);
        assert!(c.now_us() - at < 1_000, "continuous across a drift change");
    }
}
