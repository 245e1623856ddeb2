//! What a trial adds to its run's report. A *run* is one execution of a scenario, in
//! either world; a *trial* is a run in the real world (`sim real`, a live backend and
//! processes), one of the `--trials` a command makes, since a live run does not repeat
//! under a seed. The simulator's runs have none of this, and their reports do not change.
//!
//! A trial is checked by the same checkers as a simulated run, from a timeline of the
//! same events. What only a trial has: which trial of a command it was, the SQL check
//! over the fenced resource's SQLite ledger (the spec's acceptance query, a `lag()` over
//! the sequence batches in commit order), the command that runs it again, and notes on
//! what real mode did differently from what the scenario asked or did not count.

use serde::Serialize;

/// A trial's additions to `report.json` (`mode`, `trial`, `ledger`, `notes`) and to
/// `summary.txt`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TrialReport {
    /// Which trial of the command this was (1-based).
    pub trial: usize,
    /// The command that runs the experiment again (`reproduce` in report.json).
    #[serde(skip)]
    pub command: String,
    /// The live backend the run used, for a person (`a live etcd`, `a live Redis`).
    #[serde(skip)]
    pub backend: String,
    /// The command template that ran the nodes (`--node-cmd`), when they were not
    /// Baton's own: such a node writes no event log, so its run was seen from outside
    /// (`node_cmd` in report.json).
    #[serde(skip)]
    pub node_cmd: Option<String>,
    /// The SQL check over the ledger and its row counts.
    pub ledger: LedgerCheck,
    /// What real mode did differently from the scenario, or did not count: one sentence
    /// each.
    pub notes: Vec<String>,
}

/// The fenced resource's SQLite ledger at the end of a real run (`ledger` in
/// report.json).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LedgerCheck {
    /// Sequencer batches, in commit order, whose first number does not exceed the
    /// previous batch's last (the `lag()` query). 0 when the sequence only went up.
    pub non_increasing_steps: u64,
    /// Rows of `seq_batches`: sequencer batches accepted.
    pub seq_batches: u64,
    /// Rows of `ticks`: scheduler ticks accepted.
    pub ticks: u64,
    /// Rows of `rejections`: writes the fence turned away (each with both tokens).
    pub rejections: u64,
    /// `fenced_resource.max_token`: the highest token accepted.
    pub max_token: u64,
    /// `sequence.last_seq`: the sequence row's last number.
    pub last_seq: u64,
}
