//! Scenario files: one experiment each, in TOML.
//!
//! Loading goes file -> `--set` overrides -> typed [`Scenario`] -> semantic checks ->
//! [`Resolved`] (every default filled in, faults typed). Every failure is a
//! [`ScenarioError`] naming the file, line, key and what is allowed; nothing panics.

use crate::fault::{Fault, FaultSpec, Firing, When};
use crate::protocol::{self, ProtocolModel, ProtocolName};
use baton_protocols::bully::BullyConfig;
use baton_protocols::consul_session::ConsulSessionConfig;
use baton_protocols::db_row::DbRowConfig;
use baton_protocols::etcd_lease::EtcdLeaseConfig;
use baton_protocols::k8s_lease::K8sLeaseConfig;
use baton_protocols::raft_config::RaftConfig;
use baton_protocols::redis_lock::RedisLockConfig;
use baton_protocols::ring::RingConfig;
use baton_protocols::zk_sequential::ZkSequentialConfig;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// The simulated network between every pair of processes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkConfig {
    /// Lowest one-way latency of a message.
    pub latency_ms_min: u64,
    /// Highest one-way latency of a message.
    pub latency_ms_max: u64,
    /// Packet loss in parts per million.
    pub loss_ppm: u64,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            latency_ms_min: 1,
            latency_ms_max: 5,
            loss_ppm: 0,
        }
    }
}

/// The singleton work the leader does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkConfig {
    /// The scheduler writes a tick record this often.
    pub tick_interval_ms: u64,
    /// The client sends this many `next` requests per second (0: no sequencer load).
    pub rate_per_s: u64,
    /// The client sends this many reads of the last number per second to whom it
    /// believes leads (0: none). Only protocols with a replicated log answer them (raft
    /// with `sequencer = "log"`): the leader serves them from its lease.
    pub read_rate_per_s: u64,
    /// The client gives up on a `next` after this long and tries another node.
    pub client_timeout_ms: u64,
    /// The client sends the requests that arrived in each quantum of this length as one
    /// message (each request keeps its own number and outcome), so that the load costs
    /// the simulation per quantum, not per request.
    pub client_quantum_ms: u64,
    /// Timeout of a node's calls to the fenced resource.
    pub resource_timeout_ms: u64,
    /// A long-running job the leader also owns (`[work.job]`; none when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<JobConfig>,
}

/// A job whose steps take time: the spec's compaction cursor over a large store. The
/// leader compacts one segment per step, checkpoints the cursor as a fenced write after
/// each, and a new leader resumes from the last checkpoint. A leader that stops leading
/// abandons its step before it releases leadership.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JobConfig {
    /// The shortest step (each step's length is drawn uniformly from min to max from
    /// `seed::fork(seed, "job/<node>/<token>")`).
    pub step_ms_min: u64,
    /// The longest step.
    pub step_ms_max: u64,
    /// A deliberately broken node (`none` for the real discipline).
    pub canary: JobCanary,
}

impl Default for JobConfig {
    fn default() -> Self {
        JobConfig {
            step_ms_min: 200,
            step_ms_max: 2000,
            canary: JobCanary::None,
        }
    }
}

/// Deliberately broken job disciplines, for the checkers' canaries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobCanary {
    /// The real discipline: stop the step, then release.
    #[default]
    None,
    /// On a step-down, release leadership first and finish the step after.
    ReleaseBeforeStop,
}

impl Default for WorkConfig {
    fn default() -> Self {
        WorkConfig {
            tick_interval_ms: 1000,
            rate_per_s: 1000,
            read_rate_per_s: 0,
            client_timeout_ms: 500,
            client_quantum_ms: 1,
            resource_timeout_ms: 500,
            job: None,
        }
    }
}

/// Background noise: what happens to every fleet all the time, drawn from the seed for
/// the whole run, as opposed to the scripted `[[faults]]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Noise {
    /// Stop-the-world GC pauses on running nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gc: Option<GcNoise>,
}

impl Noise {
    /// No noise at all (the table is left out of a resolved scenario).
    pub fn is_empty(&self) -> bool {
        self.gc.is_none()
    }
}

/// GC pauses as background noise. On each node it covers, pauses come one after
/// another: the time from the end of one to the start of the next is exponential with
/// mean `mean_interval_ms`, and a pause's length is log-normal with median
/// `pause_p50_ms` and 99th percentile `pause_p99_ms`, capped at `pause_max_ms`. Draws
/// come from `seed::fork(seed, "noise/gc/<node>")`. A node that is down when a pause is
/// due skips it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GcNoise {
    /// Mean time between pauses on one node.
    pub mean_interval_ms: u64,
    /// Median pause length.
    pub pause_p50_ms: u64,
    /// 99th-percentile pause length.
    pub pause_p99_ms: u64,
    /// The longest pause drawn (longer draws are cut to it).
    pub pause_max_ms: u64,
    /// The nodes it hits (empty: every node).
    pub nodes: Vec<String>,
}

