"""What Baton's node contract asks of every node, for the Python reference nodes.

Standard library only. The three nodes beside this directory (python-redis,
python-psycopg, python-kazoo) each hold their library's election code and nothing else;
this module is the rest of Baton's node contract (docs/src/node-contract.md, version 2):

- ``Config``: the node's parameters, from the BATON_* environment variables alone;
- ``Node``: the HTTP API on 127.0.0.1:{http_port} (GET /status, POST /next, GET
  /metrics, POST /resign), the 409 hints, and ``Node.lead``, the leader's protected
  writes to {resource_url}: one claim, a tick every {tick_ms}, one seq write for each
  batch of queued POST /next, one write at a time, each bounded by {write_timeout_ms};
- ``Leadership``: one term as leader, as the election code sees it: its token, whether
  it may still act, and why it stopped.

How an election uses it::

    node = Node(Config.from_env("python-x"))
    node.serve()                      # listens, prints LISTENING 127.0.0.1:<port>
    node.set_role("candidate")
    ... win the election, learn the token ...
    l = Leadership(token)
    reason = node.lead(l)             # blocks: writes until l.stop(...) or a fenced write
    ... release the grant ...
    node.ended(l)                     # POST /resign answers 200 from here

``Node.lead`` returns only once no write of the leadership is still awaited, so the
grant may be let go right after it (the contract's rule for step-downs).
"""

import json
import os
import select
import signal
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Why a leadership ended.
LOST = "lost"  # the election code says the grant is gone (or may be)
EXPIRED = "expired"  # the leadership's own deadline passed
FENCED = "fenced"  # the resource rejected a write: a newer token exists
RESIGNED = "resigned"  # POST /resign
SHUTDOWN = "shutdown"  # SIGTERM or SIGINT

# How long a node that resigned waits before it campaigns again, as Baton's own node
# and the Go node do, so that another candidate can take over.
REJOIN_AFTER_RESIGN_S = 1.0

# How often a follower asks the backend who leads, for its 409 hints.
HINT_INTERVAL_S = 1.0

# POST /resign answers 200 once the step-down is done, or 202 after this long: Baton
# waits 1 s for the answer.
RESIGN_ANSWER_WITHIN_S = 0.8


def log(node_id, program, msg):
    t = time.time()
    stamp = time.strftime("%H:%M:%S", time.gmtime(t)) + ".%03d" % int((t % 1) * 1000)
    sys.stderr.write("%s %s %s: %s\n" % (stamp, program, node_id, msg))
    sys.stderr.flush()


class ConfigError(Exception):
    pass


class Config:
    """The node's parameters, read from the environment only (the contract puts every
    placeholder's value in a BATON_* variable)."""

    def __init__(self, env, program, backend_vars):
        self.program = program
        self.env = env

        def need(name):
            v = env.get(name, "")
            if v == "":
                raise ConfigError("%s is required (Baton sets it; see docs/src/node-contract.md)" % name)
            return v

        def ms(name, default=None):
            v = env.get(name, "")
            if v == "" and default is not None:
                return default
            try:
                n = int(need(name))
            except ValueError:
                raise ConfigError("%s=%r is not a whole number of milliseconds" % (name, env.get(name)))
            if n <= 0:
                raise ConfigError("%s=%r must be positive" % (name, env.get(name)))
            return n

        self.id = need("BATON_ID")
        try:
            self.http_port = int(need("BATON_HTTP_PORT"))
        except ValueError:
            raise ConfigError("BATON_HTTP_PORT=%r is not a port" % env.get("BATON_HTTP_PORT"))
        self.resource_url = need("BATON_RESOURCE_URL")
        self.lease_ttl_ms = ms("BATON_LEASE_TTL_MS")
        self.tick_ms = ms("BATON_TICK_MS", 100)
        self.write_timeout_ms = ms("BATON_WRITE_TIMEOUT_MS", 1000)
        self.dir = env.get("BATON_NODE_DIR", "")
        self.backend = env.get("BATON_BACKEND", "")
        self.peers = {}
        for item in env.get("BATON_PEERS", "").split(","):
            item = item.strip()
            if not item:
                continue
            name, sep, url = item.partition("=")
            if not sep or not name or not url:
                raise ConfigError("BATON_PEERS: %r is not name=url" % item)
            self.peers[name] = url
        self.backend_values = {name: need(name) for name in backend_vars}

    @classmethod
    def from_env(cls, program, backend_vars=(), expect_backend=None):
        """Reads the environment; on a missing or bad value prints one line and exits 2."""
        if len(sys.argv) > 1:
            if sys.argv[1] in ("-h", "--help"):
                sys.stdout.write(
                    "%s: a node of Baton's node contract v2; it takes no arguments and reads "
                    "BATON_ID, BATON_HTTP_PORT, BATON_RESOURCE_URL, BATON_LEASE_TTL_MS, "
                    "BATON_TICK_MS, BATON_WRITE_TIMEOUT_MS, BATON_PEERS%s from the environment\n"
                    % (program, "".join(", " + v for v in backend_vars))
                )
                sys.exit(0)
            sys.stderr.write("%s: takes no arguments (every value comes from the BATON_* environment)\n" % program)
            sys.exit(2)
        try:
            cfg = cls(dict(os.environ), program, backend_vars)
        except ConfigError as e:
            sys.stderr.write("%s: %s\n" % (program, e))
            sys.exit(2)
        if expect_backend and cfg.backend not in ("", expect_backend):
            sys.stderr.write(
                "%s: elects on %s, and BATON_BACKEND is %r (run it with sim conform --backend %s)\n"
                % (program, expect_backend, cfg.backend, expect_backend)
            )
            sys.exit(2)
        return cfg

    def value(self, name):
        return self.backend_values[name]


