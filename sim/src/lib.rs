//! Baton: a deterministic simulation testbed for leader-election protocols.
#![deny(missing_docs)]

pub mod client;
pub mod clock;
pub mod driver;
pub mod etcd_client;
pub mod fault;
pub mod node;
pub mod rpc;
pub mod run;
pub mod scenario;
pub mod seed;
pub mod service;
pub mod timeline;
pub mod work;
pub mod world;
