package curatornode;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

/**
 * The elector and the leader's work. Curator's {@link LeaderLatch} on
 * {@code {zk_election_path}} decides who leads; one thread (this class's loop) waits for
 * the latch to say so, reads the token (the czxid of the latch's own znode), and then
 * does every protected write, one at a time, for as long as {@link LeaderLatch#hasLeadership()}
 * holds. The latch's listener only wakes that thread.
 */
final class Election {
    /** How long a node that resigned waits before it campaigns again (as the reference nodes do). */
    static final long REJOIN_AFTER_RESIGN_MS = 1000;
    /** How often a node asks ZooKeeper who leads, for its 409 hints. */
    static final long HINT_INTERVAL_MS = 1000;

    /** Why a leadership ended. */
    static final String LOST = "latch_lost"; // SUSPENDED or LOST, or hasLeadership() went false
    static final String FENCED = "fenced"; // the resource rejected a write: a newer token exists
    static final String RESIGNED = "resigned"; // POST /resign
    static final String SHUTDOWN = "shutdown"; // SIGTERM

    /** One term of this node as leader: from the token's read until its writes stopped. */
    static final class Leadership {
        final long token;
        final LeaderLatch latch;
        final String znode;
        volatile boolean resign;
        /** Counted down once it stopped acting and, on a resign, closed its latch. */
        final CountDownLatch released = new CountDownLatch(1);

        Leadership(long token, LeaderLatch latch, String znode) {
            this.token = token;
            this.latch = latch;
            this.znode = znode;
        }
    }

    /** A POST /next waiting for the leader's next seq write. */
    static final class NextRequest {
        final long count;
        final CompletableFuture<NextReply> reply = new CompletableFuture<>();

        NextRequest(long count) {
            this.count = count;
        }
    }

    /** 200 with {@code first..=last} under {@code token}, 409 (not leading) or 503 (the write failed). */
    static final class NextReply {
        final int status;
        final long token;
        final long first;
        final long last;

        NextReply(int status, long token, long first, long last) {
            this.status = status;
            this.token = token;
            this.first = first;
            this.last = last;
        }
    }

    /** {@code /status}: role, and the token while leading. */
    static final class Status {
        final String role;
        final Long token;

        Status(String role, Long token) {
            this.role = role;
            this.token = token;
        }
    }

    private final Config cfg;
    private final Metrics m;
    // Made in start(), after the HTTP port listens: building the client loads most of
    // Curator's, ZooKeeper's and Guava's classes, a few hundred ms of a JVM's start.
    private ResourceWriter resource;
    private volatile CuratorFramework client;
    /** Never started: only asked who leads, for hints. */
    private LeaderLatch observer;

    /** Wakes the loop (capacity 1: a poke while one is pending is the same poke). */
    private final BlockingQueue<Boolean> wake = new ArrayBlockingQueue<>(1);
    private volatile boolean shutdown;
    /** False from an error state of the connection (SUSPENDED, LOST) until it is back. */
    private volatile boolean connectionOk = true;

    /** Guards the fields below; never held while calling Curator. */
    private final Object mu = new Object();
    private Leadership lead;
    private boolean accepting;
    private List<NextRequest> queue = new ArrayList<>();

    /** The latch this node campaigns with; null between a resign and the next campaign. */
    private volatile LeaderLatch latch;
    /** Who the election's lowest znode says leads (its data, the node id), or null. */
    private volatile String hint;

    private final LeaderLatchListener listener = new LeaderLatchListener() {
        @Override
        public void isLeader() {
            Main.log("latch: isLeader");
            poke();
        }

        @Override
        public void notLeader() {
            Main.log("latch: notLeader");
            poke();
        }
    };

    Election(Config cfg, Metrics m) {
        this.cfg = cfg;
        this.m = m;
    }

    void poke() {
        wake.offer(Boolean.TRUE);
    }

