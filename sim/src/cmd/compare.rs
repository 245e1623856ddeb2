//! `sim compare`: the simulator's figures beside a live backend's, for one scenario.
//!
//! Both sides run the same scenario file with the same overrides: the simulator over a
//! range of seeds, real mode (`sim real`) over a number of trials. Each run's
//! `report.json` gives its failovers, election latencies, fencing rejections and the lease
//! TTL etcd granted; the comparison pools them per side and puts each statistic beside
//! its counterpart with the relative error `(sim - real) / real`. The targets are the
//! fidelity issue's: the simulated failover median within 10% of the live one, its 5th
//! and 95th percentiles within 15%. A reader sees at a glance which rows hold.
//!
//! **Fidelity as a regression test.** Each median row with a target also carries the
//! live median's 90% bootstrap interval, and the regression judgement CI applies
//! (`sim/tests/fidelity.rs`): the simulated median must lie inside that interval or
//! inside the target band around the live median, whichever is wider. A model change
//! that moves a simulated median out of both fails CI, not a later measurement.

pub mod conformance;

use baton_model::checker::failover::nearest_rank;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A live side that cannot be read: the directory or the file at fault (bad input).
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The directory cannot be listed.
    #[error("--real-dir {}: {1}", .0.display())]
    Unlistable(PathBuf, #[source] std::io::Error),
    /// It holds no trial's report.
    #[error("{} holds no trial-*/report.json: nothing live to compare", .0.display())]
    NoTrials(PathBuf),
    /// A trial's report cannot be read.
    #[error("{}: {1}", .0.display())]
    Unreadable(PathBuf, #[source] std::io::Error),
    /// A trial's report is not a report.json.
    #[error("{}: {1}", .0.display())]
    NotAReport(PathBuf, #[source] NotAReport),
}

/// A text that is not a report.json.
#[derive(Debug, thiserror::Error)]
#[error("not a report.json: {0}")]
pub struct NotAReport(#[from] serde_json::Error);

/// Reads the live side: every `trial-*/report.json` under `dir`, in name order. An error
/// names the directory or the file at fault (bad input: exit 2).
pub fn read_live(dir: &Path) -> Result<Vec<RunFigures>, LiveError> {
    let mut trials: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| LiveError::Unlistable(dir.to_path_buf(), e))?
        .filter_map(|e| e.ok().map(|e| e.path().join("report.json")))
        .filter(|p| p.is_file())
        .collect();
    trials.sort();
    if trials.is_empty() {
        return Err(LiveError::NoTrials(dir.to_path_buf()));
    }
    trials
        .iter()
        .map(|t| {
            let text =
                std::fs::read_to_string(t).map_err(|e| LiveError::Unreadable(t.clone(), e))?;
            RunFigures::from_report_json(&text).map_err(|e| LiveError::NotAReport(t.clone(), e))
        })
        .collect()
}

/// One run's figures, as its report.json gives them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunFigures {
    /// The verdict was pass.
    pub passed: bool,
    /// `failover_ms`.
    pub failover_ms: Vec<f64>,
    /// `election_latencies_ms`.
    pub election_ms: Vec<f64>,
    /// `election_latencies_by_start.campaign`: elections timed from a campaign's start.
    pub campaign_election_ms: Vec<f64>,
    /// `election_latencies_by_start.vacancy`: a queued candidate taking a vacant seat.
    pub vacancy_election_ms: Vec<f64>,
    /// How many writes the fence rejected (`fencing.rejections`).
    pub rejections: u64,
    /// `lease_ttl_granted_ms.min`, when the report has it.
    pub lease_ttl_granted_ms: Option<f64>,
    /// `lease_service.lease_overruns_ms`: each expired lease's overrun (empty when the
    /// lease service is not a cluster).
    pub lease_overrun_ms: Vec<f64>,
    /// `lease_service.leader_changes`: how often the lease service's own leader changed.
    pub lease_service_leader_changes: u64,
}

impl RunFigures {
    /// Reads the figures out of a report.json's text.
    pub fn from_report_json(text: &str) -> Result<RunFigures, NotAReport> {
        let v: serde_json::Value = serde_json::from_str(text)?;
        let nums = |key: &str| -> Vec<f64> {
            v.pointer(key)
                .and_then(|x| x.as_array())
                .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
                .unwrap_or_default()
        };
        Ok(RunFigures {
            passed: v["verdict"] == "pass",
            failover_ms: nums("/failover_ms"),
            election_ms: nums("/election_latencies_ms"),
            // A --node-cmd node is seen from outside, its campaign starts unseen: its
            // first election counts from the trial's start (the process starting).
            campaign_election_ms: match v["node_cmd"].is_string() {
                true => vec![],
                false => nums("/election_latencies_by_start/campaign"),
            },
            vacancy_election_ms: nums("/election_latencies_by_start/vacancy"),
            rejections: v["fencing"]["rejections"]
                .as_array()
                .map_or(0, |a| a.len() as u64),
            // `{min, max, count}` over the run's grants; the smallest is what a lease
            // could count on.
            lease_ttl_granted_ms: v["lease_ttl_granted_ms"]["min"].as_f64(),
            lease_overrun_ms: v["lease_service"]["lease_overruns_ms"]
                .as_array()
                .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
                .unwrap_or_default(),
            lease_service_leader_changes: v["lease_service"]["leader_changes"]
                .as_u64()
                .unwrap_or(0),
        })
    }
}

/// Pooled statistics of one side.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct SideStats {
    /// Runs (seeds or trials).
    pub runs: usize,
    /// Of those, runs whose verdict was pass.
    pub passed: usize,
    /// Failovers pooled over every run.
    pub failovers: usize,
    /// Failover median (nearest rank), ms.
    pub failover_p50_ms: Option<f64>,
    /// A distribution-free 95% confidence interval for the failover median, ms (from
    /// order statistics; `None` below 6 failovers, where none exists at 95%). It says how
    /// far the median could move with more runs of the same kind: with few runs and a
    /// wide spread it is wide, and a relative error inside it is not evidence of a gap.
    pub failover_p50_ci95_ms: Option<[f64; 2]>,
    /// Failover 5th percentile, ms.
    pub failover_p5_ms: Option<f64>,
    /// Failover 95th percentile, ms.
    pub failover_p95_ms: Option<f64>,
    /// Shortest failover, ms.
    pub failover_min_ms: Option<f64>,
    /// Longest failover, ms.
    pub failover_max_ms: Option<f64>,
    /// Elections pooled over every run.
    pub elections: usize,
    /// Election latency median, ms.
    pub election_p50_ms: Option<f64>,
    /// Election latency 99th percentile, ms.
    pub election_p99_ms: Option<f64>,
    /// Median latency of elections timed from a campaign's start, ms.
    pub campaign_election_p50_ms: Option<f64>,
    /// Median latency of a queued candidate taking a vacant seat, ms.
    pub vacancy_election_p50_ms: Option<f64>,
    /// Fencing rejections per run, mean.
    pub rejections_per_run: f64,
    /// The lease TTL granted (the smallest seen), ms.
    pub lease_ttl_granted_ms: Option<f64>,
    /// Expired leases pooled over every run (a cluster's lease service only).
    pub lease_expiries: usize,
    /// The lease service's leader changes, summed over every run.
    pub lease_service_leader_changes: u64,
    /// Lease overrun median, ms.
    pub lease_overrun_p50_ms: Option<f64>,
    /// Lease overrun 95th percentile, ms.
    pub lease_overrun_p95_ms: Option<f64>,
}

