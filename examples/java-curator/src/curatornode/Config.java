package curatornode;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What the node is started with: the BATON_* environment variables of Baton's node
 * contract (docs/src/node-contract.md, version 2, on ZooKeeper). Baton sets every
 * placeholder in the environment too, so the command template needs no arguments.
 */
final class Config {
    final String id;
    final int httpPort;
    final String zkConnect;
    final String electionPath;
    /** The ZooKeeper session timeout asked for, ms. */
    final int sessionTimeoutMs;
    /** Curator's connection timeout, ms: below the session timeout. */
    final int connectionTimeoutMs;
    final String resourceUrl;
    final long tickMs;
    final long writeTimeoutMs;
    /** Node name to the address clients reach it at (for 409 hints); may be empty. */
    final Map<String, String> peers;

    /** A bad or missing parameter. */
    static final class Invalid extends Exception {
        private static final long serialVersionUID = 1L;

        Invalid(String message) {
            super(message);
        }
    }

    private Config(Map<String, String> env) throws Invalid {
        String backend = env.getOrDefault("BATON_BACKEND", "zookeeper");
        if (!backend.equals("zookeeper")) {
            throw new Invalid("BATON_BACKEND is " + backend + ": this node elects on ZooKeeper only (run it with --backend zookeeper)");
        }
        id = required(env, "BATON_ID");
        httpPort = (int) number(env, "BATON_HTTP_PORT", null, 0, 65535);
        zkConnect = required(env, "BATON_ZK_CONNECT");
        electionPath = required(env, "BATON_ZK_ELECTION_PATH");
        if (!electionPath.startsWith("/") || (electionPath.length() > 1 && electionPath.endsWith("/"))) {
            throw new Invalid("BATON_ZK_ELECTION_PATH must be an absolute znode path, got " + electionPath);
        }
        sessionTimeoutMs = (int) number(env, "BATON_LEASE_TTL_MS", "3000", 1, Integer.MAX_VALUE);
        // Curator's defaults are 60 s and 15 s (a quarter); Curator waits this long for a
        // connection before an operation fails. Half the session timeout keeps it below.
        connectionTimeoutMs = Math.max(1, sessionTimeoutMs / 2);
        resourceUrl = required(env, "BATON_RESOURCE_URL");
        tickMs = number(env, "BATON_TICK_MS", "100", 1, Integer.MAX_VALUE);
        writeTimeoutMs = number(env, "BATON_WRITE_TIMEOUT_MS", "1000", 1, Integer.MAX_VALUE);
        peers = parsePeers(env.getOrDefault("BATON_PEERS", ""));
    }

    static Config fromEnvironment() throws Invalid {
        return new Config(System.getenv());
    }

    private static String required(Map<String, String> env, String name) throws Invalid {
        String v = env.get(name);
        if (v == null || v.isBlank()) {
            throw new Invalid(name + " is not set");
        }
        return v.trim();
    }

    private static long number(Map<String, String> env, String name, String def, long min, long max) throws Invalid {
        String v = env.get(name);
        if (v == null || v.isBlank()) {
            if (def == null) {
                throw new Invalid(name + " is not set");
            }
            v = def;
        }
        try {
            long n = Long.parseLong(v.trim());
            if (n < min || n > max) {
                throw new Invalid(name + " must be between " + min + " and " + max + ", got " + v);
            }
            return n;
        } catch (NumberFormatException e) {
            throw new Invalid(name + " must be an integer, got " + v);
        }
    }

    /** {@code n1=http://127.0.0.1:P,n2=...}. */
    private static Map<String, String> parsePeers(String s) throws Invalid {
        Map<String, String> out = new LinkedHashMap<>();
        for (String part : s.split(",")) {
            part = part.trim();
            if (part.isEmpty()) {
                continue;
            }
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw new Invalid("BATON_PEERS: expected name=url, got " + part);
            }
            out.put(part.substring(0, eq).trim(), part.substring(eq + 1).trim());
        }
        return Collections.unmodifiableMap(out);
    }
}
