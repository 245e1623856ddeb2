//! Per-node clocks over madsim's single global clock.
//!
//! The arithmetic (offset, drift, steps) is the model's [`Skew`], over madsim's global
//! time. A paused node's clock keeps running: it is a function of the global clock, not
//! of the node being scheduled.

use baton_model::Skew;
use baton_protocols::Clock;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The global simulated time since the run started, in microseconds.
pub fn global_now_us() -> i64 {
    madsim::time::TimeHandle::current().elapsed().as_micros() as i64
}

/// A skewable clock shared between a node (which reads it) and the world (which skews it).
#[derive(Clone, Debug, Default)]
pub struct NodeClock {
    state: Arc<Mutex<Skew>>,
}

impl NodeClock {
    /// A clock that reads the global time exactly.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the clock so that it reads `offset_ms` ahead of global time now.
    pub fn set_offset_ms(&self, offset_ms: i64) {
        self.state
            .lock()
            .unwrap()
            .set_offset_ms(global_now_us(), offset_ms);
    }

    /// Jumps the clock by `step_ms` (negative: backwards).
    pub fn step_ms(&self, step_ms: i64) {
        self.state.lock().unwrap().step_ms(global_now_us(), step_ms);
    }

    /// From now on, runs `drift_ppm` parts per million fast (negative: slow).
    pub fn set_drift_ppm(&self, drift_ppm: i64) {
        self.state
            .lock()
            .unwrap()
            .set_drift_ppm(global_now_us(), drift_ppm);
    }

    /// The current offset from global time, in microseconds.
    pub fn offset_us(&self) -> i64 {
        self.now_us() - global_now_us()
    }
}

impl Clock for NodeClock {
    fn now_us(&self) -> i64 {
        self.state.lock().unwrap().local_at(global_now_us())
    }

    fn monotonic_us(&self) -> i64 {
        self.state.lock().unwrap().monotonic_at(global_now_us())
    }

    fn global_duration_for(&self, local: Duration) -> Duration {
        self.state.lock().unwrap().global_duration_for(local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_step_and_drift_move_local_time_as_documented() {
        let rt = madsim::runtime::Runtime::new();
        rt.block_on(async {
            let c = NodeClock::new();
            madsim::time::sleep(Duration::from_millis(1000)).await;
            assert_eq!(c.offset_us(), 0);
            c.set_offset_ms(200);
            assert_eq!(c.offset_us(), 200_000);
            c.step_ms(-300);
            assert_eq!(c.offset_us(), -100_000);
            // Half speed: one global second is half a local second, and a local
            // half-second takes a global second to pass.
            c.set_drift_ppm(-500_000);
            let before = c.now_us();
            madsim::time::sleep(Duration::from_millis(1000)).await;
            assert_eq!(c.now_us() - before, 500_000);
            assert_eq!(
                c.global_duration_for(Duration::from_millis(500)),
                Duration::from_millis(1000)
            );
            // Changing the drift keeps local time continuous.
            let at = c.now_us();
            c.set_drift_ppm(0);
            assert_eq!(c.now_us(), at);
        });
    }
}
