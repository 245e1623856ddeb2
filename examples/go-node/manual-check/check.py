#!/usr/bin/env python3
"""A hand check of go-node outside Baton: a 3-member etcd cluster on loopback, a stand-in
for Baton's fenced resource (in this process), three go-node processes, then:

  1. exactly one node leads; POST /next works on it and answers 409 with a hint elsewhere;
  2. SIGKILL the leader: another takes over with a higher token;
  3. SIGSTOP the leader past the TTL, then SIGCONT: it stops acting (a write of its old
     token, if it makes one, is rejected by the fence).

Times are wall-clock, read by this script: it polls every node's /status every 20 ms,
so they are good to a poll interval or so. Every process it starts is killed on exit.

Usage: python3 check.py [path/to/go-node]   (needs /usr/bin/etcd and a built go-node)
"""
import json, os, shutil, signal, socket, subprocess, sys, tempfile, threading, time
import urllib.error, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "bin", "go-node")
ETCD = "/usr/bin/etcd"
TTL_MS = 3000
WORK = tempfile.mkdtemp(prefix="go-node-check-")
procs = {}  # name -> Popen
failures = []


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


# --- the resource stand-in: Baton's fence rule (real/src/resource/ledger.rs) ---------------------
class Resource:
    def __init__(self):
        self.lock = threading.Lock()
        self.max_token, self.last_seq, self.owner = 0, 0, (0, "")
        self.log = []  # (t, node, token, op, outcome)


RES = Resource()


class ResourceHandler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        w = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        node, token, op = w["node"], w["token"], w["op"]
        with RES.lock:
            if token < RES.max_token:
                rep = {"outcome": "rejected", "max_token": RES.max_token}
            elif op["kind"] == "seq" and op["first"] <= RES.last_seq and (token, node) == RES.owner:
                rep = {"outcome": "behind", "last_seq": RES.last_seq}
            else:
                RES.max_token = max(RES.max_token, token)
                if op["kind"] == "seq":
                    RES.last_seq, RES.owner = op["last"], (token, node)
                rep = {"outcome": "accepted", "last_seq": RES.last_seq, "cursor": 0}
            RES.log.append((time.time(), node, token, op, rep["outcome"]))
        body = json.dumps(rep).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


# --- processes ------------------------------------------------------------------------
def spawn(name, args, log):
    f = open(os.path.join(WORK, log), "ab")
    procs[name] = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=f, stderr=f, start_new_session=True)


def kill_all():
    for name, p in list(procs.items()):
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGCONT)
                p.kill()
                p.wait(timeout=5)
            except Exception as e:
                print(f"could not kill {name} ({p.pid}): {e}")


def http(method, url, timeout=1.0):
    try:
        r = urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=timeout)
        return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except Exception as e:
        return None, str(e)


def status(port):
    code, body = http("GET", f"http://127.0.0.1:{port}/status", timeout=0.3)
    return json.loads(body) if code == 200 else None


def leaders(nodes):
    out = []
    for n, port in nodes.items():
        s = status(port)
        if s and s["role"] == "leader":
            out.append((n, s["fence_token"]))
    return out


def wait_for(pred, timeout, step=0.02):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return None


