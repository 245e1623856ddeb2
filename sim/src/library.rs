//! Baton as a library for a test: your own node function on every simulated node.
//!
//! A test builds a world from a resolved scenario and a seed, hands it an async function
//! that is each node's process, and gets the same [`Artifacts`] as `sim run`: report,
//! summary, timeline, `timeline.html`, verdicts and a reproduce line (the test's own
//! command, given with [`World::reproduce`]).
//!
//! ```ignore
//! let scenario = baton_model::load(Path::new("scenarios/clean-kill.toml"), &[])?;
//! let run = baton_sim::library::World::new(&scenario, 42)?
//!     .reproduce("cargo test -p my-elector --test sim clean_kill")
//!     .nodes(|node: NodeCtx| async move { my_elector::run(node).await })
//!     .run()?;
//! assert!(run.passed, "{}", run.summary_txt);
//! ```
//!
//! The node function runs on the node (a kill ends it, a restart calls it again with
//! the next incarnation), talks to the scenario's etcd cluster at
//! [`NodeCtx::endpoints`] (with `baton-etcd-client`), and reports what it believes:
//! [`NodeCtx::lead`] with its fencing token when it believes it leads, [`Term::step_down`]
//! when it no longer does. While a term is held the node does the leader's protected
//! work under that token exactly as Baton's own nodes do (fenced writes, the sequencer's
//! batches), so the checkers judge the user's node as they judge Baton's protocols. How
//! the user's function becomes a protocol: `crate::world::protocol::user_node`.

use crate::run::{report, report_verdict, simulate_with};
use crate::world::protocol::user_node::{NodeFn, UserNode};
use baton_model::protocol::ProtocolName;
use baton_model::scenario::Resolved;
use std::future::Future;
use std::sync::Arc;

pub use crate::cmd::shrink::{Minimal, MinimizeError};
pub use crate::run::{Artifacts, RunError};
pub use crate::world::protocol::desk::{Desk, Requests, Written};
pub use crate::world::protocol::user_node::{NodeCtx, Term};
pub use crate::world::timeline::WriteOp;
pub use baton_protocols::{Clock, LossReason};

/// Why a library run gave no report.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The scenario's protocol is not `etcd-lease`: a user's node runs on its etcd.
    #[error("scenario {path}: protocol = \"{protocol}\"; a library run needs protocol = \"etcd-lease\" (its etcd cluster serves the user's node)")]
    NotEtcd {
        /// The scenario file.
        path: String,
        /// The protocol it names.
        protocol: String,
    },
    /// The scenario's etcd has one member: `baton-etcd-client` talks to a cluster's
    /// members.
    #[error("scenario {path}: [etcd] members = {members}; a library run needs a cluster (members >= 3 is etcd's smallest fault-tolerant one)")]
    NoCluster {
        /// The scenario file.
        path: String,
        /// The members it names.
        members: u32,
    },
    /// The scenario shards its fleet (`partitions`): a user's node runs one election.
    #[error("scenario {path}: partitions = {partitions}; a library run's node runs one election (partitions = 0)")]
    Sharded {
        /// The scenario file.
        path: String,
        /// The partitions it names.
        partitions: u32,
    },
    /// [`World::run`] without [`World::nodes`].
    #[error("no node function: call World::nodes before World::run")]
    NoNodes,
    /// A shrink could not be done.
    #[error(transparent)]
    Shrink(Box<MinimizeError>),
    /// The run itself gave no report.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// One library run being set up: a scenario, a seed, the user's node function.
pub struct World {
    resolved: Resolved,
    seed: u64,
    node_fn: Option<NodeFn>,
    own_work: bool,
}

impl World {
    /// A world for `resolved` under `seed`. The scenario must run `etcd-lease` on an etcd
    /// cluster (the default `[etcd]` has three members), unsharded.
    pub fn new(resolved: &Resolved, seed: u64) -> Result<World, Error> {
        let s = &resolved.scenario;
        if s.protocol != ProtocolName::EtcdLease {
            return Err(Error::NotEtcd {
                path: resolved.path.clone(),
                protocol: s.protocol.name().to_string(),
            });
        }
        let cluster = s.etcd_cluster();
        if !cluster.is_cluster() {
            return Err(Error::NoCluster {
                path: resolved.path.clone(),
                members: cluster.members,
            });
        }
        if s.partitions > 0 {
            return Err(Error::Sharded {
                path: resolved.path.clone(),
                partitions: s.partitions,
            });
        }
        Ok(World {
            resolved: resolved.clone(),
            seed,
            node_fn: None,
            own_work: false,
        })
    }

