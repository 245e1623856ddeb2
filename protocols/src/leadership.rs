//! A won leadership: its fencing token and the signal to stop acting.

use crate::clock::{sleep_until_local, Clock};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// Why a leadership ended, as the node itself learned it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossReason {
    /// Still held.
    None = 0,
    /// The lease deadline passed on the node's own clock.
    DeadlinePassed = 1,
    /// The backend said the lease or key is gone.
    Revoked = 2,
    /// The node resigned.
    Resigned = 3,
    /// A protected write was rejected by the fenced resource.
    Fenced = 4,
    /// The node handed its leadership to a designated successor (a transfer).
    Transferred = 5,
    /// A renewal got no answer in time or failed, and the protocol stops at the first
    /// (the Redis lock's `stop_at_failed_renewal`: redis-py's `reacquire()` raising).
    RenewalFailed = 6,
}

impl LossReason {
    fn from_u8(v: u8) -> Self {
        match v {
            1 => LossReason::DeadlinePassed,
            2 => LossReason::Revoked,
            3 => LossReason::Resigned,
            4 => LossReason::Fenced,
            5 => LossReason::Transferred,
            6 => LossReason::RenewalFailed,
            _ => LossReason::None,
        }
    }

    /// A short stable name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            LossReason::None => "none",
            LossReason::DeadlinePassed => "deadline_passed",
            LossReason::Revoked => "revoked",
            LossReason::Resigned => "resigned",
            LossReason::Fenced => "fenced",
            LossReason::Transferred => "transferred",
            LossReason::RenewalFailed => "renewal_failed",
        }
    }
}

/// Shared state between an elector's background work (keepalive) and the node.
struct State {
    clock: Arc<dyn Clock>,
    deadline_us: AtomicI64,
    honour_deadline: bool,
    lost: AtomicBool,
    reason: AtomicU8,
    changed: Notify,
    /// The combination canary (`etcd-lease.canary = "fence-retry-when-cut-off"`): once a
    /// renewal has failed, a fencing rejection is answered by one retry under the
    /// resource's `max_token`. Never set by an honest protocol.
    fence_retry_canary: AtomicBool,
    /// A renewal of this lease failed (timed out or was refused by the network).
    renewal_failed: AtomicBool,
    /// The canary's one retry has been spent.
    fence_retry_spent: AtomicBool,
    /// The release-in-flight canary (`etcd-lease.canary` or `raft.canary` =
    /// `"release-in-flight"`): asked to step down, the node lets the grant go at once,
    /// with a protected write still in flight. Never set by an honest protocol.
    release_in_flight_canary: AtomicBool,
    /// When (local µs) something ended it ([`LeaseHandle::end`]); `i64::MIN` until then.
    ended_at_us: AtomicI64,
}

/// A leadership held by this node.
///
/// Cloning shares the same state. The elector keeps a [`LeaseHandle`] to extend or end it.
#[derive(Clone)]
pub struct Leadership {
    /// The fencing token every protected write carries.
    pub token: u64,
    state: Arc<State>,
}

/// The elector's side of a leadership (or of a lease that is still campaigning).
#[derive(Clone)]
pub struct LeaseHandle {
    state: Arc<State>,
}

impl LeaseHandle {
    /// A lease believed valid until `deadline_us` on `clock`.
    ///
    /// `honour_deadline = false` builds a leadership that its deadline does not end: the
    /// protocol ends it itself, later (etcd-lease's `local_deadline = "session-done"`,
    /// the Redis lock's `stop_at_deadline = false`), or never (a canary for the checkers).
    pub fn new(clock: Arc<dyn Clock>, deadline_us: i64, honour_deadline: bool) -> Self {
        LeaseHandle {
            state: Arc::new(State {
                clock,
                deadline_us: AtomicI64::new(deadline_us),
                honour_deadline,
                lost: AtomicBool::new(false),
                reason: AtomicU8::new(0),
                changed: Notify::new(),
                fence_retry_canary: AtomicBool::new(false),
                renewal_failed: AtomicBool::new(false),
                fence_retry_spent: AtomicBool::new(false),
                release_in_flight_canary: AtomicBool::new(false),
                ended_at_us: AtomicI64::new(i64::MIN),
            }),
        }
    }