impl Default for GcNoise {
    fn default() -> Self {
        // A JVM-like service under load: a young-generation pause of tens of ms every
        // few seconds, with a long tail (full GCs) reaching a second.
        GcNoise {
            mean_interval_ms: 5_000,
            pause_p50_ms: 50,
            pause_p99_ms: 1_000,
            pause_max_ms: 10_000,
            nodes: vec![],
        }
    }
}

/// The availability objective a TTL sweep's findings are judged against (`[slo]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Slo {
    /// The share of time the singleton work must be done, in percent (99.95).
    pub availability_pct: f64,
    /// The window the objective is measured over.
    pub window_days: u64,
    /// How often the leader's process dies for real (crash, deploy, node loss), per day.
    pub leader_deaths_per_day: f64,
}

impl Default for Slo {
    fn default() -> Self {
        Slo {
            availability_pct: 99.95,
            window_days: 30,
            leader_deaths_per_day: 1.0,
        }
    }
}

impl Slo {
    /// The error budget: seconds of darkness allowed per hour.
    pub fn budget_s_per_hour(&self) -> f64 {
        (100.0 - self.availability_pct) / 100.0 * 3600.0
    }
}

/// A property that must hold at least once in a run, proving the run reached the trap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sometimes {
    /// The fenced resource rejected a write with a stale token (or, for a protocol with
    /// a replicated log, the log refused a deposed leader's batch).
    StaleWriteRejected,
    /// Leadership passed from one token to another.
    LeaderChanged,
    /// Two nodes believed they led at the same time.
    BeliefOverlap,
    /// A leader stopped acting because it resigned.
    LeaderResigned,
    /// A leader stopped acting because its own lease deadline passed.
    DeadlineStop,
}

impl Sometimes {
    /// The name used in files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Sometimes::StaleWriteRejected => "stale-write-rejected",
            Sometimes::LeaderChanged => "leader-changed",
            Sometimes::BeliefOverlap => "belief-overlap",
            Sometimes::LeaderResigned => "leader-resigned",
            Sometimes::DeadlineStop => "deadline-stop",
        }
    }
}

/// What a run must show besides the always-on safety properties.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Expect {
    /// Each of these must happen at least once.
    pub sometimes: Vec<Sometimes>,
    /// After the last fault ends, an accepted leader write must come within this bound.
    /// Default: 2 x lease TTL + the service's expiry check interval + 1 s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub liveness_bound_ms: Option<u64>,
    /// Every failover must be at most this long (unset: reported, not checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failover_ms_max: Option<u64>,
}

/// A scenario file as written (with defaults for what it leaves out).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Scenario {
    /// The scenario's name (default: the file name without `.toml`).
    pub name: String,
    /// The seed `sim run` uses when no `--seed` is given. A report's resolved
    /// `scenario.toml` records its run's seed here, so that running the file repeats the
    /// run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The protocol under test.
    pub protocol: ProtocolName,
    /// Simulated run length.
    pub duration_ms: u64,
    /// Fleet size; nodes are named `n1`, `n2`, ...
    pub nodes: u32,
    /// Each node boots (on first start and on every restart) after a seeded delay drawn
    /// uniformly from 0 to this many ms, so that its keepalive, renewal and poll timers
    /// run at a different phase under each seed, as real processes' do.
    pub start_delay_ms_max: u64,
    /// `false` makes the resource accept every token: the counterfactual run.
    pub fencing: bool,
    /// Where a resolved scenario came from (`[origin]`, written by `sim` into a report's
    /// `scenario.toml`): it names the report directory of a rerun, so that rerunning a
    /// counterfactual's resolved file lands beside the counterfactual, not on the plain
    /// run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// The network.
    pub network: NetworkConfig,
    /// The leader's work and the load on it.
    pub work: WorkConfig,
    /// Background noise drawn from the seed (`[noise.gc]`).
    #[serde(skip_serializing_if = "Noise::is_empty")]
    pub noise: Noise,
    /// A swarm: faults the seed draws (`[swarm]`, see [`crate::swarm`]); a run writes
    /// them into its resolved scenario as ordinary faults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swarm: Option<crate::swarm::Swarm>,
    /// The availability objective a sweep's findings judge TTLs by (`sim sweep`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo: Option<Slo>,
    /// Parameters of `etcd-lease` (etcd's defaults when absent).
    #[serde(rename = "etcd-lease", skip_serializing_if = "Option::is_none")]
    pub etcd_lease: Option<EtcdLeaseConfig>,
    /// Parameters of `redis-naive` (the Redis lock's defaults when absent).
    #[serde(rename = "redis-naive", skip_serializing_if = "Option::is_none")]
    pub redis_naive: Option<RedisLockConfig>,
    /// Parameters of `redis-fenced` (the Redis lock's defaults when absent).
    #[serde(rename = "redis-fenced", skip_serializing_if = "Option::is_none")]
    pub redis_fenced: Option<RedisLockConfig>,
    /// Parameters of `db-row` (the row lease's defaults when absent).
    #[serde(rename = "db-row", skip_serializing_if = "Option::is_none")]
    pub db_row: Option<DbRowConfig>,
    /// Parameters of `consul-session` (Consul's and its Go client's defaults when
    /// absent).
    #[serde(rename = "consul-session", skip_serializing_if = "Option::is_none")]
    pub consul_session: Option<ConsulSessionConfig>,
    /// Parameters of `k8s-lease` (client-go's core-component defaults when absent).
    #[serde(rename = "k8s-lease", skip_serializing_if = "Option::is_none")]
    pub k8s_lease: Option<K8sLeaseConfig>,
    /// Parameters of `zk-sequential` (ZooKeeper's and Curator's defaults when absent).
    #[serde(rename = "zk-sequential", skip_serializing_if = "Option::is_none")]
    pub zk_sequential: Option<ZkSequentialConfig>,
    /// Parameters of `bully` (Baton's defaults when absent).
    #[serde(rename = "bully", skip_serializing_if = "Option::is_none")]
    pub bully: Option<BullyConfig>,
    /// Parameters of `ring` (Baton's defaults when absent).
    #[serde(rename = "ring", skip_serializing_if = "Option::is_none")]
    pub ring: Option<RingConfig>,
    /// Parameters of `raft` (openraft's defaults when absent).
    #[serde(rename = "raft", skip_serializing_if = "Option::is_none")]
    pub raft: Option<RaftConfig>,
    /// What must hold at least once, and bounds.
    pub expect: Expect,
    /// What to inject, in order.
    pub faults: Vec<FaultSpec>,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            name: String::new(),
            seed: None,
            origin: None,
            protocol: ProtocolName::default(),
            duration_ms: 60_000,
            nodes: 3,
            start_delay_ms_max: 1000,
            fencing: true,
            network: NetworkConfig::default(),
            work: WorkConfig::default(),
            noise: Noise::default(),
            slo: None,
            swarm: None,
            etcd_lease: None,
            redis_naive: None,
            redis_fenced: None,
            db_row: None,
            consul_session: None,
            k8s_lease: None,
            zk_sequential: None,
            bully: None,
            ring: None,
            raft: None,
            expect: Expect::default(),
            faults: vec![],
        }
    }
}

