//! One real trial of a scenario, end to end: start the world, fire the faults, stop,
//! merge the timeline, check it with the model's checkers and render the same artefacts
//! a simulated run has.
//!
//! The scenario maps onto the real world as follows: `nodes` node processes; the
//! `[etcd-lease]` table is the elector's configuration (a live etcd grants at least 2 s);
//! `fencing` switches the SQLite ledger's fence; `[work]` sets the tick interval, the
//! load client's rate, timeout and quantum (at least 10 ms, see [`crate::trial::refusals`]) and
//! the nodes' write timeout; `[network]`'s latency is added by every proxy, each way, per
//! chunk; `start_delay_ms_max` delays each node's first campaign after every start by a
//! draw from the seed (the simulator's draw); `[noise.gc]` stops each node's processes at
//! the simulator's pauses for the same seed ([`noise`]); `duration_ms` is how long the
//! run's clock runs after the fleet starts booting.
//!
//! The checkers read every merged event up to the run's end, in timeline order, exactly
//! as the simulator feeds them ([`baton_model::checker::Checks`], and the lanes of the
//! plot and page), with the load client's counts as the client's. What the real world
//! cannot count (network messages, backend requests) is 0 in report.json, and the report
//! says so.

pub mod command;
pub mod driver;
pub mod noise;
pub mod refusals;
pub mod smoke;

use crate::events::Entry;
use crate::supervisor::{RealConfig, RealError, StoppedRun, Supervisor};
use crate::trial::driver::Driver;
use baton_model::checker::Checks;
use baton_model::render::artifacts::{report_with, Artifacts};
use baton_model::render::lanes::LaneBuilder;
use baton_model::{LedgerCheck, TrialReport};
use baton_model::{RunOutput, TimelineFile};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// One trial to run.
#[derive(Clone, Debug)]
pub struct TrialSpec {
    /// The scenario as real mode runs it (checked by [`crate::trial::refusals::check`], swarm
    /// drawn).
    pub plan: crate::trial::refusals::Plan,
    /// The trial's seed (jitter, boot delays; the swarm's draw was made with it).
    pub seed: u64,
    /// Which trial (1-based).
    pub trial: usize,
    /// Where the processes' files go (logs, configs, stderr, the ledger).
    pub run_dir: PathBuf,
    /// The `baton-real` binary the processes run.
    pub binary: PathBuf,
    /// The command that runs this trial again (for the report).
    pub command: String,
    /// The command that runs each node instead of Baton's own (`--node-cmd`).
    pub node_cmd: Option<crate::contract::node_cmd::NodeCmd>,
}

/// Why a trial did not produce a report.
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    /// The world did not start (etcd, a port, a process): nothing ran.
    #[error("cannot start: {0}")]
    CannotStart(RealError),
    /// It started, then broke; the logs are in `logs`.
    #[error("{why} (logs: {})", logs.display())]
    Broke {
        /// What broke.
        why: String,
        /// The run directory holding every process's log and stderr.
        logs: PathBuf,
    },
}

/// A finished trial.
#[derive(Debug)]
pub struct Trial {
    /// Every artefact, rendered.
    pub artifacts: Artifacts,
    /// What the supervisor left (timeline, ledger, load counts, pids and ports).
    pub output: StoppedRun,
    /// Wall time of the whole trial, etcd's start included.
    pub wall_ms: u64,
    /// What the contract's checks before the first fault found (`--node-cmd` only).
    pub preflight: Option<crate::contract::preflight::Preflight>,
}