/// One figure's values pooled over every run, sorted.
fn pooled(runs: &[RunFigures], figure: fn(&RunFigures) -> &Vec<f64>) -> Vec<f64> {
    let mut v: Vec<f64> = runs
        .iter()
        .flat_map(|r| figure(r).iter().copied())
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The distribution-free 95% interval for the median of the population `sorted` was
/// drawn from: `[x(j), x(n+1-j)]` (1-based order statistics) with the largest `j` such
/// that P(Binomial(n, 1/2) < j) <= 2.5%, so the interval covers the median with at least
/// 95% probability whatever the distribution. `None` when no such `j >= 1` exists (n < 6).
pub fn median_ci95(sorted: &[f64]) -> Option<[f64; 2]> {
    let n = sorted.len();
    // P(B <= k) accumulated in log space, so thousands of runs do not underflow 2^-n.
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut ln_choose = 0.0f64; // ln C(n, 0)
    let mut below = 0.0f64; // P(B < j) for the j being tried
    let mut j = 0;
    for k in 0..n {
        // Try j = k + 1: P(B < k + 1) = P(B <= k).
        let p_k = (ln_choose + ln_half_n).exp();
        if below + p_k > 0.025 {
            break;
        }
        below += p_k;
        j = k + 1;
        ln_choose += ((n - k) as f64 / (k + 1) as f64).ln();
    }
    (j >= 1 && j <= n + 1 - j).then(|| [sorted[j - 1], sorted[n - j]])
}

impl SideStats {
    /// Pools `runs`.
    pub fn of(runs: &[RunFigures]) -> SideStats {
        let fo = pooled(runs, |r| &r.failover_ms);
        let el = pooled(runs, |r| &r.election_ms);
        let el_campaign = pooled(runs, |r| &r.campaign_election_ms);
        let el_vacancy = pooled(runs, |r| &r.vacancy_election_ms);
        let ov = pooled(runs, |r| &r.lease_overrun_ms);
        let pct = |v: &[f64], p: usize| (!v.is_empty()).then(|| nearest_rank(v, p));
        SideStats {
            runs: runs.len(),
            passed: runs.iter().filter(|r| r.passed).count(),
            failovers: fo.len(),
            failover_p50_ms: pct(&fo, 50),
            failover_p50_ci95_ms: median_ci95(&fo),
            failover_p5_ms: pct(&fo, 5),
            failover_p95_ms: pct(&fo, 95),
            failover_min_ms: fo.first().copied(),
            failover_max_ms: fo.last().copied(),
            elections: el.len(),
            election_p50_ms: pct(&el, 50),
            election_p99_ms: pct(&el, 99),
            campaign_election_p50_ms: pct(&el_campaign, 50),
            vacancy_election_p50_ms: pct(&el_vacancy, 50),
            rejections_per_run: if runs.is_empty() {
                0.0
            } else {
                runs.iter().map(|r| r.rejections as f64).sum::<f64>() / runs.len() as f64
            },
            lease_ttl_granted_ms: runs
                .iter()
                .filter_map(|r| r.lease_ttl_granted_ms)
                .min_by(f64::total_cmp),
            lease_expiries: ov.len(),
            lease_service_leader_changes: runs.iter().map(|r| r.lease_service_leader_changes).sum(),
            lease_overrun_p50_ms: pct(&ov, 50),
            lease_overrun_p95_ms: pct(&ov, 95),
        }
    }
}

/// One row of the table.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    /// What is compared.
    pub metric: String,
    /// The simulator's value.
    pub sim: Option<f64>,
    /// The live value.
    pub real: Option<f64>,
    /// `(sim - real) / real`, when both exist and real is not 0.
    pub relative_error: Option<f64>,
    /// The largest relative error allowed, for rows with a target.
    pub target: Option<f64>,
    /// Whether the row meets its target (`None`: no target, or no figures).
    pub within_target: Option<bool>,
    /// For a median row with a target: the live median's 90% bootstrap interval.
    pub live_interval_90: Option<[f64; 2]>,
    /// For a median row with a target and live figures: whether the simulated median
    /// lies inside the live interval or the target band, whichever is wider (the
    /// regression test's judgement; `false` when the simulated side has no figure).
    pub regression_holds: Option<bool>,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Comparison {
    /// The command that made it.
    pub command: String,
    /// The scenario's name.
    pub scenario: String,
    /// What the live side ran against (`live etcd`, `live Redis`, `live nodes`).
    pub live: String,
    /// The simulated side.
    pub sim: SideStats,
    /// The live side.
    pub real: SideStats,
    /// Side by side.
    pub rows: Vec<Row>,
    /// Every row with a target meets it.
    pub within_targets: bool,
    /// Every median row's regression judgement holds (what CI checks).
    pub regression_holds: bool,
}

/// A row to compute: metric, simulated, live, largest relative error allowed, and for
/// a median row the live values it is the median of (sorted).
type RowSpec<'a> = (
    &'a str,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<Vec<f64>>,
);

