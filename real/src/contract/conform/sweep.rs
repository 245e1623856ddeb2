//! The TTL sweep of `conform` (spec section 9, "TTL <-> failover"; section 10,
//! experiment 2): at each TTL of `--sweep-ttls`, one live trial of
//! scenarios/conform/ttl-sweep.toml. The nodes run under the simulator's GC noise (its
//! `[noise.gc]`, carried out by [`crate::trial::noise`]) for `--sweep-secs`; then the
//! leader is killed. The trial gives the TTL's two costs: the failover after the kill,
//! and the false failovers the noise caused before it (and after: the noise runs to the
//! end). Each TTL is one trial, noise then kill, rather than separate noise and kill
//! trials: one backend start per TTL instead of two keeps the sweep within its time.
//!
//! Every TTL's trial uses the run's first seed, so each TTL meets the same pauses (a
//! longer run draws the same ones first, then more): the TTLs are compared on the same
//! noise. On another backend than etcd the TTL moves onto its protocol as the other
//! experiments' does (ZooKeeper's tick, PostgreSQL's poll follow it:
//! [`super::backend_sets`]). The TTL the backend granted is read from the trial's
//! `lease_granted` events when it logs them; otherwise it is the backend's rule (etcd
//! raises a TTL below 2 s to 2 s; the others grant what is asked). The report names
//! the granted TTL, and picks only a TTL that ran.
//!
//! The knee is named by the rule `sim sweep` uses ([`Slo::dark_s_per_hour`],
//! [`Slo::knee`]) for `--slo`, with the leader's process dying once a day.

use super::report::ExperimentResult;
use super::sweep_report::{Sweep, SweepPoint};
use super::{backend_sets, bad, Planned, Scenario, Unfenced};
use crate::contract::backends::ContractBackend;
use crate::contract::conform::spec::SpecCheck;
use crate::contract::node_cmd::NodeCmd;
use crate::trial::command::{check_trial_dir, trial_spec, RealCommandError};
use crate::trial::refusals::Source;
use baton_model::flags::ConformArgs;
use baton_model::scenario::{self, Resolved, ScenarioError, Slo};
use serde_json::Value;
use std::path::Path;

/// The experiment's name, as `--only` takes it.
pub const NAME: &str = "ttl-sweep";

/// The sweep's scenario.
pub static SCENARIO: Scenario = Scenario {
    name: NAME,
    file: "scenarios/conform/ttl-sweep.toml",
    text: include_str!("../../../../scenarios/conform/ttl-sweep.toml"),
    does: "at each TTL of --sweep-ttls, the simulator's GC noise (scenarios/ttl-sweep.toml's [noise.gc]) on every node for --sweep-secs, then the leader killed with SIGKILL; one trial per TTL",
    needs_resign: false,
    check: SpecCheck::None,
    unfenced: Unfenced::NoChange,
};

/// The TTLs (seconds) at the defaults, and with `--quick` (30 s is left out: its trial
/// alone would take two minutes).
pub const TTLS_S: [u64; 4] = [1, 3, 10, 30];
const QUICK_TTLS_S: [u64; 3] = [1, 3, 10];
/// Seconds of noise before the kill, at the defaults and with `--quick`.
pub const NOISE_S: u64 = 90;
const QUICK_NOISE_S: u64 = 10;

/// What the sweep was asked, for its report.
#[derive(Clone, Debug)]
pub struct SweepPlan {
    /// The TTL each trial asked for, in trial order.
    pub ttls_ms: Vec<u64>,
    /// Noise before the kill.
    pub noise_ms: u64,
    /// The objective.
    pub slo: Slo,
    /// The backend.
    pub backend: ContractBackend,
}

/// The TTL the backend grants for `ttl_ms` when no `lease_granted` event says: etcd's
/// minimum at default settings, as the supervisor runs it; what is asked elsewhere.
fn granted_by_rule(b: ContractBackend, ttl_ms: u64) -> u64 {
    match b {
        ContractBackend::Etcd => {
            ttl_ms.max(baton_protocols::etcd_lease::EtcdLeaseConfig::default().min_lease_ttl_ms)
        }
        _ => ttl_ms,
    }
}

/// How long a trial runs after the kill: 1.5 granted TTLs and 5 s, room for the lease to
/// run out, the backend to notice, and a successor to campaign and write.
fn tail_ms(b: ContractBackend, ttl_ms: u64) -> u64 {
    granted_by_rule(b, ttl_ms) * 3 / 2 + 5000
}

