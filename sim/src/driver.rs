//! The policy side: fires a scenario's faults at their times through the world's verbs.

use crate::clock::global_now_us;
use crate::fault::{Fault, Firing, PausePoint, Trigger, When};
use crate::timeline::{Event, Role};
use crate::world::World;
use rand::Rng;
use std::sync::Arc;
use std::time::Duration;

/// How often the driver looks at the timeline while waiting for a trigger.
const POLL_MS: u64 = 5;

async fn sleep_until_us(t_us: i64) {
    let now = global_now_us();
    if t_us > now {
        madsim::time::sleep(Duration::from_micros((t_us - now) as u64)).await;
    }
}

/// Fires `faults` in order, each at its time or trigger plus its seeded jitter, until
/// the run ends. Jitter never reorders faults: one fires no earlier than the one before.
pub async fn drive(
    world: Arc<World>,
    faults: Vec<Firing>,
    seed: u64,
    base_network: (u64, u64, u64),
) {
    let mut prev_fired_us = 0i64;
    let mut prev_target: Option<String> = None;
    for (index, firing) in faults.into_iter().enumerate() {
        // One generator per firing, so that jitter on one fault never shifts another's.
        let jitter_ms = if firing.jitter_ms > 0 {
            crate::seed::fork(seed, &format!("fault/{index}")).gen_range(0..=firing.jitter_ms)
        } else {
            0
        };
        match firing.when {
            When::At(t_ms) => sleep_until_us((t_ms + jitter_ms) as i64 * 1000).await,
            When::After(Trigger::LeaderElected, delay_ms) => {
                while !world.timeline.any_since(prev_fired_us, |e| {
                    matches!(
                        e,
                        Event::RoleChanged {
                            role: Role::Leader,
                            ..
                        }
                    )
                }) {
                    madsim::time::sleep(Duration::from_millis(POLL_MS)).await;
                }
                madsim::time::sleep(Duration::from_millis(delay_ms + jitter_ms)).await;
            }
            When::After(Trigger::PreviousFaultEnded, delay_ms) => {
                if index > 0 {
                    while !ended(&world, index - 1, prev_fired_us) {
                        madsim::time::sleep(Duration::from_millis(POLL_MS)).await;
                    }
                }
                madsim::time::sleep(Duration::from_millis(delay_ms + jitter_ms)).await;
            }
        }
        prev_fired_us = global_now_us();
        prev_target = apply(&world, index, firing.fault, prev_target, base_network);
    }
}

fn ended(world: &World, index: usize, fired_us: i64) -> bool {
    world.timeline.any_since(fired_us, |e| match e {
        Event::FaultHealed { index: i, .. } | Event::FaultSkipped { index: i, .. } => *i == index,
        Event::FaultApplied { index: i, kind, .. } => *i == index && !lasting(kind),
        _ => false,
    })
}

/// Kinds whose end is a separate `FaultHealed` event.
fn lasting(kind: &str) -> bool {
    matches!(kind, "pause" | "partition" | "network" | "slow-link")
}