/// The file and overrides a resolved scenario was made from (`[origin]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Origin {
    /// The scenario file the run was given, as [`display_path`] writes it.
    pub file: String,
    /// The `--set` overrides of the run, as given. They are already applied to the
    /// values in this file: they are recorded for the report directory's name, not
    /// applied again.
    pub overrides: Vec<String>,
}

/// A checked scenario with every default filled in.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The scenario, defaults filled (this is what `scenario.toml` in a report shows).
    pub scenario: Scenario,
    /// The faults' firings, typed, in firing order (file order, or time order when a
    /// fault repeats).
    pub faults: Vec<Firing>,
    /// The scenario file it came from.
    pub path: String,
    /// The `--set` overrides applied, as given.
    pub overrides: Vec<String>,
    /// The protocol under test, built from its table.
    pub protocol: Arc<dyn ProtocolModel>,
}

impl Resolved {
    /// Node names, `n1..nN`.
    pub fn node_names(&self) -> Vec<String> {
        (1..=self.scenario.nodes).map(|i| format!("n{i}")).collect()
    }

    /// The resolved scenario as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(&self.scenario).expect("a resolved scenario always serializes")
    }

    /// Where this run descends from: the scenario's own `[origin]` (a resolved file run
    /// again) with this run's overrides after its own, or else this file and its
    /// overrides. It names the default report directory.
    pub fn origin(&self) -> Origin {
        match &self.scenario.origin {
            Some(o) => Origin {
                file: o.file.clone(),
                overrides: o.overrides.iter().chain(&self.overrides).cloned().collect(),
            },
            None => Origin {
                file: self.path.clone(),
                overrides: self.overrides.clone(),
            },
        }
    }

    /// The resolved scenario of a run under `seed`, as a report's `scenario.toml` holds
    /// it: the seed and the origin recorded, so that running the file repeats the run.
    pub fn to_toml_for_run(&self, seed: u64) -> String {
        let mut s = self.scenario.clone();
        s.seed = Some(seed);
        s.origin = Some(self.origin());
        toml::to_string(&s).expect("a resolved scenario always serializes")
    }

    /// The seed of `sim run` without `--seed`: the file's `seed`, or 0.
    pub fn default_seed(&self) -> u64 {
        self.scenario.seed.unwrap_or(0)
    }
}

/// A scenario that could not be loaded: where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file.
    pub file: String,
    /// The 1-based line, when known.
    pub line: Option<usize>,
    /// The dotted key path, when known.
    pub key: Option<String>,
    /// The `--set` the bad value came from, when it came from one (then there is no
    /// line: the file does not hold the value).
    pub set: Option<String>,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(set) = &self.set {
            write!(f, ": --set {set}")?;
        } else if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": key `{key}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

/// Finds the line of a dotted key path (`faults.0.kind`) in `text`, or of the nearest
/// enclosing key when the full path is not there.
fn locate(text: &str, path: &[String]) -> Option<usize> {
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    locate_in(text, doc.as_table(), path)
}

/// The 1-based line of a dotted key path (`["faults", "0", "to"]`) in a scenario's text,
/// or of the nearest enclosing key when the full path is not there: for checks made on a
/// loaded scenario outside this module (real mode's, of what it can apply).
pub fn line_of_key(text: &str, path: &[&str]) -> Option<usize> {
    locate(
        text,
        &path.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
    )
}

