//! A node's clock in a real run: the machine's monotonic clock, skewable on purpose.
//!
//! The same arithmetic as the simulator's `NodeClock` (the model's
//! [`baton_model::Skew`]), over the run's clock instead of madsim's. Protocol
//! code reads it through [`baton_protocols::Clock`] and sleeps through
//! [`Clock::global_duration_for`], so a node whose clock runs fast renews, and gives up,
//! early by its own reckoning, as a node with a bad oscillator would. The fault verbs
//! reach it through the node's control endpoint (`POST /control/clock`).

use crate::run_clock::RunClock;
use baton_model::Skew;
use baton_protocols::Clock;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A skewable clock over the run's monotonic clock. Cloning shares it.
#[derive(Clone, Debug)]
pub struct RealClock {
    run: RunClock,
    state: Arc<Mutex<Skew>>,
}

impl RealClock {
    /// A clock that reads the run's clock exactly.
    pub fn new(run: RunClock) -> Self {
        RealClock {
            run,
            state: Arc::new(Mutex::new(Skew::default())),
        }
    }

    /// Sets the clock `offset_ms` ahead of the run's clock now (negative: behind).
    pub fn set_offset_ms(&self, offset_ms: i64) {
        self.state
            .lock()
            .unwrap()
            .set_offset_ms(self.run.now_us(), offset_ms);
    }

    /// Jumps the clock by `step_ms` (negative: backwards).
    pub fn step_ms(&self, step_ms: i64) {
        self.state
            .lock()
            .unwrap()
            .step_ms(self.run.now_us(), step_ms);
    }

    /// From now on, runs `drift_ppm` parts per million fast (negative: slow).
    pub fn set_drift_ppm(&self, drift_ppm: i64) {
        self.state
            .lock()
            .unwrap()
            .set_drift_ppm(self.run.now_us(), drift_ppm);
    }

    /// How far the clock reads ahead of the run's clock, in microseconds.
    pub fn offset_us(&self) -> i64 {
        self.now_us() - self.run.now_us()
    }
}

impl Clock for RealClock {
    fn now_us(&self) -> i64 {
        self.state.lock().unwrap().local_at(self.run.now_us())
    }

    fn monotonic_us(&self) -> i64 {
        self.state.lock().unwrap().monotonic_at(self.run.now_us())
    }

    fn global_duration_for(&self, local: Duration) -> Duration {
        self.state.lock().unwrap().global_duration_for(local)
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
