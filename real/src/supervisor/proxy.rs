//! A TCP proxy that can be cut, mended and slowed: the network faults of a real run.
//!
//! Each node reaches etcd, the fenced resource and is reached by the load client through
//! proxies of its own, so a fault can hit one node's link alone. A **cut** stops
//! forwarding in one direction or both **without closing anything**: the proxy stops
//! reading from the sender (whose kernel buffers then fill and whose writes block) and
//! holds what it already read. That is what a partition does to TCP: calls hang until
//! their timeouts, nobody gets a reset, and when the link is **mended** the held bytes
//! are delivered, as TCP's retransmissions would deliver them. A request a client gave up
//! on may therefore still land after the mend, which is exactly the late write only the
//! fence stops. **Latency** delays every burst of bytes by a draw from the link's range,
//! in order, at µs precision (see `fine_timer.rs`).
//!
//! A new connection is accepted and connected upstream even during a cut (its bytes then
//! wait like the others). If the upstream refuses (its process is dead), the client's
//! connection is closed, as the dead process's kernel would refuse it.

use crate::ports::LOOPBACK;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Which way bytes go through a proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// From the connecting side to the upstream.
    Forward,
    /// From the upstream back to the connecting side.
    Backward,
    /// Both.
    Both,
}

impl Flow {
    fn hits(self, forward: bool) -> bool {
        match self {
            Flow::Forward => forward,
            Flow::Backward => !forward,
            Flow::Both => true,
        }
    }
}

/// The state of one direction: open or cut, and its added latency (drawn per chunk,
/// uniformly from `latency_ms_min..=latency_ms_max`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Gate {
    cut: bool,
    latency_ms_min: u64,
    latency_ms_max: u64,
}

struct Shared {
    upstream: Mutex<SocketAddr>,
    forward: watch::Sender<Gate>,
    backward: watch::Sender<Gate>,
    conns: Mutex<Vec<JoinHandle<()>>>,
    /// Armed by [`Trap::arm`]: the next bytes read forward cut the forward flow (and are
    /// held), then `struck` is notified.
    trap: AtomicBool,
    struck: Notify,
    /// Notified once the bytes the trap held were written on to the upstream.
    delivered: Notify,
    /// Connections accepted so far.
    accepted: AtomicU64,
}

/// A one-shot hold of what the connecting side sends next (a foreign node's
/// `before-write` pause, see `Supervisor::arm_pause_before_write`): once armed, the
/// next bytes read forward are held, and everything after them, until [`Trap::release`].
pub struct Trap {
    shared: Arc<Shared>,
}

impl Trap {
    /// Holds the next bytes sent forward.
    pub fn arm(&self) {
        self.shared.trap.store(true, Ordering::SeqCst);
    }

    /// No longer holds the next bytes (its pause will not strike).
    pub fn disarm(&self) {
        self.shared.trap.store(false, Ordering::SeqCst);
    }

    /// Returns once the armed trap held bytes.
    pub async fn struck(&self) {
        self.shared.struck.notified().await;
    }

    /// Delivers what the trap held, and forwards again.
    pub fn release(&self) {
        self.shared.forward.send_modify(|g| g.cut = false);
    }

    /// Returns once the bytes the trap held were written on to the upstream (after
    /// [`Trap::release`]).
    pub async fn delivered(&self) {
        self.shared.delivered.notified().await;
    }
}

/// A running proxy on 127.0.0.1. Dropping it stops it and closes its connections.
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

const CHUNK: usize = 64 * 1024;
/// Chunks read ahead of a held or slowed writer, per direction: bounds what a cut
/// buffers before the sender feels it.
const QUEUE: usize = 64;
/// Chunks read within this long of a burst's first travel with it, as one message: a
/// gRPC answer (headers, data, trailers) is often written in several pieces at once,
/// and the simulated network delays a message once, not each piece by a draw of its own
/// (the slowest of several draws is later than one draw).
const BURST: Duration = Duration::from_micros(500);

