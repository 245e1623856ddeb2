//! Baton's simulated network: addresses, latency, loss and cut links, carried on madsim's
//! clock and tasks but not on madsim's own `net` module.
//!
//! Why not madsim's endpoints: every madsim send and every receive sleeps for a random
//! delay that madsim rounds up to 1 ms, and its RPC handler is one receive loop per
//! request type. A node therefore accepted at most one request of a kind per simulated
//! millisecond, and each message cost three timers, two task wake-ups and a spawned
//! task. Here a message costs one heap entry at its destination and at most one timer:
//! each socket keeps the messages in flight to it ordered by arrival time, and one task
//! per socket (on the socket's node) sleeps until the earliest and handles everything due
//! in one go. No receive path is capped.
//!
//! The model, as madsim's: a message leaves at once and arrives after a latency drawn
//! uniformly from the configured range (microsecond resolution); it is lost with the
//! configured probability, or if the link from its sender's node to its receiver's node
//! is cut when it is sent; it goes to the socket bound at the destination address when it
//! is sent, and is dropped if that socket has closed by the time it arrives (its node was
//! killed). A paused node's socket task does not run, so what reaches it is handled when
//! it resumes. Messages to one socket are handled in arrival order, ties in send order.
//! Draws come from the run's seed, forked for the network (`seed::fork(seed, "net")`).
//!
//! Two ways to talk: an RPC ([`Endpoint::call_timeout`], answered by a handler added with
//! [`Endpoint::add_rpc_handler`]) and a one-way message ([`Endpoint::send`], handled by
//! [`Endpoint::add_message_handler`]), which the sequencer load uses so that it costs no
//! timer and no task per request.

use madsim::plugin::{self, Simulator};
use madsim::rand::GlobalRng;
use madsim::task::NodeId;
use madsim::time::TimeHandle;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::any::Any;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// A request that expects one reply of type `Response`.
pub trait Request: Send + 'static {
    /// The reply.
    type Response: Send + 'static;
    /// A unique tag for the request type (see [`tag_of`]).
    const ID: u64;
}

/// A one-way message.
pub trait Message: Send + 'static {
    /// A unique tag for the message type (see [`tag_of`]).
    const ID: u64;
}

/// A stable tag for a message type's name: FNV-1a, so it is the same on every platform
/// and Rust version.
pub const fn tag_of(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    h
}

type Body = Box<dyn Any + Send>;
type BoxFuture = Pin<Box<dyn Future<Output = Body> + Send>>;
type RpcHandler = Box<dyn FnMut(Body) -> BoxFuture + Send>;
type MessageHandler = Box<dyn FnMut(Body, SocketAddr) + Send>;

enum Packet {
    Call { tag: u64, call: u64, body: Body },
    Reply { call: u64, body: Body },
    OneWay { tag: u64, body: Body },
}

struct InFlight {
    at: Instant,
    seq: u64,
    from: SocketAddr,
    packet: Packet,
}

impl PartialEq for InFlight {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for InFlight {}
impl PartialOrd for InFlight {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for InFlight {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// Latency and loss for every message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkConfig {
    /// Shortest one-way latency, in microseconds.
    pub latency_us_min: u64,
    /// Longest one-way latency, in microseconds (inclusive).
    pub latency_us_max: u64,
    /// Probability of losing a message, in parts per million.
    pub loss_ppm: u64,
}

struct Routing {
    config: LinkConfig,
    rng: Option<ChaCha8Rng>,
    /// Open sockets by address. A BTreeMap so that closing a node's sockets wakes their
    /// tasks in address order.
    bound: BTreeMap<SocketAddr, Arc<Socket>>,
    /// Cut links between nodes, sender first (membership only).
    cut: BTreeSet<(NodeId, NodeId)>,
    /// Slow links, sender first: the latency range (µs) that replaces the network's.
    slow: BTreeMap<(NodeId, NodeId), (u64, u64)>,
    /// Send order, to break ties between equal arrival times.
    seq: u64,
    /// Messages that entered the network (neither cut nor lost).
    messages: u64,
    /// Stream packets held by a cut link, sender's and receiver's nodes first, sent on
    /// when it is mended (in the order they were held).
    held: Vec<Held>,
}

impl Routing {
    /// The network's generator: `seed::fork(seed, "net")`.
    fn rng(&mut self) -> &mut ChaCha8Rng {
        self.rng.get_or_insert_with(|| {
            baton_model::seed::fork(madsim::runtime::Handle::current().seed(), "net")
        })
    }

