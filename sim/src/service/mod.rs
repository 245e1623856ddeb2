//! The simulated services the protocols lean on, and the fenced resource.

pub mod lease_service;
pub mod resource;
