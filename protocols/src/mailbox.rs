//! A one-slot mailbox for a request from another node that must interrupt a wait: a
//! transferring leader asking a queued waiter to requeue, or telling its successor to
//! try for the seat now.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::Notify;

/// A request that stays posted until the waiter reads it, and wakes it if it waits.
#[derive(Default)]
pub struct Mailbox {
    asked: AtomicBool,
    notify: Notify,
}

impl Mailbox {
    /// Posts the request (read at the owner's next wait, or now if it is waiting).
    pub fn ask(&self) {
        self.asked.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Forgets a posted request.
    pub fn clear(&self) {
        self.asked.store(false, Ordering::SeqCst);
    }

    /// Runs `fut` unless the request is posted first (then `None`, the request read).
    pub async fn unless_asked<F: Future>(&self, fut: F) -> Option<F::Output> {
        let notified = self.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if self.asked.swap(false, Ordering::SeqCst) {
            return None;
        }
        tokio::select! {
            // Biased: tokio would otherwise pick among ready branches with its own RNG,
            // which madsim does not seed.
            biased;
            _ = notified => {
                self.asked.store(false, Ordering::SeqCst);
                None
            }
            r = fut => Some(r),
        }
    }
}