/// Builds the world's configuration from a trial's scenario.
pub fn config(spec: &TrialSpec) -> RealConfig {
    let s = &spec.plan.resolved.scenario;
    let mut cfg = RealConfig::new(spec.run_dir.clone(), spec.binary.clone());
    cfg.nodes = s.nodes as usize;
    // Checked by crate::trial::refusals before the trial was planned.
    cfg.protocol = crate::protocol::RealProtocol::from_config(s.protocol_config())
        .expect("real mode runs the protocol (checked before the run)");
    cfg.fencing = s.fencing;
    cfg.tick_interval_ms = s.work.tick_interval_ms;
    cfg.rate_per_s = s.work.rate_per_s;
    cfg.client_quantum_ms = spec.plan.client_quantum_ms;
    cfg.client_timeout_ms = s.work.client_timeout_ms;
    cfg.resource_timeout_ms = s.work.resource_timeout_ms;
    cfg.seed = spec.seed;
    cfg.start_delay_ms_max = s.start_delay_ms_max;
    cfg.network_latency_ms = (s.network.latency_ms_min, s.network.latency_ms_max);
    // The live cluster has as many members as the simulated one (`[etcd] members`).
    cfg.etcd.members = s.etcd_cluster().members as usize;
    cfg.node_cmd = spec.node_cmd.clone();
    cfg
}

/// Runs one trial (see the module doc).
pub async fn run(spec: &TrialSpec) -> Result<Trial, TrialError> {
    let wall = Instant::now();
    let resolved = &spec.plan.resolved;
    let end_us = resolved.scenario.duration_ms as i64 * 1000;
    let mut sup = Supervisor::start(config(spec))
        .await
        .map_err(TrialError::CannotStart)?;
    // Dropping `sup` on an error stops every process.
    let preflight = match sup.foreign() {
        true => Some(
            crate::contract::preflight::run(&sup)
                .await
                .map_err(|b| TrialError::CannotStart(crate::supervisor::RealError::Contract(b)))?,
        ),
        false => None,
    };
    let mut notes = drive(&mut sup, spec, end_us).await?;
    let mut output = sup
        .stop()
        .await
        .map_err(|e| broke(spec, format!("stopping the run failed: {e}")))?;
    if spec.node_cmd.is_some() {
        output.timeline =
            crate::contract::outside_view::complete(std::mem::take(&mut output.timeline));
        notes.extend(
            crate::contract::outside_view::NOTES
                .iter()
                .map(|n| n.to_string()),
        );
    }
    let kept = kept_entries(&output, end_us, &mut notes);
    let out = check(spec, &kept, end_us, &output)?;
    let real = trial_report(spec, &output, notes);
    let artifacts = report_with(resolved, spec.seed, out, Some(&real));
    Ok(Trial {
        artifacts,
        output,
        wall_ms: wall.elapsed().as_millis() as u64,
        preflight,
    })
}

/// The trial broke after it started, for `why`; its logs are in its run directory.
fn broke(spec: &TrialSpec, why: String) -> TrialError {
    TrialError::Broke {
        why,
        logs: spec.run_dir.clone(),
    }
}

/// Fires the scenario's faults until the run's clock reaches `end_us`; returns the
/// report's notes so far (the plan's and the driver's). A fault that could not be
/// applied, or a process that exited by itself, breaks the trial.
async fn drive(
    sup: &mut Supervisor,
    spec: &TrialSpec,
    end_us: i64,
) -> Result<Vec<String>, TrialError> {
    let nodes: Vec<String> = sup.node_names().into_iter().map(String::from).collect();
    let mut driver = Driver::new(sup, spec.seed, cfg_latency(spec));
    driver.set_noise(noise::schedule(
        &spec.plan.resolved.scenario,
        spec.seed,
        &nodes,
    ));
    driver
        .run(&spec.plan.resolved.faults, end_us)
        .await
        .map_err(|e| broke(spec, format!("a fault could not be applied: {e}")))?;
    let mut notes = spec.plan.notes.clone();
    notes.extend(driver.notes());
    let mut exited = sup.exited();
    if sup.foreign() {
        // A node of your own that exits by itself broke the contract: the poller
        // recorded it, and the run goes on to its verdict.
        let nodes = sup.node_names();
        exited.retain(|(what, _)| !nodes.iter().any(|n| n == what));
    }
    if !exited.is_empty() {
        let list: Vec<String> = exited
            .iter()
            .map(|(what, log)| format!("{what} (see {})", log.display()))
            .collect();
        return Err(broke(
            spec,
            format!(
                "processes exited by themselves during the run: {}",
                list.join(", ")
            ),
        ));
    }
    Ok(notes)
}