impl Proxy {
    /// Starts a proxy to `upstream` on a free loopback port.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind(SocketAddr::from((LOOPBACK, 0))).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream: Mutex::new(upstream),
            forward: watch::channel(Gate::default()).0,
            backward: watch::channel(Gate::default()).0,
            conns: Mutex::new(vec![]),
            trap: AtomicBool::new(false),
            struck: Notify::new(),
            delivered: Notify::new(),
            accepted: AtomicU64::new(0),
        });
        let s = shared.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                s.accepted.fetch_add(1, Ordering::SeqCst);
                let s2 = s.clone();
                let h = tokio::spawn(async move { serve(s2, client).await });
                let mut conns = s.conns.lock().unwrap();
                conns.retain(|h| !h.is_finished());
                conns.push(h);
            }
        });
        Ok(Proxy {
            addr,
            shared,
            accept,
        })
    }

    /// Where to connect to go through the proxy.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its one-shot hold of the next bytes sent forward.
    pub fn trap(&self) -> Trap {
        Trap {
            shared: self.shared.clone(),
        }
    }

    /// How many connections it has accepted (whether or not their upstream answered).
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Where it forwards to.
    pub fn upstream(&self) -> SocketAddr {
        *self.shared.upstream.lock().unwrap()
    }

    /// Forwards new connections to `upstream` from now on (a restarted process listens
    /// elsewhere); existing ones keep theirs.
    pub fn set_upstream(&self, upstream: SocketAddr) {
        *self.shared.upstream.lock().unwrap() = upstream;
    }

    fn update(&self, flow: Flow, f: impl Fn(&mut Gate)) {
        for (forward, tx) in [(true, &self.shared.forward), (false, &self.shared.backward)] {
            if flow.hits(forward) {
                tx.send_modify(|g| f(g));
            }
        }
    }

    /// Stops forwarding `flow` (connections stay open; bytes wait).
    pub fn cut(&self, flow: Flow) {
        self.update(flow, |g| g.cut = true);
    }

    /// Forwards `flow` again, delivering what waited.
    pub fn mend(&self, flow: Flow) {
        self.update(flow, |g| g.cut = false);
    }

    /// Delays every burst of `flow` by a latency drawn uniformly from
    /// `latency_ms_min..=latency_ms_max` at µs resolution (0, 0: none). Bursts stay in
    /// order, as TCP keeps them: one that drew less than the one before it waits for it.
    pub fn set_latency_ms(&self, flow: Flow, latency_ms_min: u64, latency_ms_max: u64) {
        let max = latency_ms_max.max(latency_ms_min);
        self.update(flow, |g| {
            g.latency_ms_min = latency_ms_min;
            g.latency_ms_max = max;
        });
    }

    /// Whether `flow`'s direction(s) are cut: (forward, backward).
    pub fn is_cut(&self) -> (bool, bool) {
        (
            self.shared.forward.borrow().cut,
            self.shared.backward.borrow().cut,
        )
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        for h in self.shared.conns.lock().unwrap().drain(..) {
            h.abort();
        }
    }
}

async fn serve(s: Arc<Shared>, client: TcpStream) {
    let upstream = *s.upstream.lock().unwrap();
    let Ok(Ok(server)) =
        tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(upstream)).await
    else {
        return; // dropping `client` closes it
    };
    let _ = server.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let fwd = pipe(cr, sw, s.forward.subscribe(), Some(s.clone()));
    let back = pipe(sr, cw, s.backward.subscribe(), None);
    tokio::pin!(fwd, back);
    // A clean EOF ends only its own direction (a half-close, passed on). A failure (a
    // reset: the process behind it died) tears the whole connection down: returning
    // drops both sockets.
    let (mut fwd_done, mut back_done) = (false, false);
    while !(fwd_done && back_done) {
        tokio::select! {
            ok = &mut fwd, if !fwd_done => { if !ok { return; } fwd_done = true; }
            ok = &mut back, if !back_done => { if !ok { return; } back_done = true; }
        }
    }
}

/// Springs the armed trap on the chunk just read, if armed: cuts the forward flow before
/// the chunk is queued (the writer holds it until the release) and says so.
fn strike(s: &Shared) -> bool {
    let armed = s.trap.swap(false, Ordering::SeqCst);
    if armed {
        s.forward.send_modify(|g| g.cut = true);
        s.struck.notify_one();
    }
    armed
}

