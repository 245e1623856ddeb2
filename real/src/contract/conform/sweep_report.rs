//! The TTL sweep's figures as reported ([`Sweep`], `ttl_sweep` in conformance.json), its
//! section of conformance.md, its finding (the knee for the objective) and
//! `ttl-sweep.svg` ([`baton_model::render::plot::ttl_sweep`]); the trials that give the
//! figures are [`crate::contract::conform::sweep`]'s.

use baton_model::render::plot::ttl_sweep::{ttl_sweep_svg, TtlPoint};
use baton_model::scenario::GcNoise;
use serde::Serialize;
use std::fmt::Write;
use std::path::Path;

/// One TTL of the sweep, as measured.
#[derive(Clone, Debug, Serialize)]
pub struct SweepPoint {
    /// The TTL asked for.
    pub ttl_asked_ms: u64,
    /// The TTL the backend granted.
    pub ttl_granted_ms: u64,
    /// `lease_granted events` (the trial's report) or `backend rule` (see the module doc).
    pub granted_from: &'static str,
    /// Its trial (1-based) and seed.
    pub trial: usize,
    /// The seed.
    pub seed: u64,
    /// `pass` or `fail` (the trial's checkers).
    pub verdict: &'static str,
    /// The failover the kill caused (a scripted fault's), ms.
    pub failover_ms: Vec<f64>,
    /// Their median (nearest rank).
    pub failover_median_ms: Option<f64>,
    /// False failovers (no scripted fault explains them).
    pub false_failovers: u64,
    /// Their lengths, ms.
    pub false_failover_ms: Vec<f64>,
    /// Hours of run they were counted over.
    pub run_hours: f64,
    /// `false_failovers / run_hours`.
    pub false_failovers_per_hour: f64,
    /// Dark seconds per hour by `Slo::dark_s_per_hour`; none without a failover.
    pub dark_s_per_hour: Option<f64>,
    /// Within the objective's budget.
    pub meets_slo: bool,
    /// The trial's summary, relative to the report's directory.
    pub summary: String,
    /// The command that runs it again.
    pub reproduce: String,
}

/// The sweep's part of `conformance.json` (`ttl_sweep`).
#[derive(Clone, Debug, Serialize)]
pub struct Sweep {
    /// The backend's name.
    pub backend: String,
    /// Seconds of noise before each kill.
    pub noise_s: u64,
    /// The noise (scenarios/ttl-sweep.toml's).
    pub gc: GcNoise,
    /// The objective, in percent.
    pub availability_pct: f64,
    /// Leader deaths per day the rule assumes.
    pub leader_deaths_per_day: f64,
    /// Dark seconds per hour the objective allows.
    pub budget_s_per_hour: f64,
    /// Each TTL, in the order run.
    pub points: Vec<SweepPoint>,
    /// The point of least dark time (an index into `points`).
    pub knee: Option<usize>,
    /// The TTL to configure, when the knee meets the objective: the one that ran there.
    pub pick_ttl_ms: Option<u64>,
    /// The finding, one paragraph.
    pub finding: String,
    /// The plot, beside conformance.md, when it was drawn.
    pub plot: Option<String>,
    /// Why it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plot_error: Option<String>,
}

/// The plot's file, beside conformance.md.
pub const PLOT: &str = "ttl-sweep.svg";

fn secs(ms: u64) -> String {
    format!("{} s", ms as f64 / 1000.0)
}

/// `2 s` or `2 s (asked 1 s)`.
fn ttl(p: &SweepPoint) -> String {
    if p.ttl_granted_ms == p.ttl_asked_ms {
        secs(p.ttl_granted_ms)
    } else {
        format!(
            "{} (asked {})",
            secs(p.ttl_granted_ms),
            secs(p.ttl_asked_ms)
        )
    }
}

/// The knee for the objective, one paragraph (the rule is stated in the section).
pub fn finding(s: &Sweep) -> String {
    let Some(k) = s.knee else {
        return "No TTL's failover was measured (no kill led to a new leader's write within its trial): the sweep names no knee.".into();
    };
    let p = &s.points[k];
    let edge = s.points.len() > 1 && (k == 0 || k == s.points.len() - 1);
    let mut f = format!(
        "For {}% availability ({:.2} s of darkness allowed per hour, the leader's process dying {} time(s) a day), the knee is TTL {}: {:.3} dark s/h, the least of the TTLs swept{}.",
        s.availability_pct,
        s.budget_s_per_hour,
        s.leader_deaths_per_day,
        ttl(p),
        p.dark_s_per_hour.unwrap_or(0.0),
        if edge { ", at the edge of the sweep: the least may lie beyond it" } else { "" }
    );
    match s.pick_ttl_ms {
        Some(ms) if ms != p.ttl_asked_ms => {
            let _ = write!(f, " It meets the objective: configure {}; {} was asked, and {} is what the backend granted and was measured.", secs(ms), secs(p.ttl_asked_ms), secs(ms));
        }
        Some(ms) => {
            let _ = write!(f, " It meets the objective: configure {}.", secs(ms));
        }
        None => f.push_str(" No TTL swept meets the objective: widen the sweep, or lower the GC tail or the death rate."),
    }
    f
}

