//! Command-line flags that several commands take, declared once and flattened into each
//! (clap's `#[command(flatten)]`), shared by `sim` and `baton-real` so that a flag means
//! the same and reads the same everywhere.
//!
//! Each command's own description says its defaults where they differ between commands
//! (where output goes, which seeds run).

use clap::Args;
use std::ops::Range;
use std::path::PathBuf;

/// `--set KEY=VALUE`, repeatable.
#[derive(Clone, Debug, Default, Args)]
pub struct SetFlags {
    /// Override a scenario value by its dotted path, e.g. `etcd-lease.lease_ttl_ms=1000`,
    /// `fencing=false`, `faults.0.duration_ms=5000`. Repeatable. A run with overrides
    /// writes to its own default directory (`reports/<scenario>+<overrides>/...`), so it
    /// never replaces the plain run's output.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// `--seed N`.
#[derive(Clone, Debug, Default, Args)]
pub struct SeedFlag {
    /// The root seed (default: the file's `seed` key, which a report's resolved
    /// scenario.toml records, or else 0). From 0 to 9223372036854775807.
    // A negative value reaches the parser, whose message gives the range, rather than
    // clap's tip to write `-- -1` (every seed flag does the same).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::seed::parse)]
    pub seed: Option<u64>,
}

/// A scenario file with its seed and overrides.
#[derive(Clone, Debug, Args)]
pub struct ScenarioArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub seed: SeedFlag,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub set: SetFlags,
}

/// `--seeds A..B`.
#[derive(Clone, Debug, Default, Args)]
pub struct SeedsFlag {
    /// Seeds to run, as A..B (B excluded); the command's description gives its default.
    #[arg(long, value_name = "A..B", allow_hyphen_values = true, value_parser = crate::seed::parse_range)]
    pub seeds: Option<Range<u64>>,
}

impl SeedsFlag {
    /// The seeds given, or `default`.
    pub fn or(&self, default: Range<u64>) -> Range<u64> {
        self.seeds.clone().unwrap_or(default)
    }
}

/// `--jobs N`.
#[derive(Clone, Debug, Args)]
pub struct JobsFlag {
    /// Runs in parallel, each on its own thread and runtime (results do not depend on it).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=256))]
    pub jobs: u64,
}

/// `--out DIR` and `--force`.
#[derive(Clone, Debug, Default, Args)]
pub struct OutFlags {
    /// Write here instead of the command's default directory (its description says
    /// which).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Write into a directory that holds files Baton did not write (they are left alone:
    /// only Baton's own file names are written), or replace a committed report.
    #[arg(long)]
    pub force: bool,
}

/// `--quiet`.
#[derive(Clone, Debug, Default, Args)]
pub struct QuietFlag {
    /// Print less: the verdict or the output's place, no summary and no progress.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `--protocols all|a,b,...`.
#[derive(Clone, Debug, Default, Args)]
pub struct ProtocolsFlag {
    /// `all`, or protocol names separated by commas; the command's description gives its
    /// default.
    #[arg(long, value_name = "all|a,b,...")]
    pub protocols: Option<String>,
}

/// The arguments of a real-mode run (`sim real`, `baton-real real`): declared here so
/// that `sim real --help` answers without building the real-mode binary, and `sim real`
/// checks them before it builds.
#[derive(Clone, Debug, Args)]
pub struct RealArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub scenario: ScenarioArgs,
    /// How many trials, one after another; trial k uses seed S + k - 1.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub trials: u64,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub node: NodeCmdFlag,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub out: OutFlags,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub quiet: QuietFlag,
}

/// `--node-cmd TEMPLATE`.
#[derive(Clone, Debug, Default, Args)]
pub struct NodeCmdFlag {
    /// Run this command as each node instead of Baton's own (the node contract,
    /// docs/src/node-contract.md), on the backend of the scenario's protocol: etcd
    /// (etcd-lease), Redis (redis-fenced), ZooKeeper (zk-sequential) or PostgreSQL
    /// (db-row). Placeholders such as {id}, {http_port}, {backend}, {etcd_endpoints},
    /// {election_prefix}, {lease_ttl_ms} and {resource_url} are filled in per node; the
    /// same values are in BATON_* environment variables. Example:
    /// --node-cmd 'examples/go-node/bin/go-node --id {id} --http-port {http_port}
    /// --etcd-endpoints {etcd_endpoints} --resource-url {resource_url}'
    #[arg(long = "node-cmd", value_name = "TEMPLATE")]
    pub node_cmd: Option<String>,
}