fn locate_in(text: &str, table: &dyn toml_edit::TableLike, path: &[String]) -> Option<usize> {
    let (key, item) = table.get_key_value(path.first()?)?;
    let here = key.span().map(|s| line_of(text, s.start));
    let rest = &path[1..];
    let Some(next) = rest.first() else {
        return here;
    };
    if let Ok(i) = next.parse::<usize>() {
        if let Some(t) = item.as_array_of_tables().and_then(|a| a.get(i)) {
            let header = t.span().map(|s| line_of(text, s.start));
            return locate_in(text, t, &rest[1..]).or(header).or(here);
        }
        if let Some(v) = item.as_array().and_then(|a| a.get(i)) {
            return v.span().map(|s| line_of(text, s.start)).or(here);
        }
        return here;
    }
    item.as_table_like()
        .and_then(|t| locate_in(text, t, rest))
        .or(here)
}

/// Applies one `--set key=value`: the value is read as a TOML value (number, bool,
/// string, array) and, failing that, as a bare string. A numeric segment indexes a list
/// of tables (`faults.0.at_ms`).
fn apply_set(doc: &mut toml_edit::DocumentMut, assignment: &str) -> Result<(), String> {
    let Some((path, raw)) = assignment.split_once('=') else {
        return Err(format!("`{assignment}` is not key=value"));
    };
    let segs: Vec<&str> = path.trim().split('.').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return Err(format!("`{path}` is not a dotted key path"));
    }
    let value: toml_edit::Value = raw
        .trim()
        .parse()
        .unwrap_or_else(|_| toml_edit::Value::from(raw.trim()));
    set_in(doc.as_table_mut(), &segs, value)
}

fn set_in(
    table: &mut dyn toml_edit::TableLike,
    segs: &[&str],
    value: toml_edit::Value,
) -> Result<(), String> {
    let seg = segs[0];
    if segs.len() == 1 {
        table.insert(seg, toml_edit::Item::Value(value));
        return Ok(());
    }
    if table.get(seg).is_none() {
        table.insert(seg, toml_edit::Item::Table(toml_edit::Table::new()));
    }
    let item = table.get_mut(seg).expect("present or just inserted");
    if let Ok(idx) = segs[1].parse::<usize>() {
        let arr = item
            .as_array_of_tables_mut()
            .ok_or_else(|| format!("`{seg}` is not a list of tables"))?;
        let len = arr.len();
        let t = arr
            .get_mut(idx)
            .ok_or_else(|| format!("`{seg}` has {len} entries, no index {idx}"))?;
        if segs.len() == 2 {
            return Err(format!(
                "`{seg}.{idx}` is a whole table; set one of its keys"
            ));
        }
        return set_in(t, &segs[2..], value);
    }
    let t = item
        .as_table_like_mut()
        .ok_or_else(|| format!("`{seg}` is not a table"))?;
    set_in(t, &segs[1..], value)
}

/// How Baton writes a scenario path into what it reports (the reproduce command, report
/// directories, the commands heading matrix.md and sweep.md): relative to the current
/// directory when the file is under it, absolute otherwise, whatever way it was typed
/// (`./x.toml`, `/abs/x.toml`, `a/../x.toml`). The same run then writes the same bytes.
/// A path that cannot be resolved (a missing file) stays as typed.
pub fn display_path(path: &Path) -> String {
    let Ok(abs) = std::fs::canonicalize(path) else {
        return path.display().to_string();
    };
    let cwd = std::env::current_dir().and_then(std::fs::canonicalize);
    match cwd.as_ref().map(|c| abs.strip_prefix(c)) {
        Ok(Ok(rel)) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => abs.display().to_string(),
    }
}

/// Reads, overrides, parses and checks a scenario file.
pub fn load(path: &Path, overrides: &[String]) -> Result<Resolved, ScenarioError> {
    let file = display_path(path);
    let err = |line, key: Option<String>, message: String| ScenarioError {
        file: file.clone(),
        line,
        key,
        set: None,
        message,
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| err(None, None, format!("cannot read: {e}")))?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    load_str(&file, &stem, &text, overrides)
}

/// How many nodes a fleet may have.
pub const NODES: std::ops::RangeInclusive<u32> = 1..=64;
/// [`NODES`] in words, for every error about `nodes`.
const NODES_ALLOWED: &str = "a whole number of nodes from 1 to 64";

/// Keys whose allowed values are narrower than their type's: what to say instead of the
/// type's range when a value of the wrong type is given, so that one limit has one wording.
fn narrower_than_type(key: &str) -> Option<&'static str> {
    match key {
        "nodes" => Some(NODES_ALLOWED),
        "seed" => Some(crate::seed::ALLOWED),
        _ => None,
    }
}