/// The sweep's scenario at `ttl_ms` on `b`, `noise_ms` of noise before the kill.
fn load(b: ContractBackend, ttl_ms: u64, noise_ms: u64) -> Result<Resolved, ScenarioError> {
    let mut sets = if b == ContractBackend::Etcd {
        vec![format!("etcd-lease.lease_ttl_ms={ttl_ms}")]
    } else {
        backend_sets(b, ttl_ms)
    };
    let tail = tail_ms(b, ttl_ms);
    sets.push(format!("duration_ms={}", noise_ms + tail));
    sets.push(format!("faults.0.at_ms={noise_ms}"));
    // Progress must show within the run: the default bound (two TTLs and more at long
    // TTLs) would outlast it. The kill comes up to 1 s late (its jitter).
    sets.push(format!("expect.liveness_bound_ms={}", tail - 1500));
    scenario::load_str(SCENARIO.file, "ttl-sweep", SCENARIO.text, &sets)
}

/// The sweep's experiment and plan when `names` asks for it; the scenario durations of
/// its trials go on `durations_ms` for the estimate.
pub(super) fn plan(
    args: &ConformArgs,
    (backend, node_cmd, dir): (ContractBackend, &NodeCmd, &Path),
    names: &[String],
    durations_ms: &mut Vec<u64>,
) -> Result<Option<(Planned, SweepPlan)>, RealCommandError> {
    if !names.iter().any(|n| n == NAME) {
        return Ok(None);
    }
    let ttls_s: Vec<u64> = args.sweep_ttls.clone().unwrap_or_else(|| {
        if args.quick {
            QUICK_TTLS_S.to_vec()
        } else {
            TTLS_S.to_vec()
        }
    });
    let noise_s = args
        .sweep_secs
        .unwrap_or(if args.quick { QUICK_NOISE_S } else { NOISE_S });
    if !(args.slo > 0.0 && args.slo < 100.0) {
        return Err(bad(format!(
            "--slo {}: not an availability in percent (allowed: above 0, below 100)",
            args.slo
        )));
    }
    let mut p = Planned {
        scenario: &SCENARIO,
        fencing: true,
        // Its first TTL: the sweep's trials each have their own (see `SweepPlan`).
        ttl_ms: ttls_s.first().map_or(0, |t| t * 1000),
        specs: vec![],
    };
    for (k, ttl_s) in ttls_s.iter().enumerate() {
        let base = load(backend, ttl_s * 1000, noise_s * 1000).map_err(bad)?;
        durations_ms.push(base.scenario.duration_ms);
        let src = Source {
            text: SCENARIO.text,
            overrides: &base.overrides,
            base: &base,
            swarm_seed: None,
        };
        let tdir = dir.join(NAME).join(format!("trial-{}", k + 1));
        check_trial_dir(&tdir, args.out.force).map_err(bad)?;
        let spec =
            trial_spec((&base, &src), (k + 1, args.seed), &tdir, Some(node_cmd)).map_err(bad)?;
        p.specs.push(spec);
    }
    let slo = Slo {
        availability_pct: args.slo,
        ..Slo::default()
    };
    let sp = SweepPlan {
        ttls_ms: ttls_s.iter().map(|t| t * 1000).collect(),
        noise_ms: noise_s * 1000,
        slo,
        backend,
    };
    Ok(Some((p, sp)))
}

/// What a run does, for its first line: `10 experiment(s) x 3 trial(s)`, with `and the
/// TTL sweep (4 TTLs, one trial each)` when it sweeps (`experiments` counts the sweep).
pub fn what_runs(experiments: usize, trials: u64, sweep: Option<&SweepPlan>) -> String {
    let Some(s) = sweep else {
        return format!("{experiments} experiment(s) x {trials} trial(s)");
    };
    let swept = format!("the TTL sweep ({} TTLs, one trial each)", s.ttls_ms.len());
    match experiments - 1 {
        0 => swept,
        n => format!("{n} experiment(s) x {trials} trial(s) and {swept}"),
    }
}