impl RealArgs {
    /// The arguments again, as words for `baton-real real`.
    pub fn to_words(&self) -> Vec<String> {
        let mut w = vec![self.scenario.scenario.display().to_string()];
        w.extend(["--trials".into(), self.trials.to_string()]);
        if let Some(seed) = self.scenario.seed.seed {
            w.extend(["--seed".into(), seed.to_string()]);
        }
        for s in &self.scenario.set.set {
            w.extend(["--set".into(), s.clone()]);
        }
        if let Some(cmd) = &self.node.node_cmd {
            w.extend(["--node-cmd".into(), cmd.clone()]);
        }
        push_out_quiet(&mut w, &self.out, &self.quiet);
        w
    }
}

fn push_out_quiet(w: &mut Vec<String>, out: &OutFlags, quiet: &QuietFlag) {
    if let Some(dir) = &out.out {
        w.extend(["--out".into(), dir.display().to_string()]);
    }
    if out.force {
        w.push("--force".into());
    }
    if quiet.quiet {
        w.push("--quiet".into());
    }
}

/// The arguments of `sim conform` / `baton-real conform`: the spec's experiments against
/// a node of your own.
#[derive(Clone, Debug, Args)]
pub struct ConformArgs {
    /// The node to test: a command template, as `sim real --node-cmd` takes it (see
    /// docs/src/node-contract.md).
    #[arg(long = "node-cmd", value_name = "TEMPLATE", required = true)]
    pub node_cmd: String,
    /// The backend the nodes elect on (node contract v2): etcd (a live 3-member
    /// cluster), redis, zookeeper or postgres (one live server each), or none (the nodes
    /// elect among themselves, talking through Baton's proxies: judged as raft).
    #[arg(
        long,
        default_value = "etcd",
        value_name = "etcd|redis|zookeeper|postgres|none"
    )]
    pub backend: String,
    /// Trials per experiment, one after another; trial k uses seed S + k - 1 (default
    /// 3, or 1 with --quick).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub trials: Option<u64>,
    /// A short run: 1 trial per experiment, churn cut to 3 rounds, and the TTL sweep at
    /// 1, 3 and 10 s with 10 s of noise (about 5 minutes on etcd for Baton's own node
    /// one trial at a time, --jobs 1; the defaults take about 76 minutes so). --trials,
    /// --churn-rounds, --sweep-ttls and --sweep-secs still apply on top. The first line
    /// printed gives the estimate for the run asked, at its --jobs.
    #[arg(long)]
    pub quick: bool,
    /// The churn experiment's rounds: the leader is killed every 5 s and restarted
    /// 2.5 s later, N times (default: the 120 of scenarios/conform/churn.toml, the
    /// spec's 10 minutes, or 3 with --quick).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=200))]
    pub churn_rounds: Option<u64>,
    /// Trials run at once, each with its own backend, ports and directories: trials
    /// start in the suite's order, the next when one ends (default: two per core, at
    /// most 4; a trial mostly waits on its scenario's clock: --quick with 4 at once used
    /// 0.7 of a core on etcd). 1 runs the suite one trial after another.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=16))]
    pub jobs: Option<u64>,
    /// Run only these experiments (names separated by commas, as conformance.md lists
    /// them: clean-kill, clean-kill-unfenced, partition, ..., ttl-sweep); default: all
    /// eleven.
    #[arg(long, value_name = "a,b,...")]
    pub only: Option<String>,
    /// The first trial's seed: trial k of every experiment uses seed S + k - 1.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = crate::seed::parse)]
    pub seed: u64,
    /// The TTL sweep's TTLs in seconds, one live trial each (default 1,3,10,30, or 1,3,10
    /// with --quick). A TTL the backend raises (etcd grants at least 2 s) is reported as
    /// granted.
    #[arg(long, value_name = "S,S,...", value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=300))]
    pub sweep_ttls: Option<Vec<u64>>,
    /// The TTL sweep's GC noise before each TTL's kill, in seconds (default 90, or 10 with
    /// --quick); each trial runs this plus 1.5 TTL + 5 s for the failover.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(5..=3600))]
    pub sweep_secs: Option<u64>,
    /// The availability objective the TTL sweep names its knee for, in percent (the
    /// leader's process dying once a day, over 30 days).
    #[arg(long, value_name = "PCT", default_value_t = 99.95)]
    pub slo: f64,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub out: OutFlags,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub quiet: QuietFlag,
}

