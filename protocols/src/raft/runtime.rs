//! openraft's [`AsyncRuntime`] mapped onto madsim, with each node's own clock and RNG.
//!
//! openraft's built-in Tokio runtime panics inside madsim ("no reactor running"), so
//! openraft runs on this one instead: tasks are madsim tasks (they die with the node on a
//! kill), sleeps and timeouts are madsim timers, [`NodeInstant`] reads the node's own
//! (possibly skewed) [`Clock`], and `thread_rng` is the node's seeded ChaCha8 stream, so
//! the election timeouts openraft draws are reproducible.
//!
//! openraft asks for `Instant::now()` and `thread_rng()` as free functions, with no
//! handle to pass a clock through. The runtime therefore keeps a per-thread table from
//! madsim node to that node's clock and RNG, filled by [`register`] when a node builds its
//! Raft instance (again after a restart). The table is per thread because one simulation
//! runs on one thread; it is only ever looked up by node, never iterated, so it cannot
//! leak order into a run. It holds no protocol state: what survives a restart (the log
//! and vote) lives in [`super::store::RaftDisk`], owned by the world.
//!
//! In the real build (without `--cfg madsim`) madsim's tasks and timers are tokio's, and
//! a process is one node: [`register`] keeps its clock and RNG for the whole process.

use crate::clock::{sleep_local, sleep_until_local, Clock, Timer};
use openraft::async_runtime::AsyncOneshotSendExt;
use openraft::{AsyncRuntime, Instant};
use rand::RngCore;
use rand_chacha::ChaCha8Rng;
use std::future::Future;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

struct NodeRt {
    clock: Arc<dyn Clock>,
    rng: Arc<Mutex<ChaCha8Rng>>,
}

#[cfg(madsim)]
thread_local! {
    static NODES: std::cell::RefCell<std::collections::HashMap<madsim::task::NodeId, Arc<NodeRt>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// Makes `clock` and `rng` the time and randomness openraft sees on the current madsim
/// node (replacing what an earlier incarnation registered).
#[cfg(madsim)]
pub fn register(clock: Arc<dyn Clock>, rng: ChaCha8Rng) {
    let rt = Arc::new(NodeRt {
        clock,
        rng: Arc::new(Mutex::new(rng)),
    });
    NODES.with(|n| n.borrow_mut().insert(madsim::plugin::node(), rt));
}

#[cfg(madsim)]
fn current() -> Arc<NodeRt> {
    let node = madsim::plugin::node();
    NODES.with(|n| {
        n.borrow()
            .get(&node)
            .cloned()
            .expect("openraft runs only on a node that called raft::runtime::register")
    })
}

/// The process's node, in the real build.
#[cfg(not(madsim))]
static NODE: Mutex<Option<Arc<NodeRt>>> = Mutex::new(None);

/// Makes `clock` and `rng` the time and randomness openraft sees in this process.
#[cfg(not(madsim))]
pub fn register(clock: Arc<dyn Clock>, rng: ChaCha8Rng) {
    *NODE.lock().unwrap() = Some(Arc::new(NodeRt {
        clock,
        rng: Arc::new(Mutex::new(rng)),
    }));
}

#[cfg(not(madsim))]
fn current() -> Arc<NodeRt> {
    NODE.lock()
        .unwrap()
        .clone()
        .expect("openraft runs only in a process that called raft::runtime::register")
}

/// A timeout that ran out (madsim's and tokio's own are not constructible here alike).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Elapsed;

impl std::fmt::Display for Elapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

/// A point in time on the current node's own clock, in local microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NodeInstant(pub i64);

impl Add<Duration> for NodeInstant {
    type Output = NodeInstant;
    fn add(self, d: Duration) -> NodeInstant {
        NodeInstant(self.0 + d.as_micros() as i64)
    }
}

impl AddAssign<Duration> for NodeInstant {
    fn add_assign(&mut self, d: Duration) {
        self.0 += d.as_micros() as i64;
    }
}

impl Sub<Duration> for NodeInstant {
    type Output = NodeInstant;
    fn sub(self, d: Duration) -> NodeInstant {
        NodeInstant(self.0 - d.as_micros() as i64)
    }
}

impl SubAssign<Duration> for NodeInstant {
    fn sub_assign(&mut self, d: Duration) {
        self.0 -= d.as_micros() as i64;
    }
}

impl Sub<NodeInstant> for NodeInstant {
    type Output = Duration;
    fn sub(self, o: NodeInstant) -> Duration {
        // A clock stepped backwards gives a negative span; openraft expects none.
        Duration::from_micros((self.0 - o.0).max(0) as u64)
    }
}

impl Instant for NodeInstant {
    fn now() -> Self {
        NodeInstant(current().clock.now_us())
    }
}

/// The node's seeded RNG, as openraft's "thread-local" RNG.
pub struct NodeRng(Arc<Mutex<ChaCha8Rng>>);

impl RngCore for NodeRng {
    fn next_u32(&mut self) -> u32 {
        self.0.lock().unwrap().next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.0.lock().unwrap().next_u64()
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.lock().unwrap().fill_bytes(dest)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.0.lock().unwrap().try_fill_bytes(dest)
    }
}

/// A one-shot sender in the shape openraft wants.
pub struct OneshotSender<T>(tokio::sync::oneshot::Sender<T>);

impl<T> std::fmt::Debug for OneshotSender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OneshotSender")
    }
}

