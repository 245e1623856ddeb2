#!/usr/bin/env python3
"""A stand-in node that breaks one rule of Baton's node contract on purpose.

The tests (real/tests/node_contract.rs) start it with `--node-cmd` and check that Baton
names the rule it broke. It elects nobody: node n1 simply says it leads and does the
leader's work properly (a claim, then a fenced seq write to the resource before it hands
numbers out); the others follow. On etcd (version 1) its token is 1 and it never touches
etcd. On the other backends of version 2 (BATON_BACKEND, with the backend's BATON_*
variables) n1 first takes the grant as the contract says, speaking the backend's wire
protocol with the standard library, keeps it renewed, and leads under the backend's
number for it: on Redis `SET {redis_key} V NX PX`, then the answer of `INCR
{redis_key}:token`; on ZooKeeper a session and an EPHEMERAL_SEQUENTIAL child of
{zk_election_path}, its czxid; on PostgreSQL the lease row's acquire, its generation.
With no backend (BATON_BACKEND none) n1 leads under token 1 once it has opened a TCP
connection to every other node at its BATON_RAFT_PEERS address (Baton's proxy to it),
as a leader's heartbeats would.
Usage:

    bad_node.py --break RULE --id {id} --http-port {http_port} --resource-url {resource_url} --dir {dir}

RULE is one of:
  none           keeps every rule (the control: passes the checks before the run)
  listen         never listens
  status         answers GET /status without a `role`
  leader-emerges every node says it follows, for ever
  next-follower  a follower answers POST /next with 200 and a number
  status-later   keeps every rule for 4 s, then answers GET /status with role "boss"
  exit-later     n2 exits by itself 4 s after it started
  redis-lock     (Redis) its token is not its INCR's answer but 100 more
  redis-no-set   (Redis) it INCRs the counter and leads under its answer, but never SETs the lock
  zk-znode       (ZooKeeper) its token is its znode's sequence number, not its czxid
  zk-persistent  (ZooKeeper) its znode is PERSISTENT_SEQUENTIAL, not ephemeral
  zk-two         (ZooKeeper) its session creates a second child after the one it leads by
  pg-row         (PostgreSQL) its token is not its row's generation but 100 more
  pg-row-insert  (PostgreSQL) it inserts a second row into the lease table
  raft-peers     (no backend) it leads without ever connecting to its peers
Standard library only.
"""

import argparse
import json
import os
import socket
import struct
import sys
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

p = argparse.ArgumentParser()
p.add_argument("--break", dest="broken", required=True)
p.add_argument("--id", required=True)
p.add_argument("--http-port", type=int, required=True)
p.add_argument("--resource-url", required=True)
p.add_argument("--dir", required=True)
args = p.parse_args()

STARTED = time.monotonic()
LEADS = args.id == "n1" and args.broken != "leader-emerges"
BACKEND = os.environ.get("BATON_BACKEND", "etcd")
TTL_MS = int(os.environ.get("BATON_LEASE_TTL_MS", "2000"))
TOKEN = 1
lock = threading.Lock()
last_seq = [0]


def write(op):
    body = json.dumps({"node": args.id, "token": TOKEN, "op": op}).encode()
    req = urllib.request.Request(
        args.resource_url, data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=2) as r:
        return json.loads(r.read())


def status():
    s = {
        "node_id": args.id,
        "role": "leader" if LEADS else "follower",
        "fence_token": TOKEN if LEADS else None,
        "lease_ttl_remaining_ms": None,
    }
    if args.broken == "status":
        del s["role"]
    if args.broken == "status-later" and time.monotonic() - STARTED > 4:
        s["role"] = "boss"
    return s


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def answer(self, code, obj=None, text=None):
        data = text.encode() if text is not None else json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain" if text is not None else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/status":
            self.answer(200, status())
        elif self.path == "/metrics":
            self.answer(200, text="leaders_acting{node=\"%s\"} %d\n" % (args.id, 1 if LEADS else 0))
        else:
            self.answer(404, {"error": "not found"})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.startswith("/next"):
            self.answer(404, {"error": "not found"})
            return
        count = 1
        if "count=" in self.path:
            count = max(1, int(self.path.split("count=")[1].split("&")[0]))
        if not LEADS:
            if args.broken == "next-follower":
                self.answer(200, {"token": 1, "seq": 7})
            else:
                self.answer(409, {"leader": "n1", "address": None})
            return
        with lock:
            first, last = last_seq[0] + 1, last_seq[0] + count
            try:
                reply = write({"kind": "seq", "first": first, "last": last})
            except Exception:
                self.answer(503, text="write failed")
                return
            if reply.get("outcome") != "accepted":
                self.answer(503, text="write refused")
                return
            last_seq[0] = last
        self.answer(200, {"token": TOKEN, "seq": first, "last": last})


def renew_every_third_of_ttl(renew):
    def loop():
        while True:
            time.sleep(TTL_MS / 3000)
            renew()

    threading.Thread(target=loop, daemon=True).start()


def recv_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def redis_grant():
    """SET NX PX, then INCR once: the INCR's answer is the token (RESP by hand)."""
    url = urllib.parse.urlparse(os.environ["BATON_REDIS_URL"])
    key = os.environ["BATON_REDIS_KEY"]
    sock = socket.create_connection((url.hostname, url.port))
    replies = sock.makefile("rb")

    def call(*words):
        words = [str(w).encode() for w in words]
        sock.sendall(b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words))
        line = replies.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            return None if int(rest) < 0 else replies.read(int(rest) + 2)[:-2].decode()
        return rest.decode()

    value = "%s:%s" % (args.id, os.urandom(8).hex())
    while args.broken != "redis-no-set" and call("SET", key, value, "NX", "PX", TTL_MS) != "OK":
        time.sleep(0.05)
    token = call("INCR", key + ":token")
    renew_every_third_of_ttl(lambda: call("PEXPIRE", key, TTL_MS))
    return token + 100 if args.broken == "redis-lock" else token


