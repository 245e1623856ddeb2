//! The simulated services the protocols lean on, and the fenced resource.
//!
//! A service declares the requests it answers, in its own module (etcd's and the
//! resource's are in [`crate::world::rpc`]); a protocol's client glue in [`crate::world::protocol`]
//! imports them from here and sends them, so references run from client to service only.

pub mod consul;
pub mod db;
pub mod etcd;
pub mod etcd_cluster;
pub mod k8s;
pub mod redis;
pub mod resource;
pub mod zk;
