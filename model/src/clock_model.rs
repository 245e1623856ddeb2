//! The arithmetic of a skewed clock, shared by every world and by the report.
//!
//! A node's local time is `base_local + (global - base_global) * (1 + drift_ppm / 1e6)`,
//! where "global" is the world's one clock: madsim's simulated time in the simulator, the
//! machine's monotonic clock in real mode. Changing the drift re-bases the clock so local
//! time stays continuous; an offset or a step moves `base_local`. A clock also has a
//! monotonic reading, which runs at the same (drifting) rate but never jumps: what an
//! OS's `CLOCK_MONOTONIC`, Go's monotonic reading or Rust's `Instant` gives a program
//! while NTP or an operator steps the wall clock. The simulator's
//! `NodeClock`, real mode's `RealClock` and the report's clock view all compute with
//! this one type, so the picture shows what the nodes read.

use serde::Serialize;
use std::time::Duration;

/// A change to a clock: what a clock fault does (the fault plan asks it of a world, the
/// checkers and the report replay it). Serialized under the fault's own key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ClockChange {
    /// Set it this far ahead of (negative: behind) true time, ms.
    #[serde(rename = "offset_ms")]
    Offset(i64),
    /// Make it run this many parts per million fast (negative: slow) from now on.
    #[serde(rename = "drift_ppm")]
    Drift(i64),
    /// Jump it by this much, ms.
    #[serde(rename = "step_ms")]
    Step(i64),
}

impl ClockChange {
    /// A short label: `offset +200 ms`, `drift -400000 ppm`, `step -300 ms`.
    pub fn label(&self) -> String {
        match self {
            ClockChange::Offset(v) => format!("offset {v:+} ms"),
            ClockChange::Drift(v) => format!("drift {v:+} ppm"),
            ClockChange::Step(v) => format!("step {v:+} ms"),
        }
    }
}

/// A clock's state: where it was last re-based, and how fast it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Skew {
    /// Global time of the last change, in microseconds.
    pub base_global_us: i64,
    /// Local time at that moment, in microseconds.
    pub base_local_us: i64,
    /// Parts per million fast (negative: slow).
    pub drift_ppm: i64,
    /// The sum of every jump so far (offsets set and steps), in microseconds: what the
    /// wall reading has and the monotonic one has not.
    pub jumps_us: i64,
}

impl Skew {
    /// The local reading at global time `global_us`.
    pub fn local_at(&self, global_us: i64) -> i64 {
        let elapsed = global_us - self.base_global_us;
        self.base_local_us + elapsed + (elapsed as i128 * self.drift_ppm as i128 / 1_000_000) as i64
    }

    /// The monotonic reading at global time `global_us`: the local reading without its
    /// jumps.
    pub fn monotonic_at(&self, global_us: i64) -> i64 {
        self.local_at(global_us) - self.jumps_us
    }

    /// How far the clock reads ahead of global time at `global_us`.
    pub fn offset_at(&self, global_us: i64) -> i64 {
        self.local_at(global_us) - global_us
    }

    /// At `global_us`, set the clock `offset_ms` ahead of global time. Returns the jump
    /// that made (µs): the new offset less the one the clock had, drift included.
    pub fn set_offset_ms(&mut self, global_us: i64, offset_ms: i64) -> i64 {
        let jump = offset_ms * 1000 - self.offset_at(global_us);
        *self = Skew {
            base_global_us: global_us,
            base_local_us: global_us + offset_ms * 1000,
            drift_ppm: self.drift_ppm,
            jumps_us: self.jumps_us + jump,
        };
        jump
    }

    /// At `global_us`, jump the clock by `step_ms` (negative: backwards).
    pub fn step_ms(&mut self, global_us: i64, step_ms: i64) {
        *self = Skew {
            base_global_us: global_us,
            base_local_us: self.local_at(global_us) + step_ms * 1000,
            drift_ppm: self.drift_ppm,
            jumps_us: self.jumps_us + step_ms * 1000,
        };
    }

    /// From `global_us` on, run `drift_ppm` fast; local time stays continuous.
    pub fn set_drift_ppm(&mut self, global_us: i64, drift_ppm: i64) {
        *self = Skew {
            base_global_us: global_us,
            base_local_us: self.local_at(global_us),
            drift_ppm,
            jumps_us: self.jumps_us,
        };
    }

    /// At `global_us`, makes `change`. Returns the jump of the reading it made (µs; 0 for
    /// a drift).
    pub fn apply(&mut self, global_us: i64, change: ClockChange) -> i64 {
        match change {
            ClockChange::Offset(ms) => self.set_offset_ms(global_us, ms),
            ClockChange::Step(ms) => {
                self.step_ms(global_us, ms);
                ms * 1000
            }
            ClockChange::Drift(ppm) => {
                self.set_drift_ppm(global_us, ppm);
                0
            }
        }
    }

    /// How long in global time a local interval lasts, so that sleeping for the result
    /// makes the local clock advance by `local`.
    pub fn global_duration_for(&self, local: Duration) -> Duration {
        let us =
            local.as_micros() as i128 * 1_000_000 / (1_000_000 + self.drift_ppm as i128).max(1);
        Duration::from_micros(us.max(0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_step_and_drift_move_local_time_as_documented() {
        let mut c = Skew::default();
        assert_eq!(c.offset_at(1_000_000), 0);
        c.set_offset_ms(1_000_000, 200);
        assert_eq!(c.offset_at(1_000_000), 200_000);
        c.step_ms(1_000_000, -300);
        assert_eq!(c.offset_at(1_000_000), -100_000);
        // Half speed: one global second is half a local second, and a local
        // half-second takes a global second to pass.
        c.set_drift_ppm(1_000_000, -500_000);
        assert_eq!(c.local_at(2_000_000) - c.local_at(1_000_000), 500_000);
        assert_eq!(
            c.global_duration_for(Duration::from_millis(500)),
            Duration::from_millis(1000)
        );
        // Changing the drift keeps local time continuous.
        let at = c.local_at(3_000_000);
        c.set_drift_ppm(3_000_000, 0);
        assert_eq!(c.local_at(3_000_000), at);
    }

    #[test]
    fn an_offset_set_on_a_drifted_clock_jumps_by_the_difference_and_monotonic_never_jumps() {
        // 20% fast for 10 s: 2 s ahead. Setting the offset to -13 ms jumps it back
        // 2,013 ms (raft swarm seed 4586: an offset inside the bounds, a jump far beyond).
        let mut c = Skew::default();
        c.set_drift_ppm(0, 200_000);
        assert_eq!(c.offset_at(10_000_000), 2_000_000);
        assert_eq!(c.set_offset_ms(10_000_000, -13), -2_013_000);
        c.step_ms(11_000_000, 500);
        // The monotonic reading ran 20% fast all along, and jumped neither time.
        assert_eq!(c.monotonic_at(11_000_000), 11_000_000 + 2_200_000);
        assert_eq!(
            c.local_at(11_000_000),
            c.monotonic_at(11_000_000) - 2_013_000 + 500_000
        );
    }
}
