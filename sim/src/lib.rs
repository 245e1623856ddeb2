//! Baton: a deterministic simulation testbed for leader-election protocols.
#![deny(missing_docs)]

pub mod checker;
pub mod clock;
pub mod fault;
pub mod plot;
pub mod scenario;
pub mod seed;
pub mod timeline;
