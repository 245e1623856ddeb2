//! The `conform` command: the spec's experiments against a node of your own
//! (`--node-cmd`), a few live trials each, and a conformance report.
//!
//! The experiments are [`EXPERIMENTS`]: five scenarios of `scenarios/conform/` (built
//! into the binary, so the report's reproduce commands name files of the source tree),
//! each run as written and with fencing off (`--set fencing=false`), then the TTL sweep
//! ([`sweep`], one trial per TTL, its section of the report in `sweep_report`). Trial k of every
//! experiment uses seed S + k - 1. Every trial is a real-mode trial with `--node-cmd`
//! ([`crate::trial`]): the same checkers, the same report; the conformance report
//! ([`crate::contract::conform::report`]) puts them side by side and names, for each experiment
//! that failed, the property and the command that reproduces the trial.
//!
//! `DIR/<experiment>/trial-<k>/` holds each trial's report (`summary.txt`,
//! `report.json`, `scenario.toml`). Its timeline page and plot (`timeline.html`,
//! `leaders_acting.svg`) are kept for the first trial of each experiment and for every
//! trial that failed; its raw timeline (`timeline.jsonl`) and `run/` (the processes'
//! logs and stdout, the ledger, etcd's logs) for the failed ones only (see `prune`):
//! thirty trials' worth would be tens of megabytes. A step-down experiment whose nodes do not serve the
//! optional `POST /resign` (the preflight asks) is not applicable, whatever its trials
//! found.
//!
//! The scenarios carry the spec's numbers ([`EXPERIMENTS`] says which); `--quick` (one
//! trial each, churn cut to [`QUICK_CHURN_ROUNDS`]) and `--churn-rounds` shorten a run,
//! and its first line says how long it will take ([`estimate`]). The churn and
//! step-down experiments add the spec's own criteria to the checkers' ([`spec`]).

pub mod estimate;
mod execute;
pub mod findings;
pub mod markdown;
pub mod progress;
pub mod report;
pub mod spec;
pub mod sweep;
pub mod sweep_report;

use crate::contract::backends::ContractBackend;
use crate::contract::conform::spec::SpecCheck;
use crate::contract::node_cmd::NodeCmd;
use crate::trial::command::{check_trial_dir, parse_node_cmd, trial_spec, RealCommandError};
use crate::trial::refusals::Source;
use crate::trial::TrialSpec;
use baton_model::flags::ConformArgs;
use baton_model::render::output_dir;
use baton_model::scenario::{self, Resolved, ScenarioError};
use std::path::{Path, PathBuf};

/// One scenario of the conformance suite.
pub struct Scenario {
    /// Its name (`clean-kill`); the unfenced experiment adds `-unfenced`.
    pub name: &'static str,
    /// Its file in Baton's source tree, as reproduce commands name it.
    pub file: &'static str,
    /// Its text (the same file, built in).
    pub text: &'static str,
    /// What it does, for the report.
    pub does: &'static str,
    /// It asks the leader to step down: not applicable to nodes without `POST /resign`.
    pub needs_resign: bool,
    /// The spec's own criteria judged beyond the trial's checkers, and its figures.
    pub check: SpecCheck,
    /// What its run with fencing off is for.
    pub unfenced: Unfenced,
}

/// What an experiment's run with fencing off (`--set fencing=false`) is expected to show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unfenced {
    /// Nothing changes: no stale leader is left to write (a killed node writes nothing,
    /// a resigning one stops first), so any failure is the node's, as with the fence.
    NoChange,
    /// The bug the fence exists for: a leader cut off or paused past its grant writes
    /// after its successor, and only the fence turns that write away. Damage the fence
    /// stops ([`baton_model::checker::Property::fence_stops`]) is then the reproduction
    /// the spec asks for (experiment 5), not a failure of the node; anything else fails.
    Reproduces,
}

