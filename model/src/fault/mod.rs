//! Faults: what a scenario injects, as written in `[[faults]]` and as resolved.
//!
//! A scenario lists faults as flat tables with a `kind` and the keys that kind takes,
//! fired at `at_ms` or `delay_ms` after a trigger. [`FaultSpec::resolve`] checks each
//! table against its kind and produces a typed [`Fault`].

use serde::{Deserialize, Serialize};

pub mod plan;
mod spec;
mod unresolved;
pub mod world;
pub use spec::{FaultSpec, MAX_REPETITIONS};
pub use unresolved::Unresolved;

/// The longest duration any key may give: one simulated hour (also the longest run).
pub const MAX_MS: i128 = 3_600_000;
/// The largest clock offset or step: a day.
pub const MAX_SKEW_MS: i128 = 86_400_000;
/// The largest one-way latency: a minute.
pub const MAX_LATENCY_MS: i128 = 60_000;

/// The fault kinds a scenario may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// Kill a node: its tasks are dropped, its memory lost.
    Kill,
    /// Start a killed node again from scratch.
    Restart,
    /// Stop the world on a node for `duration_ms` (a GC pause); its clock keeps running.
    Pause,
    /// Cut the link between `from` and `to` (both ways unless `one_way`).
    Partition,
    /// Heal every partition in force.
    Heal,
    /// Set a clock `offset_ms` ahead of (negative: behind) global time.
    ClockOffset,
    /// Make a clock run `drift_ppm` parts per million fast (negative: slow).
    ClockDrift,
    /// Jump a clock by `step_ms`.
    ClockStep,
    /// Change network latency and loss, for `duration_ms` or for good.
    Network,
    /// Ask a leader to step down gracefully.
    Resign,
    /// Slow one direction of one link, `from -> to`: its messages take a latency drawn
    /// from `latency_ms_min..=latency_ms_max` instead of the network's, for `duration_ms`
    /// or for good (answers slower than requests, a congested path).
    SlowLink,
    /// Stall an etcd member's disk for `duration_ms`: every fsync it starts meanwhile
    /// ends only after the stall (a slow or saturated disk), so the writes it must
    /// persist wait, and as leader it commits nothing.
    SlowDisk,
    /// Ask a leader to hand leadership to a designated successor (`to`: a node, or
    /// `next`, the next running node after it in fleet order): a planned deploy's
    /// handover, by the backend's own primitive, instead of a resign and an election.
    Transfer,
}

impl FaultKind {
    /// Every kind, in the order of the enum.
    pub const ALL: [FaultKind; 13] = [
        FaultKind::Kill,
        FaultKind::Restart,
        FaultKind::Pause,
        FaultKind::Partition,
        FaultKind::Heal,
        FaultKind::ClockOffset,
        FaultKind::ClockDrift,
        FaultKind::ClockStep,
        FaultKind::Network,
        FaultKind::Resign,
        FaultKind::SlowLink,
        FaultKind::SlowDisk,
        FaultKind::Transfer,
    ];

