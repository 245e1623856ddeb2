#!/usr/bin/python3
"""A leader-election node for Baton on Redis, with redis-py's own lock, redis.lock.Lock.

The election is redis-py's Lock as its documentation has it: ``Lock(r, key,
timeout=TTL)``, ``acquire()`` (SET key token NX PX TTL, retried every ``sleep``),
``reacquire()`` to reset the TTL while the work goes on, ``release()`` (a Lua
compare-and-delete). Right after each acquire, one ``INCR {key}:token``: its answer is
the fencing token (Baton's node contract v2, Redis). The rest of the contract (HTTP API,
protected writes) is examples/python-common/baton_node.py. See README.md.
"""

import os
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "python-common"))

import baton_node  # noqa: E402
import redis  # noqa: E402
from redis.exceptions import LockError, LockNotOwnedError, RedisError  # noqa: E402

PROGRAM = "python-redis"


def main():
    cfg = baton_node.Config.from_env(PROGRAM, ("BATON_REDIS_URL", "BATON_REDIS_KEY"), expect_backend="redis")
    node = baton_node.Node(cfg)
    node.serve()

    ttl_s = cfg.lease_ttl_ms / 1000.0
    key = cfg.value("BATON_REDIS_KEY")
    # Every call bounded: a Redis that does not answer raises redis.TimeoutError after
    # a third of the TTL. The keeper below reacquires every third of the TTL, so a
    # reacquire that hangs has failed before the lock can run out. redis-py retries
    # nothing by default (retry_on_timeout=False).
    r = redis.Redis.from_url(
        cfg.value("BATON_REDIS_URL"),
        socket_timeout=ttl_s / 3,
        socket_connect_timeout=ttl_s / 3,
        client_name=cfg.id,
    )
    # thread_local=False: the keeper thread extends the lock the main thread took
    # (redis-py's docstring for Lock: "disable thread local storage" in that case).
    lock = r.lock(key, timeout=ttl_s, sleep=0.1, thread_local=False)

    def lookup():
        holder = r.get(key)
        return holder.decode(errors="replace").split(":", 1)[0] if holder else None

    node.start_hints(lookup)

    while not node.shutting_down():
        node.set_role("candidate")
        node.count("campaigns")
        try:
            # The lock's value: unique to this acquisition, and names the holder for
            # the followers' hints (redis-py draws a uuid1 when not given one).
            lock.acquire(blocking=True, token="%s:%s" % (cfg.id, uuid.uuid4().hex))
            acquired = time.monotonic()
        except RedisError as e:
            node.set_role("follower")
            node.log("acquire failed: %s" % (e,))
            node.sleep(0.1)
            continue
        try:
            token = r.incr(key + ":token")
        except RedisError as e:
            # The INCR may have landed or not: lead under no number of unknown fate.
            node.log("INCR %s:token failed (%s); letting the lock go" % (key, e))
            release(node, lock)
            node.set_role("follower")
            node.sleep(0.1)
            continue
        l = baton_node.Leadership(token)
        l.estimate_until = acquired + ttl_s
        keeper = threading.Thread(target=keep, args=(node, lock, l, ttl_s, acquired), daemon=True)
        keeper.start()
        reason = node.lead(l)
        l.stop(reason)  # the keeper stops extending
        keeper.join()
        release(node, lock)
        node.ended(l)
        if reason == baton_node.RESIGNED:
            node.sleep(baton_node.REJOIN_AFTER_RESIGN_S)
    return 0


def keep(node, lock, l, ttl_s, since):
    """Resets the lock's TTL every third of it while the leadership lasts; stops the
    leadership as soon as one reset fails (the lock is gone, or may be: redis-py says
    LockNotOwnedError, or the call timed out or broke)."""
    period = ttl_s / 3
    last_sent = since
    while not l.stopped():
        wait = last_sent + period - time.monotonic()
        if wait > 0 and l.wait_stopped(wait):
            return
        sent = time.monotonic()
        try:
            lock.reacquire()
        except LockNotOwnedError:
            node.count("renewal_failures")
            node.log("reacquire: the lock is no longer ours")
            l.stop(baton_node.LOST)
            return
        except (RedisError, LockError) as e:
            node.count("renewal_failures")
            node.log("reacquire failed: %s; stepping down" % (e,))
            l.stop(baton_node.LOST)
            return
        node.count("renewals")
        last_sent = sent
        # Informational only (/status's lease_ttl_remaining_ms): the node does not act
        # on it. redis-py keeps no deadline, and this node adds none.
        l.estimate_until = sent + ttl_s


def release(node, lock):
    try:
        lock.release()
    except LockNotOwnedError:
        pass  # it expired, or another holder has it now
    except (RedisError, LockError) as e:
        node.log("release failed (%s); the lock expires by itself" % (e,))


if __name__ == "__main__":
    sys.exit(main())
