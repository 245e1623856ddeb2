//! Each table's checks, one function a table: the top-level keys, `[network]`, `[work]`,
//! `[expect]`, `[swarm]`, `[work.job]`, `[slo]`, `[noise.gc]` and the protocol's own
//! table (`[[faults]]` have theirs in `faults.rs`). Each names the key at fault through
//! the [`Cx`], with what is allowed.

use super::context::Cx;
use super::error::ScenarioError;
use super::sections::{Expect, GcNoise, JobConfig, NetworkConfig, Slo, WorkConfig};
use super::types::{Scenario, NODES, NODES_ALLOWED};
use crate::fault::{MAX_LATENCY_MS, MAX_MS};
use crate::protocol::ProtocolModel;
use crate::swarm::table::Swarm;

/// The top-level keys: the fleet's size and the run's length.
pub(super) fn top_level(cx: &Cx, s: &Scenario) -> Result<(), ScenarioError> {
    cx.check(
        NODES.contains(&s.nodes),
        &["nodes"],
        format!("{} is out of range: {}", s.nodes, NODES_ALLOWED),
    )?;
    cx.check(
        s.duration_ms >= 1,
        &["duration_ms"],
        "must be at least 1".into(),
    )?;
    cx.check(
        s.duration_ms <= 3_600_000,
        &["duration_ms"],
        format!("{} is above one simulated hour (3600000)", s.duration_ms),
    )?;
    cx.at_most(s.start_delay_ms_max, &["start_delay_ms_max"], MAX_MS)
}

/// `[etcd]`.
pub(super) fn etcd(
    cx: &Cx,
    c: &crate::scenario::etcd_cluster::EtcdCluster,
) -> Result<(), ScenarioError> {
    c.validate()
        .map_err(|e| cx.fail(&["etcd", &e.key], e.message))
}

/// `partitions`: a sharded fleet runs on etcd-lease, with no client load, job, detector,
/// resign or transfer (each partition's leader does its own work; see `sim/src/world/node/shard.rs`).
pub(super) fn partitions(cx: &Cx, s: &Scenario) -> Result<(), ScenarioError> {
    use crate::fault::FaultKind;
    use crate::protocol::ProtocolName;
    let max = super::types::PARTITIONS_MAX;
    cx.check(
        s.partitions <= max,
        &["partitions"],
        format!(
            "{} is out of range: 0 (one global leader) to {max}",
            s.partitions
        ),
    )?;
    if s.partitions == 0 {
        return Ok(());
    }
    cx.check(
        s.protocol == ProtocolName::EtcdLease,
        &["partitions"],
        format!(
            "sharded leadership runs on etcd-lease only, and the protocol is {} (allowed with partitions: etcd-lease)",
            s.protocol.name()
        ),
    )?;
    cx.check(
        s.work.rate_per_s == 0,
        &["work", "rate_per_s"],
        "a sharded fleet takes no client load: each partition's leader writes a tick and one sequence number every tick_interval_ms (allowed with partitions: 0)".into(),
    )?;
    let absent = [
        (s.work.job.is_some(), "work.job"),
        (s.swim.is_some(), "swim"),
        (s.has_fault(FaultKind::Resign), "faults"),
        (s.has_fault(FaultKind::Transfer), "faults"),
    ];
    for (present, key) in absent {
        let path: Vec<&str> = key.split('.').collect();
        cx.check(
            !present,
            &path,
            "not with partitions: a sharded fleet has no job, no SWIM detector, and no resign or transfer fault (allowed: kill, restart, pause, partition, clock and network faults)".into(),
        )?;
    }
    Ok(())
}

/// `[swim]`.
pub(super) fn swim(cx: &Cx, c: &crate::scenario::swim::SwimConfig) -> Result<(), ScenarioError> {
    c.validate()
        .map_err(|e| cx.fail(&["swim", &e.key], e.message))
}

/// `[network]`.
pub(super) fn network(cx: &Cx, n: &NetworkConfig) -> Result<(), ScenarioError> {
    cx.check(
        n.latency_ms_min <= n.latency_ms_max,
        &["network", "latency_ms_min"],
        format!(
            "{} is above latency_ms_max {}",
            n.latency_ms_min, n.latency_ms_max
        ),
    )?;
    cx.check(
        n.loss_ppm <= 1_000_000,
        &["network", "loss_ppm"],
        "must be 0 to 1000000".into(),
    )?;
    cx.at_most(
        n.latency_ms_max,
        &["network", "latency_ms_max"],
        MAX_LATENCY_MS,
    )
}

/// `[work]` (its `[work.job]` is [`job`]).
pub(super) fn work(cx: &Cx, w: &WorkConfig) -> Result<(), ScenarioError> {
    cx.check(
        w.tick_interval_ms >= 1,
        &["work", "tick_interval_ms"],
        "must be at least 1".into(),
    )?;
    cx.at_most(w.tick_interval_ms, &["work", "tick_interval_ms"], MAX_MS)?;
    cx.at_most(w.client_timeout_ms, &["work", "client_timeout_ms"], MAX_MS)?;
    cx.at_most(
        w.resource_timeout_ms,
        &["work", "resource_timeout_ms"],
        MAX_MS,
    )?;
    cx.check(
        w.rate_per_s <= 100_000,
        &["work", "rate_per_s"],
        "must be 0 to 100000".into(),
    )?;
    cx.check(
        w.read_rate_per_s <= 100_000,
        &["work", "read_rate_per_s"],
        "must be 0 to 100000".into(),
    )?;
    cx.check(
        w.client_timeout_ms >= 1,
        &["work", "client_timeout_ms"],
        "must be at least 1".into(),
    )?;
    cx.check(
        w.resource_timeout_ms >= 1,
        &["work", "resource_timeout_ms"],
        "must be at least 1".into(),
    )?;
    cx.check(
        (1..=w.client_timeout_ms).contains(&w.client_quantum_ms),
        &["work", "client_quantum_ms"],
        format!("must be 1 to client_timeout_ms ({})", w.client_timeout_ms),
    )
}

