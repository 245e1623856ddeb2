//! Baton: a deterministic simulation testbed for leader-election protocols.
//!
//! A run is: [`scenario`] (what to do) -> [`world`] (every process in one madsim runtime)
//! and [`driver`] (fires the [`fault`]s) -> [`timeline`] (what happened) -> [`checker`]
//! (what held) and [`lanes`] (who led, wrote and was hit, when) -> [`report`], [`plot`]
//! and [`timeline_html`] (what a person and a script read).
#![deny(missing_docs)]

pub mod bench;
pub mod checker;
pub mod cli;
pub mod client;
pub mod clock;
pub mod driver;
pub mod experiment;
pub mod fault;
pub mod lanes;
pub mod lanes_plot;
pub mod matrix;
pub mod net;
pub mod node;
pub mod noise;
pub mod output;
pub mod plot;
pub mod pool;
pub mod progress;
pub mod protocol;
pub mod report;
pub mod requests;
pub mod rpc;
pub mod run;
pub mod scenario;
pub mod search;
pub mod seed;
pub mod service;
pub mod shrink;
pub mod swarm;
pub mod sweep;
pub mod sweep_plot;
pub mod timeline;
pub mod timeline_html;
pub mod ttl;
pub mod work;
pub mod world;
