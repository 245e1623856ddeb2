#!/usr/bin/python3
"""A leader-election node for Baton on PostgreSQL: a lease row, through psycopg 3.

PostgreSQL has no election of its own and psycopg offers none: this is the row lease
practitioners write by hand (ShedLock's JDBC provider with usingDbTime() is the same
pattern), every time judged on the database's clock, now():

    acquire  UPDATE t SET node = me, expires_at = now() + ttl, generation = generation + 1
             WHERE expires_at < now() RETURNING generation      -- the token
    renew    UPDATE t SET expires_at = now() + ttl WHERE node = me AND generation = token
    release  UPDATE t SET expires_at = now()       WHERE node = me AND generation = token

psycopg as its documentation has it: one connection (psycopg.connect with the conninfo
Baton gives), autocommit (each statement its own transaction: nothing held open between
them), a server-side statement_timeout, identifiers composed with psycopg.sql, values
as query parameters. Who writes the lease keeps its deadline: the node stops acting once
the TTL has run since it sent the last statement that the database answered with the
lease (Baton's node contract v2, PostgreSQL). The rest of the contract (HTTP API,
protected writes) is examples/python-common/baton_node.py. See README.md.
"""

import datetime
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "python-common"))

import baton_node  # noqa: E402
import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402

PROGRAM = "python-psycopg"


class Db:
    """One psycopg connection, opened again when it breaks. psycopg serializes the
    statements of threads that share a connection."""

    def __init__(self, node, conninfo, statement_timeout_ms):
        self.node = node
        self.conninfo = conninfo
        self.statement_timeout_ms = statement_timeout_ms
        self.mu = threading.Lock()
        self.conn = None

    def _connection(self):
        with self.mu:
            if self.conn is None or self.conn.closed or self.conn.broken:
                if self.conn is not None:
                    self.conn.close()
                    self.conn = None
                self.conn = psycopg.connect(
                    self.conninfo,
                    autocommit=True,
                    # libpq's minimum, in whole seconds; psycopg enforces it.
                    connect_timeout=2,
                    application_name=self.node.cfg.id,
                    options="-c statement_timeout=%d" % self.statement_timeout_ms,
                )
            return self.conn

    def execute(self, query, params):
        """Runs one statement; returns its cursor. Raises psycopg.Error."""
        conn = self._connection()
        try:
            return conn.execute(query, params)
        except psycopg.Error:
            if conn.broken:
                with self.mu:
                    if self.conn is conn:
                        conn.close()
                        self.conn = None
            raise


def main():
    cfg = baton_node.Config.from_env(
        PROGRAM, ("BATON_PG_CONNINFO", "BATON_PG_TABLE"), expect_backend="postgres"
    )
    node = baton_node.Node(cfg)
    node.serve()

    ttl_s = cfg.lease_ttl_ms / 1000.0
    ttl = datetime.timedelta(milliseconds=cfg.lease_ttl_ms)
    # The lease is renewed every third of the TTL; a statement the server has not
    # finished within that is cancelled by the server.
    db = Db(node, cfg.value("BATON_PG_CONNINFO"), max(1, cfg.lease_ttl_ms // 3))
    # Candidates try the acquire every fifth of the TTL.
    poll_s = ttl_s / 5
    # No write starts with less than this left of the lease: the time a write takes to
    # reach the resource.
    margin_s = min(0.1, ttl_s / 10)

    table = sql.Identifier(*cfg.value("BATON_PG_TABLE").split("."))
    acquire = sql.SQL(
        "UPDATE {t} SET node = %s, expires_at = now() + %s, generation = generation + 1"
        " WHERE expires_at < now() RETURNING generation"
    ).format(t=table)
    renew = sql.SQL("UPDATE {t} SET expires_at = now() + %s WHERE node = %s AND generation = %s").format(t=table)
    release = sql.SQL("UPDATE {t} SET expires_at = now() WHERE node = %s AND generation = %s").format(t=table)
    holder = sql.SQL("SELECT node FROM {t} WHERE expires_at >= now()").format(t=table)

    def lookup():
        row = db.execute(holder, None).fetchone()
        return row[0] if row else None

    node.start_hints(lookup)

    while not node.shutting_down():
        node.set_role("candidate")
        sent = time.monotonic()
        try:
            row = db.execute(acquire, (cfg.id, ttl)).fetchone()
        except psycopg.Error as e:
            node.set_role("follower")
            node.log("acquire failed: %s" % (str(e).strip(),))
            node.sleep(poll_s)
            continue
        if row is None:
            node.sleep(poll_s)
            continue
        node.count("campaigns")
        generation = row[0]
        l = baton_node.Leadership(generation, valid_until=sent + ttl_s, margin_s=margin_s)
        keeper = threading.Thread(
            target=keep, args=(node, db, renew, l, cfg.id, ttl, ttl_s, sent), daemon=True
        )
        keeper.start()
        reason = node.lead(l)
        l.stop(reason)
        # The keeper may be inside a renewal: wait for it, or a renewal could land after
        # the release and take the lease back.
        keeper.join()
        try:
            db.execute(release, (cfg.id, generation))
        except psycopg.Error as e:
            node.log("release failed (%s); the lease expires by itself" % (str(e).strip(),))
        node.set_role("follower")
        node.ended(l)
        if reason == baton_node.RESIGNED:
            node.sleep(baton_node.REJOIN_AFTER_RESIGN_S)
    return 0


def keep(node, db, renew, l, me, ttl, ttl_s, since):
    """Renews the lease every third of the TTL while the leadership lasts. An answered
    renewal moves the deadline to its send plus the TTL; "no row" means the lease is
    gone (stop at once); an error leaves the deadline where it was and is retried
    shortly: the deadline, not the error, ends the leadership then."""
    period = ttl_s / 3
    next_at = since + period
    while not l.stopped():
        wait = next_at - time.monotonic()
        if wait > 0 and l.wait_stopped(wait):
            return
        if l.stopped():
            return
        sent = time.monotonic()
        try:
            rows = db.execute(renew, (ttl, me, l.token)).rowcount
        except psycopg.Error as e:
            node.count("renewal_failures")
            node.log("renew failed: %s" % (str(e).strip(),))
            next_at = time.monotonic() + min(0.1, period)
            continue
        if rows != 1:
            node.count("renewal_failures")
            node.log("renew: the lease is no longer ours (generation %d)" % l.token)
            l.stop(baton_node.LOST)
            return
        node.count("renewals")
        l.extend(sent + ttl_s)
        next_at = sent + period


if __name__ == "__main__":
    sys.exit(main())
