//! The scenario's tables other than the protocols' and `[[faults]]`: `[network]`,
//! `[work]` and `[work.job]`, `[noise.gc]`, `[slo]` and `[expect]`, as written (with
//! defaults for what a file leaves out). Their checks are in `check.rs`.

use serde::{Deserialize, Serialize};

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
    /// What a leader does with its step in progress when it stops leading:
    /// `abandon-step` (the discipline: stop the step, then release) or `finish-step`
    /// (a stop hook that runs the step to its end and checkpoints it after leadership
    /// is lost, with no look at the lease: Cilium's operator, cilium#42920).
    pub on_stop: StepOnStop,
    /// A deliberately broken node (`none` for the real discipline).
    pub canary: JobCanary,
}

/// What a leader does with a job step in progress when it stops leading (`on_stop`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepOnStop {
    /// Give the step up at once: its work is lost, its checkpoint never written.
    #[default]
    AbandonStep,
    /// Run it to its end and write its checkpoint under the lost leadership (the bug).
    FinishStep,
}

impl Default for JobConfig {
    fn default() -> Self {
        JobConfig {
            step_ms_min: 200,
            step_ms_max: 2000,
            on_stop: StepOnStop::AbandonStep,
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

    /// The rule a TTL sweep (`sim sweep`, `sim conform`'s ttl-sweep) weighs a TTL by:
    /// seconds per hour without a leader's work = leader deaths per hour x the mean
    /// failover after a death + false failovers per hour x their mean length.
    pub fn dark_s_per_hour(
        &self,
        failover_mean_ms: f64,
        false_per_hour: f64,
        false_mean_ms: f64,
    ) -> f64 {
        let deaths_per_hour = self.leader_deaths_per_day / 24.0;
        deaths_per_hour * failover_mean_ms / 1000.0 + false_per_hour * false_mean_ms / 1000.0
    }

    /// `dark_s_per_hour` is within the error budget.
    pub fn meets(&self, dark_s_per_hour: f64) -> bool {
        dark_s_per_hour <= self.budget_s_per_hour()
    }

    /// The knee of a sweep: the index of the point with the least dark time (the first
    /// of equals). Below it false failovers dominate, above it the failover itself; it is
    /// the TTL to pick when it meets the objective.
    pub fn knee(dark_s_per_hour: &[f64]) -> Option<usize> {
        dark_s_per_hour
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, _)| i)
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
    /// A leader stopped acting to hand over to a designated successor (a transfer).
    LeaderTransferred,
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
            Sometimes::LeaderTransferred => "leader-transferred",
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
    /// Every transfer's gap (old leader's last accepted write to the successor's first)
    /// must be at most this long (unset: reported, not checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_gap_ms_max: Option<u64>,
    /// With `[swim]`: every killed node that stays down this long must be declared down
    /// by the detector within it (unset: reported, not checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swim_detection_ms_max: Option<u64>,
}