def main():
    if not (os.access(BIN, os.X_OK) and os.path.exists(ETCD)):
        print(f"needs {BIN} (run build.sh) and {ETCD} (apt-get install etcd-server)")
        return 2
    p = free_ports(13)
    client, peer, metrics, res_port, node_ports = p[0:3], p[3:6], p[6:9], p[9], p[10:13]
    ic = ",".join(f"m{i+1}=http://127.0.0.1:{peer[i]}" for i in range(3))
    for i in range(3):
        spawn(f"etcd-m{i+1}", [ETCD, "--name", f"m{i+1}", "--data-dir", os.path.join(WORK, f"m{i+1}"),
              "--listen-client-urls", f"http://127.0.0.1:{client[i]}", "--advertise-client-urls", f"http://127.0.0.1:{client[i]}",
              "--listen-peer-urls", f"http://127.0.0.1:{peer[i]}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer[i]}",
              "--listen-metrics-urls", f"http://127.0.0.1:{metrics[i]}", "--initial-cluster", ic,
              "--initial-cluster-state", "new", "--initial-cluster-token", os.path.basename(WORK),
              "--logger", "zap", "--log-outputs", "stderr"], f"etcd-m{i+1}.log")
    healthy = wait_for(lambda: all(http("GET", f"http://127.0.0.1:{m}/health")[1].find('"true"') >= 0 for m in metrics), 30, 0.2)
    check(bool(healthy), "etcd: 3 members healthy")
    if not healthy:
        return 1
    srv = ThreadingHTTPServer(("127.0.0.1", res_port), ResourceHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()

    nodes = {f"n{i+1}": node_ports[i] for i in range(3)}
    endpoints = ",".join(f"http://127.0.0.1:{c}" for c in client)
    peers = ",".join(f"{n}=http://127.0.0.1:{port}" for n, port in nodes.items())

    def start(n):
        spawn(n, [BIN, "--id", n, "--http-port", str(nodes[n]), "--etcd-endpoints", endpoints,
                  "--lease-ttl-ms", str(TTL_MS), "--resource-url", f"http://127.0.0.1:{res_port}/write",
                  "--election-prefix", "/baton/election", "--tick-ms", "100", "--peers", peers], f"{n}.log")

    for n in nodes:
        start(n)

    # 1. one leader; /next
    ls = wait_for(lambda: leaders(nodes) or None, 10)
    time.sleep(1.0)
    ls = leaders(nodes)
    check(len(ls) == 1, f"one leader after start: {ls}")
    if len(ls) != 1:
        return 1
    leader, token = ls[0]
    code, body = http("POST", f"http://127.0.0.1:{nodes[leader]}/next?count=3")
    got = json.loads(body) if code == 200 else {}
    check(code == 200 and got.get("token") == token and got.get("last", 0) - got.get("seq", 0) == 2,
          f"POST /next?count=3 on the leader {leader}: {code} {body.strip()}")
    for n in nodes:
        if n != leader:
            code, body = http("POST", f"http://127.0.0.1:{nodes[n]}/next")
            hint = json.loads(body) if code == 409 else {}
            check(code == 409 and hint.get("leader") == leader and hint.get("address") == f"http://127.0.0.1:{nodes[leader]}",
                  f"POST /next on follower {n}: {code} {body.strip()}")
    code, body = http("GET", f"http://127.0.0.1:{nodes[leader]}/metrics")
    check(code == 200 and f'leaders_acting{{node="{leader}"}} 1' in body, f"GET /metrics on {leader} shows leaders_acting 1")

    # 2. SIGKILL the leader
    killed_at = time.time()
    procs[leader].send_signal(signal.SIGKILL)
    procs[leader].wait()
    rest = {n: port for n, port in nodes.items() if n != leader}
    new = wait_for(lambda: [l for l in leaders(rest) if l[1] > token] or None, 3 * TTL_MS / 1000)
    took = time.time() - killed_at
    check(bool(new), f"SIGKILL {leader} (token {token}): new leader {new} seen {took:.2f} s later (lease TTL {TTL_MS} ms)")
    if not new:
        return 1
    start(leader)
    time.sleep(1.5)

    # 3. SIGSTOP the leader past the TTL, then SIGCONT
    paused, ptoken = new[0]
    pause_s = TTL_MS / 1000 + 3
    stopped_at = time.time()
    os.kill(procs[paused].pid, signal.SIGSTOP)
    rest = {n: port for n, port in nodes.items() if n != paused}
    other = wait_for(lambda: [l for l in leaders(rest) if l[1] > ptoken] or None, pause_s)
    other_at = time.time()
    check(bool(other), f"SIGSTOP {paused} (token {ptoken}): new leader {other} seen {other_at - stopped_at:.2f} s later")
    time.sleep(max(0, stopped_at + pause_s - time.time()))
    cont_at = time.time()
    os.kill(procs[paused].pid, signal.SIGCONT)
    down = wait_for(lambda: (lambda s: s if s and s["role"] != "leader" else None)(status(nodes[paused])), 5)
    check(bool(down), f"SIGCONT {paused} after {cont_at - stopped_at:.1f} s: it says {down and down['role']} "
          f"{time.time() - cont_at:.2f} s later")
    with RES.lock:
        stale = [(t, o) for (t, n, tok, op, o) in RES.log if n == paused and tok == ptoken and t >= cont_at]
    if stale:
        check(all(o == "rejected" for _, o in stale),
              f"{paused}'s writes with token {ptoken} after SIGCONT: {[o for _, o in stale]} (first {stale[0][0] - cont_at:.3f} s after SIGCONT)")
    else:
        print(f"INFO {paused} made no write with token {ptoken} after SIGCONT: it saw its session end first")
    both = leaders(nodes)
    check(len(both) == 1, f"one leader at the end: {both}")
    with RES.lock:
        print(f"INFO resource: {len(RES.log)} writes, max_token {RES.max_token}, last_seq {RES.last_seq}")
    return 1 if failures else 0


if __name__ == "__main__":
    rc = 1
    try:
        rc = main()
    finally:
        kill_all()
        if rc == 0:
            shutil.rmtree(WORK, ignore_errors=True)
        else:
            print(f"logs kept in {WORK}")
    sys.exit(rc)
