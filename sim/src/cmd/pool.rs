//! Runs many independent simulations on a few threads (`--jobs`), results in input
//! order, so that what a command writes never depends on how many threads ran it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `f(0), f(1), ..., f(n - 1)`, computed on `jobs` threads (at least one), in order.
/// Each worker takes the next index when it is free.
pub fn map_ordered<T: Send>(n: usize, jobs: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    map_ordered_until(n, jobs, &|| false, f)
        .into_iter()
        .map(|r| r.expect("every index ran"))
        .collect()
}

/// As [`map_ordered`], but no worker takes another index once `stop()` is true (the
/// user pressed Ctrl-C: [`crate::cmd::interrupt::stopping`]); what was already taken runs to
/// its end. An index that never ran is `None`.
pub fn map_ordered_until<T: Send>(
    n: usize,
    jobs: usize,
    stop: &(dyn Fn() -> bool + Sync),
    f: impl Fn(usize) -> T + Sync,
) -> Vec<Option<T>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..n).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                if stop() {
                    return;
                }
                let k = next.fetch_add(1, Ordering::SeqCst);
                if k >= n {
                    return;
                }
                let r = f(k);
                results.lock().unwrap()[k] = Some(r);
            });
        }
    });
    results.into_inner().unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_order_whatever_the_jobs() {
        let square = |k: usize| k * k;
        let one = map_ordered(50, 1, square);
        assert_eq!(one, (0..50).map(square).collect::<Vec<_>>());
        assert_eq!(map_ordered(50, 4, square), one);
        assert!(map_ordered(0, 2, square).is_empty());
    }

    #[test]
    fn a_stop_starts_nothing_new_and_keeps_what_finished() {
        // Stop once 10 indices have finished: each worker finishes what it took, and
        // takes nothing after.
        let done = AtomicUsize::new(0);
        let stop = || done.load(Ordering::SeqCst) >= 10;
        let r = map_ordered_until(100, 3, &stop, |k| {
            done.fetch_add(1, Ordering::SeqCst);
            k
        });
        let ran: Vec<usize> = r.iter().flatten().copied().collect();
        assert!((10..=12).contains(&ran.len()), "{}", ran.len());
        assert_eq!(ran, (0..ran.len()).collect::<Vec<_>>(), "taken in order");
        assert!(r[ran.len()..].iter().all(Option::is_none));
    }
}