/// Copies one direction, honouring its gate and, forward, the proxy's [`Trap`]. Returns
/// `true` when the source ended cleanly and the end was passed on, `false` when either
/// side failed.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    gate: watch::Receiver<Gate>,
    trap: Option<Arc<Shared>>,
) -> bool {
    // Each chunk with when it is due and whether the trap held it.
    let (tx, mut rx) = mpsc::channel::<(Instant, Option<Vec<u8>>, bool)>(QUEUE);
    let notify = trap.clone();
    let mut read_gate = gate.clone();
    let reader = async move {
        use rand::{Rng, SeedableRng};
        // Real mode is not deterministic anyway; the draw only needs to spread.
        let mut rng =
            rand_chacha::ChaCha8Rng::seed_from_u64(crate::run_clock::monotonic_us() as u64);
        let mut buf = vec![0u8; CHUNK];
        // The burst the last chunk belonged to: when it began and when it is due.
        let mut burst: Option<(Instant, Instant)> = None;
        loop {
            // A cut stops reading: the sender's buffers fill and its writes block.
            if read_gate.wait_for(|g| !g.cut).await.is_err() {
                return false;
            }
            let chunk = match from.read(&mut buf).await {
                Ok(0) => None,
                Ok(n) => Some(buf[..n].to_vec()),
                Err(_) => return false,
            };
            let end = chunk.is_none();
            let held = !end && trap.as_deref().is_some_and(strike);
            let (lo, hi) = {
                let g = read_gate.borrow();
                (g.latency_ms_min * 1000, g.latency_ms_max * 1000)
            };
            let now = Instant::now();
            let due = match burst {
                Some((began, due)) if now - began < BURST => due,
                _ => {
                    // At µs resolution, as the simulated network draws.
                    let delay_us = if hi > lo { rng.gen_range(lo..=hi) } else { lo };
                    let due = now + Duration::from_micros(delay_us);
                    burst = Some((now, due));
                    due
                }
            };
            if tx.send((due, chunk, held)).await.is_err() {
                return false;
            }
            if end {
                return true;
            }
        }
    };
    let mut write_gate = gate;
    let writer = async move {
        while let Some((due, chunk, held)) = rx.recv().await {
            crate::supervisor::fine_timer::sleep_until(due.into_std()).await;
            // Bytes read just before a cut wait for the mend too.
            if write_gate.wait_for(|g| !g.cut).await.is_err() {
                return false;
            }
            match chunk {
                Some(c) => {
                    if to.write_all(&c).await.is_err() {
                        return false;
                    }
                    if let Some(s) = notify.as_ref().filter(|_| held) {
                        s.delivered.notify_one();
                    }
                }
                None => {
                    let _ = to.shutdown().await;
                    return true;
                }
            }
        }
        false
    };
    tokio::pin!(reader, writer);
    let mut reader_done = false;
    loop {
        tokio::select! {
            ok = &mut reader, if !reader_done => {
                if !ok {
                    return false;
                }
                reader_done = true;
            }
            ok = &mut writer => return ok,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn echo_server() -> SocketAddr {
        let l = TcpListener::bind(SocketAddr::from((LOOPBACK, 0)))
            .await
            .unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (mut s, _) = l.accept().await.unwrap();
                let _ = s.set_nodelay(true);
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    loop {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => {
                                if s.write_all(&buf[..n]).await.is_err() {
                                    return;
                                }
                            }
                        }
                    }
                });
            }
        });
        addr
    }

    async fn round_trip(c: &mut TcpStream, msg: &[u8], within: Duration) -> Option<Vec<u8>> {
        c.write_all(msg).await.unwrap();
        let mut buf = vec![0u8; msg.len()];
        tokio::time::timeout(within, c.read_exact(&mut buf))
            .await
            .ok()
            .map(|r| {
                r.unwrap();
                buf
            })
    }

    /// A cut hangs a call instead of failing it; the mend delivers what waited, on the
    /// same connection.
    #[tokio::test]
    async fn a_cut_holds_bytes_and_a_mend_delivers_them() {
        let p = Proxy::start(echo_server().await).await.unwrap();
        let mut c = TcpStream::connect(p.addr()).await.unwrap();
        let short = Duration::from_millis(300);
        assert_eq!(round_trip(&mut c, b"one", short).await.unwrap(), b"one");
        p.cut(Flow::Both);
        assert_eq!(round_trip(&mut c, b"two", short).await, None, "a cut hangs");
        p.mend(Flow::Both);
        let mut buf = [0u8; 3];
        tokio::time::timeout(short, c.read_exact(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&buf, b"two", "held bytes delivered after the mend");
    }

    /// An armed trap holds the next bytes sent, and nothing before them; the release
    /// delivers them; a disarmed trap holds nothing.
    #[tokio::test]
    async fn a_trap_holds_the_next_bytes_until_released() {
        let p = Proxy::start(echo_server().await).await.unwrap();
        let mut c = TcpStream::connect(p.addr()).await.unwrap();
        let short = Duration::from_millis(300);
        let trap = p.trap();
        trap.arm();
        trap.disarm();
        assert_eq!(round_trip(&mut c, b"one", short).await.unwrap(), b"one");
        trap.arm();
        assert_eq!(round_trip(&mut c, b"two", short).await, None, "held");
        tokio::time::timeout(short, trap.struck()).await.unwrap();
        assert_eq!(p.is_cut(), (true, false));
        trap.release();
        tokio::time::timeout(short, trap.delivered()).await.unwrap();
        let mut buf = [0u8; 3];
        tokio::time::timeout(short, c.read_exact(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&buf, b"two", "delivered after the release");
        assert_eq!(
            round_trip(&mut c, b"six", short).await.unwrap(),
            b"six",
            "one-shot"
        );
    }

    /// A one-way cut lets the other direction flow: answers to requests already delivered
    /// still come back.
    #[tokio::test]
    async fn a_one_way_cut_holds_only_that_way() {
        let p = Proxy::start(echo_server().await).await.unwrap();
        let mut c = TcpStream::connect(p.addr()).await.unwrap();
        p.cut(Flow::Backward);
        assert_eq!(
            round_trip(&mut c, b"abc", Duration::from_millis(200)).await,
            None
        );
        assert_eq!(p.is_cut(), (false, true));
        p.mend(Flow::Backward);
        p.cut(Flow::Forward);
        let mut buf = [0u8; 3];
        tokio::time::timeout(Duration::from_millis(300), c.read_exact(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&buf, b"abc", "the echo crossed the open direction");
    }

    #[tokio::test]
    async fn latency_delays_each_direction() {
        let p = Proxy::start(echo_server().await).await.unwrap();
        let mut c = TcpStream::connect(p.addr()).await.unwrap();
        p.set_latency_ms(Flow::Both, 100, 120);
        let t0 = Instant::now();
        assert!(round_trip(&mut c, b"x", Duration::from_secs(2))
            .await
            .is_some());
        let rtt = t0.elapsed();
        assert!(rtt >= Duration::from_millis(200), "{rtt:?}");
        p.set_latency_ms(Flow::Both, 0, 0);
        let t0 = Instant::now();
        assert!(round_trip(&mut c, b"y", Duration::from_secs(2))
            .await
            .is_some());
        assert!(t0.elapsed() < Duration::from_millis(100), "latency removed");
    }

    /// A measurement, not a check (tests do not time the wall clock; run it with `cargo
    /// test -p baton-real --lib added_latency -- --ignored --nocapture` in real mode's
    /// build): the mean round trip of a 1-byte echo through a proxy, per latency setting,
    /// against the nominal 2 x mean. It fails when the proxy adds over 0.5 ms a crossing
    /// on average, as tokio's millisecond timer did (1.1 ms).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore]
    async fn added_latency_is_what_was_set() {
        let up = echo_server().await;
        for (lo, hi) in [(0, 0), (3, 3), (1, 5)] {
            let p = Proxy::start(up).await.unwrap();
            p.set_latency_ms(Flow::Both, lo, hi);
            let mut c = TcpStream::connect(p.addr()).await.unwrap();
            c.set_nodelay(true).unwrap();
            let n = 300;
            let t0 = Instant::now();
            for _ in 0..n {
                assert!(round_trip(&mut c, b"x", Duration::from_secs(2))
                    .await
                    .is_some());
            }
            let mean_ms = t0.elapsed().as_secs_f64() * 1000.0 / n as f64;
            let nominal_ms = (lo + hi) as f64;
            println!(
                "latency {lo}..{hi} ms: mean round trip {mean_ms:.3} ms, nominal {nominal_ms}"
            );
            assert!(
                mean_ms - nominal_ms < 1.0,
                "{mean_ms} ms against {nominal_ms}"
            );
        }
    }

    #[tokio::test]
    async fn a_dead_upstream_closes_the_client() {
        let dead = crate::ports::free_ports(1).unwrap()[0];
        let p = Proxy::start(SocketAddr::from((LOOPBACK, dead)))
            .await
            .unwrap();
        let mut c = TcpStream::connect(p.addr()).await.unwrap();
        let mut buf = [0u8; 1];
        let r = tokio::time::timeout(Duration::from_secs(2), c.read(&mut buf)).await;
        assert!(matches!(r, Ok(Ok(0)) | Ok(Err(_))), "{r:?}");
    }
}