/// The suite, in the order the report lists it.
pub const EXPERIMENTS: &[Scenario] = &[
    Scenario {
        name: "clean-kill",
        file: "scenarios/conform/clean-kill.toml",
        text: include_str!("../../../../scenarios/conform/clean-kill.toml"),
        does: "the leader killed with SIGKILL under load (1,000 next/s), restarted 4-5 s later",
        needs_resign: false,
        check: SpecCheck::None,
        unfenced: Unfenced::NoChange,
    },
    Scenario {
        name: "partition",
        file: "scenarios/conform/partition.toml",
        text: include_str!("../../../../scenarios/conform/partition.toml"),
        does: "the leader's links to its backend (every etcd member, or the one server) cut both ways for 5 s (its resource link up)",
        needs_resign: false,
        check: SpecCheck::None,
        unfenced: Unfenced::Reproduces,
    },
    Scenario {
        name: "gc-pause",
        file: "scenarios/conform/gc-pause.toml",
        text: include_str!("../../../../scenarios/conform/gc-pause.toml"),
        does: "the leader stopped with SIGSTOP for 2.5 s (TTL + 500 ms) as its next protected write left it, then the write let go on and SIGCONT",
        needs_resign: false,
        check: SpecCheck::None,
        unfenced: Unfenced::Reproduces,
    },
    Scenario {
        name: "graceful-stepdown",
        file: "scenarios/conform/graceful-stepdown.toml",
        text: include_str!("../../../../scenarios/conform/graceful-stepdown.toml"),
        does: "the leader asked to step down (POST /resign)",
        needs_resign: true,
        check: SpecCheck::StepDown,
        unfenced: Unfenced::NoChange,
    },
    Scenario {
        name: "churn",
        file: "scenarios/conform/churn.toml",
        text: include_str!("../../../../scenarios/conform/churn.toml"),
        does: "9 nodes, the leader killed every 5 s from 5 s and restarted 2.5 s later",
        needs_resign: false,
        check: SpecCheck::Churn,
        unfenced: Unfenced::NoChange,
    },
];

/// One experiment of a run: a scenario, fenced or not, and its trials' specs.
struct Planned {
    scenario: &'static Scenario,
    fencing: bool,
    /// The lease TTL its scenario asks for, ms.
    ttl_ms: u64,
    specs: Vec<TrialSpec>,
}

impl Planned {
    fn name(&self) -> String {
        experiment_name(self.scenario, self.fencing)
    }

    /// Fencing off, whether it is expected to reproduce the damage the fence stops.
    fn reproduces(&self) -> bool {
        !self.fencing && self.scenario.unfenced == Unfenced::Reproduces
    }
}

fn experiment_name(s: &Scenario, fencing: bool) -> String {
    if fencing {
        s.name.to_string()
    } else {
        format!("{}-unfenced", s.name)
    }
}

/// Every experiment's name, in order.
pub fn experiment_names() -> Vec<String> {
    EXPERIMENTS
        .iter()
        .flat_map(|s| [experiment_name(s, true), experiment_name(s, false)])
        .chain([sweep::NAME.to_string()])
        .collect()
}

fn bad(msg: impl std::fmt::Display) -> RealCommandError {
    RealCommandError::BadInput(msg.to_string())
}

/// An `--only` that picks nothing known.
#[derive(Debug, thiserror::Error)]
enum OnlyError {
    /// A name that is no experiment's.
    #[error("--only: no experiment named {name:?} (allowed: {})", .all.join(", "))]
    Unknown { name: String, all: Vec<String> },
    /// No name at all.
    #[error("--only names no experiment (allowed: {})", .0.join(", "))]
    Empty(Vec<String>),
}

/// The experiments `--only` picks (all without it); `Err` names the unknown one.
fn picked(only: Option<&str>) -> Result<Vec<String>, OnlyError> {
    let all = experiment_names();
    let Some(only) = only else {
        return Ok(all);
    };
    let mut out = vec![];
    for name in only.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if !all.iter().any(|a| a == name) {
            return Err(OnlyError::Unknown {
                name: name.to_string(),
                all,
            });
        }
        out.push(name.to_string());
    }
    if out.is_empty() {
        return Err(OnlyError::Empty(all));
    }
    Ok(out)
}