def zk_grant():
    """A session and one EPHEMERAL_SEQUENTIAL child: its czxid is the token (jute by hand)."""
    host, port = os.environ["BATON_ZK_CONNECT"].split(",")[0].rsplit(":", 1)
    parent = os.environ["BATON_ZK_ELECTION_PATH"]
    sock = socket.create_connection((host, int(port)))

    def send(body):
        sock.sendall(struct.pack(">i", len(body)) + body)

    def receive():
        return recv_exactly(sock, struct.unpack(">i", recv_exactly(sock, 4))[0])

    def string(s):
        return struct.pack(">i", len(s)) + s.encode()

    # ConnectRequest: protocol version, last zxid seen, timeout, session id, password.
    send(struct.pack(">iqiqi", 0, 0, TTL_MS, 0, 16) + bytes(16) + b"\0")
    receive()
    # create2 (op 15) of parent/n_ with the node's id, world:anyone all, flags 3.
    acl = struct.pack(">ii", 1, 31) + string("world") + string("anyone")

    def create(xid, flags):
        send(struct.pack(">ii", xid, 15) + string(parent + "/n_") + string(args.id) + acl + struct.pack(">i", flags))
        return receive()

    reply = create(1, 2 if args.broken == "zk-persistent" else 3)
    if args.broken == "zk-two":
        create(2, 3)
    _, _, err = struct.unpack(">iqi", reply[:16])
    if err != 0:
        raise RuntimeError("create2 failed: %d" % err)
    (length,) = struct.unpack(">i", reply[16:20])
    path = reply[20 : 20 + length].decode()
    (czxid,) = struct.unpack(">q", reply[20 + length : 28 + length])

    def ping():
        send(struct.pack(">ii", -2, 11))
        receive()

    renew_every_third_of_ttl(ping)
    return int(path[-10:]) if args.broken == "zk-znode" else czxid


def pg_grant():
    """The lease row's acquire: its generation is the token (the v3 protocol by hand)."""
    info = dict(kv.split("=", 1) for kv in os.environ["BATON_PG_CONNINFO"].split())
    table = os.environ["BATON_PG_TABLE"]
    sock = socket.create_connection((info["host"], int(info["port"])))

    def until_ready():
        rows, error = [], None
        while True:
            kind = recv_exactly(sock, 1)
            body = recv_exactly(sock, struct.unpack(">i", recv_exactly(sock, 4))[0] - 4)
            if kind == b"D":
                row, at = [], 2
                for _ in range(struct.unpack(">h", body[:2])[0]):
                    (n,) = struct.unpack(">i", body[at : at + 4])
                    row.append(None if n < 0 else body[at + 4 : at + 4 + n].decode())
                    at += 4 + max(n, 0)
                rows.append(row)
            elif kind == b"E":
                error = body
            elif kind == b"Z":
                if error is not None:
                    raise RuntimeError(error.decode(errors="replace"))
                return rows

    def query(sql):
        body = sql.encode() + b"\0"
        sock.sendall(b"Q" + struct.pack(">i", 4 + len(body)) + body)
        return until_ready()

    startup = b"user\0%s\0database\0%s\0\0" % (info["user"].encode(), info["dbname"].encode())
    sock.sendall(struct.pack(">ii", 8 + len(startup), 196608) + startup)
    until_ready()
    lease = "now() + interval '%d milliseconds'" % TTL_MS
    while True:
        rows = query(
            "UPDATE %s SET node = '%s', expires_at = %s, generation = generation + 1"
            " WHERE expires_at < now() RETURNING generation" % (table, args.id, lease)
        )
        if rows:
            break
        time.sleep(0.05)
    generation = int(rows[0][0])
    if args.broken == "pg-row-insert":
        query("INSERT INTO %s VALUES ('%s', now(), 0)" % (table, args.id))
    renew_every_third_of_ttl(
        lambda: query(
            "UPDATE %s SET expires_at = %s WHERE node = '%s' AND generation = %d"
            % (table, lease, args.id, generation)
        )
    )
    return generation + 100 if args.broken == "pg-row" else generation


def peers_grant():
    """No backend: one connection to each peer through this node's own proxy to it."""
    if args.broken != "raft-peers":
        for entry in os.environ["BATON_RAFT_PEERS"].split(","):
            name, addr = entry.split("=", 1)
            if name != args.id:
                host, port = addr.rsplit(":", 1)
                socket.create_connection((host, int(port)), timeout=2).close()
    return 1


GRANTS = {"redis": redis_grant, "zookeeper": zk_grant, "postgres": pg_grant, "none": peers_grant}


def main():
    global TOKEN
    if args.broken == "listen":
        time.sleep(3600)
        return
    if LEADS and BACKEND in GRANTS:
        TOKEN = GRANTS[BACKEND]()
    if LEADS:
        last_seq[0] = write({"kind": "claim"})["last_seq"]
    if args.broken == "exit-later" and args.id == "n2":
        threading.Timer(4, lambda: os._exit(0)).start()
    ThreadingHTTPServer(("127.0.0.1", args.http_port), Handler).serve_forever()


if __name__ == "__main__":
    sys.exit(main())
