#!/usr/bin/python3
"""A leader-election node for Baton on ZooKeeper, with kazoo's own Election recipe.

The election is kazoo's as its documentation has it: ``zk.Election(path, identifier)``
and ``election.run(leader_function)``, which takes kazoo's Lock (an
EPHEMERAL_SEQUENTIAL child of the path; the lowest leads) and calls the function while
it holds it, releasing it when the function returns. The token is the czxid of the
node's own child (Baton's node contract v2, ZooKeeper). kazoo leaves connection trouble
to its user: as kazoo's documentation asks, a state listener stops the leader's work on
SUSPENDED ("a client should not assume that locks are valid during this time"), resumes
it if the connection comes back to the same session, and gives the leadership up on
LOST. The rest of the contract (HTTP API, protected writes) is
examples/python-common/baton_node.py. See README.md.
"""

import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "python-common"))

import baton_node  # noqa: E402
from kazoo.client import KazooClient  # noqa: E402
from kazoo.exceptions import KazooException  # noqa: E402
from kazoo.protocol.states import KazooState  # noqa: E402

PROGRAM = "python-kazoo"


class Connection:
    """What the state listener learned: a count of every change away from CONNECTED
    (SUSPENDED or LOST), a count of LOSTs, and a condition to wait on."""

    def __init__(self, node):
        self.node = node
        self.cond = threading.Condition()
        self.state = KazooState.LOST
        self.interruptions = 0
        self.losses = 0

    def listener(self, state):
        # Called on kazoo's connection thread: it must not block (kazoo's docs).
        with self.cond:
            self.state = state
            if state != KazooState.CONNECTED:
                self.interruptions += 1
            if state == KazooState.LOST:
                self.losses += 1
            self.cond.notify_all()
        if state != KazooState.CONNECTED:
            self.node.stop_leading(baton_node.LOST)
        self.node.log("ZooKeeper connection %s" % state)

    def wait_connected(self):
        """Waits until kazoo says CONNECTED (or the node shuts down)."""
        with self.cond:
            while self.state != KazooState.CONNECTED and not self.node.shutting_down():
                self.cond.wait(0.1)
            return self.state == KazooState.CONNECTED


def main():
    cfg = baton_node.Config.from_env(
        PROGRAM, ("BATON_ZK_CONNECT", "BATON_ZK_ELECTION_PATH"), expect_backend="zookeeper"
    )
    node = baton_node.Node(cfg)
    node.serve()

    path = cfg.value("BATON_ZK_ELECTION_PATH")
    # The session timeout asked for is the lease TTL (kazoo's `timeout`, in seconds).
    zk = KazooClient(hosts=cfg.value("BATON_ZK_CONNECT"), timeout=cfg.lease_ttl_ms / 1000.0)
    conn = Connection(node)
    zk.add_listener(conn.listener)
    while not node.shutting_down():
        try:
            zk.start(timeout=15)
            break
        except Exception as e:  # kazoo's handler raises its own timeout exception
            node.log("cannot connect to ZooKeeper: %s; retrying" % (e,))
            node.sleep(0.5)

    election = zk.Election(path, cfg.id)

    def lookup():
        # The contenders in queue order: the first holds the lock.
        contenders = election.contenders()
        return contenders[0] if contenders else None

    node.start_hints(lookup)

    while not node.shutting_down():
        node.set_role("candidate")
        node.count("campaigns")
        outcome = {}
        try:
            election.run(leader, node, zk, conn, election, outcome)
        except Exception as e:  # KazooException, or anything else: keep campaigning
            node.log("election failed: %r" % (e,))
        node.set_role("follower")
        if "leadership" in outcome:
            node.ended(outcome["leadership"])
        if outcome.get("reason") == baton_node.RESIGNED:
            node.sleep(baton_node.REJOIN_AFTER_RESIGN_S)
        elif "leadership" not in outcome:
            node.sleep(0.1)
    zk.stop()
    return 0


def leader(node, zk, conn, election, outcome):
    """kazoo's leader function: runs while this node holds the election's lock; the
    lock is released when it returns."""
    with conn.cond:
        interruptions, losses = conn.interruptions, conn.losses
    session = zk.client_id
    if zk.state != KazooState.CONNECTED or session is None:
        return
    own = "%s/%s" % (election.lock.path, election.lock.node)
    try:
        stat = zk.exists(own)
    except KazooException as e:
        node.log("cannot read %s: %s" % (own, e))
        return
    if stat is None or stat.ephemeralOwner != session[0]:
        node.log("%s is gone or not this session's; not leading" % own)
        return
    node.log("elected: %s (czxid %d)" % (own, stat.czxid))
    while True:
        seen = interruptions

        def connected_since(seen=seen):
            return conn.interruptions == seen and conn.state == KazooState.CONNECTED

        l = baton_node.Leadership(stat.czxid, check=connected_since)
        outcome["leadership"] = l
        reason = node.lead(l)
        outcome["reason"] = reason
        if reason != baton_node.LOST:
            return
        # SUSPENDED, or LOST: pause until kazoo knows which. Back to CONNECTED on the
        # same session, with no LOST between, the lock is still this node's (its
        # ephemeral child never went): lead on under the same token.
        if not conn.wait_connected():
            return
        with conn.cond:
            interruptions = conn.interruptions
            lost = conn.losses != losses
        if lost or zk.client_id is None or zk.client_id[0] != session[0]:
            node.log("the session was lost: the lock is gone")
            return
        node.log("connection back on the same session: leading on")


if __name__ == "__main__":
    sys.exit(main())
