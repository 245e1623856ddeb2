//! The simulated services the protocols lean on, and the fenced resource.

pub mod etcd;
pub mod resource;
pub mod zk;
