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

	leadersActing        int64 // gauge: 1 while this node acts as leader
	role                 string
	fenceToken           int64 // gauge: token acted under, 0 when not leading
	campaigns            uint64
	campaignFailures     uint64
	transitions          uint64
	renewals             uint64
	writesAccepted       uint64
	fencingRejections    uint64
	writesFailed         uint64
	writesBehind         uint64
	campaignLatency      []uint64 // cumulative per bucket is computed at render
	campaignLatencySum   float64
	campaignLatencyCount uint64
}

var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0}

func NewMetrics(node string) *Metrics {
	return &Metrics{node: node, role: "follower", campaignLatency: make([]uint64, len(latencyBuckets))}
}

func (m *Metrics) update(f func(m *Metrics)) {
	m.mu.Lock()
	f(m)
	m.mu.Unlock()
}

func (m *Metrics) observeCampaignLatency(seconds float64) {
	m.update(func(m *Metrics) {
		for i, b := range latencyBuckets {
			if seconds <= b {
				m.campaignLatency[i]++
				break
			}
		}
		m.campaignLatencySum += seconds
		m.campaignLatencyCount++
	})
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
	fmt.Fprintf(&b, "# HELP baton_role 1 for the node's current role\n# TYPE baton_role gauge\n")
	for _, r := range []string{"leader", "candidate", "follower"} {
		v := 0
		if r == m.role {
			v = 1
		}
		fmt.Fprintf(&b, "baton_role{%s,role=\"%s\"} %d\n", node, r, v)
	}
	one("baton_fence_token", "gauge", "The token this node acts under, 0 when not leading", m.fenceToken)
	one("baton_campaigns_total", "counter", "Campaigns started (each on a new etcd session)", m.campaigns)
	one("baton_campaign_failures_total", "counter", "Campaigns that ended without winning (etcd error, session lost while waiting)", m.campaignFailures)
	one("baton_leadership_transitions_total", "counter", "Times this node became leader or stopped being leader", m.transitions)
	one("baton_lease_renewals_total", "counter", "Keepalives etcd answered with the session's lease renewed", m.renewals)
	one("baton_writes_accepted_total", "counter", "Protected writes the fenced resource accepted", m.writesAccepted)
	one("baton_fencing_rejections_total", "counter", "Protected writes the fenced resource rejected (token below its highest)", m.fencingRejections)
	one("baton_writes_failed_total", "counter", "Protected writes that timed out or got no valid answer", m.writesFailed)
	one("baton_writes_behind_total", "counter", "Sequencer writes the resource refused as behind its row", m.writesBehind)
	name := "baton_campaign_latency_seconds"
	fmt.Fprintf(&b, "# HELP %s From a campaign's start to its win\n# TYPE %s histogram\n", name, name)
	var cum uint64
	for i, le := range latencyBuckets {
		cum += m.campaignLatency[i]
		fmt.Fprintf(&b, "%s_bucket{%s,le=\"%v\"} %d\n", name, node, le, cum)
	}
	fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %d\n", name, node, m.campaignLatencyCount)
	fmt.Fprintf(&b, "%s_sum{%s} %v\n%s_count{%s} %d\n", name, node, m.campaignLatencySum, name, node, m.campaignLatencyCount)
	return b.String()
}
