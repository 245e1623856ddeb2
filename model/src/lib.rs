//! Baton's model: what a run is and how it is judged, whichever world ran it.
//!
//! A run is: [`scenario`] (what to do, with its [`fault`]s, or a [`swarm`] that draws
//! them) -> a world (the simulator's madsim runtime, or real processes against a live
//! etcd) -> [`timeline`] (what happened) -> [`checker`] (what held) -> [`report`],
//! [`plot`] and [`artifacts`] (what a person and a script read). Nothing here knows
//! madsim: the real-network mode builds this crate without it.
#![deny(missing_docs)]

pub mod artifacts;
pub mod checker;
pub mod client_stats;
pub mod clock_model;
pub mod etcd_cluster;
pub mod fault;
pub mod fault_plan;
pub mod flags;
pub mod key_error;
pub mod lanes;
pub mod lanes_plot;
pub mod outcome;
pub mod output;
pub mod plot;
pub mod plot_style;
pub mod protocol;
pub mod real_run;
pub mod rendezvous;
pub mod report;
pub mod scenario;
pub mod seed;
pub mod shards_plot;
pub mod shell;
pub mod swarm;
pub mod swim;
pub mod timeline;
pub mod timeline_html;
pub mod ttl;