    /// The kind a scenario file (or a timeline event) names.
    pub fn parse(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the fault's end is an event of its own (`fault_healed`, or for a
    /// partition, the next `heal`): a pause, a partition, a network change and a slow
    /// link last until they heal. The other kinds take effect at once; a kill's
    /// `restart_after_ms` is the node starting again, not the kill's end, so a
    /// `previous-fault-ended` after a kill fires when the kill lands.
    pub fn lasts(self) -> bool {
        matches!(
            self,
            FaultKind::Pause
                | FaultKind::Partition
                | FaultKind::Network
                | FaultKind::SlowLink
                | FaultKind::SlowDisk
        )
    }

    /// Whether it changes a clock (for good: a clock fault has no end).
    pub fn is_clock(self) -> bool {
        matches!(
            self,
            FaultKind::ClockOffset | FaultKind::ClockDrift | FaultKind::ClockStep
        )
    }

    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Restart => "restart",
            FaultKind::Pause => "pause",
            FaultKind::Partition => "partition",
            FaultKind::Heal => "heal",
            FaultKind::ClockOffset => "clock-offset",
            FaultKind::ClockDrift => "clock-drift",
            FaultKind::ClockStep => "clock-step",
            FaultKind::Network => "network",
            FaultKind::Resign => "resign",
            FaultKind::SlowLink => "slow-link",
            FaultKind::SlowDisk => "slow-disk",
            FaultKind::Transfer => "transfer",
        }
    }

    /// The keys this kind takes besides `kind`, `at_ms`, `after` and `delay_ms`:
    /// (key, required).
    pub fn keys(self) -> &'static [(&'static str, bool)] {
        match self {
            FaultKind::Kill => &[("target", true), ("restart_after_ms", false)],
            FaultKind::Restart | FaultKind::Resign => &[("target", true)],
            FaultKind::Pause => &[("target", true), ("duration_ms", true), ("point", false)],
            FaultKind::Partition => &[
                ("from", true),
                ("to", true),
                ("one_way", false),
                ("duration_ms", false),
            ],
            FaultKind::SlowLink => &[
                ("from", true),
                ("to", true),
                ("latency_ms_min", true),
                ("latency_ms_max", true),
                ("duration_ms", false),
            ],
            FaultKind::SlowDisk => &[("target", true), ("duration_ms", true)],
            FaultKind::Transfer => &[("target", true), ("to", false)],
            FaultKind::Heal => &[],
            FaultKind::ClockOffset => &[("target", true), ("offset_ms", true)],
            FaultKind::ClockDrift => &[("target", true), ("drift_ppm", true)],
            FaultKind::ClockStep => &[("target", true), ("step_ms", true)],
            FaultKind::Network => &[
                ("latency_ms_min", false),
                ("latency_ms_max", false),
                ("loss_ppm", false),
                ("duration_ms", false),
            ],
        }
    }
}

/// Where a pause lands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PausePoint {
    /// At `at_ms`, wherever the node's code happens to be.
    #[default]
    Anywhere,
    /// Armed at `at_ms`, it strikes at the target's next protected write, after the
    /// leader checked its lease and before the write leaves: the worst moment, the one in
    /// Kleppmann's fencing diagram. Without it, a pause usually lands while the leader is
    /// idle, and on waking it notices its lease is gone before writing.
    BeforeWrite,
}

/// What a fault waits for when it has no `at_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trigger {
    /// A leader is elected after the previous fault fired (or after start, for the first).
    LeaderElected,
    /// The previous fault ended (its duration ran out, or it was instantaneous).
    PreviousFaultEnded,
}

/// When a fault fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// At this simulated time.
    At(u64),
    /// This long after the trigger.
    After(Trigger, u64),
}

/// One firing of a fault: when, how much seeded jitter, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Firing {
    /// When it fires before jitter.
    pub when: When,
    /// The most seeded delay added to `when` (0: none). The draw comes from
    /// `seed::fork(seed, "fault/<firing index>")`.
    pub jitter_ms: u64,
    /// What it does.
    pub fault: Fault,
}

