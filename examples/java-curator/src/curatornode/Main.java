package curatornode;

import java.time.Instant;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.Locale;

/**
 * A leader-election node on Apache Curator's LeaderLatch that keeps Baton's node contract
 * (docs/src/node-contract.md, version 2, ZooKeeper). Configured from the BATON_*
 * environment variables; serves HTTP first (the contract wants an answer within 10 s),
 * then starts the Curator client and campaigns.
 */
public final class Main {
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.SSS");
    private static volatile String id = "?";

    private Main() {}

    /** One line on stderr: time, node, message. */
    static void log(String format, Object... args) {
        String msg = args.length == 0 ? format : String.format(format, args);
        System.err.println(LocalTime.now().format(TIME) + " " + id + " " + msg);
    }

    /**
     * Loads, before the port listens, what the first answer would otherwise load while
     * Baton waits on it: the JDK server stamps every response with a Date header in the
     * pattern below, and the first such stamp loads java.time's locale and time-zone
     * name data (about 100 ms of a cold JVM's first GET /status, measured with
     * -Xlog:class+load). Connection refused is what Baton retries; a slow answer is not.
     */
    private static void warmUp() {
        DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss zzz", Locale.US)
                .withZone(ZoneId.of("GMT"))
                .format(Instant.now());
        LocalTime.now().format(TIME);
    }

    public static void main(String[] args) {
        Config cfg;
        try {
            cfg = Config.fromEnvironment();
        } catch (Config.Invalid e) {
            System.err.println("curator-node: " + e.getMessage());
            System.exit(2);
            return;
        }
        id = cfg.id;
        Metrics metrics = new Metrics(cfg.id);
        Election election = new Election(cfg, metrics);
        HttpApi api = new HttpApi(cfg, election, metrics);
        warmUp();
        int port;
        try {
            port = api.start();
        } catch (Exception e) {
            System.err.println("curator-node: cannot listen on 127.0.0.1:" + cfg.httpPort + ": " + e);
            System.exit(1);
            return;
        }
        System.out.println("LISTENING 127.0.0.1:" + port);
        System.out.flush();
        api.awaitFirstStatus(2000);
        log("listening on 127.0.0.1:%d; ZooKeeper %s, latch path %s, session timeout %d ms, connection timeout %d ms",
                port, cfg.zkConnect, cfg.electionPath, cfg.sessionTimeoutMs, cfg.connectionTimeoutMs);
        election.start();
        // SIGTERM/SIGINT (Baton sends neither: it kills): stop writing, close the latch
        // (its znode goes at once) and the client.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            log("shutting down");
            election.shutdown(cfg.writeTimeoutMs + 500);
        }, "shutdown"));
    }
}
