//! Scenario files: one experiment each, in TOML.
//!
//! Loading goes file -> `--set` overrides -> typed [`Scenario`] -> semantic checks ->
//! [`Resolved`] (every default filled in, faults typed). Every failure is a
//! [`ScenarioError`] naming the file, line, key and what is allowed; nothing panics.
//!
//! One file a concern: the scenario's types (`types.rs`) and its smaller tables
//! (`sections.rs`); loading (`load.rs`), one step a table (`check.rs`, `faults.rs`),
//! each given a context (`context.rs`) that names file:line:key; `--set` overrides
//! (`overrides.rs`); error wording (`words.rs`); line lookup (`lines.rs`).

mod check;
mod context;
mod error;
pub mod etcd_cluster;
mod faults;
pub mod key_error;
mod lines;
mod load;
mod overrides;
mod sections;
pub mod swim;
mod types;
mod words;

pub use error::{write_location, ScenarioError};
pub use lines::line_of_key;
pub use load::{display_path, load, load_str, resolve};
pub use sections::{
    Expect, GcNoise, JobCanary, JobConfig, NetworkConfig, Noise, Slo, Sometimes, StepOnStop,
    WorkConfig,
};
pub use types::{Origin, Resolved, Scenario, NODES};