/// Applies one fault; returns the node it hit (for a later `previous` target).
fn apply(
    world: &Arc<World>,
    index: usize,
    fault: Fault,
    prev: Option<String>,
    base: (u64, u64, u64),
) -> Option<String> {
    let tl = &world.timeline;
    let resolve = |t: &str| -> Result<String, String> {
        match t {
            "leader" => world
                .leader()
                .ok_or_else(|| "target `leader`: no node believes it leads".to_string()),
            "follower" => world.follower().ok_or_else(|| {
                "target `follower`: every running node believes it leads".to_string()
            }),
            "previous" => prev
                .clone()
                .ok_or_else(|| "target `previous`: no earlier fault had a target".to_string()),
            other => Ok(other.to_string()),
        }
    };
    let applied = |kind: &str, target: &str| {
        tl.record(Event::FaultApplied {
            index,
            kind: kind.into(),
            target: target.into(),
        });
    };
    let heal_later = |after_ms: u64,
                      kind: &'static str,
                      target: String,
                      heal: Box<dyn FnOnce(&World) + Send>| {
        let w = world.clone();
        madsim::task::spawn(async move {
            madsim::time::sleep(Duration::from_millis(after_ms)).await;
            heal(&w);
            w.timeline.record(Event::FaultHealed {
                index,
                kind: kind.into(),
                target,
            });
        });
    };
    let result: Result<String, String> = (|| match fault {
        Fault::Kill {
            target,
            restart_after_ms,
        } => {
            let t = resolve(&target)?;
            applied("kill", &t);
            world.kill(&t);
            if let Some(d) = restart_after_ms {
                let t2 = t.clone();
                heal_later(
                    d,
                    "kill",
                    t.clone(),
                    Box::new(move |w: &World| w.restart(&t2)),
                );
            }
            Ok(t)
        }
        Fault::Restart { target } => {
            let t = resolve(&target)?;
            applied("restart", &t);
            world.restart(&t);
            Ok(t)
        }
        Fault::Resign { target } => {
            let t = resolve(&target)?;
            applied("resign", &t);
            world.resign(&t);
            Ok(t)
        }
        Fault::Pause {
            target,
            duration_ms,
            point,
        } => {
            let t = resolve(&target)?;
            match point {
                // Recorded as applied when it strikes (see work::strike_armed_pause).
                PausePoint::BeforeWrite => world.arm_pause(&t, index, duration_ms),
                PausePoint::Anywhere => {
                    applied("pause", &t);
                    let held = world.pause(&t);
                    let t2 = t.clone();
                    heal_later(
                        duration_ms,
                        "pause",
                        t.clone(),
                        Box::new(move |w: &World| w.resume(&t2, held)),
                    );
                }
            }
            Ok(t)
        }
        Fault::Partition {
            from,
            to,
            one_way,
            duration_ms,
        } => {
            let (a, b) = (resolve(&from)?, resolve(&to)?);
            let label = if one_way {
                format!("{a}->{b}")
            } else {
                format!("{a}<->{b}")
            };
            applied("partition", &label);
            world.cut(&a, &b);
            if !one_way {
                world.cut(&b, &a);
            }
            world.open_partition(index, &label);
            if let Some(d) = duration_ms {
                let (a2, b2) = (a.clone(), b.clone());
                let w = world.clone();
                madsim::task::spawn(async move {
                    madsim::time::sleep(Duration::from_millis(d)).await;
                    // A `heal` may have ended it already (and recorded that).
                    if let Some(label) = w.close_partition(index) {
                        w.mend(&a2, &b2);
                        if !one_way {
                            w.mend(&b2, &a2);
                        }
                        w.timeline.record(Event::FaultHealed {
                            index,
                            kind: "partition".into(),
                            target: label,
                        });
                    }
                });
            }
            // `previous` refers to the node end (the first, if both are nodes).
            Ok(if world.nodes.iter().any(|n| n.name == a) {
                a
            } else {
                b
            })
        }
        Fault::SlowLink {
            from,
            to,
            latency_ms_min,
            latency_ms_max,
            duration_ms,
        } => {
            let (a, b) = (resolve(&from)?, resolve(&to)?);
            let label = format!("{a}->{b}");
            applied("slow-link", &label);
            world.slow(&a, &b, Some((latency_ms_min, latency_ms_max)));
            if let Some(d) = duration_ms {
                let (a2, b2) = (a.clone(), b.clone());
                heal_later(
                    d,
                    "slow-link",
                    label,
                    Box::new(move |w: &World| w.slow(&a2, &b2, None)),
                );
            }
            // `previous` refers to the node end (the first, if both are nodes).
            Ok(if world.nodes.iter().any(|n| n.name == a) {
                a
            } else {
                b
            })
        }
        Fault::Heal => {
            applied("heal", "all");
            world.heal_all();
            Err(String::new())
        }
        Fault::ClockOffset { target, offset_ms } => {
            let t = resolve(&target)?;
            applied("clock-offset", &t);
            world.clock(&t).set_offset_ms(offset_ms);
            Ok(t)
        }
        Fault::ClockDrift { target, drift_ppm } => {
            let t = resolve(&target)?;
            applied("clock-drift", &t);
            world.clock(&t).set_drift_ppm(drift_ppm);
            Ok(t)
        }
        Fault::ClockStep { target, step_ms } => {
            let t = resolve(&target)?;
            applied("clock-step", &t);
            world.clock(&t).step_ms(step_ms);
            Ok(t)
        }
        Fault::Network {
            latency_ms_min,
            latency_ms_max,
            loss_ppm,
            duration_ms,
        } => {
            applied("network", "all");
            world.set_network(latency_ms_min, latency_ms_max, loss_ppm);
            if let Some(d) = duration_ms {
                heal_later(
                    d,
                    "network",
                    "all".into(),
                    Box::new(move |w: &World| w.set_network(base.0, base.1, base.2)),
                );
            }
            Err(String::new())
        }
    })();
    match result {
        // Only a node can be a later fault's `previous`.
        Ok(t) if world.nodes.iter().any(|n| n.name == t) => Some(t),
        Ok(_) => prev,
        Err(reason) if reason.is_empty() => prev,
        Err(reason) => {
            tl.record(Event::FaultSkipped { index, reason });
            prev
        }
    }
}
