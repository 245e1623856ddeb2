//! Baton's model: what a run is and how it is judged, whichever world ran it.
//!
//! A scenario file, loaded and checked; a timeline of what happened, judged by the
//! checkers, one property each:
//!
//! ```
//! use baton_model::timeline::{Entry, Event, Role, WriteOp};
//! use baton_model::{check, checker::CheckInput, checker::ClientStats, Property};
//!
//! let scenario = baton_model::load_str(
//!     "example.toml",
//!     "example",
//!     "protocol = \"etcd-lease\"\nduration_ms = 10000\nnodes = 2\nfencing = false\n",
//!     &[],
//! )?;
//! let at = |ms: i64, event: Event| Entry { at_us: ms * 1000, event };
//! let leads = |node: &str, token: u64| Event::RoleChanged {
//!     node: node.into(),
//!     role: Role::Leader,
//!     token: Some(token),
//! };
//! let accepted = |node: &str, token: u64, max_token: u64| Event::WriteAccepted {
//!     node: node.into(),
//!     token,
//!     max_token,
//!     op: WriteOp::Tick { n: 1 },
//! };
//! // n1 leads under token 1, n2 under token 2; then n1, believing still, writes with
//! // its old token, and with fencing off the resource takes it.
//! let entries = vec![
//!     at(100, leads("n1", 1)),
//!     at(200, accepted("n1", 1, 0)),
//!     at(4000, leads("n2", 2)),
//!     at(4100, accepted("n2", 2, 1)),
//!     at(4200, accepted("n1", 1, 2)),
//! ];
//! let findings = check(&CheckInput {
//!     resolved: &scenario,
//!     entries: &entries,
//!     end_us: 10_000_000,
//!     client: ClientStats::default(),
//! });
//! assert!(!findings.passed());
//! assert!(findings.signature().contains(&Property::StaleTokenAccepted));
//! assert_eq!(findings.effect.max, 2);
//! # Ok::<(), baton_model::ScenarioError>(())
//! ```
//!
//! A run is: a [`scenario`] (what to do, with its [`fault`]s, or a [`swarm`] that draws
//! them; each [`protocol`]'s table and bounds) -> a world (the simulator's madsim
//! runtime, or real processes against live servers), which carries out the
//! [`fault::plan`] through [`fault::world::FaultWorld`] -> a [`timeline`] (what
//! happened) -> the [`checker`]s (what held) -> [`render`] (`report.json`,
//! `summary.txt`, the plots, `timeline.html`: what a person and a script read). Every
//! random draw comes from one root [`seed`], forked per subsystem. Nothing here knows
//! madsim: the real-network mode builds this crate without it.
#![deny(missing_docs)]

pub mod checker;
pub mod fault;
pub mod flags;
pub mod noise;
pub mod protocol;
pub mod render;
pub mod scenario;
pub mod seed;
pub mod swarm;
pub mod timeline;

mod clock_model;
mod rendezvous;
mod run_output;
mod trial;

pub use baton_protocols::NodeId;
pub use checker::{check, Checks, Findings, Property, Violation};
pub use clock_model::{ClockChange, Skew};
pub use render::artifacts::Artifacts;
pub use rendezvous::{owned, owner, score};
pub use run_output::{RunOutput, TimelineFile, BUCKET_US};
pub use scenario::{load, load_str, Resolved, Scenario, ScenarioError};
pub use timeline::{Entry, Event};
pub use trial::{LedgerCheck, TrialReport};
