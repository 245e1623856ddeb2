//! The module's host in Baton's world (the world's `NodeCtx`), and the world of a
//! scenario file with the module on every node: shared by `tests/sim.rs` and
//! `benches/clean_kill.rs`.
#![allow(dead_code)]

use baton_sim::library::{LossReason, NodeCtx, World};
use rust_elector::{Config, Host, StepDown, Term};
use std::path::Path;
use std::time::Duration;

/// Whether this build has the planted bug.
pub const BUGGY: bool = cfg!(feature = "no-local-deadline");

/// The module's host in the simulation: the world's node.
struct SimHost(NodeCtx);

/// A term as the world keeps it.
struct SimTerm(baton_sim::library::Term);

impl Host for SimHost {
    type Term = SimTerm;
    fn lead(&self, token: u64) -> SimTerm {
        SimTerm(self.0.lead(token))
    }
    fn sees_leader(&self, leader: Option<(String, u64)>) {
        self.0
            .sees_leader(leader.as_ref().map(|(name, token)| (name.as_str(), *token)));
    }
}

impl Term for SimTerm {
    fn step_down(&self, why: StepDown) {
        self.0.step_down(match why {
            StepDown::DeadlinePassed => LossReason::DeadlinePassed,
            StepDown::LeaseLost => LossReason::Revoked,
            StepDown::Ended => LossReason::Resigned,
        });
    }
    async fn ended(&self) {
        self.0.ended().await
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
    };
    rust_elector::run(config, SimHost(node)).await
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
        .reproduce(format!(
            "cd examples/rust-elector && cargo test --release{features} --test sim -- {file} (seed {{seed}})"
        ))
        .nodes(node)
}