/// How many resamples the bootstrap draws.
const BOOTSTRAP_RESAMPLES: usize = 2000;

/// The 90% bootstrap interval of the (nearest-rank) median of `values`: the 5th and 95th
/// percentiles of the medians of [`BOOTSTRAP_RESAMPLES`] resamples with replacement. The
/// generator has a fixed seed, so the same trials always give the same interval. `None`
/// below 2 values.
pub fn median_bootstrap90(values: &[f64]) -> Option<[f64; 2]> {
    use rand::{Rng, SeedableRng};
    if values.len() < 2 {
        return None;
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(90);
    let mut sample = vec![0.0; values.len()];
    let mut medians: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            for x in sample.iter_mut() {
                *x = values[rng.gen_range(0..values.len())];
            }
            sample.sort_by(f64::total_cmp);
            nearest_rank(&sample, 50)
        })
        .collect();
    medians.sort_by(f64::total_cmp);
    Some([nearest_rank(&medians, 5), nearest_rank(&medians, 95)])
}

/// One row: the relative error `(a - b) / b` judged against `target`, and for a median
/// row with a target the regression judgement against the live values' interval.
fn row(
    metric: &str,
    a: Option<f64>,
    b: Option<f64>,
    target: Option<f64>,
    live_values: Option<Vec<f64>>,
) -> Row {
    let relative_error = match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some((a - b) / b),
        _ => None,
    };
    let median_row = live_values.is_some();
    let live_interval_90 = target.and(live_values).and_then(|v| median_bootstrap90(&v));
    // Too few live values for an interval: the band alone judges.
    let regression_holds = match (a, b, target.filter(|_| median_row)) {
        (Some(a), Some(b), Some(t)) => {
            let [lo, hi] = live_interval_90.unwrap_or([b, b]);
            Some(a >= lo.min(b * (1.0 - t)) && a <= hi.max(b * (1.0 + t)))
        }
        (None, Some(_), Some(_)) => Some(false),
        _ => None,
    };
    Row {
        metric: metric.into(),
        sim: a,
        real: b,
        relative_error,
        target,
        within_target: target.and_then(|t| relative_error.map(|e| e.abs() <= t)),
        live_interval_90,
        regression_holds,
    }
}

