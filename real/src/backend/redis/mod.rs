//! Redis: a live `redis-server` on loopback ([`server`]), the `redis` crate behind the
//! protocols' `RedisApi` ([`client`]), and the observer of the lock key ([`watch`]).

pub mod client;
pub mod server;
pub mod watch;
