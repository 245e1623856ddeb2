//! The protocols, one module each: every protocol's simulated backend pinned against the
//! real system's documented semantics through the protocol's own client, every committed
//! scenario run under it, and its claims (its fencing, its failover bound, its declared
//! safety bounds) checked over a few seeds. One test binary, so that the nine share one
//! link step; each module's own doc gives its methodology.

#[path = "../common/mod.rs"]
mod common;

mod consul_session;
mod db_row;
mod etcd_lease;
mod k8s_lease;
mod peer;
mod raft;
mod raft_log;
mod redis;
mod safety;
mod zk_sequential;