/// The scenario of `s`, fenced or not, on backend `b`, as real mode loads it.
///
/// The scenarios are written for etcd (`protocol = "etcd-lease"`, a 2 s lease). Their
/// faults name no etcd member (a partition is from `backend`, which real mode reads as
/// every etcd member or the one server), so each runs on any backend of the contract
/// once `--set` moves it onto that backend's protocol with the same TTL: these sets are
/// in the scenario's resolved overrides, hence in every reproduce command. On etcd
/// nothing is set, so its reports stay as they were.
///
/// `churn_rounds` shortens or lengthens the churn experiment (see [`churn_sets`]).
fn load(
    s: &Scenario,
    fencing: bool,
    b: ContractBackend,
    churn_rounds: Option<u64>,
) -> Result<Resolved, ScenarioError> {
    let stem = Path::new(s.file)
        .file_stem()
        .map(|x| x.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut sets: Vec<String> = vec![];
    let etcd = scenario::load_str(s.file, &stem, s.text, &[])?;
    if b != ContractBackend::Etcd {
        sets = backend_sets(b, written_ttl_ms(s, &etcd));
    }
    if let (SpecCheck::Churn, Some(rounds)) = (s.check, churn_rounds) {
        sets.extend(churn_sets(&etcd, rounds));
    }
    if !fencing {
        sets.push("fencing=false".into());
    }
    scenario::load_str(s.file, &stem, s.text, &sets)
}

/// The lease TTL scenario `s` (loaded as written: `etcd`) asks for, ms: every file of
/// the suite is written for etcd-lease, and moved onto the other backends with it.
fn written_ttl_ms(s: &Scenario, etcd: &Resolved) -> u64 {
    match etcd.scenario.protocol_config() {
        baton_model::protocol::ProtocolConfig::EtcdLease(c) => c.lease_ttl_ms,
        other => panic!(
            "{} is written for etcd-lease, not {}",
            s.file,
            other.name().name()
        ),
    }
}

/// The length of one churn round: scenarios/conform/churn.toml kills the leader every
/// 5 s (its `every_ms`; a unit test holds the two together).
const CHURN_ROUND_MS: u64 = 5000;

/// The churn rounds of `--quick`: three handovers under the 9-node storm in 25 s of
/// scenario, enough to see each keep one leader and to time its election, though not
/// to judge starvation (a node is starved only after 10 elections without a win).
const QUICK_CHURN_ROUNDS: u64 = 3;

/// The `--set`s that give churn.toml (`base`, as written) `rounds` rounds: both faults
/// (the kill, then the restart) fire `rounds` times and the run is shorter or longer by
/// a round's length per round, so the settling time after the last round stays as
/// written. None when `rounds` is the file's own, so that a default run's reproduce
/// commands name the file alone.
fn churn_sets(base: &Resolved, rounds: u64) -> Vec<String> {
    let written = base
        .faults
        .iter()
        .filter(|f| matches!(f.fault, baton_model::fault::Fault::Kill { .. }))
        .count() as u64;
    if rounds == written {
        return vec![];
    }
    let duration_ms =
        base.scenario.duration_ms + rounds * CHURN_ROUND_MS - written * CHURN_ROUND_MS;
    vec![
        format!("duration_ms={duration_ms}"),
        format!("faults.0.count={rounds}"),
        format!("faults.1.count={rounds}"),
    ]
}

/// The `--set`s that move a scenario written for etcd onto backend `b`'s protocol with
/// lease TTL `ttl_ms`.
fn backend_sets(b: ContractBackend, ttl_ms: u64) -> Vec<String> {
    let protocol = b.protocol().name();
    let mut sets = vec![format!("protocol={protocol}")];
    sets.extend(match b {
        ContractBackend::Etcd => vec![format!("etcd-lease.lease_ttl_ms={ttl_ms}")],
        ContractBackend::Redis => vec![format!("redis-fenced.lock_ttl_ms={ttl_ms}")],
        // ZooKeeper negotiates a session timeout of 2 to 20 ticks (the default 2 s tick
        // would raise 2 s to 4 s), and expires a session at the first tick after its
        // timeout: the grant lasts up to a tick longer than asked. A tick of a tenth of
        // the TTL grants the TTL and keeps that overshoot (200 ms at 2 s) inside the
        // spec's pause of TTL + 500 ms; at half the TTL a session could outlive the pause.
        ContractBackend::Zookeeper => vec![
            format!("zk-sequential.session_timeout_ms={ttl_ms}"),
            format!("zk-sequential.tick_time_ms={}", (ttl_ms / 10).max(1)),
        ],
        // db-row's candidates retry every 2 s by default, which would add up to a whole
        // TTL to a 2 s lease's failover; a fifth of the TTL is what the contract node
        // uses (see `crate::contract::baton_node`), so a reproduce without --node-cmd
        // runs Baton's own node as conformance ran it.
        ContractBackend::Postgres => vec![
            format!("db-row.lease_ttl_ms={ttl_ms}"),
            format!("db-row.poll_interval_ms={}", ttl_ms / 5),
        ],
        // No lease: the TTL is raft's election timeout max, its other timers scaled as
        // every sweep scales them (election timeout min T/2, heartbeat T/20, leader
        // lease T/3; see `baton_model::protocol::ttl`).
        ContractBackend::None => baton_model::protocol::ttl::settings(b.protocol(), ttl_ms),
    });
    sets
}

/// Everything decided before anything starts.
struct Prepared {
    dir: PathBuf,
    backend: ContractBackend,
    node_cmd: NodeCmd,
    experiments: Vec<Planned>,
    trials: u64,
    /// Trials run at once (`--jobs`).
    jobs: u64,
    /// The TTL sweep, when asked ([`sweep`]).
    sweep: Option<sweep::SweepPlan>,
    /// The run's estimated wall time ([`estimate`]), trials `jobs` at a time.
    estimate_ms: u64,
    /// The same, one trial at a time: the sum of the trials' estimates.
    estimate_serial_ms: u64,
}

fn prepare(args: &ConformArgs) -> Result<Prepared, RealCommandError> {
    let node_cmd = parse_node_cmd(Some(&args.node_cmd))
        .map_err(bad)?
        .expect("given");
    let backend = ContractBackend::parse(&args.backend).ok_or_else(|| {
        bad(format!(
            "--backend {:?}: not a backend of the node contract (allowed: {})",
            args.backend,
            ContractBackend::allowed()
        ))
    })?;
    let names = picked(args.only.as_deref()).map_err(bad)?;
    let first_seed = args.seed;
    let trials = args.trials();
    if first_seed > baton_model::seed::MAX - (trials - 1) {
        return Err(bad(format!(
            "--seed {first_seed} with --trials {trials}: the last trial's seed would pass {}",
            baton_model::seed::MAX
        )));
    }
    let jobs = args.jobs();
    let churn_rounds = args
        .churn_rounds
        .or(args.quick.then_some(QUICK_CHURN_ROUNDS));
    let mut durations_ms = vec![];
    let dir = args
        .out
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("reports/conformance-latest"));
    output_dir::check_writable(&dir, args.out.force).map_err(bad)?;
    let mut experiments = vec![];
    for s in EXPERIMENTS {
        for fencing in [true, false] {
            if !names.contains(&experiment_name(s, fencing)) {
                continue;
            }
            let base = load(s, fencing, backend, churn_rounds).map_err(bad)?;
            let written = load(s, true, ContractBackend::Etcd, None).map_err(bad)?;
            let mut p = Planned {
                scenario: s,
                fencing,
                ttl_ms: written_ttl_ms(s, &written),
                specs: vec![],
            };
            for k in 1..=trials {
                durations_ms.push(base.scenario.duration_ms);
                let seed = first_seed + (k - 1);
                let src = Source {
                    text: s.text,
                    overrides: &base.overrides,
                    base: &base,
                    swarm_seed: None,
                };
                let tdir = dir.join(p.name()).join(format!("trial-{k}"));
                check_trial_dir(&tdir, args.out.force).map_err(bad)?;
                let spec = trial_spec((&base, &src), (k as usize, seed), &tdir, Some(&node_cmd))
                    .map_err(bad)?;
                p.specs.push(spec);
            }
            experiments.push(p);
        }
    }
    let swept = sweep::plan(args, (backend, &node_cmd, &dir), &names, &mut durations_ms)?;
    let sweep = swept.map(|(e, s)| {
        experiments.push(e);
        s
    });
    Ok(Prepared {
        dir,
        backend,
        node_cmd,
        experiments,
        trials,
        jobs,
        estimate_ms: estimate::with_jobs(&durations_ms, backend, jobs),
        estimate_serial_ms: estimate::total_ms(&durations_ms, backend),
        sweep,
    })
}

