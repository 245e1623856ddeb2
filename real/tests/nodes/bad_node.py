#!/usr/bin/env python3
"""A stand-in node that breaks one rule of Baton's node contract on purpose.

The tests (real/tests/node_contract.rs) start it with `--node-cmd` and check that Baton
names the rule it broke. It elects nobody on etcd: node n1 simply says it leads, under
token 1, and does the leader's work properly (a claim, then a fenced seq write to the
resource before it hands numbers out); the others follow. Usage:

    bad_node.py --break RULE --id {id} --http-port {http_port} --resource-url {resource_url} --dir {dir}

RULE is one of:
  none           keeps every rule (the control: passes the checks before the run)
  listen         never listens
  status         answers GET /status without a `role`
  leader-emerges every node says it follows, for ever
  next-follower  a follower answers POST /next with 200 and a number
  status-later   keeps every rule for 4 s, then answers GET /status with role "boss"
  exit-later     n2 exits by itself 4 s after it started
Standard library only.
"""

import argparse
import json
import os
import sys
import threading
import time
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


def main():
    if args.broken == "listen":
        time.sleep(3600)
        return
    if LEADS:
        last_seq[0] = write({"kind": "claim"})["last_seq"]
    if args.broken == "exit-later" and args.id == "n2":
        threading.Timer(4, lambda: os._exit(0)).start()
    ThreadingHTTPServer(("127.0.0.1", args.http_port), Handler).serve_forever()


if __name__ == "__main__":
    sys.exit(main())