    /// Whether a packet from `from` to `to` travels on a stream (either end is one).
    fn is_stream(&self, to: &Socket, from: SocketAddr) -> bool {
        to.stream || self.bound.get(&from).is_some_and(|s| s.stream)
    }
}

/// A stream packet a cut link holds.
struct Held {
    link: (NodeId, NodeId),
    to: Arc<Socket>,
    from: SocketAddr,
    packet: Packet,
}

/// How long a lost stream packet takes more: Linux's least TCP retransmission timeout.
const RETRANSMIT_US: u64 = 200_000;

/// The network of one run: a madsim plugin, so that killing a node closes its sockets.
pub struct Net {
    routing: Mutex<Routing>,
    time: TimeHandle,
    /// The last call number given out. One count for the whole network, not one per
    /// socket: a node restarted binds its address again, and a late reply to a call of
    /// its previous life must not match a call of this one (it finds no pending call and
    /// is dropped, as a reply to a closed connection is).
    last_call: std::sync::atomic::AtomicU64,
}

impl Simulator for Net {
    fn new(_rand: &GlobalRng, time: &TimeHandle, _config: &madsim::Config) -> Self {
        Net {
            routing: Mutex::new(Routing {
                config: LinkConfig {
                    latency_us_min: 1000,
                    latency_us_max: 5000,
                    loss_ppm: 0,
                },
                rng: None,
                bound: BTreeMap::new(),
                cut: BTreeSet::new(),
                slow: BTreeMap::new(),
                seq: 0,
                messages: 0,
                held: Vec::new(),
            }),
            time: time.clone(),
            last_call: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn reset_node(&self, id: NodeId) {
        let closing: Vec<Arc<Socket>> = {
            let mut r = self.routing.lock().unwrap();
            let addrs: Vec<SocketAddr> = r
                .bound
                .iter()
                .filter(|(_, s)| s.node == id)
                .map(|(a, _)| *a)
                .collect();
            addrs.iter().filter_map(|a| r.bound.remove(a)).collect()
        };
        for s in closing {
            s.close();
        }
    }
}

impl Net {
    /// The network of the current runtime.
    pub fn current() -> Arc<Net> {
        plugin::simulator::<Net>()
    }

    /// A runtime for `seed` with this network in it: what every run (and any test that
    /// builds its own runtime) starts from. The network draws from
    /// `seed::fork(seed, "net")` and starts with 1-5 ms latency and no loss.
    pub fn runtime(seed: u64) -> madsim::runtime::Runtime {
        let runtime =
            madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
        runtime.add_simulator::<Net>();
        runtime
    }

    /// Sets latency and loss for every message sent from now on.
    pub fn set_config(&self, config: LinkConfig) {
        self.routing.lock().unwrap().config = config;
    }

    /// Cuts the link from node `a` to node `b`: messages sent on it from now on are lost.
    pub fn cut(&self, a: NodeId, b: NodeId) {
        self.routing.lock().unwrap().cut.insert((a, b));
    }

    /// Restores the link from node `a` to node `b`; the stream packets it held go on
    /// now, to sockets still open.
    pub fn mend(&self, a: NodeId, b: NodeId) {
        let held = {
            let mut r = self.routing.lock().unwrap();
            r.cut.remove(&(a, b));
            let (go, stay) = std::mem::take(&mut r.held)
                .into_iter()
                .partition(|h| h.link == (a, b));
            r.held = stay;
            go
        };
        for h in held {
            self.enter(h.link.0, h.to, h.from, h.packet, 0);
        }
    }

    /// Slows the link from node `a` to node `b`: its messages take a latency drawn from
    /// `latency_us` (inclusive) from now on; `None` restores the network's.
    pub fn slow(&self, a: NodeId, b: NodeId, latency_us: Option<(u64, u64)>) {
        let mut r = self.routing.lock().unwrap();
        match latency_us {
            Some(range) => r.slow.insert((a, b), range),
            None => r.slow.remove(&(a, b)),
        };
    }

    /// Whether a connection to `dst` is refused: nothing listens there (its process is
    /// dead), so a TCP client would get a reset at once rather than silence.
    pub fn refuses(&self, dst: SocketAddr) -> bool {
        !self.routing.lock().unwrap().bound.contains_key(&dst)
    }

    /// Messages that entered the network so far (not counting those cut or lost).
    pub fn messages(&self) -> u64 {
        self.routing.lock().unwrap().messages
    }

    fn bind(&self, addr: SocketAddr, node: NodeId, stream: bool) -> Result<Arc<Socket>, AddrInUse> {
        let mut r = self.routing.lock().unwrap();
        if r.bound.contains_key(&addr) {
            return Err(AddrInUse(addr));
        }
        let socket = Arc::new(Socket {
            node,
            addr,
            stream,
            state: Mutex::new(SocketState::default()),
            handlers: Mutex::new(Handlers::default()),
        });
        r.bound.insert(addr, socket.clone());
        Ok(socket)
    }

    fn unbind(&self, socket: &Arc<Socket>) {
        let mut r = self.routing.lock().unwrap();
        if r.bound
            .get(&socket.addr)
            .is_some_and(|s| Arc::ptr_eq(s, socket))
        {
            r.bound.remove(&socket.addr);
        }
    }

    /// Puts `packet` on the wire from `from` (on node `node`) to `dst`. A stream's
    /// packet (one of whose ends is a stream socket, as TCP's are) is never lost: a cut
    /// link holds it until it is mended, and a loss costs it a retransmission timeout.
    fn send(&self, node: NodeId, from: SocketAddr, dst: SocketAddr, packet: Packet) {
        let (to, delay_us) = {
            let mut r = self.routing.lock().unwrap();
            let Some(to) = r.bound.get(&dst).cloned() else {
                return;
            };
            if r.cut.contains(&(node, to.node)) {
                if r.is_stream(&to, from) {
                    let link = (node, to.node);
                    r.held.push(Held {
                        link,
                        to,
                        from,
                        packet,
                    });
                }
                return;
            }
            let loss_ppm = r.config.loss_ppm;
            let lost = loss_ppm > 0 && r.rng().gen_range(0..1_000_000) < loss_ppm;
            match (lost, lost && r.is_stream(&to, from)) {
                (true, false) => return,
                (true, true) => (to, RETRANSMIT_US),
                _ => (to, 0),
            }
        };
        self.enter(node, to, from, packet, delay_us);
    }

    /// Puts `packet` from node `node` in flight to `to` with the link's latency plus
    /// `delay_us`.
    fn enter(
        &self,
        node: NodeId,
        to: Arc<Socket>,
        from: SocketAddr,
        packet: Packet,
        delay_us: u64,
    ) {
        let (at, seq) = {
            let mut r = self.routing.lock().unwrap();
            let LinkConfig {
                mut latency_us_min,
                mut latency_us_max,
                ..
            } = r.config;
            // A slow link draws from its own range: one draw either way, so that slowing
            // one link never shifts the draws of the others.
            if let Some(&(lo, hi)) = r.slow.get(&(node, to.node)) {
                (latency_us_min, latency_us_max) = (lo, hi);
            }
            let latency_us = r
                .rng()
                .gen_range(latency_us_min..=latency_us_max.max(latency_us_min));
            r.seq += 1;
            r.messages += 1;
            (
                self.time.now_instant() + Duration::from_micros(latency_us + delay_us),
                r.seq,
            )
        };
        to.arrive(InFlight {
            at,
            seq,
            from,
            packet,
        });
    }
}

/// An address was already bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddrInUse(pub SocketAddr);

impl std::fmt::Display for AddrInUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "address {} is in use", self.0)
    }
}

#[derive(Default)]
struct SocketState {
    open: bool,
    /// Messages on their way to this socket, earliest first.
    arriving: BinaryHeap<Reverse<InFlight>>,
    /// The arrival time the socket's task has a timer for.
    armed: Option<Instant>,
    /// Wakes the socket's task.
    waker: Option<Waker>,
    /// Calls made from this socket that await a reply (lookup only, never iterated).
    pending: HashMap<u64, tokio::sync::oneshot::Sender<Body>>,
}

#[derive(Default)]
struct Handlers {
    rpc: HashMap<u64, RpcHandler>,
    message: HashMap<u64, MessageHandler>,
}

struct Socket {
    node: NodeId,
    addr: SocketAddr,
    /// A stream's end (TCP's, as gRPC runs on): its packets are held by a cut link and
    /// retransmitted when lost, never dropped.
    stream: bool,
    state: Mutex<SocketState>,
    handlers: Mutex<Handlers>,
}

impl Socket {
    fn arrive(&self, m: InFlight) {
        let mut s = self.state.lock().unwrap();
        if !s.open {
            return;
        }
        let earlier = s.armed.is_none_or(|armed| m.at < armed);
        s.arriving.push(Reverse(m));
        if earlier {
            if let Some(w) = s.waker.take() {
                w.wake();
            }
        }
    }

