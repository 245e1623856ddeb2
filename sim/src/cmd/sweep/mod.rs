//! `sim sweep`: one scenario over a grid of values (TTLs first), for several protocols,
//! over a range of seeds; the answer to "which TTL should I pick?".
//!
//! Each (grid point, protocol, seed) is one ordinary run of the scenario with the point's
//! values set. A grid over a TTL key (`ttl_ms`, or any protocol's own TTL key such as
//! `etcd-lease.lease_ttl_ms`) moves every swept protocol's TTL through [`baton_model::protocol::ttl`].
//! Runs are spread over `--jobs` threads and put back in (point, protocol, seed) order, so
//! the outputs do not depend on `--jobs`. Every point and protocol is loaded before the
//! first run, so bad input exits 2 with nothing written.
//!
//! Outputs: `sweep.json` (every cell), `sweep.md` (a table and the findings against the
//! scenario's `[slo]`: [`crate::cmd::sweep::markdown`]) and four SVG plots (see
//! [`crate::cmd::sweep::plot`]).

mod grid_error;
pub mod markdown;
pub mod output;
pub mod plot;

pub use grid_error::GridError;

use crate::run::{self, RunError};
use crate::world::protocol::ProtocolName;
use baton_model::checker::Property;
use baton_model::scenario::{self, Resolved, Slo};
use serde::Serialize;
use std::ops::Range;
use std::path::PathBuf;

/// One `--grid KEY=V1,V2,...`.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// The dotted scenario key, or a TTL key.
    pub key: String,
    /// The values, as given.
    pub values: Vec<String>,
    /// The key is a TTL key: every protocol's TTL moves with it.
    pub ttl: bool,
}

/// Parses `KEY=V1,V2,...`; a TTL axis must give whole milliseconds of at least 1.
pub fn parse_axis(arg: &str) -> Result<Axis, GridError> {
    let Some((key, values)) = arg.split_once('=') else {
        return Err(GridError::NotKeyValues(arg.to_string()));
    };
    let key = key.trim().to_string();
    if key.is_empty() || key.split('.').any(|s| s.is_empty()) {
        return Err(GridError::NotAKey {
            arg: arg.to_string(),
            key,
        });
    }
    let values: Vec<String> = values
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    if values.is_empty() {
        return Err(GridError::Empty(key));
    }
    let ttl = baton_model::protocol::ttl::is_ttl_key(&key);
    if ttl {
        for v in &values {
            if !v.parse::<u64>().is_ok_and(|t| (1..=3_600_000).contains(&t)) {
                return Err(GridError::NotATtl {
                    key,
                    value: v.clone(),
                });
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(dup) = values.iter().find(|v| !seen.insert(v.as_str())) {
        return Err(GridError::Twice {
            value: dup.clone(),
            key,
        });
    }
    Ok(Axis { key, values, ttl })
}

/// Everything `sim sweep` was asked to do.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The base scenario.
    pub scenario: PathBuf,
    /// The grid axes, in the order given; the first is the plots' x axis.
    pub axes: Vec<Axis>,
    /// Protocols, in report order.
    pub protocols: Vec<ProtocolName>,
    /// Seeds.
    pub seeds: Range<u64>,
    /// Overrides applied to every run.
    pub set: Vec<String>,
    /// Worker threads.
    pub jobs: usize,
}

/// One grid point and protocol, loaded.
#[derive(Clone, Debug)]
pub struct Target {
    /// The point's value on each axis.
    pub point: Vec<String>,
    /// The protocol.
    pub protocol: ProtocolName,
    /// The scenario with the point's values set.
    pub resolved: Resolved,
}

/// Every grid point, in odometer order (the last axis moves fastest).
fn points(axes: &[Axis]) -> Vec<Vec<String>> {
    axes.iter().fold(vec![vec![]], |acc, axis| {
        acc.iter()
            .flat_map(|p| {
                axis.values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push(v.clone());
                    q
                })
            })
            .collect()
    })
}

/// The protocol whose table a dotted key is in, if any (`zk-sequential.tick_time_ms`).
fn table_protocol(key: &str) -> Option<ProtocolName> {
    ProtocolName::parse(key.split('.').next()?)
}