/// One trial's point, from its report.json (no figures when it cannot be read).
fn point(dir: &Path, t: &super::report::TrialResult, asked: u64, sp: &SweepPlan) -> SweepPoint {
    let json: Value = std::fs::read_to_string(dir.join(&t.summary).with_file_name("report.json"))
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    let nums = |v: &Value| -> Vec<f64> {
        v.as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default()
    };
    let false_ms: Vec<f64> = json["false_failovers"]["each"]
        .as_array()
        .map(|a| a.iter().filter_map(|f| f["failover_ms"].as_f64()).collect())
        .unwrap_or_default();
    let scripted = baton_model::checker::false_failover::scripted_failovers(
        &nums(&json["failover_ms"]),
        &false_ms,
    );
    let (granted, from) = match json["lease_ttl_granted_ms"]["max"].as_u64() {
        Some(g) => (g, "lease_granted events"),
        None => (granted_by_rule(sp.backend, asked), "backend rule"),
    };
    let hours = json["simulated_ms"].as_f64().unwrap_or(0.0) / 3_600_000.0;
    let per_hour = false_ms.len() as f64 / hours.max(f64::MIN_POSITIVE);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let dark = (!scripted.is_empty()).then(|| {
        sp.slo
            .dark_s_per_hour(mean(&scripted), per_hour, mean(&false_ms))
    });
    let mut sorted = scripted.clone();
    sorted.sort_by(f64::total_cmp);
    SweepPoint {
        ttl_asked_ms: asked,
        ttl_granted_ms: granted,
        granted_from: from,
        trial: t.trial,
        seed: t.seed,
        verdict: t.verdict,
        failover_median_ms: (!sorted.is_empty())
            .then(|| baton_model::checker::failover::nearest_rank(&sorted, 50)),
        failover_ms: scripted,
        false_failovers: false_ms.len() as u64,
        false_failover_ms: false_ms,
        run_hours: hours,
        false_failovers_per_hour: per_hour,
        meets_slo: dark.is_some_and(|d| sp.slo.meets(d)),
        dark_s_per_hour: dark,
        summary: t.summary.clone(),
        reproduce: t.reproduce.clone(),
    }
}

/// The sweep's figures from its experiment's trials (in `dir`), its knee and finding,
/// and its plot written beside conformance.md.
pub fn summarize(dir: &Path, sp: &SweepPlan, e: &ExperimentResult) -> Sweep {
    let points: Vec<SweepPoint> = e
        .trials
        .iter()
        .zip(&sp.ttls_ms)
        .map(|(t, &asked)| point(dir, t, asked, sp))
        .collect();
    let measured: Vec<usize> = (0..points.len())
        .filter(|&i| points[i].dark_s_per_hour.is_some())
        .collect();
    let dark: Vec<f64> = measured
        .iter()
        .filter_map(|&i| points[i].dark_s_per_hour)
        .collect();
    let knee = Slo::knee(&dark).map(|k| measured[k]);
    let pick_ttl_ms = knee
        .filter(|&k| points[k].meets_slo)
        .map(|k| points[k].ttl_granted_ms);
    let mut s = Sweep {
        backend: sp.backend.name().to_string(),
        noise_s: sp.noise_ms / 1000,
        gc: scenario::load_str(SCENARIO.file, NAME, SCENARIO.text, &[])
            .ok()
            .and_then(|r| r.scenario.noise.gc)
            .unwrap_or_default(),
        availability_pct: sp.slo.availability_pct,
        leader_deaths_per_day: sp.slo.leader_deaths_per_day,
        budget_s_per_hour: sp.slo.budget_s_per_hour(),
        points,
        knee,
        pick_ttl_ms,
        finding: String::new(),
        plot: None,
        plot_error: None,
    };
    s.finding = super::sweep_report::finding(&s);
    match super::sweep_report::write_plot(dir, &s) {
        Ok(file) => s.plot = Some(file),
        Err(e) => s.plot_error = Some(e),
    }
    s
}

#[cfg(test)]
mod tests {
    //! Methodology: the sweep's scenario carries the simulator's noise, and each TTL's
    //! run is planned with the backend's settings and room for its failover.
    use super::*;

    #[test]
    fn the_noise_is_the_simulator_s_ttl_sweep() {
        let ours = load(ContractBackend::Etcd, 3000, 90_000).unwrap();
        let sim = scenario::load(Path::new("../scenarios/ttl-sweep.toml"), &[]).unwrap();
        assert_eq!(ours.scenario.noise.gc, sim.scenario.noise.gc);
        assert!(ours.scenario.noise.gc.is_some());
    }

    #[test]
    fn each_ttl_runs_noise_then_a_kill_with_room_for_the_failover() {
        let r = load(ContractBackend::Etcd, 1000, 20_000).unwrap();
        assert_eq!(r.scenario.faults[0].at_ms, Some(20_000));
        // etcd grants 2 s for 1 s: the tail is sized on what it grants.
        assert_eq!(r.scenario.duration_ms, 20_000 + 3000 + 5000);
        assert_eq!(r.scenario.expect.liveness_bound_ms, Some(6500));
        let zk = load(ContractBackend::Zookeeper, 10_000, 20_000).unwrap();
        assert!(zk
            .overrides
            .contains(&"zk-sequential.tick_time_ms=1000".to_string()));
        assert_eq!(zk.scenario.duration_ms, 20_000 + 15_000 + 5000);
    }
}