/// Writes ttl-sweep.svg into `dir`; its file name, or why it was not drawn.
pub fn write_plot(dir: &Path, s: &Sweep) -> Result<String, String> {
    let mut order: Vec<usize> = (0..s.points.len()).collect();
    order.sort_by_key(|&i| s.points[i].ttl_granted_ms);
    let pts: Vec<TtlPoint> = order
        .iter()
        .map(|&i| {
            let p = &s.points[i];
            TtlPoint {
                ttl_s: p.ttl_granted_ms as f64 / 1000.0,
                failover_s: p.failover_median_ms.map(|m| m / 1000.0),
                false_per_hour: p.false_failovers_per_hour,
                false_upper_per_hour: (p.false_failovers == 0 && p.run_hours > 0.0)
                    .then(|| 3.0 / p.run_hours),
                dark_s_per_hour: p.dark_s_per_hour,
            }
        })
        .collect();
    let knee = s.knee.and_then(|k| order.iter().position(|&i| i == k));
    let title = format!(
        "TTL sweep on {}: {} s of GC noise, then a kill, per TTL",
        s.backend, s.noise_s
    );
    let svg = ttl_sweep_svg(&pts, s.budget_s_per_hour, knee, &title)?;
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    std::fs::write(dir.join(PLOT), svg).map_err(|e| format!("{}: {e}", PLOT))?;
    Ok(PLOT.to_string())
}

/// The section of conformance.md, when the sweep ran.
pub fn markdown(w: &mut String, s: Option<&Sweep>) {
    let Some(s) = s else {
        return;
    };
    let _ = writeln!(w, "\n## TTL sweep\n");
    let g = &s.gc;
    let _ = writeln!(
        w,
        "At each TTL, one live trial: every node under the simulator's GC noise (`[noise.gc]` of scenarios/ttl-sweep.toml, drawn by the simulator's function from the trial's seed: a pause every {} ms on average, median {} ms, p99 {} ms, at most {} ms; SIGSTOP/SIGCONT of the node's processes) for {} s, then the leader killed with SIGKILL. Failover: the kill's, last write of the old leader to first of the new (median of the trial's). A false failover is a leadership change no scripted fault explains, counted over the whole run. Every TTL ran with the same seed, so on the same pauses.\n",
        g.mean_interval_ms, g.pause_p50_ms, g.pause_p99_ms, g.pause_max_ms, s.noise_s
    );
    let _ = writeln!(w, "| TTL asked | TTL granted | trial | failover median | false failovers | per hour | dark s / h | meets {}% |", s.availability_pct);
    let _ = writeln!(w, "|---|---|---|---|---|---|---|---|");
    for p in &s.points {
        let _ = writeln!(
            w,
            "| {} | {} ({}) | [{}]({}) {} | {} | {} in {:.3} h | {:.1} | {} | {} |",
            secs(p.ttl_asked_ms),
            secs(p.ttl_granted_ms),
            p.granted_from,
            p.trial,
            p.summary,
            p.verdict,
            p.failover_median_ms
                .map_or("none".into(), |m| format!("{m:.0} ms")),
            p.false_failovers,
            p.run_hours,
            p.false_failovers_per_hour,
            p.dark_s_per_hour
                .map_or("not measured".into(), |d| format!("{d:.3}")),
            if p.meets_slo { "yes" } else { "no" }
        );
    }
    match &s.plot {
        Some(file) => {
            let _ = writeln!(w, "\n![failover, false failovers and dark time against the TTL]({file})\n\nPlot: [{file}]({file}).");
        }
        None => {
            let _ = writeln!(
                w,
                "\nThe plot could not be drawn: {}.",
                s.plot_error.as_deref().unwrap_or("unknown")
            );
        }
    }
    let _ = writeln!(w, "\nThe rule (`sim sweep`'s): dark seconds per hour = leader deaths per hour ({} / 24) x the mean failover after the kill + false failovers per hour x their mean length. A TTL meets the objective when that is within its budget ({:.2} s per hour); the knee is the TTL of least dark time.\n", s.leader_deaths_per_day, s.budget_s_per_hour);
    let _ = writeln!(w, "**{}**\n", s.finding);
    let hours = s
        .points
        .iter()
        .map(|p| p.run_hours)
        .fold(f64::INFINITY, f64::min);
    if hours.is_finite() && hours > 0.0 {
        let _ = writeln!(w, "How far to trust it: each TTL ran {:.3} h, one kill each. A rate of false failovers that shows as 0 may be up to {:.0} per hour (95%, the rule of three); one failover is one sample. Lengthen the run with --sweep-secs to resolve rarer ones.\n", hours, 3.0 / hours);
    }
    let _ = writeln!(w, "Reproduce one TTL's trial:\n");
    for p in &s.points {
        let _ = writeln!(w, "- TTL {}: `{}`", secs(p.ttl_asked_ms), p.reproduce);
    }
}