    /** Builds and starts the client, then the campaign loop and the hint loop. */
    void start() {
        // As Curator's documentation builds a client, with the contract's session timeout
        // (Baton's server grants it) and a connection timeout below it. The default
        // ConnectionStateErrorPolicy (Standard) is kept: SUSPENDED is an error state, so
        // LeaderLatch drops leadership as soon as the connection is suspended, not only
        // when Curator declares the session LOST.
        client = CuratorFrameworkFactory.builder()
                .connectString(cfg.zkConnect)
                .sessionTimeoutMs(cfg.sessionTimeoutMs)
                .connectionTimeoutMs(cfg.connectionTimeoutMs)
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                // Curator's EnsembleTracker (on by default) reads the ensemble's dynamic
                // config and replaces the connect string with the servers' own
                // addresses: behind a proxy, as here, that would route around it (the
                // contract: keep the endpoints given). A standalone server's config is
                // empty, so it changes nothing on Baton's server; off all the same.
                .ensembleTracker(false)
                .build();
        this.observer = new LeaderLatch(client, cfg.electionPath, cfg.id);
        this.resource = new ResourceWriter(cfg.resourceUrl, cfg.id, cfg.writeTimeoutMs);
        // Curator's documentation: "It is highly recommended that LeaderLatch users
        // register a ConnectionStateListener". This one stops the writes at an error
        // state of the client's policy (SUSPENDED or LOST), as the latch itself does.
        client.getConnectionStateListenable().addListener((c, state) -> {
            Main.log("connection: %s", state);
            m.connectionState(state.name());
            if (c.getConnectionStateErrorPolicy().isErrorState(state)) {
                connectionOk = false;
            } else if (state.isConnected()) {
                connectionOk = true;
            }
            poke();
        });
        client.start();
        Thread loop = new Thread(this::run, "election");
        loop.setDaemon(true);
        loop.start();
        Thread hints = new Thread(this::keepHint, "hints");
        hints.setDaemon(true);
        hints.start();
    }

    // ---- the campaign loop -------------------------------------------------------------

    private void run() {
        startLatch();
        while (!shutdown) {
            LeaderLatch l = latch;
            if (l == null || !l.hasLeadership() || !connectionOk) {
                setRole();
                waitWake(250);
                continue;
            }
            // The latch leads by the znode it last found lowest; getOurPath() is the same
            // znode unless the latch reset meanwhile (and then it no longer leads).
            String path = l.getOurPath();
            if (path == null || !path.equals(l.getLastPathIsLeader())) {
                waitWake(20);
                continue;
            }
            ZnodeRead r = readZnode(path);
            if (!l.hasLeadership() || l != latch) {
                continue;
            }
            if (r.error != null) {
                Main.log("could not read %s for the token (%s); asking again", path, r.error);
                waitWake(100);
                continue;
            }
            if (r.stat == null || r.stat.getEphemeralOwner() != r.sessionId) {
                // CURATOR-696: the latch believes it leads by a znode that is gone, or that
                // an earlier session owns (and the server will delete). Leading by it would
                // be leading by someone else's grant; Curator 5.4.0 does not notice, so
                // start over with a new latch (a new znode in the current session).
                m.staleLatch.incrementAndGet();
                Main.log("latch says leader by %s, but %s: closing it and starting a new latch", path,
                        r.stat == null ? "that znode does not exist"
                                : String.format("it belongs to session 0x%x, not ours (0x%x)", r.stat.getEphemeralOwner(), r.sessionId));
                closeLatch(l);
                startLatch();
                continue;
            }
            Leadership ld = new Leadership(r.stat.getCzxid(), l, path);
            String reason = lead(ld);
            switch (reason) {
                case RESIGNED:
                    // Writes have stopped: only now let the znode go.
                    closeLatch(l);
                    ld.released.countDown();
                    sleep(REJOIN_AFTER_RESIGN_MS);
                    if (!shutdown) {
                        startLatch();
                    }
                    break;
                case FENCED:
                    // The latch still says leader, the resource says a newer token exists:
                    // this znode's grant is over whatever the latch thinks. Give it up and
                    // queue again with a new one.
                    closeLatch(l);
                    ld.released.countDown();
                    if (!shutdown) {
                        startLatch();
                    }
                    break;
                default:
                    // LOST: the latch keeps campaigning by itself (on RECONNECTED it checks
                    // the children again; after an expiry it makes a new znode).
                    ld.released.countDown();
            }
        }
    }

    private void startLatch() {
        LeaderLatch l = new LeaderLatch(client, cfg.electionPath, cfg.id);
        l.addListener(listener);
        try {
            l.start();
        } catch (Exception e) {
            Main.log("LeaderLatch.start failed: %s", e);
        }
        latch = l;
        m.latchesStarted.incrementAndGet();
        setRole();
        Main.log("campaigning: LeaderLatch on %s started", cfg.electionPath);
    }

    private void closeLatch(LeaderLatch l) {
        if (latch == l) {
            latch = null;
        }
        try {
            l.close();
        } catch (Exception e) {
            Main.log("LeaderLatch.close: %s", e);
        }
        setRole();
    }

    /** The latch's znode as the server has it, and this client's session then. */
    private static final class ZnodeRead {
        final Stat stat; // null: no such znode
        final long sessionId;
        final String error; // non-null: no answer

        ZnodeRead(Stat stat, long sessionId, String error) {
            this.stat = stat;
            this.sessionId = sessionId;
            this.error = error;
        }
    }

