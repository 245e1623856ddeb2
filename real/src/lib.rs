//! Baton's real-network mode: the same protocol code against its live backend (etcd,
//! Redis, ZooKeeper or PostgreSQL; raft's node processes are their own), as processes.
//!
//! Built only without `--cfg madsim` (the real build: see docs/src/real-mode.md); under
//! the simulation build this crate is empty. Pieces, one concept per module:
//!
//! - [`run_clock`]: one monotonic clock for every process of a run;
//! - [`events`]: the simulator's timeline types, per-process event logs and their merge;
//! - [`clock`]: a node's skewable clock over the run's clock;
//! - [`backoff`]: bounded exponential backoff with seeded jitter, for every retry at a
//!   real server;
//! - [`etcd_client`]: `EtcdApi` over the `etcd-client` crate, every call bounded, every
//!   failure paced;
//! - [`etcd_cluster`]: a 3-member etcd cluster on loopback, started and removed per run,
//!   and [`etcd_watch`]: the supervisor's observers of it;
//! - [`server`]: a single-process backend server on loopback, started and removed per
//!   run, and each kind: [`redis_server`], [`zk_server`], [`pg_server`];
//! - [`redis_client`], [`zk_client`], [`pg_client`]: `RedisApi` over the `redis` crate,
//!   `ZkApi` over `zookeeper-client`, `DbApi` over `tokio-postgres`, every call bounded;
//! - [`redis_watch`], [`zk_watch`], [`pg_watch`]: the supervisor's observers of the
//!   Redis lock key, the election's znodes, the database row;
//! - [`protocol`]: which protocols real mode runs ([`protocol::RealProtocol`]);
//! - [`backend`]: the run's live backend, whichever it is;
//! - [`node_elector`]: a node's elector for its protocol, on its live client;
//! - [`raft_http`]: raft's messages between node processes, over HTTP;
//! - [`proxy`]: TCP proxies that cut (holding bytes, never closing), mend and slow links;
//! - [`ledger`]: the fenced resource's SQLite ledger and the `lag()` check;
//! - [`resource`]: the resource process around the ledger;
//! - [`metrics`]: a node's Prometheus metrics;
//! - [`work`], [`node`]: the leader work and the node process with the spec's HTTP API;
//! - [`node_config`]: what the supervisor tells a node process;
//! - [`load`]: the load client process;
//! - [`process`], [`ports`]: children that cannot outlive the run, loopback ports;
//! - [`supervisor`]: starts everything, the fault verbs, stop and merge;
//! - [`smoke`]: one clean-kill trial, end to end;
//! - [`support`]: what of a scenario real mode can run, checked before anything starts;
//! - [`driver`]: fires a scenario's faults through the supervisor's verbs;
//! - [`trial`]: one trial of a scenario: start, drive, stop, check, render the report;
//! - [`trials`]: the `real` command: trials, their reports and `trials.json`;
//! - nodes of your own (`--node-cmd`, `docs/src/node-contract.md`): [`node_contract`] (the
//!   rules and the checks of what a node answers), [`node_cmd`] (the command template
//!   and the start), [`preflight`] (the rules checked before the first fault),
//!   [`status_poll`] (beliefs and breaches seen by polling `/status`), [`outside_view`]
//!   (the timeline completed from outside), [`contract_node`] (Baton's own node behind
//!   the contract's flags) and [`conform`] with [`conform_report`] (the `conform`
//!   command: the spec's experiments against any node, and its report).
#![cfg(not(madsim))]
#![deny(missing_docs)]

pub mod backend;
pub mod backoff;
pub mod contract;
pub mod events;
pub mod load;
pub mod node;
pub mod ports;
pub mod process;
pub mod protocol;
pub mod resource;
pub mod run_clock;
pub mod supervisor;
pub mod trial;
