//! The world's side of the fault plan: what a world must offer ([`FaultWorld`]: a clock,
//! its observations and its verbs) and the one loop that joins the two ([`drive`]).
//!
//! The plan ([`super::plan`]) decides; a world only acts. The simulator's madsim world
//! and real mode's supervisor both implement [`FaultWorld`], and neither decides when a
//! fault fires, whom it hits or how it heals.

use super::plan::{Acted, FaultPlan, Step, Verb, Wait};
use super::Unresolved;
use crate::timeline::Event;
use std::future::Future;
use std::sync::{Arc, Mutex};

/// How often a world is asked again while the plan waits for a trigger.
pub const POLL_MS: u64 = 5;

/// A world that carries out a fault plan: its clock, what it observes, and its verbs.
/// It decides nothing: when, whom, what repeats and how it heals are the plan's.
pub trait FaultWorld {
    /// Why the world broke (the run ends with it).
    type Error;

    /// Now on the run's clock, µs.
    fn now_us(&self) -> i64;

    /// Waits until `t_us` (not at all if it has passed); false if the run ended first.
    fn sleep_until_us(&mut self, t_us: i64) -> impl Future<Output = Result<bool, Self::Error>>;

    /// Waits `ms` from now; false if the run ended first.
    fn sleep_ms(&mut self, ms: u64) -> impl Future<Output = Result<bool, Self::Error>>;

    /// The node that believes it leads now, if any.
    fn leader(&mut self) -> impl Future<Output = Option<String>>;

    /// A running node that does not believe it leads, if any.
    fn follower(&mut self) -> impl Future<Output = Option<String>>;

    /// The etcd member that leads the lease service now, if any.
    fn etcd_leader(&mut self) -> impl Future<Output = Option<String>>;

    /// The etcd member the Baton leader's client talks to now, if a node leads.
    fn leader_member(&mut self) -> impl Future<Output = Option<String>>;

    /// The next running node after `node` in fleet order, wrapping around (a
    /// transfer's `next`), if any. A world that cannot run transfers (real mode refuses
    /// them before it starts) keeps this default, which finds none.
    fn next_running(&mut self, node: &str) -> impl Future<Output = Option<String>> {
        let _ = node;
        async { None }
    }

    /// Whether the timeline holds an event satisfying `pred` stamped at or after
    /// `since_us`.
    fn seen_since(&mut self, since_us: i64, pred: &dyn Fn(&Event) -> bool) -> bool;

    /// Records an event on the run's timeline.
    fn record(&mut self, event: Event);

    /// Carries out a verb for fault `index`.
    fn act(&mut self, index: usize, verb: Verb)
        -> impl Future<Output = Result<Acted, Self::Error>>;

    /// Arranges for `plan.heal(index)` to be carried out `after_ms` from now (the
    /// world's own timer: a task, a queue).
    fn heal_later(&mut self, index: usize, after_ms: u64);
}

/// Carries out `steps` in order.
pub async fn carry_out<W: FaultWorld>(world: &mut W, steps: Vec<Step>) -> Result<(), W::Error> {
    for step in steps {
        match step {
            Step::Record(e) => world.record(e),
            Step::Act(index, verb) => {
                if let Acted::Skipped(reason) = world.act(index, verb).await? {
                    world.record(Event::FaultSkipped { index, reason });
                }
            }
            Step::HealLater { index, after_ms } => world.heal_later(index, after_ms),
        }
    }
    Ok(())
}

/// Fires the plan's faults in `world` until every fault fired or the run ended.
pub async fn drive<W: FaultWorld>(
    world: &mut W,
    plan: &Arc<Mutex<FaultPlan>>,
) -> Result<(), W::Error> {
    loop {
        let next = plan.lock().expect("the plan's lock").next_wait();
        let Some((_, wait)) = next else {
            return Ok(());
        };
        let reached = match wait {
            Wait::Until(t_us) => world.sleep_until_us(t_us).await?,
            Wait::Trigger(trigger, then_ms) => {
                let mut seen = false;
                loop {
                    let hit = plan
                        .lock()
                        .expect("the plan's lock")
                        .triggered(trigger, |since, pred| world.seen_since(since, pred));
                    if hit {
                        seen = true;
                        break;
                    }
                    if !world.sleep_ms(POLL_MS).await? {
                        break;
                    }
                }
                seen && world.sleep_ms(then_ms).await?
            }
        };
        if !reached {
            return Ok(());
        }
        // The moment it fires: a later `leader-elected` waits for a win after it.
        let now = world.now_us();
        let ends = plan.lock().expect("the plan's lock").ends();
        let mut resolved: Result<Vec<String>, Unresolved> = Ok(vec![]);
        for end in &ends {
            let (leader, follower) = match end.as_str() {
                "leader" => (world.leader().await, None),
                crate::scenario::etcd_cluster::ETCD_LEADER => (world.etcd_leader().await, None),
                crate::scenario::etcd_cluster::LEADER_MEMBER => (world.leader_member().await, None),
                "follower" => (None, world.follower().await),
                // A transfer's `next` follows its target, resolved just before.
                crate::fault::NEXT => {
                    let after = resolved.as_ref().ok().and_then(|r| r.first().cloned());
                    let next = match after {
                        Some(a) => world.next_running(&a).await,
                        None => None,
                    };
                    (None, next)
                }
                _ => (None, None),
            };
            let r = plan
                .lock()
                .expect("the plan's lock")
                .resolve(end, leader, follower);
            match r {
                Ok(r) => resolved.as_mut().map(|v| v.push(r)).unwrap_or(()),
                Err(e) => {
                    // A fault whose end cannot be resolved is skipped: no more asking.
                    resolved = Err(e);
                    break;
                }
            }
        }
        let steps = plan.lock().expect("the plan's lock").fire(now, resolved);
        carry_out(world, steps).await?;
    }
}
