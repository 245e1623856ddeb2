//! sweep.md: the table of every cell, the notes on points a protocol changed, the cells
//! with failing seeds, and the findings against the scenario's `[slo]` (each protocol's
//! dark time per point, the points that meet the objective, the knee, and the pick).

use crate::cmd::sweep::{Cell, Plan};
use baton_model::scenario::Slo;
use std::fmt::Write;

fn secs(ms: f64) -> String {
    if ms >= 10_000.0 {
        format!("{:.0} s", ms / 1000.0)
    } else {
        format!("{:.2} s", ms / 1000.0)
    }
}

/// The point, and the TTL the backend ran there when it was not the point's
/// (`ttl_ms=1000 (run as 2000 ms)`).
fn point_as_measured(c: &Cell) -> String {
    match c.ttl_run_ms {
        Some(run) => format!("{} (run as {run} ms)", point_label(c)),
        None => point_label(c),
    }
}

/// The point with its TTL at the value the backend ran (`ttl_ms=2000` for a 1000 ms TTL
/// etcd raised to 2000 ms): what a user should configure to get what was measured.
fn point_to_pick(c: &Cell) -> String {
    c.point
        .iter()
        .map(|a| match c.ttl_run_ms {
            Some(run) if baton_model::protocol::ttl::is_ttl_key(&a.key) => {
                format!("{}={run}", a.key)
            }
            _ => format!("{}={}", a.key, a.value),
        })
        .collect::<Vec<_>>()
        .join(" ")
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
            .map(|c| point_as_measured(c))
            .collect();
        let dark: Vec<f64> = series.iter().map(|c| c.unavailability_s_per_hour).collect();
        let knee = Slo::knee(&dark).map(|i| series[i]);
        if let Some(k) = knee {
            // A knee at either end of the grid may not be one: the curve may go on
            // falling beyond it.
            let at_edge = series.len() > 1
                && (std::ptr::eq(k, series[0]) || std::ptr::eq(k, series[series.len() - 1]));
            let _ = writeln!(
                w,
                "\nMeets the SLO at: {}. The knee (least dark time: below it false failovers dominate, above it the failover itself) is at {} ({}{:.3} s/h){}.{}\n",
                if meets.is_empty() { "none of the swept points".to_string() } else { meets.join(", ") },
                point_label(k),
                k.ttl_run_ms.map_or(String::new(), |run| format!("run as {run} ms; ")),
                k.unavailability_s_per_hour,
                if at_edge { ", at the edge of the grid: the least dark time may lie beyond it" } else { "" },
                if k.meets_slo {
                    match k.ttl_run_ms {
                        // Recommend what ran, not what the backend refused to run.
                        Some(run) => format!(
                            " Pick {}: {} ran as a {run} ms TTL, etcd's minimum, so {run} ms is what was measured there.",
                            point_to_pick(k),
                            point_label(k)
                        ),
                        None => format!(" Pick {}.", point_label(k)),
                    }
                } else {
                    " No swept point meets the SLO: widen the sweep, lower the GC tail or the death rate.".to_string()
                }
            );
        }
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built cells whose dark time is known; the findings read as a
    //! person acts on them.
    use super::*;
    use crate::cmd::sweep::{AxisValue, Spread};

    /// A cell of etcd-lease at `ttl_ms` with `dark` seconds per hour; `run_ms` is the TTL
    /// etcd ran when it raised the point's.
    fn cell(ttl_ms: u64, dark: f64, run_ms: Option<u64>) -> Cell {
        Cell {
            point: vec![AxisValue {
                key: "ttl_ms".into(),
                value: ttl_ms.to_string(),
            }],
            ttl_ms: Some(ttl_ms),
            protocol: "etcd-lease",
            seeds: [0, 2],
            passed: 2,
            failed: 0,
            failed_properties: vec![],
            failover_ms: Spread::of(&[ttl_ms as f64]),
            failover_bound_ms: ttl_ms + 540,
            false_failovers: 0,
            false_failovers_per_hour: 0.0,
            false_failover_ms: Spread::default(),
            simulated_hours: 0.1,
            election_latency_ms: Spread::default(),
            election_latencies_ms: vec![],
            incidents: 0,
            seeds_with_incidents: 0,
            unavailability_s_per_hour: dark,
            meets_slo: true,
            note: None,
            ttl_run_ms: run_ms,
        }
    }

    #[test]
    fn the_pick_is_the_ttl_that_ran_not_one_etcd_raised() {
        // etcd raises a 1000 ms TTL to its 2000 ms minimum: when that point is the knee,
        // the findings recommend what ran (issue 34), and name the raised point as such.
        let mut md = String::new();
        let cells = [cell(1000, 0.092, Some(2000)), cell(3000, 0.099, None)];
        findings(&mut md, &Slo::default(), true, &cells);
        assert!(
            md.contains("Meets the SLO at: ttl_ms=1000 (run as 2000 ms), ttl_ms=3000.")
                && md.contains("is at ttl_ms=1000 (run as 2000 ms; 0.092 s/h)")
                && md.contains("Pick ttl_ms=2000: ttl_ms=1000 ran as a 2000 ms TTL"),
            "{md}"
        );
        assert!(!md.contains("Pick ttl_ms=1000"), "{md}");
        let mut md = String::new();
        findings(&mut md, &Slo::default(), true, &[cell(3000, 0.099, None)]);
        assert!(md.contains("Pick ttl_ms=3000."), "{md}");
    }
}
