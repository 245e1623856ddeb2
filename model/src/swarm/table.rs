//! The `[swarm]` table: which fault kinds a swarm may draw, their weights and ranges,
//! and its checks. A section of the scenario like any other; [`super::draw`] reads it.

use crate::scenario::key_error::KeyError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The kinds a swarm may draw, by the names its `weights` table uses. The last four hit
/// the lease service's members (see [`MEMBER_KINDS`]).
///
/// Besides the plain faults: `slow-write` slows a node's link to the fenced resource to
/// between `slow_write_pct` of the resource timeout (a write that lands after the node
/// gave up on it, or just before), and `resign-during-slow-write` does that to the
/// leader and asks it to step down while its write is in flight. A `slow-link` is one
/// direction of any link (node to node, service, resource or client, or back): requests
/// only or replies only.
pub const KINDS: [&str; 17] = [
    "kill",
    "pause",
    "partition",
    "one-way-partition",
    "slow-link",
    "clock-offset",
    "clock-drift",
    "clock-step",
    "network",
    "resign",
    "pause-before-write",
    "slow-write",
    "resign-during-slow-write",
    "member-kill",
    "member-pause",
    "member-partition",
    "member-slow-disk",
];

/// The kinds that hit an etcd member (`etcd-leader` with `leader_probability`, else a
/// member drawn uniformly): drawn only when the lease service is a cluster (etcd-lease
/// with `etcd.members` above 1), never otherwise, and off by default.
pub const MEMBER_KINDS: [&str; 4] = [
    "member-kill",
    "member-pause",
    "member-partition",
    "member-slow-disk",
];

/// A `[swarm]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Swarm {
    /// Faults are drawn at times in `start_ms..end_ms`.
    pub start_ms: u64,
    /// The end of the window (0: two thirds of the run, leaving time to recover).
    pub end_ms: u64,
    /// Mean faults per simulated minute in the window (the gaps are exponential).
    pub faults_per_minute: f64,
    /// Each kind is switched off for a seed with this probability (at least one stays).
    pub off_probability: f64,
    /// Relative weights of the kinds (a kind absent or at 0 never occurs).
    pub weights: BTreeMap<String, f64>,
    /// A target is `leader` with this probability, else a node drawn uniformly.
    pub leader_probability: f64,
    /// Pause lengths, ms.
    pub pause_ms: [u64; 2],
    /// A killed node is restarted after this long, ms.
    pub restart_after_ms: [u64; 2],
    /// Partition and slow-link lengths, ms.
    pub partition_ms: [u64; 2],
    /// A slow link's latency, ms.
    pub slow_latency_ms: [u64; 2],
    /// Clock offsets and steps, ms.
    pub clock_ms: [i64; 2],
    /// Clock drift, ppm.
    pub drift_ppm: [i64; 2],
    /// A network change's latency ceiling, ms (its floor stays the scenario's).
    pub network_latency_ms: [u64; 2],
    /// A network change's loss, ppm.
    pub network_loss_ppm: [u64; 2],
    /// A network change's length, ms.
    pub network_ms: [u64; 2],
    /// A slow write's latency, in percent of the scenario's `work.resource_timeout_ms`
    /// (after the swarm's own draw of it, below).
    pub slow_write_pct: [u64; 2],
    /// When set, each seed draws `work.client_timeout_ms` from this range, ms (the load
    /// client's timeout, longer or shorter than the node's call to the resource).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_timeout_ms: Option<[u64; 2]>,
    /// When set, each seed draws `work.resource_timeout_ms` from this range, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_timeout_ms: Option<[u64; 2]>,
}

impl Default for Swarm {
    fn default() -> Self {
        Swarm {
            start_ms: 2_000,
            end_ms: 0,
            faults_per_minute: 6.0,
            off_probability: 0.5,
            weights: KINDS
                .iter()
                .filter(|k| !MEMBER_KINDS.contains(k))
                .map(|k| (k.to_string(), 1.0))
                .collect(),
            leader_probability: 0.5,
            pause_ms: [100, 5_000],
            restart_after_ms: [500, 5_000],
            partition_ms: [500, 8_000],
            slow_latency_ms: [100, 2_000],
            clock_ms: [-2_000, 2_000],
            drift_ppm: [-500_000, 500_000],
            network_latency_ms: [5, 300],
            network_loss_ppm: [0, 300_000],
            network_ms: [500, 5_000],
            slow_write_pct: [50, 300],
            client_timeout_ms: None,
            resource_timeout_ms: None,
        }
    }
}