class Leadership:
    """One term as leader.

    ``acting()`` says whether the node may still act on it: not stopped, before its
    ``valid_until`` (a ``time.monotonic()`` instant, or None for no deadline of its own)
    less ``margin_s``, and ``check()`` true when given. The election code calls
    ``stop(reason)`` when it learns the grant is gone; the first reason sticks.
    """

    def __init__(self, token, valid_until=None, margin_s=0.0, check=None):
        self.token = int(token)
        self.valid_until = valid_until
        self.margin_s = margin_s
        self.check = check
        # Informational (GET /status's lease_ttl_remaining_ms) when the node keeps no
        # deadline of its own: a monotonic instant, or None.
        self.estimate_until = None
        self.reason = None
        self._stopped = threading.Event()
        self._ended = threading.Event()
        self._node = None

    def acting(self):
        if self._stopped.is_set():
            return False
        if self.valid_until is not None and time.monotonic() >= self.valid_until - self.margin_s:
            return False
        if self.check is not None and not self.check():
            return False
        return True

    def why_not(self):
        if self.reason is not None:
            return self.reason
        if self.valid_until is not None and time.monotonic() >= self.valid_until - self.margin_s:
            return EXPIRED
        return LOST

    def stop(self, reason):
        if self.reason is None:
            self.reason = reason
        self._stopped.set()
        node = self._node
        if node is not None:
            node.wake()

    def extend(self, valid_until):
        """A renewal answered: the grant holds until ``valid_until`` (monotonic)."""
        if self.valid_until is None or valid_until > self.valid_until:
            self.valid_until = valid_until

    def remaining_ms(self):
        until = self.valid_until if self.valid_until is not None else self.estimate_until
        if until is None:
            return None
        return max(0, int((until - time.monotonic()) * 1000))

    def stopped(self):
        return self._stopped.is_set()

    def wait_stopped(self, timeout):
        """Waits up to ``timeout`` s for ``stop``; True once stopped."""
        return self._stopped.wait(timeout)


class WriteResult:
    ACCEPTED, REJECTED, BEHIND, FAILED, NOT_ACTING = "accepted", "rejected", "behind", "failed", "not_acting"

    def __init__(self, kind, last_seq=0, max_token=0, error=None):
        self.kind = kind
        self.last_seq = last_seq
        self.max_token = max_token
        self.error = error