    /// Moves the deadline later (never earlier: a late renewal answer must not shorten it).
    ///
    /// Waiters are not woken: one waiting for the end wakes at the deadline it last read,
    /// finds the leadership still valid and waits for the new one. Waking them at every
    /// renewal (raft renews at every acknowledged heartbeat) cost a wake-up and a timer
    /// per renewal for nothing.
    pub fn extend_to(&self, deadline_us: i64) {
        self.state
            .deadline_us
            .fetch_max(deadline_us, Ordering::SeqCst);
    }

    /// Arms the combination canary on this lease: after a failed renewal, the leadership
    /// answers one fencing rejection by retrying under the resource's `max_token`
    /// ([`Leadership::retry_token_after_rejection`]). A deliberately broken variant, for
    /// proving that search and shrink find failures that need two faults at once.
    pub fn arm_fence_retry_canary(&self) {
        self.state.fence_retry_canary.store(true, Ordering::SeqCst);
    }

    /// Arms the release-in-flight canary on this lease: a leader asked to step down lets
    /// its grant go without waiting for its protected write in flight
    /// ([`Leadership::drains_writes_before_release`]). A deliberately broken variant, for
    /// proving that protocol safety counts a write in flight as the leader acting.
    pub fn arm_release_in_flight_canary(&self) {
        self.state
            .release_in_flight_canary
            .store(true, Ordering::SeqCst);
    }

    /// Records that a renewal failed (no answer in time). Honest protocols only extend
    /// nothing then; the combination canary remembers it.
    pub fn note_renewal_failed(&self) {
        self.state.renewal_failed.store(true, Ordering::SeqCst);
    }

    /// Ends the lease for `reason`; the first reason given sticks.
    pub fn end(&self, reason: LossReason) {
        if !self.state.lost.swap(true, Ordering::SeqCst) {
            self.state.reason.store(reason as u8, Ordering::SeqCst);
            let now = self.state.clock.now_us();
            let _ = self.state.ended_at_us.compare_exchange(
                i64::MIN,
                now,
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
        }
        self.state.changed.notify_waiters();
    }

    /// True while the lease is held by the node's own judgement.
    pub fn valid(&self) -> bool {
        valid(&self.state)
    }

    /// The current local deadline in microseconds.
    pub fn deadline_us(&self) -> i64 {
        self.state.deadline_us.load(Ordering::SeqCst)
    }

    /// Turns the lease into a leadership carrying `token`.
    pub fn leadership(&self, token: u64) -> Leadership {
        Leadership {
            token,
            state: self.state.clone(),
        }
    }

    /// Resolves once the lease is no longer valid; records the deadline as the reason if it
    /// was the clock that ended it.
    pub async fn expired(&self) {
        wait_lost(&self.state).await
    }

    /// Sleeps `local` on `clock` unless the lease ends first; returns whether it is still
    /// valid. The wait every renewal loop makes between renewals.
    pub async fn sleep_while_valid(&self, clock: &dyn Clock, local: std::time::Duration) -> bool {
        tokio::select! {
            // Biased: tokio would otherwise pick among ready branches with its own RNG, which
            // madsim does not seed; polling in written order keeps runs deterministic.
            biased;
            _ = self.expired() => false,
            _ = crate::clock::sleep_local(clock, local) => true,
        }
    }
}

fn valid(s: &State) -> bool {
    if s.lost.load(Ordering::SeqCst) {
        return false;
    }
    if s.honour_deadline && s.clock.now_us() >= s.deadline_us.load(Ordering::SeqCst) {
        return false;
    }
    true
}

async fn wait_lost(s: &Arc<State>) {
    loop {
        let notified = s.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if !valid(s) {
            if !s.lost.load(Ordering::SeqCst) {
                // Only the clock can have ended it.
                if !s.lost.swap(true, Ordering::SeqCst) {
                    s.reason
                        .store(LossReason::DeadlinePassed as u8, Ordering::SeqCst);
                }
            }
            return;
        }
        let deadline = s.deadline_us.load(Ordering::SeqCst);
        if s.honour_deadline {
            tokio::select! {
                // Biased: tokio would otherwise pick among ready branches with its own RNG, which
                // madsim does not seed; polling in written order keeps runs deterministic.
                biased;
                _ = notified => {}
                _ = sleep_until_local(s.clock.as_ref(), deadline) => {}
            }
        } else {
            notified.await;
        }
    }
}

impl Leadership {
    /// Whether the node, asked to step down, waits until its protected write in flight
    /// is answered or given up before it lets the grant go: true for every honest
    /// protocol, false under the release-in-flight canary.
    pub fn drains_writes_before_release(&self) -> bool {
        !self.state.release_in_flight_canary.load(Ordering::SeqCst)
    }