    /** {@code exists} on the latch's znode, bounded by the session timeout. */
    private ZnodeRead readZnode(String path) {
        CompletableFuture<ZnodeRead> f = new CompletableFuture<>();
        try {
            client.checkExists().inBackground((c, event) -> {
                long session = -1;
                try {
                    session = c.getZookeeperClient().getZooKeeper().getSessionId();
                } catch (Exception e) {
                    // no handle now: leave -1, which matches no znode's owner
                }
                int rc = event.getResultCode();
                if (rc == KeeperException.Code.OK.intValue()) {
                    f.complete(new ZnodeRead(event.getStat(), session, null));
                } else if (rc == KeeperException.Code.NONODE.intValue()) {
                    f.complete(new ZnodeRead(null, session, null));
                } else {
                    f.complete(new ZnodeRead(null, session, KeeperException.Code.get(rc).toString()));
                }
            }).forPath(path);
            return f.get(cfg.sessionTimeoutMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            return new ZnodeRead(null, -1, "no answer within " + cfg.sessionTimeoutMs + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new ZnodeRead(null, -1, "interrupted");
        } catch (Exception e) {
            return new ZnodeRead(null, -1, e.toString());
        }
    }

    // ---- leading -------------------------------------------------------------------------

    /** One leadership: act until it must stop, then stop taking /next. Returns why it ended. */
    private String lead(Leadership ld) {
        synchronized (mu) {
            lead = ld;
        }
        m.fenceToken = ld.token;
        m.leadersActing = 1;
        m.role = "leader";
        m.transitions.incrementAndGet();
        Main.log("leader: token %d (czxid of %s)", ld.token, ld.znode);

        String reason = act(ld);

        // act() is the only writer and has returned: no write of this leadership is awaited.
        List<NextRequest> left;
        synchronized (mu) {
            accepting = false;
            left = queue;
            queue = new ArrayList<>();
            lead = null;
        }
        for (NextRequest q : left) {
            q.reply.complete(new NextReply(409, 0, 0, 0));
        }
        m.leadersActing = 0;
        m.fenceToken = 0;
        m.transitions.incrementAndGet();
        m.ended(reason);
        setRole();
        Main.log("stopped acting: token %d, %s", ld.token, reason);
        return reason;
    }

    /** Why this leadership must stop now, or null. */
    private String stopReason(Leadership ld) {
        if (shutdown) {
            return SHUTDOWN;
        }
        if (ld.resign) {
            return RESIGNED;
        }
        if (!connectionOk || !ld.latch.hasLeadership() || latch != ld.latch) {
            return LOST;
        }
        return null;
    }

    /** Spaces out writes after failures: 25 ms doubling up to the write timeout. */
    private final class Pacer {
        long pauseMs;
        int failures;
    }

    /**
     * The leader's work, every write one at a time: claim (announce the token, learn the
     * sequence's last number), then a tick every tick and a seq write for each batch of
     * queued /next requests. Checks the latch before every write.
     */
    private String act(Leadership ld) {
        Pacer p = new Pacer();
        long lastSeq;
        while (true) {
            String r = stopReason(ld);
            if (r != null) {
                return r;
            }
            ResourceWriter.Result res = write(ld, ResourceWriter.claimOp(), p);
            if (res.kind == ResourceWriter.Kind.ACCEPTED) {
                lastSeq = res.lastSeq;
                break;
            }
            if (res.kind == ResourceWriter.Kind.REJECTED) {
                return FENCED;
            }
        }
        synchronized (mu) {
            accepting = true;
        }
        long nextTick = System.nanoTime();
        long tickN = 0;
        long tickNs = TimeUnit.MILLISECONDS.toNanos(cfg.tickMs);
        while (true) {
            String r = stopReason(ld);
            if (r != null) {
                return r;
            }
            long now = System.nanoTime();
            // The tick goes first when due: under load the queue is never empty.
            if (now - nextTick >= 0) {
                tickN++;
                nextTick += tickNs;
                if (nextTick - now <= 0) {
                    nextTick = now + tickNs; // fell behind (a slow write, a pause): no burst
                }
                ResourceWriter.Result res = write(ld, ResourceWriter.tickOp(tickN), p);
                if (res.kind == ResourceWriter.Kind.REJECTED) {
                    return FENCED;
                }
                if (res.kind == ResourceWriter.Kind.ACCEPTED && res.lastSeq > lastSeq) {
                    lastSeq = res.lastSeq;
                }
                continue;
            }
            List<NextRequest> batch;
            synchronized (mu) {
                batch = queue;
                queue = new ArrayList<>();
            }
            if (!batch.isEmpty()) {
                long count = 0;
                for (NextRequest q : batch) {
                    count += q.count;
                }
                long first = lastSeq + 1;
                long last = lastSeq + count;
                ResourceWriter.Result res = write(ld, ResourceWriter.seqOp(first, last), p);
                // Numbers of a write that may have landed are never handed out again:
                // gaps are allowed, reuse is not.
                lastSeq = last;
                if (res.kind != ResourceWriter.Kind.REJECTED && res.lastSeq > lastSeq) {
                    lastSeq = res.lastSeq;
                }
                long next = first;
                for (NextRequest q : batch) {
                    switch (res.kind) {
                        case ACCEPTED:
                            q.reply.complete(new NextReply(200, ld.token, next, next + q.count - 1));
                            next += q.count;
                            break;
                        case REJECTED:
                            q.reply.complete(new NextReply(409, 0, 0, 0));
                            break;
                        default:
                            q.reply.complete(new NextReply(503, 0, 0, 0));
                    }
                }
                if (res.kind == ResourceWriter.Kind.REJECTED) {
                    return FENCED;
                }
                continue;
            }
            long waitMs = Math.max(1, TimeUnit.NANOSECONDS.toMillis(nextTick - System.nanoTime()));
            waitWake(waitMs);
        }
    }

    /** One protected write, with its metrics; a failed one is paced. */
    private ResourceWriter.Result write(Leadership ld, String op, Pacer p) {
        long sent = System.nanoTime();
        ResourceWriter.Result res = resource.write(ld.token, op);
        switch (res.kind) {
            case ACCEPTED:
                if (p.failures > 0) {
                    Main.log("resource answers again after %d failed writes", p.failures);
                }
                p.failures = 0;
                p.pauseMs = 0;
                m.writesAccepted.incrementAndGet();
                break;
            case REJECTED:
                m.fencingRejections.incrementAndGet();
                Main.log("write rejected by the fence: token %d < max_token %d; stepping down", ld.token, res.maxToken);
                break;
            case BEHIND:
                m.writesBehind.incrementAndGet();
                break;
            default:
                m.writesFailed.incrementAndGet();
                p.failures++;
                if (p.failures == 1) {
                    Main.log("write failed (%s); retrying, paced up to %d ms", res.error, cfg.writeTimeoutMs);
                }
                p.pauseMs = p.pauseMs == 0 ? 25 : Math.min(p.pauseMs * 2, cfg.writeTimeoutMs);
                long until = sent + TimeUnit.MILLISECONDS.toNanos(p.pauseMs);
                while (stopReason(ld) == null) {
                    long left = TimeUnit.NANOSECONDS.toMillis(until - System.nanoTime());
                    if (left <= 0) {
                        break;
                    }
                    waitWake(left);
                }
        }
        return res;
    }

    private void waitWake(long ms) {
        try {
            wake.poll(ms, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void sleep(long ms) {
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (!shutdown) {
            long left = TimeUnit.NANOSECONDS.toMillis(until - System.nanoTime());
            if (left <= 0) {
                return;
            }
            waitWake(left);
        }
    }

    // ---- what the HTTP API asks ---------------------------------------------------------

    private void setRole() {
        m.role = status().role;
    }

    Status status() {
        Leadership ld;
        synchronized (mu) {
            ld = lead;
        }
        if (ld != null) {
            return new Status("leader", ld.token);
        }
        LeaderLatch l = latch;
        boolean campaigning = l != null && l.getState() == LeaderLatch.State.STARTED;
        return new Status(campaigning ? "candidate" : "follower", null);
    }

    /** Queues a /next batch for the next seq write; null if this node does not take them. */
    NextRequest submit(long count) {
        NextRequest q = new NextRequest(count);
        synchronized (mu) {
            if (!accepting) {
                return null;
            }
            queue.add(q);
        }
        poke();
        return q;
    }

    /** Asks the current leadership to step down; null if not leading. */
    Leadership resign() {
        Leadership ld;
        synchronized (mu) {
            ld = lead;
        }
        if (ld == null) {
            return null;
        }
        ld.resign = true;
        poke();
        return ld;
    }

    String hint() {
        return hint;
    }

    /** SIGTERM: stop acting (waiting for the write in flight), then close latch and client. */
    void shutdown(long waitMs) {
        Leadership ld;
        synchronized (mu) {
            ld = lead;
        }
        shutdown = true;
        poke();
        if (ld != null) {
            try {
                ld.released.await(waitMs, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        LeaderLatch l = latch;
        if (l != null) {
            closeLatch(l);
        }
        if (client != null) {
            client.close();
        }
    }

    /** Every second: who the election's lowest znode names (LeaderLatch.getLeader()). */
    private void keepHint() {
        while (!shutdown) {
            try {
                Participant p = observer.getLeader();
                hint = p.isLeader() && !p.getId().isEmpty() ? p.getId() : null;
            } catch (Exception e) {
                // no answer now (connection loss): keep the last hint
            }
            try {
                Thread.sleep(HINT_INTERVAL_MS);
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}