    /// Closes the socket: what is in flight to it is lost, calls awaiting a reply fail,
    /// and its handlers are dropped (they may hold what holds the socket).
    fn close(&self) {
        let waker = {
            let mut s = self.state.lock().unwrap();
            s.open = false;
            s.arriving.clear();
            s.pending.clear();
            s.waker.take()
        };
        let handlers = std::mem::take(&mut *self.handlers.lock().unwrap());
        drop(handlers);
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The task that hands a socket its messages as they arrive.
struct Delivery {
    net: Arc<Net>,
    socket: Arc<Socket>,
    timer: Option<Pin<Box<madsim::time::Sleep>>>,
}

impl Future for Delivery {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let now = self.net.time.now_instant();
        loop {
            let mut s = self.socket.state.lock().unwrap();
            if !s.open {
                return Poll::Ready(());
            }
            if s.arriving.peek().is_some_and(|m| m.0.at <= now) {
                let m = s.arriving.pop().expect("peeked").0;
                drop(s);
                // Handled one at a time, the lock released: a handler may send to this
                // socket, and what it sends arrives later than now.
                self.handle(m);
                continue;
            }
            let head = s.arriving.peek().map(|m| m.0.at);
            if head != s.armed {
                s.armed = head;
                drop(s);
                // A fresh timer only when the earliest arrival changed: madsim adds a
                // timer at every poll of a pending Sleep, so an armed one is not polled
                // again.
                self.timer = head.map(|at| {
                    let mut t = Box::pin(madsim::time::sleep(Duration::ZERO));
                    t.as_mut().reset(at);
                    t
                });
                if let Some(t) = self.timer.as_mut() {
                    let _ = t.as_mut().poll(cx);
                }
                s = self.socket.state.lock().unwrap();
            }
            match &s.waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => s.waker = Some(cx.waker().clone()),
            }
            return Poll::Pending;
        }
    }
}

impl Delivery {
    fn handle(&self, m: InFlight) {
        match m.packet {
            Packet::Reply { call, body } => {
                let tx = self.socket.state.lock().unwrap().pending.remove(&call);
                if let Some(tx) = tx {
                    let _ = tx.send(body);
                }
            }
            Packet::OneWay { tag, body } => {
                let mut h = self.socket.handlers.lock().unwrap();
                if let Some(f) = h.message.get_mut(&tag) {
                    f(body, m.from);
                }
            }
            Packet::Call { tag, call, body } => {
                let fut = {
                    let mut h = self.socket.handlers.lock().unwrap();
                    match h.rpc.get_mut(&tag) {
                        Some(f) => f(body),
                        None => return,
                    }
                };
                self.answer(fut, m.from, call);
            }
        }
    }