    /// True while this node may do protected writes by its own judgement: not revoked and
    /// (for honest protocols) the lease deadline not yet passed on its own clock.
    ///
    /// Checked immediately before every protected write. A pause between this check and
    /// the write is exactly the hazard fencing exists for.
    pub fn acting(&self) -> bool {
        valid(&self.state)
    }

    /// True while [`Leadership::acting`] holds and, for honest protocols, at least
    /// `margin_us` are left before the lease deadline on the node's own clock: a write
    /// begun now lands before the deadline if it takes less than that.
    pub fn acting_with_margin(&self, margin_us: i64) -> bool {
        let s = &self.state;
        valid(s)
            && !(s.honour_deadline
                && s.clock.now_us() + margin_us >= s.deadline_us.load(Ordering::SeqCst))
    }

    /// Resolves when the node must stop acting.
    pub async fn lost(&self) {
        wait_lost(&self.state).await
    }

    /// Ends the leadership from the node's side (resign, or a fenced rejection).
    pub fn end(&self, reason: LossReason) {
        LeaseHandle {
            state: self.state.clone(),
        }
        .end(reason)
    }

    /// Why the leadership ended, or [`LossReason::None`] while it holds.
    pub fn loss_reason(&self) -> LossReason {
        if !self.state.lost.load(Ordering::SeqCst) && !valid(&self.state) {
            return LossReason::DeadlinePassed;
        }
        LossReason::from_u8(self.state.reason.load(Ordering::SeqCst))
    }

    /// What to do when the resource rejects a write with `max_token`: `None` (stop; every
    /// honest protocol) or `Some(token)`, a token to retry the write under once.
    ///
    /// Only the combination canary answers `Some`: the bug it plants is "a leader that
    /// could not reach its lease service trusts the resource instead, adopts its
    /// `max_token` and writes once more". It needs a failed renewal (a partition from the
    /// backend, a lossy or slow network) and a rejection (the leader kept acting past a
    /// new leader's first write: a pause before a write, or a slow clock) in the same
    /// leadership, so neither fault alone trips it.
    pub fn retry_token_after_rejection(&self, max_token: u64) -> Option<u64> {
        let s = &self.state;
        if s.fence_retry_canary.load(Ordering::SeqCst)
            && s.renewal_failed.load(Ordering::SeqCst)
            && !s.fence_retry_spent.swap(true, Ordering::SeqCst)
        {
            Some(max_token)
        } else {
            None
        }
    }

    /// How long ago, on the node's clock (µs), the leadership ended in the node's own
    /// view: its deadline passed (for an honest protocol) or something ended it; `None`
    /// while it holds. The node notices only at its next check, after a protected write
    /// in flight has finished: this is the instant its belief really ended, for the
    /// record of its stop.
    pub fn ended_ago_us(&self) -> Option<i64> {
        let s = &self.state;
        let now = s.clock.now_us();
        let by_deadline = (s.honour_deadline && now >= s.deadline_us.load(Ordering::SeqCst))
            .then(|| now - s.deadline_us.load(Ordering::SeqCst));
        let ended = s.ended_at_us.load(Ordering::SeqCst);
        let by_end = (ended != i64::MIN).then(|| now - ended);
        by_deadline.max(by_end)
    }

    /// When its belief ended, on the timeline whose present is `now_us`, if that was
    /// before now (see [`Leadership::ended_ago_us`]); `None` if it ends now or holds.
    pub fn lost_at_us(&self, now_us: i64) -> Option<i64> {
        self.ended_ago_us()
            .filter(|ago| *ago > 0)
            .map(|ago| now_us - ago)
    }

    /// Local time left on the lease, in milliseconds (0 once passed).
    pub fn lease_remaining_ms(&self) -> u64 {
        let left = self.state.deadline_us.load(Ordering::SeqCst) - self.state.clock.now_us();
        (left.max(0) / 1000) as u64
    }
}