/// Runs the `conform` command: `Ok(true)` when no experiment failed (see [`execute`]).
pub async fn run(args: ConformArgs) -> Result<bool, RealCommandError> {
    execute::run(args).await
}

#[cfg(test)]
mod tests {
    //! Methodology: the suite is planned from real command lines (parsed by clap as the
    //! CLI parses them, into a temporary --out) without running anything; the plan's
    //! scenarios carry the spec's numbers, the shortening flags shorten what they say,
    //! and `--help` states the estimate the plan computes.
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ConformArgs,
    }

    fn plan(extra: &[&str]) -> Prepared {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("conf");
        let mut words = vec!["conform", "--node-cmd", "true", "--out"];
        words.push(out.to_str().unwrap());
        words.extend(extra);
        prepare(&Cli::parse_from(words).args).unwrap()
    }

    fn experiment<'a>(p: &'a Prepared, name: &str) -> &'a Planned {
        p.experiments.iter().find(|e| e.name() == name).unwrap()
    }

    #[test]
    fn the_defaults_are_the_spec_s_numbers() {
        let p = plan(&[]);
        assert_eq!(p.trials, 3);
        assert_eq!(p.experiments.len(), 11);
        let gc = &experiment(&p, "gc-pause").specs[0].plan.resolved.scenario;
        let ttl_ms = match gc.protocol_config() {
            baton_model::protocol::ProtocolConfig::EtcdLease(c) => c.lease_ttl_ms,
            other => panic!("{}", other.name().name()),
        };
        assert_eq!(gc.faults[0].duration_ms, Some(ttl_ms + 500));
        let churn = &experiment(&p, "churn").specs[0].plan.resolved;
        assert_eq!(churn.scenario.nodes, 9);
        let kills: Vec<_> = churn
            .scenario
            .faults
            .iter()
            .filter(|f| f.kind == baton_model::fault::FaultKind::Kill)
            .collect();
        // The spec's 10 minutes of churn.
        assert_eq!(kills.len(), 120);
        // One round is CHURN_ROUND_MS, as the shortening assumes.
        assert_eq!(
            kills[1].at_ms.unwrap() - kills[0].at_ms.unwrap(),
            CHURN_ROUND_MS
        );
        assert!(churn.overrides.is_empty(), "{:?}", churn.overrides);
    }

    #[test]
    fn quick_and_churn_rounds_shorten_the_run() {
        let quick = plan(&["--quick"]);
        assert_eq!(quick.trials, 1);
        let churn = &experiment(&quick, "churn-unfenced").specs[0].plan.resolved;
        assert_eq!(churn.scenario.duration_ms, 25_000);
        assert_eq!(
            churn.overrides,
            [
                "duration_ms=25000",
                "faults.0.count=3",
                "faults.1.count=3",
                "fencing=false"
            ]
        );
        let longer = plan(&["--quick", "--trials", "2", "--churn-rounds", "30"]);
        assert_eq!(longer.trials, 2);
        let churn = &experiment(&longer, "churn").specs[1].plan.resolved.scenario;
        assert_eq!(churn.duration_ms, 160_000);
        assert!(quick.estimate_ms < 5 * 60_000, "{}", quick.estimate_ms);
    }

    #[test]
    fn help_states_the_estimates_the_plan_computes() {
        let help = Cli::command()
            .get_arguments()
            .find(|a| a.get_id() == "quick")
            .and_then(|a| a.get_long_help().or(a.get_help()))
            .unwrap()
            .to_string()
            .replace('\n', " ");
        let quick = estimate::say(plan(&["--quick", "--jobs", "1"]).estimate_ms);
        let full = estimate::say(plan(&["--jobs", "1"]).estimate_ms);
        assert!(
            help.contains(&format!("({quick} on etcd")),
            "{help}: {quick}"
        );
        assert!(
            help.contains(&format!("the defaults take {full} so")),
            "{help}: {full}"
        );
    }
}
