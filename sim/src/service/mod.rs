//! The simulated services the protocols lean on, and the fenced resource.

pub mod db;
pub mod etcd;
pub mod redis;
pub mod resource;