/// As [`load`], from text already read.
pub fn load_str(
    file: &str,
    stem: &str,
    text: &str,
    overrides: &[String],
) -> Result<Resolved, ScenarioError> {
    // Each override's key path, so that an error about a value a `--set` gave names the
    // `--set` rather than a line of the file, which does not hold that value.
    let overridden: Vec<(String, &String)> = overrides
        .iter()
        .map(|s| (s.split('=').next().unwrap_or("").trim().to_string(), s))
        .collect();
    let err = |line, key: Option<String>, message: String| {
        let set = key.as_deref().and_then(|k| {
            overridden
                .iter()
                .rev()
                .find(|(p, _)| {
                    p == k || k.starts_with(&format!("{p}.")) || p.starts_with(&format!("{k}."))
                })
                .map(|(_, s)| s.to_string())
        });
        ScenarioError {
            file: file.to_string(),
            line: if set.is_some() { None } else { line },
            key,
            set,
            message,
        }
    };
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let line = e.span().map(|s| line_of(text, s.start));
        err(
            line,
            None,
            format!("not valid TOML: {}", e.message().trim().replace('\n', "; ")),
        )
    })?;
    for set in overrides {
        apply_set(&mut doc, set).map_err(|m| ScenarioError {
            file: file.to_string(),
            line: None,
            key: Some(set.split('=').next().unwrap_or("").trim().to_string()),
            set: Some(set.clone()),
            message: m,
        })?;
    }
    let effective = doc.to_string();
    let de = toml::Deserializer::new(&effective);
    let mut scenario: Scenario = serde_path_to_error::deserialize(de).map_err(|e| {
        let path: Vec<String> = e.path().iter().filter_map(seg_name).collect();
        let key = path.join(".");
        let inner = e.into_inner();
        // Spans point into the effective text, which overrides may have moved: with
        // overrides, lines come from the file as written.
        let line = inner
            .span()
            .filter(|_| overrides.is_empty())
            .map(|s| line_of(text, s.start))
            .or_else(|| locate(text, &path));
        let message = plain_words(inner.message().trim(), &key, &effective, &path);
        err(line, (!key.is_empty()).then_some(key), message)
    })?;
    if scenario.name.is_empty() {
        scenario.name = stem.to_string();
    }
    // Later checks name lines of the file as written (a key an override set is named by
    // its `--set` instead, in `err`).
    let at = |path: &[&str]| {
        locate(
            text,
            &path.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
    };
    let check = |ok: bool, path: &[&str], message: String| -> Result<(), ScenarioError> {
        if ok {
            Ok(())
        } else {
            Err(err(at(path), Some(path.join(".")), message))
        }
    };
    let s = &scenario;
    check(
        NODES.contains(&s.nodes),
        &["nodes"],
        format!("{} is out of range: {}", s.nodes, NODES_ALLOWED),
    )?;
    check(
        s.duration_ms >= 1,
        &["duration_ms"],
        "must be at least 1".into(),
    )?;
    check(
        s.duration_ms <= 3_600_000,
        &["duration_ms"],
        format!("{} is above one simulated hour (3600000)", s.duration_ms),
    )?;
    check(
        s.network.latency_ms_min <= s.network.latency_ms_max,
        &["network", "latency_ms_min"],
        format!(
            "{} is above latency_ms_max {}",
            s.network.latency_ms_min, s.network.latency_ms_max
        ),
    )?;
    check(
        s.network.loss_ppm <= 1_000_000,
        &["network", "loss_ppm"],
        "must be 0 to 1000000".into(),
    )?;
    check(
        s.work.tick_interval_ms >= 1,
        &["work", "tick_interval_ms"],
        "must be at least 1".into(),
    )?;
    let in_range = |v: u64, path: &[&str], hi: i128| -> Result<(), ScenarioError> {
        check(
            i128::from(v) <= hi,
            path,
            format!("{v} is out of range: 0 to {hi}"),
        )
    };
    in_range(
        s.network.latency_ms_max,
        &["network", "latency_ms_max"],
        crate::fault::MAX_LATENCY_MS,
    )?;
    in_range(
        s.start_delay_ms_max,
        &["start_delay_ms_max"],
        crate::fault::MAX_MS,
    )?;
    in_range(
        s.work.tick_interval_ms,
        &["work", "tick_interval_ms"],
        crate::fault::MAX_MS,
    )?;
    in_range(
        s.work.client_timeout_ms,
        &["work", "client_timeout_ms"],
        crate::fault::MAX_MS,
    )?;
    in_range(
        s.work.resource_timeout_ms,
        &["work", "resource_timeout_ms"],
        crate::fault::MAX_MS,
    )?;
    if let Some(v) = s.expect.liveness_bound_ms {
        in_range(v, &["expect", "liveness_bound_ms"], crate::fault::MAX_MS)?;
    }
    if let Some(v) = s.expect.failover_ms_max {
        in_range(v, &["expect", "failover_ms_max"], crate::fault::MAX_MS)?;
    }
    check(
        s.work.rate_per_s <= 100_000,
        &["work", "rate_per_s"],
        "must be 0 to 100000".into(),
    )?;
    check(
        s.work.read_rate_per_s <= 100_000,
        &["work", "read_rate_per_s"],
        "must be 0 to 100000".into(),
    )?;
    check(
        s.work.client_timeout_ms >= 1,
        &["work", "client_timeout_ms"],
        "must be at least 1".into(),
    )?;
    check(
        s.work.resource_timeout_ms >= 1,
        &["work", "resource_timeout_ms"],
        "must be at least 1".into(),
    )?;
    check(
        (1..=s.work.client_timeout_ms).contains(&s.work.client_quantum_ms),
        &["work", "client_quantum_ms"],
        format!(
            "must be 1 to client_timeout_ms ({})",
            s.work.client_timeout_ms
        ),
    )?;

    let nodes: Vec<String> = (1..=s.nodes).map(|i| format!("n{i}")).collect();
    if let Some(sw) = &s.swarm {
        sw.validate(s.duration_ms).map_err(|(key, m)| {
            let path: Vec<String> = std::iter::once("swarm".to_string())
                .chain(key.split('.').map(String::from))
                .collect();
            err(locate(text, &path), Some(format!("swarm.{key}")), m)
        })?;
        if let Some(i) = s.faults.iter().position(|f| f.at_ms.is_none()) {
            return Err(err(
                at(&["faults", &i.to_string(), "after"]),
                Some(format!("faults.{i}.after")),
                "a scenario with a [swarm] fires its faults in time order: give this one an at_ms"
                    .into(),
            ));
        }
    }
    if let Some(job) = &s.work.job {
        check(
            job.step_ms_min >= 1,
            &["work", "job", "step_ms_min"],
            "must be at least 1".into(),
        )?;
        check(
            job.step_ms_max >= job.step_ms_min
                && i128::from(job.step_ms_max) <= crate::fault::MAX_MS,
            &["work", "job", "step_ms_max"],
            format!(
                "{} is out of range: step_ms_min ({}) to 3600000",
                job.step_ms_max, job.step_ms_min
            ),
        )?;
    }
    if let Some(slo) = &s.slo {
        check(
            slo.availability_pct > 0.0 && slo.availability_pct < 100.0,
            &["slo", "availability_pct"],
            format!(
                "{} is out of range: above 0 and below 100",
                slo.availability_pct
            ),
        )?;
        check(
            (1..=3650).contains(&slo.window_days),
            &["slo", "window_days"],
            format!("{} is out of range: 1 to 3650", slo.window_days),
        )?;
        check(
            slo.leader_deaths_per_day.is_finite() && slo.leader_deaths_per_day >= 0.0,
            &["slo", "leader_deaths_per_day"],
            format!("{} is out of range: 0 or more", slo.leader_deaths_per_day),
        )?;
    }
    if let Some(gc) = &s.noise.gc {
        let key = |k: &str| ["noise", "gc", k].map(String::from);
        let at_key = |k: &str| locate(text, &key(k));
        let bad = |k: &str, m: String| Err(err(at_key(k), Some(format!("noise.gc.{k}")), m));
        if gc.mean_interval_ms == 0 || i128::from(gc.mean_interval_ms) > crate::fault::MAX_MS {
            return bad(
                "mean_interval_ms",
                format!("{} is out of range: 1 to 3600000", gc.mean_interval_ms),
            );
        }
        if gc.pause_p50_ms == 0 {
            return bad("pause_p50_ms", "must be at least 1".into());
        }
        if gc.pause_p99_ms < gc.pause_p50_ms {
            return bad(
                "pause_p99_ms",
                format!(
                    "{} is below pause_p50_ms {}",
                    gc.pause_p99_ms, gc.pause_p50_ms
                ),
            );
        }
        if gc.pause_max_ms < gc.pause_p99_ms || i128::from(gc.pause_max_ms) > crate::fault::MAX_MS {
            return bad(
                "pause_max_ms",
                format!(
                    "{} is out of range: pause_p99_ms ({}) to 3600000",
                    gc.pause_max_ms, gc.pause_p99_ms
                ),
            );
        }
        if let Some(n) = gc.nodes.iter().find(|n| !nodes.contains(n)) {
            return bad(
                "nodes",
                format!(
                    "unknown node `{n}`: expected some of {} (empty: all)",
                    nodes.join(", ")
                ),
            );
        }
    }
    let mut faults = vec![];
    let mut filled = vec![];
    let mut last_at: Option<(usize, u64)> = None;
    let mut node_before = false;
    // Each fault's firings, with the index of its table in the file (for errors). A
    // scenario with a repeating fault fires everything in time order (ties in file
    // order), so every fault of it needs an at_ms.
    let mut firings: Vec<(usize, FaultSpec)> = vec![];
    for (i, spec) in s.faults.iter().enumerate() {
        let reps = spec.repetitions(s.duration_ms).map_err(|(key, m)| {
            err(
                at(&["faults", &i.to_string(), &key]),
                Some(format!("faults.{i}.{key}")),
                m,
            )
        })?;
        firings.extend(reps.into_iter().map(|r| (i, r)));
    }
    if s.faults.iter().any(FaultSpec::repeats) {
        if let Some(i) = s.faults.iter().position(|f| f.at_ms.is_none()) {
            return Err(err(
                at(&["faults", &i.to_string(), "after"]),
                Some(format!("faults.{i}.after")),
                "a scenario with a repeating fault fires its faults in time order: give this one an at_ms".into(),
            ));
        }
        firings.sort_by_key(|(_, f)| f.at_ms);
    }
    for (i, spec) in firings.iter().map(|(i, f)| (*i, f)) {
        let idx = i.to_string();
        let (when, fault) = spec
            .resolve(
                (s.network.latency_ms_min, s.network.latency_ms_max),
                s.network.loss_ppm,
            )
            .map_err(|(key, m)| {
                err(
                    at(&["faults", &idx, &key]),
                    Some(format!("faults.{i}.{key}")),
                    m,
                )
            })?;
        let node_targets = || format!("one of {}, leader, follower, previous", nodes.join(", "));
        let check_target = |t: &str, key: &str, extra: &[&str]| -> Result<(), ScenarioError> {
            let ok = nodes.iter().any(|n| n == t)
                || t == "leader"
                || t == "follower"
                || t == "previous"
                || extra.contains(&t);
            let mut allowed = node_targets();
            for e in extra {
                allowed.push_str(", ");
                allowed.push_str(e);
            }
            check(
                ok,
                &["faults", &idx, key],
                format!("unknown target `{t}`: expected {allowed}"),
            )
        };
        // `previous` names the node an earlier fault hit; there must be one.
        let mentions_previous = [&spec.target, &spec.from, &spec.to]
            .iter()
            .any(|t| t.as_deref() == Some("previous"));
        let key = if spec.target.is_some() {
            "target"
        } else if spec.from.as_deref() == Some("previous") {
            "from"
        } else {
            "to"
        };
        check(
            !mentions_previous || node_before,
            &["faults", &idx, key],
            "`previous` needs an earlier fault that hit a node (a node name, `leader`, `follower` or `previous`)".into(),
        )?;
        let is_node = |t: &Option<String>| {
            t.as_deref().is_some_and(|t| {
                nodes.iter().any(|n| n == t) || ["leader", "follower", "previous"].contains(&t)
            })
        };
        node_before =
            node_before || is_node(&spec.target) || is_node(&spec.from) || is_node(&spec.to);
        match &fault {
            Fault::Kill { target, .. }
            | Fault::Restart { target }
            | Fault::Resign { target }
            | Fault::Pause { target, .. } => check_target(target, "target", &[])?,
            Fault::ClockOffset { target, .. }
            | Fault::ClockDrift { target, .. }
            | Fault::ClockStep { target, .. } => check_target(target, "target", &["backend"])?,
            Fault::Partition { from, to, .. } | Fault::SlowLink { from, to, .. } => {
                let ends = ["backend", "resource", "client"];
                check_target(from, "from", &ends)?;
                check_target(to, "to", &ends)?;
                check(
                    from != to,
                    &["faults", &idx, "to"],
                    format!("`{to}` is also `from`: a link needs two ends"),
                )?;
            }
            Fault::Heal | Fault::Network { .. } => {}
        }
        let jitter_ms = spec.jitter_ms.unwrap_or(0);
        if let When::At(t) = when {
            check(
                t < s.duration_ms,
                &["faults", &idx, "at_ms"],
                format!("{t} is not before duration_ms {}", s.duration_ms),
            )?;
            check(
                t + jitter_ms < s.duration_ms,
                &["faults", &idx, "jitter_ms"],
                format!(
                    "at_ms {t} + jitter_ms {jitter_ms} is not before duration_ms {}",
                    s.duration_ms
                ),
            )?;
            // Faults fire in file order; an earlier time after a later one would
            // silently fire late.
            if let Some((prev_i, prev_t)) = last_at {
                check(
                    t >= prev_t,
                    &["faults", &idx, "at_ms"],
                    format!("{t} is before faults.{prev_i}.at_ms {prev_t}: faults fire in file order, list them by time"),
                )?;
            }
            last_at = Some((i, t));
        }
        filled.push(spec.filled(&fault));
        faults.push(Firing {
            when,
            jitter_ms,
            fault,
        });
    }
    scenario.faults = filled;
    // The protocol's table, with the real system's defaults where it is silent.
    protocol::fill_table(&mut scenario);
    let proto = protocol::build(&scenario);
    let table = scenario.protocol.name();
    proto
        .validate()
        .map_err(|(key, m)| err(at(&[table, &key]), Some(format!("{table}.{key}")), m))?;
    if scenario.work.read_rate_per_s > 0 && !proto.has_replicated_log() {
        return Err(err(
            at(&["work", "read_rate_per_s"]),
            Some("work.read_rate_per_s".into()),
            format!(
                "{}: reads are answered from a replicated log, which {table} does not keep here; allowed: 0, or protocol = \"raft\" with [raft] sequencer = \"log\"",
                scenario.work.read_rate_per_s
            ),
        ));
    }
    if scenario.expect.liveness_bound_ms.is_none() {
        scenario.expect.liveness_bound_ms = Some(proto.default_liveness_bound_ms(&scenario));
    }
    Ok(Resolved {
        scenario,
        faults,
        path: file.to_string(),
        overrides: overrides.to_vec(),
        protocol: proto,
    })
}