/// Compares the two sides.
pub fn compare(
    command: &str,
    scenario: &str,
    live_side: &str,
    sim: &[RunFigures],
    real: &[RunFigures],
) -> Comparison {
    let (s, r) = (SideStats::of(sim), SideStats::of(real));
    // Only a cluster's lease service has overruns, and only live trials that watched it
    // measured them. The row has a target where the live side saw the service's own
    // leader change: there the overrun is the new leader's lessor giving the lease a
    // full TTL again, seconds long, the effect the case is about. Without one, an overrun
    // is where the 500 ms expiry loop happened to be, spread evenly over 0..500 ms:
    // the median of 20 live expiries moves by about 22% (one standard deviation) by
    // chance alone, which no 10% target can judge.
    let overrun_target =
        (r.lease_expiries > 0 && r.lease_service_leader_changes > 0).then_some(0.10);
    let live = |f: fn(&RunFigures) -> &Vec<f64>| pooled(real, f);
    // Election latency is judged per kind of start (their mixture's median falls between
    // the two costs), each where the live side has elections of that kind.
    let campaign_target = r.campaign_election_p50_ms.map(|_| 0.20);
    let vacancy_target = r.vacancy_election_p50_ms.map(|_| 0.20);
    #[rustfmt::skip]
    let table: [RowSpec; 13] = [
        ("failover median (ms)", s.failover_p50_ms, r.failover_p50_ms, Some(0.10), Some(live(|x| &x.failover_ms))),
        ("failover p5 (ms)", s.failover_p5_ms, r.failover_p5_ms, Some(0.15), None),
        ("failover p95 (ms)", s.failover_p95_ms, r.failover_p95_ms, Some(0.15), None),
        ("failover min (ms)", s.failover_min_ms, r.failover_min_ms, None, None),
        ("failover max (ms)", s.failover_max_ms, r.failover_max_ms, None, None),
        ("election latency median (ms)", s.election_p50_ms, r.election_p50_ms, None, None),
        ("election latency median, from a campaign (ms)", s.campaign_election_p50_ms, r.campaign_election_p50_ms, campaign_target, Some(live(|x| &x.campaign_election_ms))),
        ("election latency median, from a vacancy (ms)", s.vacancy_election_p50_ms, r.vacancy_election_p50_ms, vacancy_target, Some(live(|x| &x.vacancy_election_ms))),
        ("election latency p99 (ms)", s.election_p99_ms, r.election_p99_ms, None, None),
        ("lease overrun median (ms)", s.lease_overrun_p50_ms, r.lease_overrun_p50_ms, overrun_target, Some(live(|x| &x.lease_overrun_ms))),
        ("lease overrun p95 (ms)", s.lease_overrun_p95_ms, r.lease_overrun_p95_ms, None, None),
        ("fencing rejections per run", Some(s.rejections_per_run), Some(r.rejections_per_run), None, None),
        ("lease TTL granted (ms)", s.lease_ttl_granted_ms, r.lease_ttl_granted_ms, None, None),
    ];
    let rows: Vec<Row> = table
        .into_iter()
        .map(|(metric, a, b, target, values)| row(metric, a, b, target, values))
        .collect();
    // A target row without figures on both sides is not met: a comparison with nothing
    // to compare must not read as a success.
    let within_targets = rows
        .iter()
        .filter(|x| x.target.is_some())
        .all(|x| x.within_target == Some(true));
    let regression_holds = rows.iter().all(|x| x.regression_holds != Some(false));
    Comparison {
        command: command.into(),
        scenario: scenario.into(),
        live: live_side.into(),
        sim: s,
        real: r,
        rows,
        within_targets,
        regression_holds,
    }
}

