//! The count of requests a protocol's backend served, over simulated time.
//!
//! A total alone says how busy a backend was on average; a thundering herd shows only
//! in time: every waiter asking at once in the second after the leader dies. So the
//! counter also keeps how many requests came in each 100 ms of the run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

pub use baton_model::BUCKET_US;

/// Requests served: the total, and per 100 ms of simulated time.
#[derive(Default)]
pub struct RequestCounter {
    total: AtomicU64,
    buckets: Mutex<Vec<u64>>,
}

impl RequestCounter {
    /// Counts `n` requests served now. (The signature of `AtomicU64::fetch_add`, which
    /// the services called before.)
    pub fn fetch_add(&self, n: u64, order: Ordering) -> u64 {
        let at = (crate::world::clock::global_now_us().max(0) / BUCKET_US) as usize;
        let mut b = self.buckets.lock().unwrap();
        if b.len() <= at {
            b.resize(at + 1, 0);
        }
        b[at] += n;
        self.total.fetch_add(n, order)
    }

    /// The total so far.
    pub fn load(&self, order: Ordering) -> u64 {
        self.total.load(order)
    }

    /// Requests per 100 ms bucket, from the start of the run.
    pub fn by_bucket(&self) -> Vec<u64> {
        self.buckets.lock().unwrap().clone()
    }
}