impl Swarm {
    /// Checks the table: (key, message) for the first problem.
    pub fn validate(&self, duration_ms: u64) -> Result<(), KeyError> {
        for k in self.weights.keys() {
            if !KINDS.contains(&k.as_str()) {
                return Err(KeyError::new(
                    format!("weights.{k}"),
                    format!(
                        "unknown fault kind `{k}`: expected one of {}",
                        KINDS.join(", ")
                    ),
                ));
            }
        }
        if let Some((k, w)) = self
            .weights
            .iter()
            .find(|(_, w)| !w.is_finite() || **w < 0.0)
        {
            return Err(KeyError::new(
                format!("weights.{k}"),
                format!("{w} is out of range: 0 or more"),
            ));
        }
        if self.weights.values().sum::<f64>() <= 0.0 {
            return Err(KeyError::new(
                "weights",
                "the weights sum to zero: give at least one kind a weight above 0",
            ));
        }
        let end = self.end(duration_ms);
        if self.start_ms >= end || end > duration_ms {
            return Err(KeyError::new(
                "end_ms",
                format!(
                    "the window {}..{end} ms is empty or past duration_ms {duration_ms}",
                    self.start_ms
                ),
            ));
        }
        if !(self.faults_per_minute > 0.0 && self.faults_per_minute <= 6_000.0) {
            return Err(KeyError::new(
                "faults_per_minute",
                format!(
                    "{} is out of range: above 0, at most 6000",
                    self.faults_per_minute
                ),
            ));
        }
        for (k, p) in [
            ("off_probability", self.off_probability),
            ("leader_probability", self.leader_probability),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(KeyError::new(k, format!("{p} is out of range: 0 to 1")));
            }
        }
        let ranges_u: [(&str, [u64; 2], u64, u64); 10] = [
            ("pause_ms", self.pause_ms, 1, 3_600_000),
            ("restart_after_ms", self.restart_after_ms, 0, 3_600_000),
            ("partition_ms", self.partition_ms, 1, 3_600_000),
            ("slow_latency_ms", self.slow_latency_ms, 0, 60_000),
            ("network_latency_ms", self.network_latency_ms, 0, 60_000),
            ("network_loss_ppm", self.network_loss_ppm, 0, 1_000_000),
            ("network_ms", self.network_ms, 1, 3_600_000),
            ("slow_write_pct", self.slow_write_pct, 0, 10_000),
            (
                "client_timeout_ms",
                self.client_timeout_ms.unwrap_or([1, 1]),
                1,
                3_600_000,
            ),
            (
                "resource_timeout_ms",
                self.resource_timeout_ms.unwrap_or([1, 1]),
                1,
                3_600_000,
            ),
        ];
        for (k, [lo, hi], min, max) in ranges_u {
            if lo > hi || lo < min || hi > max {
                return Err(KeyError::new(
                    k,
                    format!("[{lo}, {hi}] is not a range [low, high] within {min} to {max}"),
                ));
            }
        }
        for (k, [lo, hi], lim) in [
            ("clock_ms", self.clock_ms, 86_400_000),
            ("drift_ppm", self.drift_ppm, 999_999),
        ] {
            if lo > hi || lo < -lim || hi > lim {
                return Err(KeyError::new(
                    k,
                    format!("[{lo}, {hi}] is not a range [low, high] within -{lim} to {lim}"),
                ));
            }
        }
        Ok(())
    }

    /// The end of the window for a run of `duration_ms`.
    pub fn end(&self, duration_ms: u64) -> u64 {
        if self.end_ms == 0 {
            duration_ms * 2 / 3
        } else {
            self.end_ms
        }
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-written tables, each with one problem; the error names its key.
    use super::*;

    #[test]
    fn bad_tables_name_the_key() {
        let mut sw = Swarm::default();
        sw.weights.insert("meteor".into(), 1.0);
        assert!(sw
            .validate(60_000)
            .unwrap_err()
            .message
            .contains("unknown fault kind `meteor`"));
        let mut sw = Swarm::default();
        for w in sw.weights.values_mut() {
            *w = 0.0;
        }
        assert!(sw
            .validate(60_000)
            .unwrap_err()
            .message
            .contains("sum to zero"));
        let sw = Swarm {
            pause_ms: [5_000, 100],
            ..Swarm::default()
        };
        assert_eq!(sw.validate(60_000).unwrap_err().key, "pause_ms");
    }
}