/// `text` with its first letter upper-case.
fn capitalized(text: &str) -> String {
    let mut c = text.chars();
    c.next()
        .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

fn num(v: Option<f64>) -> String {
    match v {
        None => "n/a".into(),
        Some(x) if x.fract() == 0.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.1}"),
    }
}

impl Comparison {
    /// `compare.md`.
    pub fn markdown(&self) -> String {
        let mut m = String::new();
        let _ = writeln!(m, "# Fidelity: {}\n", self.scenario);
        let _ = writeln!(m, "Made by `{}`.\n", self.command);
        let _ = writeln!(
            m,
            "Simulated: {} seeds ({} passed), {} failovers, {} elections. {}: {} trials ({} passed), {} failovers, {} elections.\n",
            self.sim.runs,
            self.sim.passed,
            self.sim.failovers,
            self.sim.elections,
            capitalized(&self.live),
            self.real.runs,
            self.real.passed,
            self.real.failovers,
            self.real.elections
        );
        let _ = writeln!(
            m,
            "| metric | simulated | {} | relative error | target | live median, 90% bootstrap | regression test |",
            self.live
        );
        let _ = writeln!(m, "|---|---:|---:|---:|---|---:|---|");
        for r in &self.rows {
            let err = r
                .relative_error
                .map_or("n/a".into(), |e| format!("{:+.1}%", e * 100.0));
            let target = match (r.target, r.within_target) {
                (None, _) => String::new(),
                (Some(t), Some(true)) => format!("within {:.0}%: met", t * 100.0),
                (Some(t), Some(false)) => format!("within {:.0}%: **not met**", t * 100.0),
                (Some(t), None) => format!("within {:.0}%: no figures", t * 100.0),
            };
            let interval = r.live_interval_90.map_or(String::new(), |[a, b]| {
                format!("{} .. {}", num(Some(a)), num(Some(b)))
            });
            let regression = match r.regression_holds {
                None => "",
                Some(true) => "holds",
                Some(false) => "**fails**",
            };
            let _ = writeln!(
                m,
                "| {} | {} | {} | {err} | {target} | {interval} | {regression} |",
                r.metric,
                num(r.sim),
                num(r.real)
            );
        }
        let ci = |c: Option<[f64; 2]>| {
            c.map_or("none (too few failovers)".to_string(), |[a, b]| {
                format!("{} .. {} ms", num(Some(a)), num(Some(b)))
            })
        };
        let _ = writeln!(
            m,
            "\nFailover median, 95% interval (distribution-free, from order statistics): simulated {}; live {}. {}",
            ci(self.sim.failover_p50_ci95_ms),
            ci(self.real.failover_p50_ci95_ms),
            match (self.sim.failover_p50_ms, self.real.failover_p50_ci95_ms) {
                (Some(m), Some([a, b])) if m >= a && m <= b =>
                    "The simulated median lies inside the live interval: at this many live trials the two are not told apart.",
                (Some(_), Some(_)) =>
                    "The simulated median lies outside the live interval: the gap is more than the live trials' sampling spread.",
                _ => "",
            }
        );
        let _ = writeln!(
            m,
            "\n{}",
            if self.within_targets {
                "Every target is met."
            } else {
                "Some target is **not met**."
            }
        );
        let _ = writeln!(
            m,
            "\nRegression test (what CI checks against these live trials): {}. A median row holds when the simulated median lies inside the live median's 90% bootstrap interval ({BOOTSTRAP_RESAMPLES} resamples of the live values, a fixed seed) or inside its target band around the live median, whichever is wider.",
            if self.regression_holds { "every median row holds" } else { "some median row **fails**" }
        );
        let _ = writeln!(
            m,
            "\nFailover: last accepted write of the old leader to first accepted write of the new one. Election latency: campaign start (or the seat falling vacant) to the win; \"from a campaign\": the winner began campaigning after the seat was vacant (the recipe's every call: lease grant, create, read), \"from a vacancy\": the winner was queued and took the seat when it fell vacant (a watch notification and a read). Lease overrun (a cluster's lease service only): how long after its holder's last renewal plus its TTL an expired lease ended; its median has a target only where the live service's own leader changed (the new leader's lessor gives leases a full TTL again, seconds long): otherwise it is where the 500 ms expiry loop happened to be, even over 0..500 ms, and the median of 20 live expiries moves by about 22% by chance alone. A live node run by `--node-cmd` is seen from outside: its campaign starts are not (its first election counts from the trial's start, the process starting), so it has no \"from a campaign\" figure, and its step-up is seen by a status poll every 15 ms. Percentiles are nearest-rank over every failover, election or expiry of every run. Relative error is (simulated - live) / live."
        );
        m
    }

