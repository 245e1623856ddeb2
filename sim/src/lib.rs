//! Baton: a deterministic simulation testbed for leader-election protocols.
//!
//! One scenario under one seed, simulated, checked and reported, byte for byte the same
//! every time:
//!
//! ```
//! use std::path::Path;
//!
//! // The spec's canonical experiment: the leader pauses for longer than its lease.
//! let scenario = baton_model::load(Path::new("../scenarios/gc-pause.toml"), &[])?;
//! let run = baton_sim::run(&scenario, 42)?;
//! // The woken leader's write was fenced out: one leader acted, by effect.
//! assert!(run.passed);
//! assert_eq!(run.findings.effect.max, 1);
//! assert!(!run.findings.rejections.is_empty());
//! // The same seed gives the same bytes.
//! assert_eq!(baton_sim::run(&scenario, 42)?.report_json, run.report_json);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A run is: a scenario (`baton_model::scenario`: what to do) -> the [`world`] (every
//! process in one madsim runtime, its faults fired by `baton_model`'s fault plan through
//! [`world::driver`]) -> a timeline (what happened) -> the checkers (what held) -> the
//! report, the plot and `timeline.html` ([`Artifacts`]). [`run`] does all of it;
//! [`run_unrecorded`] keeps no timeline file and renders no pages, for commands that read
//! only verdicts; [`simulate`] stops at the checkers' findings ([`RunOutput`]).
//!
//! The `sim` command line ([`Cli`], [`run_cli`]) runs one scenario, many seeds
//! (`matrix`, `sweep`, `search`), shrinks and bisects failures, and starts real mode.
//!
//! The crate is the simulation: without `--cfg madsim` it is empty, and the `sim` binary
//! (`main.rs`) stops the build with one message saying how to fix it, rather than a page
//! of errors from madsim's missing simulator API.
#![cfg(madsim)]
#![deny(missing_docs)]

mod cli;
mod cmd;
mod error;
pub mod library;
mod run;
pub mod world;

pub use cli::{main as run_cli, Cli};
pub use cmd::pool::map_ordered;
pub use cmd::real::missing_prerequisite;
pub use error::{Error, Outcome};
pub use run::{run, run_unrecorded, simulate, Artifacts, RunError, RunOutput, TimelineFile};
