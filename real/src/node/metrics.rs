//! A node's Prometheus metrics (the spec's section 6), served at `GET /metrics`.
//!
//! Every series carries the label `node`, so a Prometheus scraping the fleet sums or
//! compares them across nodes:
//!
//! | metric | type | meaning |
//! |---|---|---|
//! | `leaders_acting` | gauge | 1 while this node acts as leader (from its win until it stops its writes); summed over the fleet it must be 1, and 2 is the alert |
//! | `baton_role{role}` | gauge | 1 for the node's current role (`leader`, `candidate`, `follower`), 0 for the others |
//! | `baton_leadership_transitions_total` | counter | times the node became leader or stopped being leader |
//! | `baton_campaign_latency_seconds` | histogram | from a campaign's start to its win |
//! | `baton_lease_renewals_total` | counter | keepalives etcd answered with the lease renewed |
//! | `baton_lease_renewal_failures_total` | counter | keepalives that timed out, failed, or found the lease gone |
//! | `baton_fencing_rejections_total` | counter | this node's writes the fenced resource rejected |
//! | `baton_fence_token` | gauge | the token the node acts under (0 when not leading) |

use crate::events::Role;
use prometheus::{Encoder, Histogram, HistogramOpts, IntCounter, IntGauge, Opts, Registry};

/// One node's metrics.
pub struct NodeMetrics {
    registry: Registry,
    /// `leaders_acting`.
    pub leaders_acting: IntGauge,
    roles: [(Role, IntGauge); 3],
    /// `baton_leadership_transitions_total`.
    pub transitions: IntCounter,
    /// `baton_campaign_latency_seconds`.
    pub campaign_latency: Histogram,
    /// `baton_lease_renewals_total`.
    pub renewals: IntCounter,
    /// `baton_lease_renewal_failures_total`.
    pub renewal_failures: IntCounter,
    /// `baton_fencing_rejections_total`.
    pub fencing_rejections: IntCounter,
    /// `baton_fence_token`.
    pub fence_token: IntGauge,
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::Leader => "leader",
        Role::Candidate => "candidate",
        Role::Follower => "follower",
    }
}

impl NodeMetrics {
    /// The metrics of node `node`, all zero, role follower.
    pub fn new(node: &str) -> NodeMetrics {
        let registry = Registry::new();
        let opts = |name: &str, help: &str| Opts::new(name, help).const_label("node", node);
        let gauge = |name: &str, help: &str| {
            let g = IntGauge::with_opts(opts(name, help)).expect("valid metric");
            registry
                .register(Box::new(g.clone()))
                .expect("unique metric");
            g
        };
        let counter = |name: &str, help: &str| {
            let c = IntCounter::with_opts(opts(name, help)).expect("valid metric");
            registry
                .register(Box::new(c.clone()))
                .expect("unique metric");
            c
        };
        let leaders_acting = gauge(
            "leaders_acting",
            "1 while this node acts as leader; summed over the fleet it must be 1",
        );
        let roles = [Role::Leader, Role::Candidate, Role::Follower].map(|r| {
            let g = IntGauge::with_opts(
                Opts::new("baton_role", "1 for the node's current role")
                    .const_label("node", node)
                    .const_label("role", role_name(r)),
            )
            .expect("valid metric");
            registry
                .register(Box::new(g.clone()))
                .expect("unique metric");
            (r, g)
        });
        let campaign_latency = Histogram::with_opts(
            HistogramOpts::new(
                "baton_campaign_latency_seconds",
                "From a campaign's start to its win",
            )
            .const_label("node", node)
            .buckets(vec![
                0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
            ]),
        )
        .expect("valid metric");
        registry
            .register(Box::new(campaign_latency.clone()))
            .expect("unique metric");
        let m = NodeMetrics {
            leaders_acting,
            roles,
            transitions: counter(
                "baton_leadership_transitions_total",
                "Times this node became leader or stopped being leader",
            ),
            campaign_latency,
            renewals: counter(
                "baton_lease_renewals_total",
                "Keepalives answered with the lease renewed",
            ),
            renewal_failures: counter(
                "baton_lease_renewal_failures_total",
                "Keepalives that timed out, failed, or found the lease gone",
            ),
            fencing_rejections: counter(
                "baton_fencing_rejections_total",
                "This node's writes rejected by the fenced resource",
            ),
            fence_token: gauge(
                "baton_fence_token",
                "The token this node acts under, 0 when not leading",
            ),
            registry,
        };
        m.set_role(Role::Follower);
        m
    }

    /// Sets the role gauges to `role`.
    pub fn set_role(&self, role: Role) {
        for (r, g) in &self.roles {
            g.set(i64::from(*r == role));
        }
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut buf = vec![];
        prometheus::TextEncoder::new()
            .encode(&self.registry.gather(), &mut buf)
            .expect("text encoding cannot fail");
        String::from_utf8(buf).expect("the text format is UTF-8")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_names_every_metric_with_its_node() {
        let m = NodeMetrics::new("n2");
        m.set_role(Role::Leader);
        m.leaders_acting.set(1);
        m.campaign_latency.observe(0.2);
        let text = m.render();
        assert!(text.contains("leaders_acting{node=\"n2\"} 1"), "{text}");
        assert!(
            text.contains("baton_role{node=\"n2\",role=\"leader\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("baton_role{node=\"n2\",role=\"follower\"} 0"),
            "{text}"
        );
        assert!(text.contains("baton_campaign_latency_seconds_count{node=\"n2\"} 1"));
        assert!(text.contains("# TYPE leaders_acting gauge"));
    }
}