/// `[expect]`'s bounds.
pub(super) fn expect(cx: &Cx, e: &Expect) -> Result<(), ScenarioError> {
    if let Some(v) = e.liveness_bound_ms {
        cx.at_most(v, &["expect", "liveness_bound_ms"], MAX_MS)?;
    }
    if let Some(v) = e.failover_ms_max {
        cx.at_most(v, &["expect", "failover_ms_max"], MAX_MS)?;
    }
    if let Some(v) = e.transfer_gap_ms_max {
        cx.at_most(v, &["expect", "transfer_gap_ms_max"], MAX_MS)?;
    }
    if let Some(v) = e.swim_detection_ms_max {
        cx.at_most(v, &["expect", "swim_detection_ms_max"], MAX_MS)?;
    }
    Ok(())
}

/// `[swarm]`, and the faults beside it: a swarm fires every fault in time order.
pub(super) fn swarm(cx: &Cx, sw: &Swarm, s: &Scenario) -> Result<(), ScenarioError> {
    sw.validate(s.duration_ms).map_err(|e| {
        let path: Vec<&str> = std::iter::once("swarm").chain(e.key.split('.')).collect();
        cx.fail(&path, e.message.clone())
    })?;
    match s.faults.iter().position(|f| f.at_ms.is_none()) {
        Some(i) => Err(cx.fail(
            &["faults", &i.to_string(), "after"],
            "a scenario with a [swarm] fires its faults in time order: give this one an at_ms"
                .into(),
        )),
        None => Ok(()),
    }
}

/// `[work.job]`.
pub(super) fn job(cx: &Cx, job: &JobConfig) -> Result<(), ScenarioError> {
    cx.check(
        job.step_ms_min >= 1,
        &["work", "job", "step_ms_min"],
        "must be at least 1".into(),
    )?;
    cx.check(
        job.step_ms_max >= job.step_ms_min && i128::from(job.step_ms_max) <= MAX_MS,
        &["work", "job", "step_ms_max"],
        format!(
            "{} is out of range: step_ms_min ({}) to 3600000",
            job.step_ms_max, job.step_ms_min
        ),
    )
}

/// `[slo]`.
pub(super) fn slo(cx: &Cx, slo: &Slo) -> Result<(), ScenarioError> {
    cx.check(
        slo.availability_pct > 0.0 && slo.availability_pct < 100.0,
        &["slo", "availability_pct"],
        format!(
            "{} is out of range: above 0 and below 100",
            slo.availability_pct
        ),
    )?;
    cx.check(
        (1..=3650).contains(&slo.window_days),
        &["slo", "window_days"],
        format!("{} is out of range: 1 to 3650", slo.window_days),
    )?;
    cx.check(
        slo.leader_deaths_per_day.is_finite() && slo.leader_deaths_per_day >= 0.0,
        &["slo", "leader_deaths_per_day"],
        format!("{} is out of range: 0 or more", slo.leader_deaths_per_day),
    )
}

/// `[noise.gc]`, whose `nodes` must be nodes of the fleet.
pub(super) fn gc(cx: &Cx, gc: &GcNoise, nodes: &[String]) -> Result<(), ScenarioError> {
    let bad = |k: &str, m: String| Err(cx.fail(&["noise", "gc", k], m));
    if gc.mean_interval_ms == 0 || i128::from(gc.mean_interval_ms) > MAX_MS {
        return bad(
            "mean_interval_ms",
            format!("{} is out of range: 1 to 3600000", gc.mean_interval_ms),
        );
    }
    if gc.pause_p50_ms == 0 {
        return bad("pause_p50_ms", "must be at least 1".into());
    }
    if gc.pause_p99_ms < gc.pause_p50_ms {
        return bad(
            "pause_p99_ms",
            format!(
                "{} is below pause_p50_ms {}",
                gc.pause_p99_ms, gc.pause_p50_ms
            ),
        );
    }
    if gc.pause_max_ms < gc.pause_p99_ms || i128::from(gc.pause_max_ms) > MAX_MS {
        return bad(
            "pause_max_ms",
            format!(
                "{} is out of range: pause_p99_ms ({}) to 3600000",
                gc.pause_max_ms, gc.pause_p99_ms
            ),
        );
    }
    if let Some(n) = gc.nodes.iter().find(|n| !nodes.contains(n)) {
        return bad(
            "nodes",
            format!(
                "unknown node `{n}`: expected some of {} (empty: all)",
                nodes.join(", ")
            ),
        );
    }
    Ok(())
}

/// The protocol's own table (its checks are the protocol's), and the reads `[work]` asks
/// of it.
pub(super) fn protocol(
    cx: &Cx,
    proto: &dyn ProtocolModel,
    work: &WorkConfig,
) -> Result<(), ScenarioError> {
    let table = proto.name().name();
    proto
        .validate()
        .map_err(|e| cx.fail(&[table, &e.key], e.message))?;
    if work.read_rate_per_s > 0 && !proto.has_replicated_log() {
        return Err(cx.fail(
            &["work", "read_rate_per_s"],
            format!(
                "{}: reads are answered from a replicated log, which {table} does not keep here; allowed: 0, or protocol = \"raft\" with [raft] sequencer = \"log\"",
                work.read_rate_per_s
            ),
        ));
    }
    Ok(())
}