    /// Answers a call: at once if the handler's future is ready on its first poll (most
    /// are), else from a task of the socket's node once it is.
    fn answer(&self, mut fut: BoxFuture, to: SocketAddr, call: u64) {
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        // The noop waker is safe: a future that is not ready is spawned below, and the
        // spawned task polls it again at once with its own waker.
        if let Poll::Ready(body) = fut.as_mut().poll(&mut cx) {
            let packet = Packet::Reply { call, body };
            self.net
                .send(self.socket.node, self.socket.addr, to, packet);
            return;
        }
        let (net, node, addr) = (self.net.clone(), self.socket.node, self.socket.addr);
        madsim::task::spawn(async move {
            let body = fut.await;
            net.send(node, addr, to, Packet::Reply { call, body });
        });
    }
}

/// A bound address on the current node: it makes calls, sends messages and serves
/// handlers. Clones share the socket; it closes when the last clone is dropped or its
/// node is killed.
#[derive(Clone)]
pub struct Endpoint {
    inner: Arc<Bound>,
}

struct Bound {
    net: Arc<Net>,
    socket: Arc<Socket>,
}

impl Drop for Bound {
    fn drop(&mut self) {
        self.net.unbind(&self.socket);
        self.socket.close();
    }
}

/// A call that got no reply in time (or whose socket closed while it waited).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoReply;

impl Endpoint {
    /// Binds `addr` on the current node and starts delivering its messages.
    pub fn bind(addr: SocketAddr) -> Result<Endpoint, AddrInUse> {
        Self::bind_as(addr, false)
    }

