//! PostgreSQL: a live cluster on loopback ([`server`]), `tokio-postgres` behind the
//! protocols' `DbApi` ([`client`]), and the observer of the lease row ([`watch`]).

pub mod client;
pub mod server;
pub mod watch;
