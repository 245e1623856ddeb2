//! What a command ends with: an [`Outcome`] (it ran, and this is its verdict) or an
//! [`Error`] (it could not run, or broke), each with its exit code. Errors are values,
//! carried up to `main` and printed there once, in one line where they can be.

use crate::cmd::bench::BenchError;
use crate::cmd::compare::conformance::ConformDirError;
use crate::cmd::compare::LiveError;
use crate::cmd::real::RealRunError;
use crate::cmd::search::continuous::ContinuousError;
use crate::cmd::search::merge::MergeError;
use crate::cmd::search::store::StoreError;
use crate::cmd::shrink::MinimizeError;
use crate::cmd::stats::StatsError;
use crate::cmd::sweep::plot::SweepPlotError;
use crate::cmd::sweep::GridError;
use crate::run::{RunError, SeedFailed};
use baton_model::render::output_dir::OutputDirError;
use baton_model::scenario::ScenarioError;

/// Exit status: every checked property held (or the two runs were identical).
pub const EXIT_PASS: i32 = 0;
/// Exit status: a checked property failed (or the two runs differed).
pub const EXIT_FAIL: i32 = 1;
/// Exit status: bad input or usage, found before anything ran; nothing was written.
pub const EXIT_BAD_INPUT: i32 = 2;
/// Exit status: the simulator itself failed (a bug: please report it with the command).
pub const EXIT_INTERNAL: i32 = 3;
/// Exit status: Ctrl-C, after writing what finished.
pub use crate::cmd::interrupt::EXIT_INTERRUPTED;

/// How a command that ran to its end came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every checked property held, or the output was written (exit 0).
    Pass,
    /// A checked property failed (exit 1).
    Fail,
    /// Ctrl-C stopped it after it wrote what finished (exit 130).
    Interrupted,
    /// Another process's exit code, passed on (`sim real` runs `baton-real`).
    PassedOn(i32),
}

impl Outcome {
    /// Pass if `ok`, else fail.
    pub fn of(ok: bool) -> Outcome {
        if ok {
            Outcome::Pass
        } else {
            Outcome::Fail
        }
    }

    /// The process exit code.
    pub fn code(self) -> i32 {
        match self {
            Outcome::Pass => EXIT_PASS,
            Outcome::Fail => EXIT_FAIL,
            Outcome::Interrupted => EXIT_INTERRUPTED,
            Outcome::PassedOn(c) => c,
        }
    }
}

/// Why a command could not run, or broke.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The scenario file or a `--set` (exit 2).
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// An output directory that may not be written (exit 2).
    #[error("{0}")]
    OutputDir(#[from] OutputDirError),
    /// A `--grid` that cannot be swept (exit 2).
    #[error("{0}")]
    Grid(#[from] GridError),
    /// Reports `sim stats` cannot read, or a `--get` none answers (exit 2).
    #[error("{0}")]
    Stats(#[from] StatsError),
    /// Search shards that cannot be merged (exit 2).
    #[error("{0}")]
    Merge(#[from] MergeError),
    /// A continuous search's store: not a store, or another search's (exit 2); or it
    /// failed while the search ran (exit 3).
    #[error("{0}")]
    Store(#[from] StoreError),
    /// A live side `sim compare` cannot read (exit 2).
    #[error("{0}")]
    Live(#[from] LiveError),
    /// A conformance run's experiment `sim compare --conform-dir` cannot compare (exit 2).
    #[error("{0}")]
    Conform(#[from] ConformDirError),
    /// Any other bad input found before anything ran: an argument, a missing tool
    /// (exit 2).
    #[error("{0}")]
    Input(String),
    /// A run of the simulator failed: an internal error, with the command that
    /// reproduces it (exit 3).
    #[error("the simulation failed: {message}\nreproduce: {reproduce}")]
    Simulation {
        /// What failed.
        message: RunError,
        /// The command that runs it again.
        reproduce: String,
    },
    /// One run of a sweep's or a matrix's failed (exit 3).
    #[error("the simulation failed: {0}")]
    Run(#[from] RunError),
    /// One seed of a search failed (exit 3).
    #[error("the simulation failed: {0}")]
    Seed(#[from] SeedFailed),
    /// One seed of `sim compare`'s simulated side failed (exit 3).
    #[error("{0}")]
    SimSide(SeedFailed),
    /// A sweep's plot could not be drawn (exit 3).
    #[error("cannot plot the sweep: {0}")]
    SweepPlot(#[from] SweepPlotError),
    /// A shrink failed after its input was checked (exit 3).
    #[error("{0}")]
    Shrink(#[from] MinimizeError),
    /// A bench workload failed (exit 3).
    #[error("{0}")]
    Bench(#[from] BenchError),
    /// `sim bench-workload`'s workload failed (exit 3).
    #[error("workload {name}: {error}")]
    Workload {
        /// The workload.
        name: &'static str,
        /// Why.
        error: BenchError,
    },
    /// The real-mode binary could not be started (exit 3).
    #[error("{0}")]
    TrialReport(#[from] RealRunError),
    /// Baton itself failed after the input was checked: writing output, a child process
    /// (exit 3).
    #[error("{0}")]
    Internal(String),
    /// A child process (`baton-real`) ended the command with its own exit code, which is
    /// passed on (it printed its own error).
    #[error("{message}")]
    Child {
        /// Its exit code.
        code: i32,
        /// What it means for this command.
        message: String,
    },
}

impl Error {
    /// Bad input (exit 2): found before anything ran, nothing was written.
    fn is_input(&self) -> bool {
        if let Error::Store(e) = self {
            return e.is_input();
        }
        matches!(
            self,
            Error::Scenario(_)
                | Error::OutputDir(_)
                | Error::Grid(_)
                | Error::Stats(_)
                | Error::Merge(_)
                | Error::Live(_)
                | Error::Conform(_)
                | Error::Input(_)
        )
    }

    /// The process exit code this error ends with.
    pub fn code(&self) -> i32 {
        match self {
            Error::Child { code, .. } => *code,
            e if e.is_input() => EXIT_BAD_INPUT,
            _ => EXIT_INTERNAL,
        }
    }

    /// How it is printed on stderr: `error: ...` for bad input, `internal error: ...`
    /// for Baton's own failures.
    pub fn render(&self) -> String {
        match self {
            Error::Child { .. } => format!("error: {self}"),
            e if e.is_input() => format!("error: {self}"),
            _ => format!("internal error: {self}"),
        }
    }
}

impl From<ContinuousError> for Error {
    fn from(e: ContinuousError) -> Self {
        match e {
            ContinuousError::Seed(e) => Error::Seed(e),
            ContinuousError::Store(e) => Error::Store(e),
        }
    }
}

/// A command's result.
pub type Result<T = Outcome> = std::result::Result<T, Error>;

/// Bad input, from anything that says why in words.
pub fn input(message: impl Into<String>) -> Error {
    Error::Input(message.into())
}

/// An internal error, from anything that says why in words.
pub fn internal(message: impl Into<String>) -> Error {
    Error::Internal(message.into())
}
