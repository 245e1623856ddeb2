//! Per-node clocks over madsim's single global clock.
//!
//! A node's local time is `base_local + (global - base_global) * (1 + drift_ppm / 1e6)`.
//! Changing the drift re-bases the clock so local time stays continuous; an offset or a
//! step moves `base_local`. A paused node's clock keeps running: it is a function of the
//! global clock, not of the node being scheduled.

use baton_protocols::Clock;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The global simulated time since the run started, in microseconds.
pub fn global_now_us() -> i64 {
    madsim::time::TimeHandle::current().elapsed().as_micros() as i64
}

#[derive(Clone, Copy, Debug)]
struct State {
    base_global_us: i64,
    base_local_us: i64,
    drift_ppm: i64,
}

/// A skewable clock shared between a node (which reads it) and the world (which skews it).
#[derive(Clone, Debug)]
pub struct NodeClock {
    state: Arc<Mutex<State>>,
}

impl Default for NodeClock {
    fn default() -> Self {
        Self::new()
    }
}

impl NodeClock {
    /// A clock that reads the global time exactly.
    pub fn new() -> Self {
        NodeClock {
            state: Arc::new(Mutex::new(State {
                base_global_us: 0,
                base_local_us: 0,
                drift_ppm: 0,
            })),
        }
    }

    fn local_at(s: &State, global_us: i64) -> i64 {
        let elapsed = global_us - s.base_global_us;
        s.base_local_us + elapsed + (elapsed as i128 * s.drift_ppm as i128 / 1_000_000) as i64
    }

    /// Sets the clock so that it reads `offset_ms` ahead of global time now.
    pub fn set_offset_ms(&self, offset_ms: i64) {
        let g = global_now_us();
        let mut s = self.state.lock().unwrap();
        *s = State {
            base_global_us: g,
            base_local_us: g + offset_ms * 1000,
            drift_ppm: s.drift_ppm,
        };
    }

    /// Jumps the clock by `step_ms` (negative: backwards).
    pub fn step_ms(&self, step_ms: i64) {
        let g = global_now_us();
        let mut s = self.state.lock().unwrap();
        let now = Self::local_at(&s, g);
        *s = State {
            base_global_us: g,
            base_local_us: now + step_ms * 1000,
            drift_ppm: s.drift_ppm,
        };
    }

    /// From now on, runs `drift_ppm` parts per million fast (negative: slow).
    pub fn set_drift_ppm(&self, drift_ppm: i64) {
        let g = global_now_us();
        let mut s = self.state.lock().unwrap();
        let now = Self::local_at(&s, g);
        *s = State {
            base_global_us: g,
            base_local_us: now,
            drift_ppm,
        };
    }

    /// The current offset from global time, in microseconds.
    pub fn offset_us(&self) -> i64 {
        self.now_us() - global_now_us()
    }
}

impl Clock for NodeClock {
    fn now_us(&self) -> i64 {
        let s = *self.state.lock().unwrap();
        Self::local_at(&s, global_now_us())
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
