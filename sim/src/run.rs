//! Runs one scenario under one seed: a fresh thread, a fresh madsim runtime, the world,
//! the driver, and the timeline at the end.

use crate::client::ClientStats;
use crate::driver;
use crate::net::Net;
use crate::scenario::Resolved;
use crate::timeline::Entry;
use crate::world::World;
use std::sync::Arc;
use std::time::Duration;

/// What a run produced.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// Every event, in order.
    pub entries: Vec<Entry>,
    /// The simulated time the run stopped, in microseconds.
    pub end_us: i64,
    /// What the sequencer client saw.
    pub client: ClientStats,
    /// Messages the simulated network carried.
    pub messages: u64,
    /// Requests the protocol's backend served (0 for peer-to-peer protocols).
    pub backend_requests: u64,
}

/// Runs `resolved` with `seed`. Each run gets its own OS thread: madsim keeps per-thread
/// state, and a fresh thread per seed is what keeps runs independent and repeatable.
/// A panic inside the simulation (a simulator bug) comes back as `Err`.
pub fn run(resolved: &Resolved, seed: u64) -> Result<RunOutput, String> {
    let resolved = resolved.clone();
    std::thread::Builder::new()
        .name(format!("sim-seed-{seed}"))
        .spawn(move || run_here(&resolved, seed))
        .expect("spawn a simulation thread")
        .join()
        .map_err(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "simulation panicked".into())
        })
}

fn run_here(resolved: &Resolved, seed: u64) -> RunOutput {
    let runtime = Net::runtime(seed);
    let resolved = resolved.clone();
    runtime.block_on(async move {
        let s = &resolved.scenario;
        let world = Arc::new(World::build(&resolved, seed));
        let base = (
            s.network.latency_ms_min,
            s.network.latency_ms_max,
            s.network.loss_ppm,
        );
        let driver =
            madsim::task::spawn(driver::drive(world.clone(), resolved.faults.clone(), base));
        madsim::time::sleep(Duration::from_millis(s.duration_ms)).await;
        let out = RunOutput {
            entries: world.timeline.take_entries(),
            end_us: crate::clock::global_now_us(),
            client: world.client_record.stats(),
            messages: Net::current().messages(),
            backend_requests: world
                .backend_requests
                .load(std::sync::atomic::Ordering::Relaxed),
        };
        // Tear the world down inside the runtime. madsim does not drop a node's parked
        // tasks when the runtime is dropped, and a task waiting on its endpoint is in a
        // reference cycle with it (task -> endpoint -> mailbox -> waker -> task): every
        // run would leak its world (about 12 MB). Killing a node wakes its tasks, and the
        // executor drops a killed node's futures on the next tick.
        driver.abort();
        world.shutdown();
        madsim::time::sleep(Duration::from_millis(1)).await;
        out
    })
}
