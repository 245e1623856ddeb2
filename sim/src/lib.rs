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

pub mod cli;
pub mod cmd;
pub mod error;
pub mod run;
pub mod world;
