//! Background noise: GC pauses drawn from the seed for the whole run (`[noise.gc]`).
//!
//! Scripted faults say "this happens then"; noise says "this keeps happening", as young
//! and full collections do on every JVM or Go service under load. A pause that outlives
//! a lease makes leadership change although nobody failed: the false failovers that
//! `checker/false_failover.rs` counts and a TTL sweep trades against failover time. The
//! schedule is drawn by `baton_model::noise::gc_schedule`, which real mode draws too.

use crate::world::timeline::Event;
use crate::world::World;
use baton_model::noise::gc_schedule;
use baton_model::scenario::GcNoise;
use baton_model::NodeId;
use std::sync::Arc;
use std::time::Duration;

/// Stops the world on `node` at each pause of `schedule`, unless the node is down then.
pub async fn gc(world: Arc<World>, node: NodeId, schedule: Vec<(u64, u64)>) {
    for (start_ms, len_ms) in schedule {
        let now = crate::world::clock::global_now_us();
        let at = start_ms as i64 * 1000;
        if at > now {
            madsim::time::sleep(Duration::from_micros((at - now) as u64)).await;
        }
        let Some(held) = world.hold(&node) else {
            continue;
        };
        world.timeline.record(Event::GcPaused {
            node: node.clone(),
            duration_ms: len_ms,
        });
        madsim::time::sleep(Duration::from_millis(len_ms)).await;
        world.release(&node, held);
        world
            .timeline
            .record(Event::GcResumed { node: node.clone() });
    }
}

/// Starts the GC noise of `cfg` on the world's nodes (all, or the ones it names).
pub fn start_gc(world: &Arc<World>, cfg: &GcNoise, seed: u64, duration_ms: u64) {
    for n in &world.nodes {
        if !cfg.nodes.is_empty() && !cfg.nodes.iter().any(|x| n.name == x.as_str()) {
            continue;
        }
        let schedule = gc_schedule(cfg, seed, &n.name, duration_ms);
        madsim::task::spawn(gc(world.clone(), n.name.clone(), schedule));
    }
}