impl ConformArgs {
    /// Trials per experiment: `--trials`, else 1 with `--quick`, else 3.
    pub fn trials(&self) -> u64 {
        self.trials.unwrap_or(if self.quick { 1 } else { 3 })
    }

    /// Trials at once: `--jobs`, else two per core, at most 4.
    pub fn jobs(&self) -> u64 {
        self.jobs.unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
            (2 * cores).min(4)
        })
    }

    /// The arguments again, as words for `baton-real conform`.
    pub fn to_words(&self) -> Vec<String> {
        let mut w = vec![
            "--node-cmd".to_string(),
            self.node_cmd.clone(),
            "--backend".into(),
            self.backend.clone(),
        ];
        if let Some(trials) = self.trials {
            w.extend(["--trials".into(), trials.to_string()]);
        }
        if self.quick {
            w.push("--quick".into());
        }
        if let Some(rounds) = self.churn_rounds {
            w.extend(["--churn-rounds".into(), rounds.to_string()]);
        }
        if let Some(jobs) = self.jobs {
            w.extend(["--jobs".into(), jobs.to_string()]);
        }
        if let Some(only) = &self.only {
            w.extend(["--only".into(), only.clone()]);
        }
        if self.seed != 0 {
            w.extend(["--seed".into(), self.seed.to_string()]);
        }
        if let Some(ttls) = &self.sweep_ttls {
            let list: Vec<String> = ttls.iter().map(u64::to_string).collect();
            w.extend(["--sweep-ttls".into(), list.join(",")]);
        }
        if let Some(secs) = self.sweep_secs {
            w.extend(["--sweep-secs".into(), secs.to_string()]);
        }
        if self.slo != 99.95 {
            w.extend(["--slo".into(), self.slo.to_string()]);
        }
        push_out_quiet(&mut w, &self.out, &self.quiet);
        w
    }
}

/// The exit codes of a command, for the end of its `--help`: one table per command, each
/// listing only the codes that command can exit with.
pub mod exit_codes {
    /// `sim run`.
    pub const RUN: &str = "\
Exit codes:
  0  pass: every checked property held
  1  fail: a checked property failed (the summary ends with the command that reproduces it)
  2  bad input, found before anything runs: the scenario file, a --set, an argument or the
     output directory; one line names file:line (or the --set), the key and what is
     allowed, and nothing is written
  3  internal error: the simulator itself failed, or a run stalled";

    /// `sim check-determinism`.
    pub const CHECK_DETERMINISM: &str = "\
Exit codes:
  0  the two runs gave byte-identical artefacts
  1  they differed (the lines above name the artefacts)
  2  bad input, found before anything runs
  3  internal error: the simulator itself failed, or a run stalled";

    /// `sim matrix`.
    pub const MATRIX: &str = "\
Exit codes:
  0  the matrix was written (failing cells are data here, not an error)
  2  bad input, found before anything runs (a scenario, --protocols, --set, the output
     directory)
  3  internal error: the simulator itself failed
130  interrupted (Ctrl-C): the runs that finished were written, marked as interrupted";

    /// `sim sweep`.
    pub const SWEEP: &str = "\
Exit codes:
  0  the sweep was written (failing seeds are data here, not an error)
  2  bad input, found before anything runs (the scenario, --grid, --protocols, --set,
     the output directory)
  3  internal error: the simulator itself failed, or a plot could not be drawn
130  interrupted (Ctrl-C): the runs that finished were written, marked as interrupted";