    /// As [`Endpoint::bind`], for one end of a stream (a gRPC client's TCP connection):
    /// what it sends and what is sent to it is never lost. A cut link holds it until it
    /// is mended, and a loss delays it by a retransmission timeout (200 ms), as TCP
    /// does; a closed socket (a killed node) still drops it, as a reset connection does.
    pub fn bind_stream(addr: SocketAddr) -> Result<Endpoint, AddrInUse> {
        Self::bind_as(addr, true)
    }

    fn bind_as(addr: SocketAddr, stream: bool) -> Result<Endpoint, AddrInUse> {
        let net = Net::current();
        let socket = net.bind(addr, plugin::node(), stream)?;
        socket.state.lock().unwrap().open = true;
        madsim::task::spawn(Delivery {
            net: net.clone(),
            socket: socket.clone(),
            timer: None,
        });
        Ok(Endpoint {
            inner: Arc::new(Bound { net, socket }),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.inner.socket.addr
    }

    /// Calls `dst` with `req` and waits at most `timeout` for the reply.
    pub async fn call_timeout<R: Request>(
        &self,
        dst: SocketAddr,
        req: R,
        timeout: Duration,
    ) -> Result<R::Response, NoReply> {
        let socket = &self.inner.socket;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let call = 1 + self
            .inner
            .net
            .last_call
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        socket.state.lock().unwrap().pending.insert(call, tx);
        // Forget the call however this future ends (reply, timeout, or dropped), so that
        // a socket never accumulates dead calls.
        let _forget = Forget(socket, call);
        let packet = Packet::Call {
            tag: R::ID,
            call,
            body: Box::new(req),
        };
        self.inner.net.send(socket.node, socket.addr, dst, packet);
        match madsim::time::timeout(timeout, rx).await {
            Ok(Ok(body)) => Ok(*body
                .downcast::<R::Response>()
                .expect("a reply of the request's response type")),
            _ => Err(NoReply),
        }
    }

    /// Sends `msg` to `dst`, expecting no reply.
    pub fn send<M: Message>(&self, dst: SocketAddr, msg: M) {
        let socket = &self.inner.socket;
        let packet = Packet::OneWay {
            tag: M::ID,
            body: Box::new(msg),
        };
        self.inner.net.send(socket.node, socket.addr, dst, packet);
    }

    /// Answers every `R` that reaches this endpoint with `f`'s future's output.
    pub fn add_rpc_handler<R, F, Fut>(&self, mut f: F)
    where
        R: Request,
        F: FnMut(R) -> Fut + Send + 'static,
        Fut: Future<Output = R::Response> + Send + 'static,
    {
        let handler: RpcHandler = Box::new(move |body: Body| {
            let req = *body.downcast::<R>().expect("a request of its tag's type");
            let fut = f(req);
            Box::pin(async move { Box::new(fut.await) as Body })
        });
        self.inner
            .socket
            .handlers
            .lock()
            .unwrap()
            .rpc
            .insert(R::ID, handler);
    }

    /// Hands every `M` that reaches this endpoint to `f`, with its sender's address.
    pub fn add_message_handler<M, F>(&self, mut f: F)
    where
        M: Message,
        F: FnMut(M, SocketAddr) + Send + 'static,
    {
        let handler: MessageHandler = Box::new(move |body: Body, from| {
            f(
                *body.downcast::<M>().expect("a message of its tag's type"),
                from,
            )
        });
        self.inner
            .socket
            .handlers
            .lock()
            .unwrap()
            .message
            .insert(M::ID, handler);
    }
}

struct Forget<'a>(&'a Socket, u64);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.0.state.lock().unwrap().pending.remove(&self.1);
    }
}
