package curatornode;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The contract's HTTP API on 127.0.0.1:{http_port}, with the JDK's
 * com.sun.net.httpserver:
 *
 * <pre>
 * GET  /status        {"node_id","role","fence_token","lease_ttl_remaining_ms"}
 * POST /next?count=N  200 {"token","seq","last"} on the leader; 409 {"leader","address"}
 *                     elsewhere; 503 when the write behind it failed or timed out
 * GET  /metrics       Prometheus text, with the gauge leaders_acting
 * POST /resign        on the leader: 200 once it stopped writing and closed its latch
 *                     (202 if that takes longer than 900 ms); elsewhere 409
 * </pre>
 *
 * A /next request is answered from the leader's write loop when its batch's write
 * returns, not from a thread parked per request: the exchange is completed later, on
 * the server's executor.
 */
final class HttpApi {
    /** POST /resign answers within this, done or not (Baton waits 1 s). */
    static final long RESIGN_ANSWER_MS = 900;

    private final Config cfg;
    private final Election election;
    private final Metrics metrics;
    private final ExecutorService pool;
    private HttpServer server;
    /** Counted down once a GET /status has been answered (see {@link #awaitFirstStatus}). */
    private final CountDownLatch firstStatus = new CountDownLatch(1);

    HttpApi(Config cfg, Election election, Metrics metrics) {
        this.cfg = cfg;
        this.election = election;
        this.metrics = metrics;
        this.pool = Executors.newFixedThreadPool(4, r -> {
            Thread t = new Thread(r, "http");
            t.setDaemon(true);
            return t;
        });
    }

    /** Binds and starts serving; returns the port bound. */
    int start() throws IOException {
        // The JDK's server leaves Nagle's algorithm on unless told (it writes a response's
        // headers and its body separately): on a kept-alive connection each answer then
        // waited for the client's delayed ACK, 44 ms a GET /status here instead of 0.7.
        // Read once, when the server's classes load, so it is set before the first one.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        server = HttpServer.create(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), cfg.httpPort), 128);
        server.createContext("/", this::handle);
        server.setExecutor(pool);
        server.start();
        return server.getAddress().getPort();
    }

    /**
     * Waits until the first GET /status has been answered, at most {@code ms}. A cold
     * JVM's first answer is slow (its classes load, its code runs interpreted), and
     * slower still while another thread loads Curator: Baton gives its readiness poll
     * 500 ms, headers and body together, and takes a body that misses that for an
     * empty one. So Curator waits for that first answer.
     */
    void awaitFirstStatus(long ms) {
        try {
            firstStatus.await(ms, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void handle(HttpExchange ex) throws IOException {
        try {
            String path = ex.getRequestURI().getPath();
            String method = ex.getRequestMethod();
            switch (path) {
                case "/status":
                    if (method(ex, "GET")) {
                        status(ex);
                        firstStatus.countDown();
                    }
                    return;
                case "/next":
                    if (method(ex, "POST")) {
                        next(ex);
                    }
                    return;
                case "/metrics":
                    if (method(ex, "GET")) {
                        send(ex, 200, "text/plain; version=0.0.4", metrics.render());
                    }
                    return;
                case "/resign":
                    if (method(ex, "POST")) {
                        resign(ex);
                    }
                    return;
                default:
                    send(ex, 404, "text/plain", "not found\n");
            }
        } catch (RuntimeException e) {
            Main.log("http: %s %s: %s", ex.getRequestMethod(), ex.getRequestURI(), e);
            send(ex, 500, "text/plain", "internal error\n");
        }
    }

    private boolean method(HttpExchange ex, String want) throws IOException {
        if (ex.getRequestMethod().equals(want)) {
            return true;
        }
        ex.getResponseHeaders().set("Allow", want);
        send(ex, 405, "text/plain", "method not allowed\n");
        return false;
    }

    private void status(HttpExchange ex) throws IOException {
        Election.Status s = election.status();
        String body = "{\"node_id\":" + Json.str(cfg.id)
                + ",\"role\":" + Json.str(s.role)
                + ",\"fence_token\":" + (s.token == null ? "null" : s.token.toString())
                // The session's remaining time is not something Curator exposes.
                + ",\"lease_ttl_remaining_ms\":null}";
        send(ex, 200, "application/json", body);
    }

    private String notLeaderBody() {
        String leader = election.hint();
        String address = leader == null ? null : cfg.peers.get(leader);
        return "{\"leader\":" + Json.str(leader) + ",\"address\":" + Json.str(address) + "}";
    }

    private void next(HttpExchange ex) throws IOException {
        long count = 1;
        String query = ex.getRequestURI().getRawQuery();
        if (query != null) {
            for (String kv : query.split("&")) {
                if (kv.startsWith("count=")) {
                    try {
                        count = Long.parseLong(kv.substring("count=".length()));
                    } catch (NumberFormatException e) {
                        send(ex, 400, "text/plain", "count must be a positive integer\n");
                        return;
                    }
                    if (count < 0 || count > Integer.MAX_VALUE) {
                        send(ex, 400, "text/plain", "count must be a positive integer\n");
                        return;
                    }
                    count = Math.max(count, 1);
                }
            }
        }
        drain(ex);
        Election.NextRequest q = election.submit(count);
        if (q == null) {
            send(ex, 409, "application/json", notLeaderBody());
            return;
        }
        q.reply.whenCompleteAsync((rep, err) -> {
            try {
                if (err == null && rep.status == 200) {
                    send(ex, 200, "application/json",
                            "{\"token\":" + rep.token + ",\"seq\":" + rep.first + ",\"last\":" + rep.last + "}");
                } else if (err == null && rep.status == 503) {
                    send(ex, 503, "text/plain", "the write behind this answer failed or timed out\n");
                } else {
                    send(ex, 409, "application/json", notLeaderBody());
                }
            } catch (IOException e) {
                // the client gave up (its timeout): nothing to answer
            }
        }, pool);
    }

    private void resign(HttpExchange ex) throws IOException {
        drain(ex);
        Election.Leadership ld = election.resign();
        if (ld == null) {
            send(ex, 409, "application/json", notLeaderBody());
            return;
        }
        boolean done;
        try {
            done = ld.released.await(RESIGN_ANSWER_MS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            done = false;
        }
        if (done) {
            send(ex, 200, "application/json", "{\"resigned\":true,\"token\":" + ld.token + "}");
        } else {
            send(ex, 202, "application/json",
                    "{\"resigned\":false,\"token\":" + ld.token + ",\"note\":\"step-down asked, not finished yet\"}");
        }
    }

    /** Reads and drops the request body, so the connection can be reused. */
    private static void drain(HttpExchange ex) throws IOException {
        ex.getRequestBody().readAllBytes();
    }

    private static void send(HttpExchange ex, int status, String contentType, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", contentType);
        try {
            ex.sendResponseHeaders(status, b.length == 0 ? -1 : b.length);
            try (OutputStream os = ex.getResponseBody()) {
                os.write(b);
            }
        } finally {
            ex.close();
        }
    }
}