impl<T: Send> AsyncOneshotSendExt<T> for OneshotSender<T> {
    fn send(self, t: T) -> Result<(), T> {
        self.0.send(t)
    }
}

/// A future bounded by a madsim timer (the local span already converted to global). The
/// timer is armed once ([`Timer`]), though the future is polled at its every wake-up.
pub struct NodeTimeout<T> {
    fut: Pin<Box<T>>,
    sleep: Timer,
}

impl<T> NodeTimeout<T> {
    fn new(global: Duration, fut: T) -> Self {
        NodeTimeout {
            fut: Box::pin(fut),
            sleep: Timer::after(global),
        }
    }
}

impl<T: Future> Future for NodeTimeout<T> {
    type Output = Result<T::Output, Elapsed>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // The future first, as tokio's timeout does: a result ready at the deadline wins.
        if let Poll::Ready(v) = self.fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match Pin::new(&mut self.sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A sleep on the node's clock.
pub type NodeSleep = Pin<Box<dyn Future<Output = ()> + Send + Sync>>;

/// openraft's runtime on madsim.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MadsimRuntime;

impl AsyncRuntime for MadsimRuntime {
    type JoinError = madsim::task::JoinError;
    type JoinHandle<T: Send + 'static> = madsim::task::JoinHandle<T>;
    type Sleep = NodeSleep;
    type Instant = NodeInstant;
    type TimeoutError = Elapsed;
    type Timeout<R, T: Future<Output = R> + Send> = NodeTimeout<T>;
    type ThreadLocalRng = NodeRng;
    type OneshotSender<T: Send> = OneshotSender<T>;
    type OneshotReceiverError = tokio::sync::oneshot::error::RecvError;
    type OneshotReceiver<T: Send> = tokio::sync::oneshot::Receiver<T>;

    fn spawn<T>(future: T) -> Self::JoinHandle<T::Output>
    where
        T: Future + Send + 'static,
        T::Output: Send + 'static,
    {
        madsim::task::spawn(future)
    }

    fn sleep(duration: Duration) -> Self::Sleep {
        let clock = current().clock.clone();
        Box::pin(async move { sleep_local(clock.as_ref(), duration).await })
    }

    fn sleep_until(deadline: NodeInstant) -> Self::Sleep {
        let clock = current().clock.clone();
        Box::pin(async move { sleep_until_local(clock.as_ref(), deadline.0).await })
    }

    fn timeout<R, F: Future<Output = R> + Send>(
        duration: Duration,
        future: F,
    ) -> Self::Timeout<R, F> {
        let global = current().clock.global_duration_for(duration);
        NodeTimeout::new(global, future)
    }

    fn timeout_at<R, F: Future<Output = R> + Send>(
        deadline: NodeInstant,
        future: F,
    ) -> Self::Timeout<R, F> {
        let clock = current().clock.clone();
        let left = Duration::from_micros((deadline.0 - clock.now_us()).max(0) as u64);
        NodeTimeout::new(clock.global_duration_for(left), future)
    }

    fn is_panic(join_error: &Self::JoinError) -> bool {
        join_error.is_panic()
    }

    fn thread_rng() -> Self::ThreadLocalRng {
        NodeRng(current().rng.clone())
    }

    fn oneshot<T: Send>() -> (Self::OneshotSender<T>, Self::OneshotReceiver<T>) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (OneshotSender(tx), rx)
    }
}