/// Rewrites serde's words for a value of the wrong type (`invalid type: string "x",
/// expected u32`, `expected struct WorkConfig`) into what a user may write: a whole
/// number, with the unit the key's name carries, true or false, a table and its keys.
fn plain_words(message: &str, key: &str, effective: &str, path: &[String]) -> String {
    let message = message.replace('\n', " ");
    // Names first: serde's "field" and "variant" are a TOML file's keys and values.
    for (serde, ours) in [
        ("unknown field", "unknown key"),
        ("unknown variant", "unknown value"),
        ("missing field", "missing key"),
    ] {
        if let Some(rest) = message.strip_prefix(serde) {
            let rest = rest
                .replacen(", expected one of ", "; allowed: ", 1)
                .replacen(", expected ", "; allowed: ", 1)
                .replacen(", there are no fields", "; this table takes no keys", 1);
            return format!("{ours}{rest}");
        }
    }
    let Some((got, expected)) = message.split_once(", expected ") else {
        return message;
    };
    // serde quotes a value as `v` (numbers, booleans) or "v" (strings).
    let value = |t: &str| t.trim().trim_matches('`').to_string();
    let got = if let Some(rest) = got.strip_prefix("invalid type: ") {
        match rest.split_once(' ') {
            Some(("string", v)) => format!("got the text {v}"),
            Some(("integer", v)) => format!("got the number {}", value(v)),
            Some(("floating", v)) => {
                format!("got the number {}", value(v.trim_start_matches("point")))
            }
            Some(("boolean", v)) => format!("got {}", value(v)),
            _ if rest == "sequence" => "got a list".to_string(),
            _ if rest == "map" => "got a table".to_string(),
            _ => format!("got {rest}"),
        }
    } else if let Some(rest) = got.strip_prefix("invalid value: ") {
        let v = rest
            .split_once(' ')
            .map(|(_, v)| value(v))
            .unwrap_or_default();
        format!("{v} is out of range")
    } else {
        return message;
    };
    let last = key.rsplit('.').next().unwrap_or(key);
    let unit = [
        ("_ms", " of milliseconds"),
        ("_ms_min", " of milliseconds"),
        ("_ms_max", " of milliseconds"),
        ("_ppm", " of parts per million"),
        ("_per_s", " per second"),
        ("_days", " of days"),
        ("_pct", " (percent)"),
    ]
    .iter()
    .find(|(suffix, _)| last.ends_with(suffix))
    .map_or("", |(_, u)| u);
    let allowed = match expected.trim() {
        _ if narrower_than_type(key).is_some() => {
            narrower_than_type(key).unwrap_or_default().to_string()
        }
        "u64" | "usize" => format!("a whole number{unit}, 0 or more"),
        "u32" => format!("a whole number{unit} from 0 to {}", u32::MAX),
        "u16" => format!("a whole number{unit} from 0 to {}", u16::MAX),
        "u8" => format!("a whole number{unit} from 0 to {}", u8::MAX),
        "i64" | "i32" => format!("a whole number{unit}, negative or not"),
        "f64" | "f32" => format!("a number{unit}"),
        "a boolean" => "true or false".to_string(),
        "a string" => "text in quotes".to_string(),
        "a sequence" => "a list in brackets, [...]".to_string(),
        "a map" => "a table".to_string(),
        e if e.starts_with("struct ") => match table_keys(effective, path) {
            Some(keys) => format!("a table with the keys {}", keys.join(", ")),
            None => "a table".to_string(),
        },
        e => e.to_string(),
    };
    format!("{got}; allowed: {allowed}")
}

