//! `etcd-client` 0.21's API, for an election module to run unchanged in Baton's seeded
//! world.
//!
//! Switch to it with a package rename, as madsim's own crates are switched:
//!
//! ```toml
//! [dependencies]
//! etcd-client = { package = "baton-etcd-client", path = "../baton/etcd-client" }
//! ```
//!
//! Without `--cfg madsim` this crate is `etcd-client` 0.21 itself, re-exported. With it
//! (Baton's simulation build), the same names are Baton's: the types, methods, option
//! builders, response accessors and `Error` have etcd-client's shapes, and every call is
//! an RPC over Baton's simulated network to a simulated etcd member, from the simulated
//! node that makes it. What is supported and what is not (a call the simulation does not
//! support does not exist there, so it fails to compile) is in the book's chapter "Test
//! your Rust elector" (`docs/src/rust-elector.md`).
#![cfg_attr(madsim, deny(missing_docs))]

#[cfg(not(madsim))]
pub use etcd_client::*;

#[cfg(madsim)]
mod sim;
#[cfg(madsim)]
pub use sim::*;