/// Loads every (point, protocol); the first problem is a one-line error for exit 2.
pub fn resolve(plan: &Plan) -> Result<Vec<Target>, GridError> {
    for axis in plan.axes.iter().filter(|a| !a.ttl) {
        if axis.key == "protocol" {
            return Err(GridError::Protocol);
        }
        if let Some(owner) = table_protocol(&axis.key) {
            if let Some(p) = plan.protocols.iter().find(|p| **p != owner) {
                return Err(GridError::OtherProtocolsKey {
                    key: axis.key.clone(),
                    swept: p.name(),
                    owner: owner.name(),
                    owner_ttl: baton_model::protocol::ttl::primary_key(owner),
                });
            }
        }
    }
    if let Some(first) = plan.axes.first() {
        if let Some(v) = first.values.iter().find(|v| v.parse::<f64>().is_err()) {
            return Err(GridError::XNotANumber {
                key: first.key.clone(),
                value: v.clone(),
            });
        }
    }
    if plan.axes.iter().filter(|a| a.ttl).count() > 1 {
        return Err(GridError::TwoTtls);
    }
    let mut out = vec![];
    for point in points(&plan.axes) {
        for &p in &plan.protocols {
            let mut set = vec![format!("protocol={}", p.name())];
            set.extend(plan.set.iter().cloned());
            for (axis, value) in plan.axes.iter().zip(&point) {
                if axis.ttl {
                    set.extend(baton_model::protocol::ttl::settings(
                        p,
                        value.parse().expect("checked"),
                    ));
                } else {
                    set.push(format!("{}={value}", axis.key));
                }
            }
            let resolved = scenario::load(&plan.scenario, &set).map_err(|mut e| {
                // A value the grid set is named by the grid below, not as a --set the
                // user never typed.
                if e.set.as_ref().is_some_and(|s| !plan.set.contains(s)) {
                    e.set = None;
                }
                let at = point
                    .iter()
                    .zip(&plan.axes)
                    .map(|(v, a)| format!("{}={v}", a.key))
                    .collect::<Vec<_>>()
                    .join(" ");
                GridError::Scenario {
                    at,
                    protocol: p.name(),
                    error: Box::new(e),
                }
            })?;
            out.push(Target {
                point: point.clone(),
                protocol: p,
                resolved,
            });
        }
    }
    Ok(out)
}

/// What one run contributes to its cell.
#[derive(Clone, Debug)]
struct RunFacts {
    passed: bool,
    violations: Vec<Property>,
    /// Failovers a scripted fault explains.
    failover_ms: Vec<f64>,
    /// False failovers' durations.
    false_failover_ms: Vec<f64>,
    election_latency_ms: Vec<f64>,
    incidents: u64,
    reused: u64,
}

fn facts(r: &Resolved, seed: u64) -> Result<RunFacts, RunError> {
    let a = run::run_unrecorded(r, seed)?;
    let f = &a.findings;
    let violations = f.signature();
    // The failovers no scripted fault explains are the false ones; the rest are the
    // scenario's own (its kills, pauses, partitions).
    let false_ms: Vec<f64> = f
        .false_failovers
        .each
        .iter()
        .map(|x| x.failover_ms)
        .collect();
    let scripted =
        baton_model::checker::false_failover::scripted_failovers(&f.failover_ms, &false_ms);
    Ok(RunFacts {
        passed: a.passed,
        violations,
        failover_ms: scripted,
        false_failover_ms: false_ms,
        election_latency_ms: f.election_latencies_ms.clone(),
        incidents: f.double_leader_acting_incidents,
        reused: f.sequence.reused + f.sequence.client_reused,
    })
}

/// Nearest-rank percentiles of a spread of durations.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    /// 5th percentile.
    pub p5: f64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Mean.
    pub mean: f64,
    /// How many values.
    pub count: u64,
}

impl Spread {
    /// Nearest-rank percentiles of `values` (all zeros when empty).
    pub fn of(values: &[f64]) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let rank = |p: usize| baton_model::checker::failover::nearest_rank(&v, p);
        Spread {
            p5: rank(5),
            p50: rank(50),
            p95: rank(95),
            p99: rank(99),
            mean: v.iter().sum::<f64>() / n as f64,
            count: n as u64,
        }
    }
}

/// One value of one grid axis.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AxisValue {
    /// The axis key.
    pub key: String,
    /// The value, as given.
    pub value: String,
}