    /// `compare.json`.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("serializable") + "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(failovers: &[f64]) -> RunFigures {
        RunFigures {
            passed: true,
            failover_ms: failovers.to_vec(),
            election_ms: vec![20.0],
            campaign_election_ms: vec![20.0],
            ..Default::default()
        }
    }

    /// Methodology: hand-made sides whose medians differ by a known amount; a 5% gap is
    /// within the 10% target, a 20% gap is not, and an empty side meets nothing.
    #[test]
    fn targets_judge_relative_error_and_an_empty_side_fails() {
        let real = [run(&[1000.0, 2000.0, 3000.0])];
        let close = compare(
            "c",
            "s",
            "live etcd",
            &[run(&[1050.0, 2100.0, 3150.0])],
            &real,
        );
        assert_eq!(close.rows[0].relative_error, Some(0.05));
        assert!(close.within_targets, "{:?}", close.rows);
        let far = compare(
            "c",
            "s",
            "live etcd",
            &[run(&[1200.0, 2400.0, 3600.0])],
            &real,
        );
        assert_eq!(far.rows[0].within_target, Some(false));
        assert!(!far.within_targets);
        let empty = compare("c", "s", "live etcd", &[run(&[])], &real);
        assert!(!empty.within_targets);
        assert!(empty.markdown().contains("no figures"));
        // Election latency has its own target (20%) per kind of start, where the live
        // side has such elections; lease overrun one only when a side has expiries.
        let mut slow = run(&[1000.0, 2000.0, 3000.0]);
        slow.campaign_election_ms = vec![30.0];
        let e = compare("c", "s", "live etcd", &[slow], &real);
        let row = |c: &Comparison, m: &str| c.rows.iter().find(|r| r.metric == m).cloned().unwrap();
        assert_eq!(
            row(&e, "election latency median, from a campaign (ms)").within_target,
            Some(false)
        );
        assert_eq!(
            row(&e, "election latency median, from a vacancy (ms)").target,
            None
        );
        assert_eq!(row(&e, "election latency median (ms)").target, None);
        assert_eq!(row(&close, "lease overrun median (ms)").target, None);
        let mut over = run(&[1000.0, 2000.0, 3000.0]);
        over.lease_overrun_ms = vec![3000.0];
        let mut over_real = real[0].clone();
        over_real.lease_overrun_ms = vec![2900.0];
        // Without a change of the service's leader, the overrun is the expiry loop's
        // phase: shown, not judged.
        let o = compare("c", "s", "live etcd", &[over.clone()], &[over_real.clone()]);
        assert_eq!(row(&o, "lease overrun median (ms)").target, None);
        over_real.lease_service_leader_changes = 1;
        let o = compare("c", "s", "live etcd", &[over], &[over_real]);
        assert_eq!(
            row(&o, "lease overrun median (ms)").within_target,
            Some(true)
        );
    }

    /// Methodology: the interval's ranks against binomial tables (n = 20: the 6th and
    /// 15th values, 95.9% coverage; n = 100: the 40th and 61st), none below 6 values, and
    /// a large n does not underflow.
    #[test]
    fn the_median_interval_takes_the_binomial_ranks() {
        let v = |n: usize| (1..=n).map(|i| i as f64).collect::<Vec<_>>();
        assert_eq!(median_ci95(&v(20)), Some([6.0, 15.0]));
        assert_eq!(median_ci95(&v(100)), Some([40.0, 61.0]));
        assert_eq!(median_ci95(&v(6)), Some([1.0, 6.0]));
        assert_eq!(median_ci95(&v(5)), None);
        let [a, b] = median_ci95(&v(5000)).unwrap();
        assert!(
            a > 2400.0 && a < 2500.0 && b > 2500.0 && b < 2600.0,
            "{a} {b}"
        );
    }

    /// Methodology: live failovers spread widely (1000..3000 ms, 21 values): their
    /// median's bootstrap interval is wide and deterministic, contains the median, and
    /// lies within the values. A simulated median 20% off (beyond the 10% target) but
    /// inside the interval holds; one beyond both fails; a tight live side (all 2000) is
    /// judged by the 10% band alone. Below 2 values there is no interval.
    #[test]
    fn the_regression_test_takes_the_wider_of_interval_and_band() {
        let wide: Vec<f64> = (0..21).map(|i| 1000.0 + 100.0 * i as f64).collect();
        let [lo, hi] = median_bootstrap90(&wide).unwrap();
        assert_eq!(median_bootstrap90(&wide), Some([lo, hi]), "deterministic");
        assert!(
            lo < 2000.0 && hi > 2000.0 && lo >= 1000.0 && hi <= 3000.0,
            "{lo} {hi}"
        );
        assert!(
            hi - lo > 400.0,
            "{lo} {hi}: 21 values this spread give a wide interval"
        );
        assert_eq!(median_bootstrap90(&[5.0]), None);
        let real = [run(&wide)];
        let judge = |sim_median: f64| {
            let c = compare("c", "s", "live etcd", &[run(&[sim_median])], &real);
            (
                c.rows[0].within_target,
                c.rows[0].regression_holds,
                c.regression_holds,
            )
        };
        let inside = (lo + 2000.0 * 0.9).min(2000.0 * 0.9) - 1.0;
        assert!(inside > lo, "the interval reaches below the band");
        assert_eq!(judge(inside), (Some(false), Some(true), true));
        assert_eq!(judge(lo - 50.0), (Some(false), Some(false), false));
        let tight = [run(&[2000.0; 21])];
        let c = compare("c", "s", "live etcd", &[run(&[2150.0])], &tight);
        assert_eq!(c.rows[0].live_interval_90, Some([2000.0, 2000.0]));
        assert_eq!(c.rows[0].regression_holds, Some(true), "inside 10%");
        let c = compare("c", "s", "live etcd", &[run(&[2250.0])], &tight);
        assert_eq!(c.rows[0].regression_holds, Some(false), "beyond 10%");
    }

    #[test]
    fn figures_come_out_of_a_report() {
        let f = RunFigures::from_report_json(
            r#"{"verdict":"pass","failover_ms":[2500.5],"election_latencies_ms":[4.0,6.0],
                "election_latencies_by_start":{"campaign":[6.0],"vacancy":[4.0]},
                "fencing":{"rejections":[{"at_ms":1}]},
                "lease_ttl_granted_ms":{"min":2000,"max":2000,"count":3}}"#,
        )
        .unwrap();
        assert!(f.passed);
        assert_eq!(f.failover_ms, vec![2500.5]);
        assert_eq!(f.election_ms, vec![4.0, 6.0]);
        assert_eq!(
            (f.campaign_election_ms, f.vacancy_election_ms),
            (vec![6.0], vec![4.0])
        );
        assert_eq!(f.rejections, 1);
        assert_eq!(f.lease_ttl_granted_ms, Some(2000.0));
        let outside = r#"{"node_cmd":"n","election_latencies_by_start":{"campaign":[60.0]}}"#;
        let f = RunFigures::from_report_json(outside).unwrap();
        assert!(f.campaign_election_ms.is_empty(), "not seen from outside");
    }
}
