package main

import (
	"fmt"
	"strings"
	"sync"
)

// Metrics are the node's Prometheus series, written out by hand in the text exposition
// format (version 0.0.4). Every series carries the label node="<id>". The names follow
// Baton's own Rust node (real/src/node/metrics.rs) where it has the same series.
type Metrics struct {
	mu   sync.Mutex
	node string

	leadersActing     int64 // gauge: 1 while this node acts as leader
	fenceToken        int64 // gauge: token acted under, 0 when not leading
	transitions       uint64
	verifyFailures    uint64
	writesAccepted    uint64
	fencingRejections uint64
	writesFailed      uint64
	writesBehind      uint64
}

func NewMetrics(node string) *Metrics {
	return &Metrics{node: node}
}

func (m *Metrics) update(f func(m *Metrics)) {
	m.mu.Lock()
	f(m)
	m.mu.Unlock()
}

// escapeLabel escapes a label value as the exposition format asks.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// Render is the text exposition of every series.
func (m *Metrics) Render() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	node := fmt.Sprintf(`node="%s"`, escapeLabel(m.node))
	one := func(name, typ, help string, v interface{}) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s{%s} %v\n", name, help, name, typ, name, node, v)
	}
	one("leaders_acting", "gauge", "1 while this node acts as leader; summed over the fleet it must be 1", m.leadersActing)
	one("baton_fence_token", "gauge", "The Raft term this node acts under, 0 when not leading", m.fenceToken)
	one("baton_leadership_transitions_total", "counter", "Times this node started or stopped acting as leader", m.transitions)
	one("baton_verify_leader_failures_total", "counter", "Protected writes not sent: VerifyLeader failed or took longer than the leader lease", m.verifyFailures)
	one("baton_writes_accepted_total", "counter", "Protected writes the fenced resource accepted", m.writesAccepted)
	one("baton_fencing_rejections_total", "counter", "Protected writes the fenced resource rejected (token below its highest)", m.fencingRejections)
	one("baton_writes_failed_total", "counter", "Protected writes that timed out or got no valid answer", m.writesFailed)
	one("baton_writes_behind_total", "counter", "Sequencer writes the resource refused as behind its row", m.writesBehind)
	return b.String()
}