    /// The command that repeats this run, for the report's reproduce line (the test's
    /// own: `sim run` would run Baton's elector, not yours). `{seed}` in it is replaced
    /// by the run's seed, so that a search's failure names its own.
    pub fn reproduce(mut self, command: impl Into<String>) -> World {
        self.resolved.command = Some(command.into());
        self
    }

    /// The user's nodes do the leader's protected work themselves: while a term is held,
    /// Baton's node makes no write; the user's node makes its own through the term's
    /// [`Desk`] ([`NodeCtx::desk`]: the claim, ticks, sequence batches) and answers the
    /// sequencer's client from it ([`Desk::requests`]). Without it, Baton's node does the
    /// work under the user's token.
    pub fn own_work(mut self) -> World {
        self.own_work = true;
        self
    }

    /// Every node's process: `f` is called on each node at each start.
    pub fn nodes<F, Fut>(mut self, f: F) -> World
    where
        F: Fn(NodeCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.node_fn = Some(Arc::new(move |ctx| Box::pin(f(ctx))));
        self
    }

    /// Runs the world under its seed and renders its artifacts, as `sim run` does.
    pub fn run(&self) -> Result<Artifacts, Error> {
        self.run_seed(self.seed)
    }

    /// Runs the world under each of `seeds` in order, as `sim search` does with one
    /// worker: the first failing run, or `None` when every run passed.
    pub fn search(&self, seeds: impl IntoIterator<Item = u64>) -> Result<Option<Found>, Error> {
        for seed in seeds {
            let run = self.run_seed(seed)?;
            if !run.passed {
                return Ok(Some(Found { seed, run }));
            }
        }
        Ok(None)
    }

    /// Shrinks the failing run under `seed` as `sim shrink` does (proptest's shrinking
    /// over its faults: drop each, then shrink each one's numbers), within `max_runs`
    /// candidates, each run with the user's node; the result is replayed twice to the same
    /// report. `None` when the run passes. [`Minimal::file_text`] writes it as a scenario
    /// file that [`baton_model::load`] reads back for [`World::new`].
    pub fn shrink(&self, seed: u64, max_runs: u64) -> Result<Option<Minimal>, Error> {
        let base = baton_model::swarm::materialize(&self.resolved, seed).map_err(RunError::from)?;
        let node_fn = self.node_fn()?;
        let run = |r: &Resolved, seed: u64, recorded: bool| {
            self.run_resolved(&node_fn, r, seed, recorded)
        };
        crate::cmd::shrink::minimize_by(&base, seed, max_runs, None, &|| false, |_, _| {}, &run)
            .map_err(|e| Error::Shrink(Box::new(e)))
    }

    /// One run under `seed`: a swarm's faults drawn from it, as `sim run` draws them.
    pub fn run_seed(&self, seed: u64) -> Result<Artifacts, Error> {
        let resolved =
            baton_model::swarm::materialize(&self.resolved, seed).map_err(RunError::from)?;
        Ok(self.run_resolved(&self.node_fn()?, &resolved, seed, true)?)
    }

    /// The user's node function, once given.
    fn node_fn(&self) -> Result<NodeFn, Error> {
        self.node_fn.clone().ok_or(Error::NoNodes)
    }

    /// `resolved` (faults written out) under `seed` with the user's node; `recorded`:
    /// with the timeline and the pages.
    fn run_resolved(
        &self,
        node_fn: &NodeFn,
        resolved: &Resolved,
        seed: u64,
        recorded: bool,
    ) -> Result<Artifacts, RunError> {
        let mut resolved = resolved.clone();
        if let Some(c) = &mut resolved.command {
            *c = c.replace("{seed}", &seed.to_string());
        }
        let inner = crate::world::protocol::build(&resolved.scenario);
        let ttl_ms = resolved
            .scenario
            .etcd_lease
            .clone()
            .unwrap_or_default()
            .lease_ttl_ms;
        let tick_ms = resolved.scenario.work.tick_interval_ms;
        let protocol = Arc::new(UserNode::new(
            inner,
            node_fn.clone(),
            (ttl_ms, tick_ms),
            self.own_work,
        ));
        let out = simulate_with(&resolved, seed, recorded, Some(protocol))?;
        Ok(if recorded {
            report(&resolved, seed, out)
        } else {
            report_verdict(&resolved, seed, out)
        })
    }
}

/// A failing run a search found.
#[derive(Debug)]
pub struct Found {
    /// Its seed.
    pub seed: u64,
    /// Its artifacts.
    pub run: Artifacts,
}