/// The keys a table at `path` may hold, found by asking the parser itself: the value
/// there is replaced by a table holding one key no table has, and the "unknown field"
/// error lists the keys it expected.
fn table_keys(effective: &str, path: &[String]) -> Option<Vec<String>> {
    const PROBE: &str = "__no_such_key__";
    let mut doc: toml_edit::DocumentMut = effective.parse().ok()?;
    let segs: Vec<&str> = path.iter().map(String::as_str).collect();
    if segs.is_empty() {
        return None;
    }
    let mut probe = toml_edit::InlineTable::new();
    probe.insert(PROBE, 0.into());
    set_in(
        doc.as_table_mut(),
        &segs,
        toml_edit::Value::InlineTable(probe),
    )
    .ok()?;
    let text = doc.to_string();
    let e =
        serde_path_to_error::deserialize::<_, Scenario>(toml::Deserializer::new(&text)).err()?;
    let m = e.into_inner().message().to_string();
    let (head, expected) = m.split_once("expected")?;
    if !head.contains(PROBE) {
        return None;
    }
    let keys: Vec<String> = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect();
    (!keys.is_empty()).then_some(keys)
}

fn seg_name(seg: &serde_path_to_error::Segment) -> Option<String> {
    match seg {
        serde_path_to_error::Segment::Map { key } => Some(key.clone()),
        serde_path_to_error::Segment::Seq { index } => Some(index.to_string()),
        serde_path_to_error::Segment::Enum { variant } => Some(variant.clone()),
        serde_path_to_error::Segment::Unknown => None,
    }
}
