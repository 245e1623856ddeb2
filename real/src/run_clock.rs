//! One clock for every process of a run: the machine's `CLOCK_MONOTONIC`, minus an epoch.
//!
//! `CLOCK_MONOTONIC` is one counter for the whole machine: every process reads the same
//! value at the same instant, it never jumps with NTP or `date`, and it keeps running while
//! a process is stopped (SIGSTOP). The supervisor picks the run's epoch (its own reading
//! just before it starts the fleet) and passes it to every child on its command line, so
//! each process stamps its events `at_us` microseconds since that epoch and the merged
//! timeline is ordered as the events really happened, within the clock's resolution.

/// The machine's monotonic clock now, in microseconds since an arbitrary origin (boot).
pub fn monotonic_us() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC) cannot fail on Linux");
    ts.tv_sec * 1_000_000 + ts.tv_nsec / 1_000
}

/// The run's clock: the monotonic clock minus the run's epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunClock {
    epoch_us: i64,
}

impl RunClock {
    /// A run starting now.
    pub fn start() -> Self {
        RunClock {
            epoch_us: monotonic_us(),
        }
    }

    /// The clock of a run whose epoch (a `monotonic_us` reading) is `epoch_us`.
    pub fn from_epoch(epoch_us: i64) -> Self {
        RunClock { epoch_us }
    }

    /// The epoch, to hand to child processes.
    pub fn epoch_us(&self) -> i64 {
        self.epoch_us
    }

    /// Microseconds since the epoch.
    pub fn now_us(&self) -> i64 {
        monotonic_us() - self.epoch_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_time_starts_near_zero_and_moves_forward() {
        let c = RunClock::start();
        let a = c.now_us();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = c.now_us();
        assert!((0..5_000).contains(&a), "{a}");
        assert!(b - a >= 5_000, "{a} {b}");
        assert_eq!(RunClock::from_epoch(c.epoch_us()), c);
    }
}
