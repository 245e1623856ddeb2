//! etcd: a live 3-member cluster on loopback ([`cluster`]), the `etcd-client` crate
//! behind the protocols' `EtcdApi` ([`client`]), and the supervisor's observers of the
//! members and the election's keys ([`watch`]).

pub mod client;
pub mod cluster;
pub mod watch;
