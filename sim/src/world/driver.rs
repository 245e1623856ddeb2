//! The simulator's hands for the fault plan: [`SimFaults`] carries out the plan's verbs
//! on the madsim [`World`], with madsim's clock and timers. It decides nothing: when a
//! fault fires, whom it hits and how it heals are the plan's
//! ([`baton_model::fault::plan`]).

use crate::world::clock::global_now_us;
use crate::world::timeline::Event;
use crate::world::World;
use baton_model::fault::plan::{Acted, ClockChange, FaultPlan, Verb};
use baton_model::fault::world::{self, FaultWorld};
use baton_model::fault::Firing;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The world, the plan it carries out, and what a pause's end needs.
#[derive(Clone)]
pub struct SimFaults {
    world: Arc<World>,
    plan: Arc<Mutex<FaultPlan>>,
    /// Per pause fault, the incarnation it held (`None`: the node was down).
    held: Arc<Mutex<BTreeMap<usize, Option<u64>>>>,
}

/// Fires `faults` in `world` under `seed` until the run ends (the task is dropped then).
/// `base_network` is the scenario's network, which a `network` fault's end restores.
pub async fn drive(
    world: Arc<World>,
    faults: Vec<Firing>,
    seed: u64,
    base_network: (u64, u64, u64),
) {
    // The plan resolves targets as text: a node's name, an etcd member's, `backend`.
    let nodes = world.nodes.iter().map(|n| n.name.to_string()).collect();
    let plan = Arc::new(Mutex::new(FaultPlan::new(
        faults,
        seed,
        base_network,
        nodes,
    )));
    let mut hands = SimFaults {
        world,
        plan: plan.clone(),
        held: Default::default(),
    };
    // Nothing in the simulated world fails: its verbs return no errors.
    let _ = world::drive(&mut hands, &plan).await;
}

impl FaultWorld for SimFaults {
    type Error = std::convert::Infallible;

    fn now_us(&self) -> i64 {
        global_now_us()
    }

    async fn sleep_until_us(&mut self, t_us: i64) -> Result<bool, Self::Error> {
        let now = global_now_us();
        if t_us > now {
            madsim::time::sleep(Duration::from_micros((t_us - now) as u64)).await;
        }
        Ok(true)
    }

    async fn sleep_ms(&mut self, ms: u64) -> Result<bool, Self::Error> {
        madsim::time::sleep(Duration::from_millis(ms)).await;
        Ok(true)
    }

    async fn leader(&mut self) -> Option<String> {
        self.world.leader().map(String::from)
    }

    async fn follower(&mut self) -> Option<String> {
        self.world.follower().map(String::from)
    }

    async fn etcd_leader(&mut self) -> Option<String> {
        self.world.etcd_leader()
    }

    async fn leader_member(&mut self) -> Option<String> {
        self.world.leader_member()
    }

    async fn next_running(&mut self, node: &str) -> Option<String> {
        self.world.next_running(node).map(String::from)
    }

    fn seen_since(&mut self, since_us: i64, pred: &dyn Fn(&Event) -> bool) -> bool {
        self.world.timeline.any_since(since_us, pred)
    }

    fn record(&mut self, event: Event) {
        self.world.timeline.record(event);
    }

    async fn act(&mut self, _index: usize, verb: Verb) -> Result<Acted, Self::Error> {
        let w = &self.world;
        match verb {
            Verb::Kill(n) => w.kill(&n),
            Verb::Restart(n) => w.restart(&n),
            Verb::Resign(n) => w.resign(&n),
            Verb::Transfer { node, to } => {
                if !w.transfer(&node, &to) {
                    return Ok(Acted::Skipped(format!("`{node}` does not lead")));
                }
            }
            Verb::Pause { node, index } => {
                let held = w.pause(&node);
                self.held.lock().unwrap().insert(index, held);
            }
            Verb::Resume { node, index } => {
                let held = self.held.lock().unwrap().remove(&index).flatten();
                w.resume(&node, held);
            }
            Verb::ArmPauseBeforeWrite {
                node,
                index,
                duration_ms,
            } => w.arm_pause(&node, index, duration_ms),
            Verb::Cut { from, to, one_way } => {
                w.cut(&from, &to);
                if !one_way {
                    w.cut(&to, &from);
                }
            }
            Verb::Mend { from, to, one_way } => {
                w.mend(&from, &to);
                if !one_way {
                    w.mend(&to, &from);
                }
            }
            Verb::MendAll => w.mend_all(),
            Verb::Slow {
                from,
                to,
                latency_ms,
            } => w.slow(&from, &to, latency_ms),
            Verb::Network {
                latency_ms_min,
                latency_ms_max,
                loss_ppm,
            } => w.set_network(latency_ms_min, latency_ms_max, loss_ppm),
            Verb::StallDisk(n, stalled) => w.stall_disk(&n, stalled),
            Verb::Clock(n, change) => match change {
                ClockChange::Offset(ms) => w.clock(&n).set_offset_ms(ms),
                ClockChange::Drift(ppm) => w.clock(&n).set_drift_ppm(ppm),
                ClockChange::Step(ms) => w.clock(&n).step_ms(ms),
            },
        }
        Ok(Acted::Done)
    }

    fn heal_later(&mut self, index: usize, after_ms: u64) {
        // A task of its own per heal, sleeping from now: the heal lands at its moment
        // whatever the plan waits for next.
        let mut hands = self.clone();
        madsim::task::spawn(async move {
            madsim::time::sleep(Duration::from_millis(after_ms)).await;
            let steps = hands.plan.lock().unwrap().heal(index);
            let _ = world::carry_out(&mut hands, steps).await;
        });
    }
}