class ResourceClient:
    """POST {resource_url}, HTTP/1.1 over one kept-alive connection, each write bounded as
    a whole (connect, send, answer) by the write timeout. A write that failed or timed
    out closes the connection: its answer, if it comes, is never read (the write may
    still land: a proxy may hold it)."""

    def __init__(self, url, timeout_s):
        u = urllib.parse.urlsplit(url)
        if u.scheme != "http" or not u.hostname:
            raise ConfigError("BATON_RESOURCE_URL=%r is not an http:// URL" % url)
        self.host = u.hostname
        self.port = u.port or 80
        self.path = (u.path or "/") + ("?" + u.query if u.query else "")
        self.timeout_s = timeout_s
        self.sock = None

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None

    def post(self, body):
        """Returns (status, body bytes); raises OSError or ValueError on any failure."""
        deadline = time.monotonic() + self.timeout_s

        def left():
            return max(deadline - time.monotonic(), 0.001)

        try:
            if self.sock is not None:
                # A kept-alive connection the other side closed reads as ready: drop it
                # before writing into it.
                r, _, _ = select.select([self.sock], [], [], 0)
                if r:
                    self.close()
            if self.sock is None:
                self.sock = socket.create_connection((self.host, self.port), timeout=left())
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            head = (
                "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                "Content-Length: %d\r\n\r\n" % (self.path, self.host, self.port, len(body))
            ).encode()
            self.sock.settimeout(left())
            self.sock.sendall(head + body)
            return self._read_response(left)
        except BaseException:
            self.close()
            raise

    def _read_response(self, left):
        buf = b""

        def more():
            # Past the deadline (a write woken from SIGSTOP) the answer still gets 1 ms,
            # in case it is already here.
            self.sock.settimeout(left())
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the resource closed the connection")
            return chunk

        while b"\r\n\r\n" not in buf:
            buf += more()
            if len(buf) > 1 << 20:
                raise ValueError("answer headers too long")
        head, _, rest = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise ValueError("not an HTTP answer: %r" % lines[0])
        status = int(parts[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                while b"\r\n" not in rest:
                    rest += more()
                size_line, _, rest = rest.partition(b"\r\n")
                size = int(size_line.split(b";")[0], 16)
                while len(rest) < size + 2:
                    rest += more()
                body += rest[:size]
                rest = rest[size + 2 :]
                if size == 0:
                    break
        elif "content-length" in headers:
            n = int(headers["content-length"])
            while len(rest) < n:
                rest += more()
            body = rest[:n]
        else:
            # Neither: the body runs to the connection's end.
            body = rest
            try:
                while True:
                    body += more()
            except ConnectionError:
                pass
            self.close()
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, body


class _Next:
    """One queued POST /next: ``count`` numbers, answered by the writer."""

    def __init__(self, count):
        self.count = count
        self.done = threading.Event()
        self.status = None
        self.token = self.first = self.last = 0

    def answer(self, status, token=0, first=0, last=0):
        self.status, self.token, self.first, self.last = status, token, first, last
        self.done.set()


class Node:
    def __init__(self, cfg):
        self.cfg = cfg
        self.program = cfg.program
        self.resource = ResourceClient(cfg.resource_url, cfg.write_timeout_ms / 1000.0)
        self._mu = threading.Lock()
        self._cond = threading.Condition(self._mu)
        self._role = "follower"  # when no leadership is current
        self._lead = None  # the current Leadership, while lead() runs
        self._accepting = False  # whether POST /next is queued (after the claim)
        self._queue = []
        self._hint = None
        self._shutdown = threading.Event()
        self.counters = {
            "campaigns": 0,
            "leaderships": 0,
            "renewals": 0,
            "renewal_failures": 0,
            "writes_accepted": 0,
            "fencing_rejections": 0,
            "writes_failed": 0,
            "writes_behind": 0,
        }

    # ---- for the election code --------------------------------------------------------

    def log(self, msg):
        log(self.cfg.id, self.program, msg)

    def count(self, name, n=1):
        with self._mu:
            self.counters[name] = self.counters.get(name, 0) + n

    def set_role(self, role):
        """``candidate`` while campaigning, ``follower`` otherwise (``lead`` sets
        ``leader``)."""
        with self._mu:
            self._role = role

    def set_hint(self, leader):
        """Who the backend says leads (a node name, or None), for 409 answers."""
        with self._mu:
            self._hint = leader

    def leading(self):
        with self._mu:
            return self._lead is not None

    def shutting_down(self):
        return self._shutdown.is_set()

    def sleep(self, seconds):
        """Waits, or less if the node shuts down."""
        self._shutdown.wait(seconds)

    def wake(self):
        with self._cond:
            self._cond.notify_all()

    def stop_leading(self, reason):
        """Stops the current leadership, if any (safe from any thread; not from a signal
        handler)."""
        with self._mu:
            l = self._lead
        if l is not None:
            l.stop(reason)

    def ended(self, l):
        """The election code let the grant of ``l`` go: POST /resign may answer."""
        l._ended.set()

    def start_hints(self, lookup, interval_s=HINT_INTERVAL_S):
        """Runs ``lookup()`` (the leader's name, or None) every ``interval_s`` in a thread
        of its own, while this node does not lead, for the 409 hints."""

        def loop():
            while not self._shutdown.is_set():
                if not self.leading():
                    try:
                        self.set_hint(lookup())
                    except Exception as e:  # the hint is best effort
                        self.log("leader lookup failed: %s" % (e,))
                self._shutdown.wait(interval_s)

        threading.Thread(target=loop, name="hints", daemon=True).start()

    # ---- the leader's work ------------------------------------------------------------

    def lead(self, l):
        """Acts as leader under ``l`` until it stops (``l.stop``, its deadline, its
        ``check``), the resource rejects a write, POST /resign or shutdown. Returns why.
        Only the calling thread writes; when this returns no write is awaited, the queued
        POST /next have been answered, and the role is ``follower``."""
        l._node = self
        with self._mu:
            self._lead = l
            self._role = "follower"
            self._accepting = False
            self.counters["leaderships"] += 1
        if self._shutdown.is_set():
            l.stop(SHUTDOWN)
        self.log("leader: token %d" % l.token)
        try:
            reason = self._act(l)
        finally:
            with self._mu:
                self._lead = None
                self._accepting = False
                queue, self._queue = self._queue, []
            for q in queue:
                q.answer(409)
        if l.reason is None:
            l.reason = reason
        self.log("stopped acting: token %d, %s" % (l.token, l.reason))
        return l.reason

    def _act(self, l):
        pause = _Pacer(0.025, self.cfg.write_timeout_ms / 1000.0)
        while True:
            if not l.acting():
                return l.why_not()
            res = self._write(l, {"kind": "claim"}, pause)
            if res.kind == WriteResult.ACCEPTED:
                last_seq = res.last_seq
                break
            if res.kind == WriteResult.REJECTED:
                return FENCED
            if res.kind == WriteResult.NOT_ACTING:
                return l.why_not()
        with self._mu:
            self._accepting = True
        tick_s = self.cfg.tick_ms / 1000.0
        next_tick = time.monotonic()
        tick_n = 0
        while True:
            if not l.acting():
                return l.why_not()
            now = time.monotonic()
            # The tick goes first when due: under load the queue is never empty.
            if now >= next_tick:
                tick_n += 1
                next_tick += tick_s
                if next_tick <= now:
                    # Fell behind (a slow write, a pause): no burst of catch-up ticks.
                    next_tick = now + tick_s
                res = self._write(l, {"kind": "tick", "n": tick_n}, pause)
                if res.kind == WriteResult.REJECTED:
                    return FENCED
                if res.kind == WriteResult.NOT_ACTING:
                    return l.why_not()
                if res.kind == WriteResult.ACCEPTED and res.last_seq > last_seq:
                    last_seq = res.last_seq
                continue
            with self._mu:
                batch, self._queue = self._queue, []
            if batch:
                count = sum(q.count for q in batch)
                first, last = last_seq + 1, last_seq + count
                res = self._write(l, {"kind": "seq", "first": first, "last": last}, pause)
                if res.kind == WriteResult.NOT_ACTING:
                    for q in batch:
                        q.answer(409)
                    return l.why_not()
                # A write that failed may still land: its numbers are never handed out
                # again. Gaps are allowed, reuse is not.
                last_seq = last
                if res.kind in (WriteResult.ACCEPTED, WriteResult.BEHIND) and res.last_seq > last_seq:
                    last_seq = res.last_seq
                at = first
                for q in batch:
                    if res.kind == WriteResult.ACCEPTED:
                        q.answer(200, l.token, at, at + q.count - 1)
                        at += q.count
                    elif res.kind == WriteResult.REJECTED:
                        q.answer(409)
                    else:
                        q.answer(503)
                if res.kind == WriteResult.REJECTED:
                    return FENCED
                continue
            with self._cond:
                if self._queue or not l.acting():
                    continue
                wait = next_tick - time.monotonic()
                if l.valid_until is not None:
                    wait = min(wait, l.valid_until - l.margin_s - time.monotonic())
                if wait > 0:
                    self._cond.wait(wait)

    def _write(self, l, op, pause):
        """One protected write, checked against the leadership right before it is sent."""
        if not l.acting():
            return WriteResult(WriteResult.NOT_ACTING)
        body = json.dumps({"node": self.cfg.id, "token": l.token, "op": op}).encode()
        sent = time.monotonic()
        res = self._send(body)
        if res.kind == WriteResult.ACCEPTED:
            if pause.failures:
                self.log("the resource answers again after %d failed writes" % pause.failures)
            pause.succeeded()
            self.count("writes_accepted")
        elif res.kind == WriteResult.REJECTED:
            self.count("fencing_rejections")
            self.log("write rejected by the fence: token %d < max_token %d; stepping down" % (l.token, res.max_token))
        elif res.kind == WriteResult.BEHIND:
            self.count("writes_behind")
        else:
            self.count("writes_failed")
            if pause.failures == 0:
                self.log("write failed (%s); retrying, paced up to %.0f ms" % (res.error, pause.max_s * 1000))
            until = time.monotonic() + pause.failed(sent)
            with self._cond:
                while l.acting():
                    wait = until - time.monotonic()
                    if wait <= 0:
                        break
                    self._cond.wait(wait)
        return res

    def _send(self, body):
        try:
            status, raw = self.resource.post(body)
        except (OSError, ValueError) as e:
            return WriteResult(WriteResult.FAILED, error=e)
        if status // 100 != 2:
            return WriteResult(WriteResult.FAILED, error="the resource answered %d" % status)
        try:
            rep = json.loads(raw)
            outcome = rep.get("outcome")
            if outcome == "accepted":
                return WriteResult(WriteResult.ACCEPTED, last_seq=int(rep["last_seq"]))
            if outcome == "rejected":
                return WriteResult(WriteResult.REJECTED, max_token=int(rep["max_token"]))
            if outcome == "behind":
                return WriteResult(WriteResult.BEHIND, last_seq=int(rep["last_seq"]))
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        return WriteResult(WriteResult.FAILED, error="unexpected answer %r" % raw[:200])

    # ---- HTTP -------------------------------------------------------------------------

    def status(self):
        with self._mu:
            l = self._lead
            role = self._role
        if l is not None and l.acting():
            return {
                "node_id": self.cfg.id,
                "role": "leader",
                "fence_token": l.token,
                "lease_ttl_remaining_ms": l.remaining_ms(),
            }
        return {"node_id": self.cfg.id, "role": role, "fence_token": None, "lease_ttl_remaining_ms": None}

    def hint(self):
        with self._mu:
            l = self._lead
            leader = self._hint
        if l is not None and l.acting():
            leader = self.cfg.id
        return {"leader": leader, "address": self.cfg.peers.get(leader) if leader else None}

    def submit(self, count):
        """Queues ``count`` numbers: the _Next, or 409 (not leading) or 503 (claiming)."""
        with self._cond:
            l = self._lead
            if l is None or not l.acting():
                return 409
            if not self._accepting:
                return 503
            q = _Next(count)
            self._queue.append(q)
            self._cond.notify_all()
            return q

    def resign(self):
        with self._mu:
            l = self._lead
        if l is None or not l.acting():
            return None
        l.stop(RESIGNED)
        return l

    def metrics(self):
        with self._mu:
            l = self._lead
            role = self._role
            c = dict(self.counters)
        acting = l is not None and l.acting()
        if acting:
            role = "leader"
        lab = 'node="%s"' % self.cfg.id
        out = [
            "# HELP leaders_acting 1 while this node acts as leader.",
            "# TYPE leaders_acting gauge",
            "leaders_acting{%s} %d" % (lab, 1 if acting else 0),
            "# TYPE baton_role gauge",
        ]
        for r in ("leader", "candidate", "follower"):
            out.append('baton_role{%s,role="%s"} %d' % (lab, r, 1 if role == r else 0))
        out += ["# TYPE baton_fence_token gauge", "baton_fence_token{%s} %d" % (lab, l.token if acting else 0)]
        for name in sorted(c):
            metric = "baton_%s_total" % name
            out += ["# TYPE %s counter" % metric, "%s{%s} %d" % (metric, lab, c[name])]
        return "\n".join(out) + "\n"

    def serve(self):
        """Listens on 127.0.0.1:{http_port} and serves the API from threads of its own."""
        node = self

        class Handler(_Handler):
            pass

        Handler.node = node
        try:
            srv = _Server(("127.0.0.1", self.cfg.http_port), Handler)
        except OSError as e:
            self.log("cannot listen on 127.0.0.1:%d: %s" % (self.cfg.http_port, e))
            sys.exit(1)
        threading.Thread(target=srv.serve_forever, name="http", daemon=True).start()
        sys.stdout.write("LISTENING 127.0.0.1:%d\n" % srv.server_address[1])
        sys.stdout.flush()
        self.log("listening on 127.0.0.1:%d; lease TTL %d ms, tick %d ms, write timeout %d ms, resource %s"
                 % (srv.server_address[1], self.cfg.lease_ttl_ms, self.cfg.tick_ms,
                    self.cfg.write_timeout_ms, self.cfg.resource_url))
        self._install_signals()

    def _install_signals(self):
        # SIGTERM or SIGINT: stop writing, let the grant go, exit (the election code checks
        # shutting_down()). The handler only starts a thread: it runs in the main thread,
        # which may hold a lock this module takes. Baton itself never sends these: its
        # nodes end by SIGKILL.
        def handler(signum, frame):
            threading.Thread(target=self._begin_shutdown, daemon=True).start()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    def _begin_shutdown(self):
        if self._shutdown.is_set():
            return
        self.log("shutting down")
        self._shutdown.set()
        self.stop_leading(SHUTDOWN)
        self.wake()
        # If the election code does not get out in time, exit anyway: the grant expires.
        time.sleep(self.cfg.write_timeout_ms / 1000.0 + 3.0)
        self.log("gave up waiting for a clean step-down")
        os._exit(1)


class _Pacer:
    """After a failed write the next goes no sooner than a pause after the failed one
    was sent: 25 ms, doubling up to the write timeout (as the Go node and Baton's own)."""

    def __init__(self, first_s, max_s):
        self.first_s, self.max_s = first_s, max_s
        self.pause_s = 0.0
        self.failures = 0

    def succeeded(self):
        self.failures, self.pause_s = 0, 0.0

    def failed(self, sent):
        self.failures += 1
        self.pause_s = self.first_s if self.pause_s == 0 else min(self.pause_s * 2, self.max_s)
        return sent + self.pause_s - time.monotonic()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    node = None
    # Buffered, so that an answer's headers and body leave in one segment (http.server
    # flushes after each request); no Nagle delay on kept-alive connections either.
    wbufsize = 64 * 1024

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):
        pass

    def _answer(self, code, obj=None, text=None, headers=()):
        if text is not None:
            data, ctype = text.encode(), "text/plain; version=0.0.4"
        else:
            data, ctype = json.dumps(obj).encode(), "application/json"
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _drain_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > 0:
            self.rfile.read(n)

    def _route(self):
        u = urllib.parse.urlsplit(self.path)
        return u.path, urllib.parse.parse_qs(u.query)

    def do_GET(self):
        self._drain_body()
        path, _ = self._route()
        if path == "/status":
            self._answer(200, self.node.status())
        elif path == "/metrics":
            self._answer(200, text=self.node.metrics())
        elif path in ("/next", "/resign"):
            self._answer(405, {"error": "use POST"}, headers=[("Allow", "POST")])
        else:
            self._answer(404, {"error": "not found"})

    def do_POST(self):
        self._drain_body()
        path, query = self._route()
        if path == "/next":
            self._next(query)
        elif path == "/resign":
            self._resign()
        elif path in ("/status", "/metrics"):
            self._answer(405, {"error": "use GET"}, headers=[("Allow", "GET")])
        else:
            self._answer(404, {"error": "not found"})

    def _next(self, query):
        count = 1
        if "count" in query:
            try:
                count = int(query["count"][0])
            except ValueError:
                self._answer(400, {"error": "count must be a positive integer"})
                return
            if count < 1 or count > 1 << 32:
                self._answer(400, {"error": "count must be a positive integer"})
                return
        q = self.node.submit(count)
        if q == 409:
            self._answer(409, self.node.hint())
            return
        if q == 503:
            self._answer(503, {"error": "leader is claiming"})
            return
        # Every queued request is answered: by the writer, or with 409 when the
        # leadership ends. The bound only guards against a bug.
        if not q.done.wait(self.node.cfg.write_timeout_ms / 1000.0 * 2 + 10):
            self._answer(503, {"error": "no answer from the writer"})
            return
        if q.status == 200:
            self._answer(200, {"token": q.token, "seq": q.first, "last": q.last})
        elif q.status == 409:
            self._answer(409, self.node.hint())
        else:
            self._answer(503, {"error": "the write failed or timed out; its numbers are skipped"})

    def _resign(self):
        l = self.node.resign()
        if l is None:
            self._answer(409, self.node.hint())
            return
        if l._ended.wait(RESIGN_ANSWER_WITHIN_S):
            self._answer(200, {"resigned": True, "token": l.token})
        else:
            self._answer(202, {"resigned": False, "token": l.token, "note": "stepping down"})