/// A fault, checked and typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// See [`FaultKind::Kill`].
    Kill {
        /// Target.
        target: String,
        /// Start the killed node again this long after (`None`: a `restart` fault, or
        /// never).
        restart_after_ms: Option<u64>,
    },
    /// See [`FaultKind::Restart`].
    Restart {
        /// Target.
        target: String,
    },
    /// See [`FaultKind::Pause`].
    Pause {
        /// Target.
        target: String,
        /// Length of the pause.
        duration_ms: u64,
        /// Where it lands.
        point: PausePoint,
    },
    /// See [`FaultKind::Partition`].
    Partition {
        /// One end.
        from: String,
        /// The other end.
        to: String,
        /// Only `from -> to`.
        one_way: bool,
        /// Healed after this long; `None` until a `heal`.
        duration_ms: Option<u64>,
    },
    /// See [`FaultKind::Heal`].
    Heal,
    /// See [`FaultKind::ClockOffset`].
    ClockOffset {
        /// Target.
        target: String,
        /// Offset.
        offset_ms: i64,
    },
    /// See [`FaultKind::ClockDrift`].
    ClockDrift {
        /// Target.
        target: String,
        /// Drift.
        drift_ppm: i64,
    },
    /// See [`FaultKind::ClockStep`].
    ClockStep {
        /// Target.
        target: String,
        /// Jump.
        step_ms: i64,
    },
    /// See [`FaultKind::Network`].
    Network {
        /// Lowest one-way latency.
        latency_ms_min: u64,
        /// Highest one-way latency.
        latency_ms_max: u64,
        /// Loss in parts per million.
        loss_ppm: u64,
        /// Restored to the scenario's network after this long; `None` for good.
        duration_ms: Option<u64>,
    },
    /// See [`FaultKind::Resign`].
    Resign {
        /// Target.
        target: String,
    },
    /// See [`FaultKind::SlowLink`].
    SlowLink {
        /// The sending end.
        from: String,
        /// The receiving end.
        to: String,
        /// Lowest one-way latency on the link.
        latency_ms_min: u64,
        /// Highest one-way latency on the link.
        latency_ms_max: u64,
        /// Restored after this long; `None` for good.
        duration_ms: Option<u64>,
    },
    /// See [`FaultKind::SlowDisk`].
    SlowDisk {
        /// The etcd member.
        target: String,
        /// How long its disk stalls.
        duration_ms: u64,
    },
    /// See [`FaultKind::Transfer`].
    Transfer {
        /// The leader asked to hand over.
        target: String,
        /// The designated successor: a node name, or [`NEXT`].
        to: String,
    },
}

/// A transfer's `to` that names no node: the next running node after the leader, in
/// fleet order (after `n3` of five: `n4`, then `n5`, `n1`, ...), resolved when it fires.
pub const NEXT: &str = "next";

impl Fault {
    /// What a clock fault does to its clock; `None` for any other fault.
    pub fn clock_change(&self) -> Option<crate::clock_model::ClockChange> {
        use crate::clock_model::ClockChange;
        match self {
            Fault::ClockOffset { offset_ms, .. } => Some(ClockChange::Offset(*offset_ms)),
            Fault::ClockDrift { drift_ppm, .. } => Some(ClockChange::Drift(*drift_ppm)),
            Fault::ClockStep { step_ms, .. } => Some(ClockChange::Step(*step_ms)),
            _ => None,
        }
    }

    /// Its kind.
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::Kill { .. } => FaultKind::Kill,
            Fault::Restart { .. } => FaultKind::Restart,
            Fault::Pause { .. } => FaultKind::Pause,
            Fault::Partition { .. } => FaultKind::Partition,
            Fault::Heal => FaultKind::Heal,
            Fault::ClockOffset { .. } => FaultKind::ClockOffset,
            Fault::ClockDrift { .. } => FaultKind::ClockDrift,
            Fault::ClockStep { .. } => FaultKind::ClockStep,
            Fault::Network { .. } => FaultKind::Network,
            Fault::Resign { .. } => FaultKind::Resign,
            Fault::SlowLink { .. } => FaultKind::SlowLink,
            Fault::SlowDisk { .. } => FaultKind::SlowDisk,
            Fault::Transfer { .. } => FaultKind::Transfer,
        }
    }

    /// How long the fault lasts once applied (0 for instantaneous ones; `None` when it
    /// lasts until something else ends it).
    pub fn duration_ms(&self) -> Option<u64> {
        match self {
            Fault::Pause { duration_ms, .. } | Fault::SlowDisk { duration_ms, .. } => {
                Some(*duration_ms)
            }
            Fault::Kill {
                restart_after_ms: Some(d),
                ..
            } => Some(*d),
            Fault::Partition { duration_ms, .. }
            | Fault::Network { duration_ms, .. }
            | Fault::SlowLink { duration_ms, .. } => *duration_ms,
            _ => Some(0),
        }
    }
}

/// A fault table that does not fit its kind.
pub type FaultError = crate::scenario::key_error::KeyError;
