//! The simulated services the protocols lean on, and the fenced resource.

pub mod consul;
pub mod db;
pub mod etcd;
pub mod k8s;
pub mod redis;
pub mod resource;
pub mod zk;
