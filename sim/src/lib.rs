//! Baton: a deterministic simulation testbed for leader-election protocols.
//!
//! A run is: [`scenario`] (what to do) -> [`world`] (every process in one madsim runtime)
//! and [`driver`] (fires the [`fault`]s) -> [`timeline`] (what happened) -> [`checker`]
//! (what held) and [`lanes`] (who led, wrote and was hit, when) -> [`report`], [`plot`]
//! and [`timeline_html`] (what a person and a script read).
//!
//! The crate is the simulation: without `--cfg madsim` it is empty, and the `sim` binary
//! (`main.rs`) stops the build with one message saying how to fix it, rather than a page
//! of errors from madsim's missing simulator API.
#![cfg(madsim)]
#![deny(missing_docs)]

// The model lives in its own crate, which the real-network mode shares; its modules are
// re-exported here so that `baton_sim::scenario` and the rest keep their paths.
pub use baton_model::{
    checker, fault, lanes, lanes_plot, output, plot, report, scenario, seed, shell, swarm,
    timeline_html, ttl,
};

pub mod bench;
pub mod bench_report;
pub mod bisect;
pub mod cli;
pub mod client;
pub mod clock;
pub mod compare;
pub mod driver;
pub mod error;
pub mod experiment;
pub mod interrupt;
pub mod matrix;
pub mod net;
pub mod node;
pub mod node_control;
pub mod node_env;
pub mod noise;
pub mod pool;
pub mod progress;
pub mod protocol;
pub mod real;
pub mod requests;
pub mod rpc;
pub mod run;
pub mod search;
pub mod service;
pub mod shard;
pub mod shrink;
pub mod stats;
pub mod sweep;
pub mod sweep_output;
pub mod sweep_plot;
pub mod swim;
pub mod timeline;
pub mod transfer;
pub mod work;
pub mod world;
