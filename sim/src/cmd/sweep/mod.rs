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
//! scenario's `[slo]`) and four SVG plots (see [`crate::cmd::sweep::plot`]).

pub mod output;
pub mod plot;

use crate::run;
use crate::world::protocol::ProtocolName;
use baton_model::checker::Property;
use baton_model::scenario::{self, Resolved, Slo};
use serde::Serialize;
use std::fmt::Write;
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
pub fn parse_axis(arg: &str) -> Result<Axis, String> {
    let Some((key, values)) = arg.split_once('=') else {
        return Err(format!(
            "--grid `{arg}`: expected KEY=V1,V2,... (for example ttl_ms=1000,3000,10000)"
        ));
    };
    let key = key.trim().to_string();
    if key.is_empty() || key.split('.').any(|s| s.is_empty()) {
        return Err(format!(
            "--grid `{arg}`: `{key}` is not a dotted scenario key"
        ));
    }
    let values: Vec<String> = values
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    if values.is_empty() {
        return Err(format!(
            "--grid {key}: the grid is empty: give at least one value (KEY=V1,V2,...)"
        ));
    }
    let ttl = baton_model::protocol::ttl::is_ttl_key(&key);
    if ttl {
        for v in &values {
            if !v.parse::<u64>().is_ok_and(|t| (1..=3_600_000).contains(&t)) {
                return Err(format!(
                    "--grid {key}: `{v}` is not a TTL: expected whole milliseconds, 1 to 3600000"
                ));
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(dup) = values.iter().find(|v| !seen.insert(v.as_str())) {
        return Err(format!("--grid {key}: `{dup}` is given twice"));
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
pub fn resolve(plan: &Plan) -> Result<Vec<Target>, String> {
    for axis in plan.axes.iter().filter(|a| !a.ttl) {
        if axis.key == "protocol" {
            return Err("--grid protocol: sweep protocols with --protocols, not --grid".into());
        }
        if let Some(owner) = table_protocol(&axis.key) {
            if let Some(p) = plan.protocols.iter().find(|p| **p != owner) {
                return Err(format!(
                    "--grid {}: protocol {} has no such key (only {} reads its table); allowed: a key of every swept protocol, or a TTL key (ttl_ms, or {}) that maps to each protocol's own",
                    axis.key,
                    p.name(),
                    owner.name(),
                    baton_model::protocol::ttl::primary_key(owner)
                ));
            }
        }
    }
    if let Some(first) = plan.axes.first() {
        if let Some(v) = first.values.iter().find(|v| v.parse::<f64>().is_err()) {
            return Err(format!(
                "--grid {}: `{v}` is not a number; the first --grid axis is the plots' x axis, so its values must be numbers (put another axis first)",
                first.key
            ));
        }
    }
    if plan.axes.iter().filter(|a| a.ttl).count() > 1 {
        return Err(
            "--grid: more than one TTL axis; give one (ttl_ms or a protocol's TTL key)".into(),
        );
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
                format!("--grid {at}, protocol {}: {e}", p.name())
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

fn facts(r: &Resolved, seed: u64) -> Result<RunFacts, String> {
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
    let mut scripted = f.failover_ms.clone();
    for x in &false_ms {
        if let Some(i) = scripted.iter().position(|y| y == x) {
            scripted.remove(i);
        }
    }
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
    let deaths_per_hour = slo.leader_deaths_per_day / 24.0;
    let unavailability =
        deaths_per_hour * failover.mean / 1000.0 + false_per_hour * false_ms.mean / 1000.0;
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
        meets_slo: unavailability <= slo.budget_s_per_hour(),
        note: s.etcd_lease.as_ref().filter(|_| t.protocol == ProtocolName::EtcdLease).and_then(|e| {
            (e.lease_ttl_ms < e.min_lease_ttl_ms).then(|| {
                format!(
                    "etcd raised the {} ms TTL to its minimum, {} ms (min_lease_ttl_ms), as a real etcd at default settings does",
                    e.lease_ttl_ms, e.min_lease_ttl_ms
                )
            })
        }),
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
) -> Result<(Vec<Cell>, u64), String> {
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
                Err(e) if e.as_str() == crate::run::ABANDONED => {}
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

fn secs(ms: f64) -> String {
    if ms >= 10_000.0 {
        format!("{:.0} s", ms / 1000.0)
    } else {
        format!("{:.2} s", ms / 1000.0)
    }
}

fn point_label(c: &Cell) -> String {
    c.point
        .iter()
        .map(|a| format!("{}={}", a.key, a.value))
        .collect::<Vec<_>>()
        .join(" ")
}

/// sweep.md: the table, then the findings against the SLO.
pub fn markdown(
    plan: &Plan,
    command: &str,
    scenario_name: &str,
    slo: &Slo,
    slo_given: bool,
    cells: &[Cell],
) -> String {
    let mut t = String::new();
    let w = &mut t;
    let _ = writeln!(w, "# TTL sweep: {scenario_name}\n");
    let _ = writeln!(w, "Made by `{command}`.\n");
    let _ = writeln!(
        w,
        "Each cell runs seeds {}..{} of `{}` at one grid point. Failover is the time the resource went without a leader's write across a leadership change the scenario's scripted faults caused (p5 / p50 / p95 / p99 over every such change of every seed). A false failover is a leadership change with the old leader alive and no scripted fault in force (GC noise, for one); its rate is per simulated hour. Election latency runs from the seat falling vacant (or the campaign's start) to the win. Dark time is defined under Findings.\n",
        plan.seeds.start,
        plan.seeds.end,
        baton_model::scenario::display_path(&plan.scenario)
    );
    let _ = writeln!(
        w,
        "| point | protocol | pass | failover p5 / p50 / p95 / p99 | bound | false failovers / h | election p99 | incidents | dark s / h |"
    );
    let _ = writeln!(w, "|---|---|---|---|---|---|---|---|---|");
    for c in cells {
        let f = &c.failover_ms;
        let _ = writeln!(
            w,
            "| {} | {} | {}/{} | {} | {} | {:.1} ({} in {:.1} h) | {} | {} | {:.2} |",
            point_label(c),
            c.protocol,
            c.passed,
            c.passed + c.failed,
            if f.count == 0 {
                "none".to_string()
            } else {
                format!(
                    "{} / {} / {} / {}",
                    secs(f.p5),
                    secs(f.p50),
                    secs(f.p95),
                    secs(f.p99)
                )
            },
            secs(c.failover_bound_ms as f64),
            c.false_failovers_per_hour,
            c.false_failovers,
            c.simulated_hours,
            secs(c.election_latency_ms.p99),
            c.incidents,
            c.unavailability_s_per_hour
        );
    }
    for c in cells {
        if let Some(n) = &c.note {
            let _ = writeln!(w, "\nNote, {} {}: {n}.", point_label(c), c.protocol);
        }
    }
    let failing: Vec<&Cell> = cells.iter().filter(|c| c.failed > 0).collect();
    if !failing.is_empty() {
        let _ = writeln!(w, "\nCells with failing seeds:\n");
        for c in failing {
            let props: Vec<String> = c
                .failed_properties
                .iter()
                .map(|(p, n)| format!("{p} in {n}"))
                .collect();
            let _ = writeln!(
                w,
                "- {} {}: {}",
                point_label(c),
                c.protocol,
                props.join(", ")
            );
        }
    }
    findings(w, slo, slo_given, cells);
    t
}

fn findings(w: &mut String, slo: &Slo, slo_given: bool, cells: &[Cell]) {
    let budget = slo.budget_s_per_hour();
    let deaths_h = slo.leader_deaths_per_day / 24.0;
    let _ = writeln!(w, "\n## Findings\n");
    let _ = writeln!(
        w,
        "The objective{}: the singleton work is done {}% of the time over {} days, with the leader's process dying for real (a crash, a deploy, a lost host) {} times a day. The error budget is {:.3}% of each hour, {:.2} s per hour ({:.0} s over the window).\n",
        if slo_given { " (the scenario's `[slo]`)" } else { " (Baton's default; the scenario has no `[slo]` table)" },
        slo.availability_pct,
        slo.window_days,
        slo.leader_deaths_per_day,
        100.0 - slo.availability_pct,
        budget,
        budget * 24.0 * slo.window_days as f64
    );
    let _ = writeln!(
        w,
        "Dark seconds per hour = leader deaths per hour x mean failover + false failovers per hour x their mean length, both measured by the sweep under the scenario's GC noise. Leader deaths per hour = {} / 24 = {:.4}.\n",
        slo.leader_deaths_per_day, deaths_h
    );
    let mut protocols: Vec<&'static str> = vec![];
    for c in cells {
        if !protocols.contains(&c.protocol) {
            protocols.push(c.protocol);
        }
    }
    for p in protocols {
        let series: Vec<&Cell> = cells.iter().filter(|c| c.protocol == p).collect();
        let _ = writeln!(w, "### {p}\n");
        for c in &series {
            let false_part = if c.false_failovers == 0 {
                format!(
                    "0 false failovers (none in {:.1} simulated h)",
                    c.simulated_hours
                )
            } else {
                format!(
                    "{:.2} false failovers/h x {:.2} s",
                    c.false_failovers_per_hour,
                    c.false_failover_ms.mean / 1000.0
                )
            };
            let _ = writeln!(
                w,
                "- {}: {:.4} deaths/h x {:.2} s + {false_part} = {:.3} s/h {} {:.2} s/h: {}",
                point_label(c),
                deaths_h,
                c.failover_ms.mean / 1000.0,
                c.unavailability_s_per_hour,
                if c.meets_slo { "<=" } else { ">" },
                budget,
                if c.meets_slo {
                    "meets the SLO"
                } else {
                    "misses the SLO"
                }
            );
        }
        let meets: Vec<String> = series
            .iter()
            .filter(|c| c.meets_slo)
            .map(|c| point_label(c))
            .collect();
        let knee = series.iter().min_by(|a, b| {
            a.unavailability_s_per_hour
                .total_cmp(&b.unavailability_s_per_hour)
        });
        if let Some(k) = knee {
            // A knee at either end of the grid may not be one: the curve may go on
            // falling beyond it.
            let at_edge = series.len() > 1
                && (std::ptr::eq(*k, series[0]) || std::ptr::eq(*k, series[series.len() - 1]));
            let _ = writeln!(
                w,
                "\nMeets the SLO at: {}. The knee (least dark time: below it false failovers dominate, above it the failover itself) is at {} ({:.3} s/h){}.{}\n",
                if meets.is_empty() { "none of the swept points".to_string() } else { meets.join(", ") },
                point_label(k),
                k.unavailability_s_per_hour,
                if at_edge { ", at the edge of the grid: the least dark time may lie beyond it" } else { "" },
                if k.meets_slo {
                    format!(" Pick {}.", point_label(k))
                } else {
                    " No swept point meets the SLO: widen the sweep, lower the GC tail or the death rate.".to_string()
                }
            );
        }
    }
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
            let e = parse_axis(arg).unwrap_err();
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