/// The merged timeline's entries that belong to the run, noting in `notes` what was
/// left out and what real mode does not count.
fn kept_entries<'a>(
    output: &'a StoppedRun,
    end_us: i64,
    notes: &mut Vec<String>,
) -> Vec<&'a Entry> {
    // The run is the run's clock from 0 to its duration; what processes logged while
    // they were being stopped is left out (and counted).
    let (kept, after): (Vec<&Entry>, Vec<&Entry>) =
        output.timeline.iter().partition(|e| e.at_us <= end_us);
    if !after.is_empty() {
        notes.push(format!(
            "{} events logged while the processes were being stopped, after the run's end, are left out",
            after.len()
        ));
    }
    if !output.unreadable.is_empty() {
        notes.push(format!(
            "{} log lines could not be read (a process killed mid-line leaves one): {}",
            output.unreadable.len(),
            output.unreadable.join("; ")
        ));
    }
    notes.push(
        "network messages and backend requests are not counted in real mode (0 in report.json)"
            .into(),
    );
    kept
}

/// Feeds the kept entries to the model's checkers and lanes, in timeline order, as the
/// simulator feeds them, and keeps them in a temporary timeline file for the report.
fn check(
    spec: &TrialSpec,
    kept: &[&Entry],
    end_us: i64,
    output: &StoppedRun,
) -> Result<RunOutput, TrialError> {
    let resolved = &spec.plan.resolved;
    let mut checks = Checks::new(resolved);
    let mut lanes = LaneBuilder::for_scenario(resolved);
    let file = tempfile::tempfile().map_err(|e| broke(spec, format!("a temporary file: {e}")))?;
    let mut w = std::io::BufWriter::new(file);
    for e in kept {
        checks.observe(e);
        lanes.entry(e);
        serde_json::to_writer(&mut w, e)
            .map_err(std::io::Error::from)
            .and_then(|()| w.write_all(b"\n"))
            .map_err(|e| broke(spec, format!("writing the timeline: {e}")))?;
    }
    let file = w
        .into_inner()
        .map_err(|e| broke(spec, format!("writing the timeline: {e}")))?;
    let client = output.load.client_stats();
    let findings = checks.finish(end_us, &client);
    Ok(RunOutput {
        findings,
        lanes: lanes.finish(end_us),
        timeline: Some(TimelineFile(file)),
        end_us,
        client,
        messages: 0,
        backend_requests: 0,
        backend_requests_by_100ms: vec![],
    })
}

/// What only a real trial reports: its number, the command that runs it again, the
/// ledger's SQL check and the notes.
fn trial_report(spec: &TrialSpec, output: &StoppedRun, notes: Vec<String>) -> TrialReport {
    let l = &output.ledger;
    TrialReport {
        trial: spec.trial,
        command: spec.command.clone(),
        backend: crate::backend::against(spec.plan.resolved.scenario.protocol),
        node_cmd: spec.node_cmd.as_ref().map(|c| c.template.clone()),
        ledger: LedgerCheck {
            non_increasing_steps: l.non_increasing_steps,
            seq_batches: l.seq_batches,
            ticks: l.ticks,
            rejections: l.rejections,
            max_token: l.max_token,
            last_seq: l.last_seq,
        },
        notes,
    }
}

fn cfg_latency(spec: &TrialSpec) -> (u64, u64) {
    let n = &spec.plan.resolved.scenario.network;
    (n.latency_ms_min, n.latency_ms_max)
}