/// One cell: a protocol at a grid point, over all seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    /// The grid point.
    pub point: Vec<AxisValue>,
    /// The TTL of the point, when one axis is a TTL.
    pub ttl_ms: Option<u64>,
    /// The protocol.
    pub protocol: &'static str,
    /// Seeds run, as `[A, B)`.
    pub seeds: [u64; 2],
    /// Runs whose verdict was pass.
    pub passed: u64,
    /// Runs whose verdict was fail.
    pub failed: u64,
    /// Properties that failed, with the number of seeds each failed in.
    pub failed_properties: Vec<(String, u64)>,
    /// Failovers the scenario's scripted faults caused, over every seed.
    pub failover_ms: Spread,
    /// The protocol's failover bound at this point.
    pub failover_bound_ms: u64,
    /// False failovers (no scripted fault explains them), summed over seeds.
    pub false_failovers: u64,
    /// False failovers per simulated hour.
    pub false_failovers_per_hour: f64,
    /// Their durations.
    pub false_failover_ms: Spread,
    /// Simulated hours the cell covers (seeds x run length).
    pub simulated_hours: f64,
    /// Election latency over every election of every seed.
    pub election_latency_ms: Spread,
    /// Every election latency, seed by seed (for the CDF).
    pub election_latencies_ms: Vec<f64>,
    /// Double-leader-acting incidents, summed over seeds.
    pub incidents: u64,
    /// Seeds with an incident or a reused sequence number.
    pub seeds_with_incidents: u64,
    /// Seconds per hour without a leader's work under the SLO's leader deaths and the
    /// scenario's GC noise: deaths per hour x mean failover + false failovers per hour
    /// x their mean length.
    pub unavailability_s_per_hour: f64,
    /// `unavailability_s_per_hour` is within the SLO's error budget.
    pub meets_slo: bool,
    /// What the protocol made of the point's settings, when it changed them (etcd
    /// raises a TTL below its minimum).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The TTL the backend ran when it was not the point's (etcd raised it to its
    /// minimum): what the findings name instead of the point's, so that they never
    /// recommend a TTL that was not measured. Not in sweep.json, which `note` covers.
    #[serde(skip)]
    pub ttl_run_ms: Option<u64>,
}

fn cell(t: &Target, seeds: &Range<u64>, slo: &Slo, runs: &[RunFacts]) -> Cell {
    let s = &t.resolved.scenario;
    let mut failed: std::collections::BTreeMap<String, u64> = Default::default();
    for run in runs {
        for v in &run.violations {
            *failed.entry(v.to_string()).or_default() += 1;
        }
    }
    let all = |f: fn(&RunFacts) -> &Vec<f64>| {
        runs.iter()
            .flat_map(|x| f(x).iter().copied())
            .collect::<Vec<f64>>()
    };
    let hours = runs.len() as f64 * s.duration_ms as f64 / 3_600_000.0;
    let failover = Spread::of(&all(|x| &x.failover_ms));
    let false_ms = Spread::of(&all(|x| &x.false_failover_ms));
    let false_per_hour = false_ms.count as f64 / hours.max(f64::MIN_POSITIVE);
    let unavailability = slo.dark_s_per_hour(failover.mean, false_per_hour, false_ms.mean);
    let raised = s
        .etcd_lease
        .as_ref()
        .filter(|e| t.protocol == ProtocolName::EtcdLease && e.lease_ttl_ms < e.min_lease_ttl_ms);
    Cell {
        point: vec![],
        ttl_ms: None,
        protocol: t.protocol.name(),
        seeds: [seeds.start, seeds.end],
        passed: runs.iter().filter(|x| x.passed).count() as u64,
        failed: runs.iter().filter(|x| !x.passed).count() as u64,
        failed_properties: failed.into_iter().collect(),
        failover_bound_ms: t.resolved.protocol.failover_bound().ms,
        failover_ms: failover,
        false_failovers: false_ms.count,
        false_failovers_per_hour: false_per_hour,
        false_failover_ms: false_ms,
        simulated_hours: hours,
        election_latency_ms: Spread::of(&all(|x| &x.election_latency_ms)),
        election_latencies_ms: all(|x| &x.election_latency_ms),
        incidents: runs.iter().map(|x| x.incidents).sum(),
        seeds_with_incidents: runs.iter().filter(|x| x.incidents > 0 || x.reused > 0).count() as u64,
        unavailability_s_per_hour: unavailability,
        meets_slo: slo.meets(unavailability),
        note: raised.map(|e| {
            format!(
                "etcd raised the {} ms TTL to its minimum, {} ms (min_lease_ttl_ms), as a real etcd at default settings does",
                e.lease_ttl_ms, e.min_lease_ttl_ms
            )
        }),
        ttl_run_ms: raised.map(|e| e.min_lease_ttl_ms),
    }
}