    /// `sim search`.
    pub const SEARCH: &str = "\
Exit codes:
  0  no seed failed
  1  at least one seed failed (failures.jsonl and a reproducer per signature written;
     with --budget: the store holds a failure, found by this run or an earlier one)
  2  bad input, found before anything runs (with --budget: a budget without a unit, a
     --store that is not a store of this search; the store is left as it was)
  3  internal error: the simulator itself failed
130  interrupted (Ctrl-C): the seeds that finished were written, marked as interrupted
     (with --budget: recorded in the store, which the same command resumes)";

    /// `sim shrink`.
    pub const SHRINK: &str = "\
Exit codes:
  0  the minimal scenario was written, or the run passes and there is nothing to shrink
     (nothing written)
  2  bad input, found before anything runs (the scenario, the seed, --out exists)
  3  internal error: the simulator failed, or the result did not replay";

    /// `sim bisect`.
    pub const BISECT: &str = "\
Exit codes:
  0  it named the first bad commit
  2  bad input: a REV that does not exist, --good not an ancestor of --bad, or ends that do
     not pass (--good) and fail (--bad)
  3  it could not decide: only commits that do not build or run were left

Under `git bisect run`, `sim run` exits 0 for a good commit and 1 for a bad one; `sim
bisect` maps a commit that does not build, or exits 2 or 3, to 125 (skip).";

    /// `sim real` and `baton-real real`.
    pub const REAL: &str = "\
Exit codes:
  0  every trial passed
  1  a trial failed a checked property (with --node-cmd: or a node broke the node
     contract during it)
  2  bad input (the scenario, a --set, a fault real mode cannot apply, --node-cmd, the
     output directory), or a machine without what real mode needs (etcd, protoc and its
     includes), or a world that could not start (with --node-cmd: a node that broke the
     node contract before the faults began): one line on stderr, before anything runs
  3  a trial started and then broke: stderr names its logs (sim real: or the real-mode
     binary did not build; the error shows cargo's last lines)
130  interrupted (Ctrl-C): every process stopped, the finished trials written";

    /// `sim conform`.
    pub const CONFORM: &str = "\
Exit codes:
  0  every experiment passed (one the node cannot take part in, a step-down without the
     optional POST /resign, is listed as not applicable)
  1  an experiment failed a checked property, or a node broke the node contract during
     it: conformance.md's verdict table names the property and the command that
     reproduces it
  2  bad input (--node-cmd, --backend, --only, the output directory), a machine without
     what real mode needs, or a node that broke the node contract before the first
     experiment (it never listened, answered the wrong JSON, answered POST /next as a
     follower, never elected a leader...): one line on stderr naming the rule
  3  a trial started and then broke: stderr names its logs
130  interrupted (Ctrl-C): every process stopped, the finished experiments written";

    /// `sim compare`.
    pub const COMPARE: &str = "\
Exit codes:
  0  within the targets: the simulated failover median within 10% of the live one, its
     5th and 95th percentiles within 15%, the election latency median within 20%, and
     the lease overrun median within 10% where the live trials measured it
  1  off a target (compare.md marks the figure)
  2  bad input, found before anything runs, or real mode could not start; with
     --conform-dir: a directory that is not a `sim conform` run, an --experiment it did
     not run, one whose trials ran different scenarios (a sweep), or one whose live
     trials saw no failover
  3  internal error: the simulator failed, or a live trial broke
130  interrupted (Ctrl-C) during the live trials";

    /// `sim bench`.
    pub const BENCH: &str = "\
Exit codes:
  0  the tables were printed (a missed speed target is a figure, not an error)
  2  bad input: an unknown workload in --only
  3  internal error: a workload failed";

    /// `sim stats`.
    pub const STATS: &str = "\
Exit codes:
  0  one line printed per --get
  2  bad input: a report that cannot be read, a --get that is malformed or whose key no
     report holds (the error lists the keys they do hold)";
}
