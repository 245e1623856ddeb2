//! What a sweep writes: sweep.md (the table and the findings), sweep.json and the four
//! plots, assembled from the finished cells.

use crate::cmd::sweep::markdown::markdown;
use crate::cmd::sweep::plot;
use crate::cmd::sweep::{Cell, Plan};
use baton_model::scenario::Slo;

/// A sweep that finished, or was interrupted after `done` of `total` runs.
pub struct Finished<'a> {
    /// What was asked.
    pub plan: &'a Plan,
    /// The command line that made it (heads sweep.md).
    pub command: &'a str,
    /// The scenario's name.
    pub name: &'a str,
    /// The objective the findings judge against (the scenario's, or the default).
    pub slo: &'a Slo,
    /// Whether the scenario gave its own `[slo]`.
    pub slo_given: bool,
    /// The cells.
    pub cells: &'a [Cell],
    /// Runs done.
    pub done: u64,
    /// Runs planned.
    pub total: u64,
}

impl Finished<'_> {
    /// True when Ctrl-C stopped the sweep before every run finished.
    pub fn interrupted(&self) -> bool {
        self.done < self.total
    }

    /// sweep.md, marked under its title when interrupted: a reader must not take a
    /// partial sweep for a whole one.
    pub fn markdown(&self) -> String {
        let mut md = markdown(
            self.plan,
            self.command,
            self.name,
            self.slo,
            self.slo_given,
            self.cells,
        );
        if self.interrupted() {
            let mark = format!(
                "**Interrupted after {} of {} runs** (Ctrl-C): each cell sums the seeds that finished (its pass count says how many).\n\n",
                self.done, self.total
            );
            let at = md.find("\n\n").map_or(0, |i| i + 2);
            md.insert_str(at, &mark);
        }
        md
    }

    /// sweep.json: the command, the seeds, the objective and every cell.
    pub fn json(&self) -> String {
        let mut json = serde_json::json!({
            "command": self.command,
            "scenario": self.name,
            "seeds": [self.plan.seeds.start, self.plan.seeds.end],
            "slo": self.slo,
            "slo_budget_s_per_hour": self.slo.budget_s_per_hour(),
            "cells": self.cells,
        });
        if self.interrupted() {
            json["interrupted"] =
                serde_json::json!({ "runs_done": self.done, "runs_planned": self.total });
        }
        serde_json::to_string_pretty(&json).expect("cells serialize") + "\n"
    }

    /// The four plots, (file name, SVG). Every input was checked before the runs: a
    /// plot that fails now is Baton's fault.
    pub fn plots(&self) -> Result<Vec<(&'static str, String)>, plot::SweepPlotError> {
        let (cells, name) = (self.cells, self.name);
        Ok(vec![
            (
                "failover_vs_ttl.svg",
                plot::failover_svg(
                    cells,
                    &format!("{name}: failover vs TTL (median, p5-p95 band; dashed: the protocol's bound)"),
                )?,
            ),
            (
                "false_failovers_vs_ttl.svg",
                plot::false_failovers_svg(
                    cells,
                    &format!("{name}: false failovers per hour vs TTL, under the scenario's GC noise"),
                )?,
            ),
            (
                "election_latency_cdf.svg",
                plot::election_cdf_svg(
                    cells,
                    &format!("{name}: election latency CDF (every grid point and seed)"),
                )?,
            ),
            (
                "unavailability_vs_ttl.svg",
                plot::unavailability_svg(
                    cells,
                    self.slo.budget_s_per_hour(),
                    &format!("{name}: dark seconds per hour vs TTL (deaths + false failovers)"),
                )?,
            ),
        ])
    }
}
