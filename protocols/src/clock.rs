//! The seam through which protocol code reads time.
//!
//! Protocols never read a global clock. Each node has its own clock, which in the
//! simulator may be offset, drift or jump; a lease deadline computed on that clock is the
//! node's own belief about when it must stop acting, which is exactly the belief that a
//! skewed clock or a pause makes wrong.

use std::time::Duration;

/// A node-local clock.
///
/// `now_us` is the node's local reading in microseconds since an arbitrary epoch. It may
/// run fast or slow or jump relative to real (or simulated global) time.
pub trait Clock: Send + Sync {
    /// The local time now, in microseconds.
    fn now_us(&self) -> i64;

    /// The node's monotonic reading now, in microseconds: it runs at the local clock's
    /// rate (drift included) but never jumps when the wall clock is set or stepped, as
    /// `CLOCK_MONOTONIC` (Go's monotonic reading, Rust's `Instant`) does not. For
    /// protocols that time their waits as their real client does, on a monotonic clock.
    fn monotonic_us(&self) -> i64;

    /// How long in global (runtime) time a local interval of `local` lasts, so that
    /// sleeping for the result makes the local clock advance by `local`.
    fn global_duration_for(&self, local: Duration) -> Duration;
}

/// A madsim sleep that arms its timer once per waker.
///
/// madsim's `Sleep` adds a timer to the runtime at every poll while it is pending, and a
/// timer is only dropped when it fires. A sleep inside a `select!` whose other branches
/// wake the task often (a leader's loop, openraft's timeouts around every RPC) piled up
/// one timer per wake-up, each firing later for nothing. This one arms the inner sleep's
/// timer on its first poll, and again only if it is polled with a waker that would not
/// wake the same task (the future moved to another task: an RPC answer first polled in
/// place, then spawned), so the timer always wakes whoever now awaits it.
#[cfg(madsim)]
pub struct Timer {
    sleep: madsim::time::Sleep,
    armed_for: Option<std::task::Waker>,
}

#[cfg(madsim)]
impl Timer {
    /// A timer that fires `global` from now (global, simulated time; at least 1 ms, as
    /// every madsim sleep).
    pub fn after(global: Duration) -> Self {
        Timer {
            sleep: madsim::time::sleep(global),
            armed_for: None,
        }
    }
}

#[cfg(madsim)]
impl std::future::Future for Timer {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.sleep.is_elapsed() {
            return std::task::Poll::Ready(());
        }
        if self
            .armed_for
            .as_ref()
            .is_none_or(|w| !w.will_wake(cx.waker()))
        {
            self.armed_for = Some(cx.waker().clone());
            return std::pin::Pin::new(&mut self.sleep).poll(cx);
        }
        std::task::Poll::Pending
    }
}

/// A real sleep (the build without `--cfg madsim`, over tokio's timer): tokio arms its
/// timer once and keeps it across polls, so nothing needs working around here.
#[cfg(not(madsim))]
pub struct Timer {
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
}

#[cfg(not(madsim))]
impl Timer {
    /// A timer that fires `global` from now (the OS's monotonic time).
    pub fn after(global: Duration) -> Self {
        Timer {
            sleep: Box::pin(tokio::time::sleep(global)),
        }
    }
}

#[cfg(not(madsim))]
impl std::future::Future for Timer {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        self.sleep.as_mut().poll(cx)
    }
}

/// Sleeps until this clock has advanced by `local`.
///
/// A step of the clock during the sleep is not seen until the sleep ends; callers that
/// wait for a deadline re-check it afterwards (see [`sleep_until_local`]).
pub async fn sleep_local(clock: &dyn Clock, local: Duration) {
    Timer::after(clock.global_duration_for(local)).await;
}

/// Waits a cost drawn uniformly from `[min, max]` ms at µs resolution from `rng` (a
/// disk's fsync, a commit's flush), on `clock`; a draw of 0 waits nothing.
pub async fn sleep_drawn(
    clock: &dyn Clock,
    rng: &std::sync::Mutex<rand_chacha::ChaCha8Rng>,
    [lo, hi]: [u64; 2],
) {
    use rand::Rng;
    let us = rng.lock().unwrap().gen_range(lo * 1000..=hi.max(lo) * 1000);
    if us > 0 {
        sleep_local(clock, Duration::from_micros(us)).await;
    }
}

/// Sleeps until the local clock reads at least `deadline_us`.
pub async fn sleep_until_local(clock: &dyn Clock, deadline_us: i64) {
    loop {
        let now = clock.now_us();
        if now >= deadline_us {
            return;
        }
        // Sleep at least 1 ms: madsim's timer granularity, and it bounds the loop.
        let left = Duration::from_micros((deadline_us - now) as u64).max(Duration::from_millis(1));
        sleep_local(clock, left).await;
    }
}
