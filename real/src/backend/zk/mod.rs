//! ZooKeeper: a live standalone server on loopback ([`server`]), `zookeeper-client`
//! behind the protocols' `ZkApi` ([`client`]), and the observer of the election's
//! znodes ([`watch`]).

pub mod client;
pub mod server;
pub mod watch;
