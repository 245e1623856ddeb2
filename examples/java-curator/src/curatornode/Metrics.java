package curatornode;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The node's Prometheus series, every one labelled {@code node="<id>"}; names as in the
 * Go reference node where it has the same series, {@code curator_*} for what is
 * Curator's own.
 */
final class Metrics {
    private final String node;

    volatile int leadersActing;
    volatile long fenceToken;
    volatile String role = "follower";

    final AtomicLong latchesStarted = new AtomicLong();
    final AtomicLong transitions = new AtomicLong();
    final AtomicLong writesAccepted = new AtomicLong();
    final AtomicLong fencingRejections = new AtomicLong();
    final AtomicLong writesFailed = new AtomicLong();
    final AtomicLong writesBehind = new AtomicLong();
    /** The latch said leader, but its znode was gone or another session's. */
    final AtomicLong staleLatch = new AtomicLong();
    final Map<String, AtomicLong> connectionStates = new ConcurrentHashMap<>();
    final Map<String, AtomicLong> endReasons = new ConcurrentHashMap<>();

    Metrics(String node) {
        this.node = node;
    }

    void connectionState(String state) {
        connectionStates.computeIfAbsent(state, k -> new AtomicLong()).incrementAndGet();
    }

    void ended(String reason) {
        endReasons.computeIfAbsent(reason, k -> new AtomicLong()).incrementAndGet();
    }

    private static String esc(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }

    String render() {
        String lbl = "node=\"" + esc(node) + "\"";
        StringBuilder b = new StringBuilder(2048);
        one(b, lbl, "leaders_acting", "gauge", "1 while this node acts as leader; summed over the fleet it must be 1", leadersActing);
        b.append("# HELP baton_role 1 for the node's current role\n# TYPE baton_role gauge\n");
        String r = role;
        for (String each : new String[] {"leader", "candidate", "follower"}) {
            b.append("baton_role{").append(lbl).append(",role=\"").append(each).append("\"} ")
                    .append(each.equals(r) ? 1 : 0).append('\n');
        }
        one(b, lbl, "baton_fence_token", "gauge", "The token (czxid of its latch znode) this node acts under, 0 when not leading", fenceToken);
        one(b, lbl, "curator_latches_started_total", "counter", "LeaderLatch instances started (one at start, one after each resign or fenced write)", latchesStarted.get());
        one(b, lbl, "baton_leadership_transitions_total", "counter", "Times this node began or stopped acting as leader", transitions.get());
        one(b, lbl, "baton_writes_accepted_total", "counter", "Protected writes the fenced resource accepted", writesAccepted.get());
        one(b, lbl, "baton_fencing_rejections_total", "counter", "Protected writes the fenced resource rejected (token below its highest)", fencingRejections.get());
        one(b, lbl, "baton_writes_failed_total", "counter", "Protected writes that timed out or got no valid answer", writesFailed.get());
        one(b, lbl, "baton_writes_behind_total", "counter", "Sequencer writes the resource refused as behind its row", writesBehind.get());
        one(b, lbl, "curator_stale_latch_total", "counter", "Times the latch said leader while its znode was gone or owned by another session (CURATOR-696)", staleLatch.get());
        b.append("# HELP curator_connection_state_changes_total Curator connection state changes seen\n# TYPE curator_connection_state_changes_total counter\n");
        for (Map.Entry<String, AtomicLong> e : connectionStates.entrySet()) {
            b.append("curator_connection_state_changes_total{").append(lbl).append(",state=\"").append(esc(e.getKey()))
                    .append("\"} ").append(e.getValue().get()).append('\n');
        }
        b.append("# HELP baton_leaderships_ended_total Leaderships ended, by why\n# TYPE baton_leaderships_ended_total counter\n");
        for (Map.Entry<String, AtomicLong> e : endReasons.entrySet()) {
            b.append("baton_leaderships_ended_total{").append(lbl).append(",reason=\"").append(esc(e.getKey()))
                    .append("\"} ").append(e.getValue().get()).append('\n');
        }
        return b.toString();
    }

    private static void one(StringBuilder b, String lbl, String name, String type, String help, long v) {
        b.append("# HELP ").append(name).append(' ').append(help).append('\n');
        b.append("# TYPE ").append(name).append(' ').append(type).append('\n');
        b.append(name).append('{').append(lbl).append("} ").append(v).append('\n');
    }
}
