//! The module's host in Baton's world (the world's `NodeCtx`), and the world of a
//! scenario file with the module on every node: shared by `tests/sim.rs` and
//! `benches/clean_kill.rs`.
#![allow(dead_code)]

use baton_sim::library::{Desk, LossReason, NodeCtx, Requests, World, WriteOp};
use rust_elector::{Batch, Config, Host, Op, StepDown, Written};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Whether this build has the planted bug.
pub const BUGGY: bool = cfg!(feature = "no-local-deadline");

/// The module's host in the simulation: the world's node, whose term's desk carries the
/// module's writes to the simulated resource and the sequencer's requests to it.
struct SimHost {
    node: NodeCtx,
    /// The term the node leads, as the world keeps it.
    term: Mutex<Option<baton_sim::library::Term>>,
}

impl SimHost {
    /// The world's term for `token`, if it is the current one.
    fn term(&self, token: u64) -> Option<baton_sim::library::Term> {
        let term = self.term.lock().unwrap().clone()?;
        (term.token() == token).then_some(term)
    }

    /// The desk of the term `token`: `None` once it is over.
    async fn desk(&self, token: u64) -> Option<Arc<dyn Desk>> {
        let term = self.term(token)?;
        self.node.desk(&term).await
    }
}

/// The sequencer's requests, as the world hands them over.
struct SimBatch(Box<dyn Requests>);

impl Batch for SimBatch {
    fn count(&self) -> u64 {
        self.0.count()
    }
    fn grant(self, token: u64, first: u64) {
        self.0.grant(token, first)
    }
    fn unavailable(self) {
        self.0.unavailable()
    }
}

impl Host for SimHost {
    type Batch = SimBatch;

    fn lead(&self, token: u64) {
        *self.term.lock().unwrap() = Some(self.node.lead(token));
    }

    fn step_down(&self, token: u64, why: StepDown) {
        if let Some(term) = self.term(token) {
            term.step_down(match why {
                StepDown::DeadlinePassed => LossReason::DeadlinePassed,
                StepDown::LeaseLost => LossReason::Revoked,
                StepDown::Fenced => LossReason::Fenced,
                StepDown::Resigned => LossReason::Resigned,
            });
        }
    }

    fn sees_leader(&self, leader: Option<(String, u64)>) {
        self.node
            .sees_leader(leader.as_ref().map(|(name, token)| (name.as_str(), *token)));
    }

    async fn write(&self, token: u64, op: Op) -> Written {
        let Some(desk) = self.desk(token).await else {
            return Written::Failed;
        };
        let op = match op {
            Op::Claim => WriteOp::Claim,
            Op::Tick(n) => WriteOp::Tick { n },
            Op::Seq { first, last } => WriteOp::Seq { first, last },
        };
        match desk.write(op).await {
            baton_sim::library::Written::Accepted { last_seq } => Written::Accepted { last_seq },
            baton_sim::library::Written::Rejected => Written::Rejected,
            baton_sim::library::Written::Failed => Written::Failed,
        }
    }

    async fn requests(&self, token: u64) -> Option<SimBatch> {
        let desk = self.desk(token).await?;
        desk.requests().await.map(SimBatch)
    }

    /// The world ends the term when the scenario asks the leader to resign.
    async fn resign_asked(&self, token: u64) {
        if let Some(term) = self.term(token) {
            term.ended().await;
        }
    }
}

/// One node: the module with the settings the live node takes from the contract.
async fn node(node: NodeCtx) {
    let config = Config {
        endpoints: node.endpoints(),
        prefix: "/baton/election".to_string(),
        name: node.name().to_string(),
        lease_ttl: Duration::from_millis(node.lease_ttl_ms()),
        call_timeout: Duration::from_millis(1000),
        retry: Duration::from_millis(200),
        tick: Duration::from_millis(node.tick_interval_ms()),
    };
    let host = SimHost {
        node,
        term: Mutex::new(None),
    };
    rust_elector::run(config, host).await
}

/// The world of `scenarios/<file>` with `set`, the module on every node.
pub fn world(file: &str, set: &[&str]) -> World {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(file);
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let scenario = baton_model::load(&path, &set).expect("the scenario loads");
    let features = if BUGGY {
        " --features no-local-deadline"
    } else {
        ""
    };
    World::new(&scenario, 0)
        .expect("an etcd-lease scenario on a cluster")
        .own_work()
        .reproduce(format!(
            "cd examples/rust-elector && cargo test --release{features} --test sim -- {file} (seed {{seed}})"
        ))
        .nodes(node)
}
