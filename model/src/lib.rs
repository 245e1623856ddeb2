//! Baton's model: what a run is and how it is judged, whichever world ran it.
//!
//! A run is: [`scenario`] (what to do, with its [`fault`]s, or a [`swarm`] that draws
//! them) -> a world (the simulator's madsim runtime, or real processes against a live
//! etcd) -> [`timeline`] (what happened) -> [`checker`] (what held) -> [`report`](render::report),
//! [`plot`](render::plot) and [`artifacts`](render::artifacts) (what a person and a script read). Nothing here knows
//! madsim: the real-network mode builds this crate without it.
#![deny(missing_docs)]

pub mod checker;
pub mod clock_model;
pub mod fault;
pub mod flags;
pub mod protocol;
pub mod render;
pub mod rendezvous;
pub mod run_output;
pub mod scenario;
pub mod seed;
pub mod swarm;
pub mod timeline;
pub mod trial;

pub use baton_protocols::NodeId;