/// Runs every target over the plan's seeds; cells come back in target order, with the
/// number of runs that finished. After a Ctrl-C ([`crate::cmd::interrupt`]) no run starts,
/// and each cell sums the seeds that finished.
pub fn run(
    plan: &Plan,
    targets: &[Target],
    slo: &Slo,
    progress: &dyn crate::cmd::progress::Progress,
) -> Result<(Vec<Cell>, u64), RunError> {
    let per = (plan.seeds.end - plan.seeds.start) as usize;
    let total = targets.len() * per;
    let results = crate::cmd::pool::map_ordered_until(
        total,
        plan.jobs,
        &crate::cmd::interrupt::stopping,
        |k| {
            let (t, seed) = (&targets[k / per], plan.seeds.start + (k % per) as u64);
            let r = facts(&t.resolved, seed);
            if r.is_ok() || !crate::cmd::interrupt::abandoning() {
                progress.run_done(r.as_ref().is_ok_and(|f| f.passed));
            }
            r
        },
    );
    let mut cells = vec![];
    let mut done = 0;
    for (t, chunk) in targets.iter().zip(results.chunks(per)) {
        let mut runs: Vec<RunFacts> = vec![];
        for r in chunk.iter().flatten() {
            match r {
                Ok(f) => runs.push(f.clone()),
                // Abandoned by a second Ctrl-C: it did not finish, it is not a result.
                Err(RunError::Abandoned) => {}
                Err(e) => return Err(e.clone()),
            }
        }
        done += runs.len() as u64;
        let mut c = cell(t, &plan.seeds, slo, &runs);
        c.point = plan
            .axes
            .iter()
            .zip(&t.point)
            .map(|(a, v)| AxisValue {
                key: a.key.clone(),
                value: v.clone(),
            })
            .collect();
        if let Some(i) = plan.axes.iter().position(|a| a.ttl) {
            c.ttl_ms = t.point[i].parse().ok();
        }
        cells.push(c);
    }
    Ok((cells, done))
}

#[cfg(test)]
mod tests {
    //! Methodology: grid parsing and point enumeration by hand; bad grids give the
    //! one-line errors a user acts on.
    use super::*;

    #[test]
    fn axes_parse_and_bad_grids_name_the_key() {
        let a = parse_axis("etcd-lease.lease_ttl_ms=1000, 3000").unwrap();
        assert!(a.ttl);
        assert_eq!(a.values, ["1000", "3000"]);
        assert!(!parse_axis("work.rate_per_s=10,20").unwrap().ttl);
        for (arg, needle) in [
            ("ttl_ms=", "the grid is empty"),
            ("ttl_ms=abc", "`abc` is not a TTL"),
            ("ttl_ms=0", "`0` is not a TTL"),
            ("ttl_ms", "expected KEY=V1,V2"),
            ("ttl_ms=1,1", "given twice"),
        ] {
            let e = parse_axis(arg).unwrap_err().to_string();
            assert!(e.contains(needle), "{arg}: {e}");
        }
    }

    #[test]
    fn points_are_the_cartesian_product_in_odometer_order() {
        let a = parse_axis("ttl_ms=1,2").unwrap();
        let b = parse_axis("work.rate_per_s=10,20,30").unwrap();
        let p = points(&[a, b]);
        assert_eq!(p.len(), 6);
        assert_eq!(p[0], ["1", "10"]);
        assert_eq!(p[1], ["1", "20"]);
        assert_eq!(p[3], ["2", "10"]);
    }

    #[test]
    fn spread_is_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = Spread::of(&v);
        assert_eq!(
            (s.p5, s.p50, s.p95, s.p99, s.count),
            (5.0, 50.0, 95.0, 99.0, 100)
        );
        assert_eq!(s.mean, 50.5);
        assert_eq!(Spread::of(&[]), Spread::default());
    }
}
