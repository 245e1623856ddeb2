//! What a command ends with: an [`Outcome`] (it ran, and this is its verdict) or an
//! [`Error`] (it could not run, or broke), each with its exit code. Errors are values,
//! carried up to `main` and printed there once, in one line where they can be.

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
    /// Any other bad input found before anything ran: an argument, a missing tool
    /// (exit 2).
    #[error("{0}")]
    Input(String),
    /// A run of the simulator failed: an internal error, with the command that
    /// reproduces it (exit 3).
    #[error("the simulation failed: {message}\nreproduce: {reproduce}")]
    Simulation {
        /// What failed.
        message: String,
        /// The command that runs it again.
        reproduce: String,
    },
    /// Baton itself failed after the input was checked: writing output, a child process,
    /// a plot (exit 3).
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
        matches!(
            self,
            Error::Scenario(_) | Error::OutputDir(_) | Error::Input(_)
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
