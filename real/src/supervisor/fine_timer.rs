//! A timer finer than tokio's, for the proxies' added latency.
//!
//! tokio's sleeps fire on millisecond ticks: a deadline is rounded up to the next tick, and
//! even a sleep that is already due waits for one. A proxy that delayed each chunk with
//! them added about 1.1 ms to every crossing on top of the latency it was set to
//! (measured by `proxy::tests::added_latency_is_what_was_set`: a loopback echo through a
//! proxy set to 0 ms took 2.3 ms per round trip, set to 3 ms each way 8.4 ms), which made
//! every live call slower than the simulated network it stands for.
//!
//! One thread keeps the deadlines in a heap and sleeps on a condition variable until the
//! earliest (the kernel's timer slack, tens of µs), then wakes the tasks that are due.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Instant;
use tokio::sync::oneshot;

struct Due {
    at: Instant,
    seq: u64,
    wake: oneshot::Sender<()>,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    /// Reversed, so the heap's top is the earliest deadline.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Default)]
struct Timer {
    queue: Mutex<(BinaryHeap<Due>, u64)>,
    changed: Condvar,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<&'static Timer> = OnceLock::new();
    TIMER.get_or_init(|| {
        let t: &'static Timer = Box::leak(Box::default());
        std::thread::Builder::new()
            .name("fine-timer".into())
            .spawn(move || run(t))
            .expect("spawn the fine timer thread");
        t
    })
}

fn run(t: &Timer) {
    let mut q = t.queue.lock().unwrap();
    loop {
        let now = Instant::now();
        while q.0.peek().is_some_and(|d| d.at <= now) {
            if let Some(d) = q.0.pop() {
                let _ = d.wake.send(());
            }
        }
        q = match q.0.peek().map(|d| d.at - now) {
            Some(wait) => t.changed.wait_timeout(q, wait).unwrap().0,
            None => t.changed.wait(q).unwrap(),
        };
    }
}

/// Waits until `at`, to within the kernel's timer slack; returns at once when `at` has
/// passed.
pub async fn sleep_until(at: Instant) {
    if at <= Instant::now() {
        return;
    }
    let t = timer();
    let (wake, woken) = oneshot::channel();
    {
        let mut q = t.queue.lock().unwrap();
        q.1 += 1;
        let seq = q.1;
        q.0.push(Due { at, seq, wake });
    }
    t.changed.notify_one();
    let _ = woken.await;
}
