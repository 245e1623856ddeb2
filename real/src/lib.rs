//! Baton's real-network mode: the same protocol code against live servers, as processes.
#![cfg_attr(
    madsim,
    doc = "",
    doc = "This crate is built without `--cfg madsim` (the simulation build leaves it empty).",
    doc = "Its documentation: `CARGO_ENCODED_RUSTFLAGS= CARGO_ENCODED_RUSTDOCFLAGS= cargo doc",
    doc = "--no-deps -p baton-real --target-dir target/real`."
)]
//! Real mode checks what of a scenario it can run faithfully before anything starts, and
//! refuses the rest in one line naming the file, the line and the key:
//!
//! ```
//! # #[cfg(not(madsim))] {
//! use baton_real::trial::refusals::{check, Source};
//!
//! let text = "protocol = \"etcd-lease\"\nduration_ms = 10000\n[network]\nloss_ppm = 5000\n";
//! let scenario = baton_model::load_str("lossy.toml", "lossy", text, &[]).unwrap();
//! let src = Source { text, overrides: &[], base: &scenario, swarm_seed: None };
//! let refusal = check(&scenario, &src).unwrap_err();
//! assert_eq!(refusal.key, "network.loss_ppm");
//! assert!(refusal.to_string().starts_with("lossy.toml:4: key `network.loss_ppm`: real mode cannot run this"));
//! # }
//! ```
//!
//! A trial ([`trial`]) starts the run's live backend ([`backend`]: a 3-member etcd cluster,
//! Redis, ZooKeeper or PostgreSQL on loopback, each with its client and its observer;
//! raft's messages travel between the node processes), the fenced resource on a SQLite
//! ledger ([`resource`]), the fleet ([`node`]: each node a process with the protocol's own
//! elector, the simulator's code) and the load client ([`load`]), every link behind a TCP
//! proxy that can be cut, mended and slowed; the [`supervisor`] carries out the scenario's
//! fault plan with real verbs (SIGKILL, SIGSTOP/SIGCONT, cut proxies), then stops
//! everything, merges the processes' logs into the model's timeline and checks it with the
//! model's checkers. Nodes of your own run under the node contract ([`contract`]: the
//! rules, the command template, the checks before the first fault, the outside view of
//! their beliefs, and `conform`, the spec's experiments against any node). Every child is
//! in a process group of its own and dies with the run ([`process`]); ports are picked free
//! on loopback ([`ports`]).
#![cfg(not(madsim))]
#![deny(missing_docs)]

// The run's parts, each a namespace: the live backends, the supervisor and its fault
// verbs, the processes it starts (node, resource, load), one trial and the `real`
// command, nodes of your own, and the children and ports a run must not leak.
pub mod backend;
pub mod contract;
pub mod load;
pub mod node;
pub mod ports;
pub mod process;
pub mod resource;
pub mod supervisor;
pub mod trial;

mod backoff;
mod events;
mod protocol;
mod run_clock;

pub use protocol::RealProtocol;
pub use run_clock::RunClock;
