//! Runs one scenario under one seed: a fresh thread, a fresh madsim runtime, the world,
//! the driver, and the checkers reading every event as it is recorded.
//!
//! A run never holds its timeline: each event goes to the checkers ([`Checks`]) and, when
//! the timeline is wanted as a file, to a temporary file of JSON lines. Memory then stays
//! flat in run length.

use crate::checker::{Checks, Findings};
use crate::client::ClientStats;
use crate::driver;
use crate::net::Net;
use crate::scenario::Resolved;
use crate::timeline::{Entry, EntrySink, Timeline};
use crate::world::World;
use std::fs::File;
use std::io::{BufWriter, Seek, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A finished run's timeline: one JSON event a line, in a temporary file that is gone
/// once this is dropped.
#[derive(Debug)]
pub struct TimelineFile(File);

impl TimelineFile {
    /// Copies the whole timeline to `w`.
    pub fn copy_to(&self, mut w: impl Write) -> std::io::Result<()> {
        let mut f = &self.0;
        f.rewind()?;
        std::io::copy(&mut f, &mut w)?;
        Ok(())
    }
}

/// Where a run's events go: the checkers, and the timeline file if one is kept.
struct RunSink {
    checks: Option<Checks>,
    file: Option<BufWriter<File>>,
    error: Option<std::io::Error>,
}

impl EntrySink for RunSink {
    fn entry(&mut self, e: &Entry) {
        if let Some(c) = &mut self.checks {
            c.observe(e);
        }
        if let Some(w) = &mut self.file {
            let written = serde_json::to_writer(&mut *w, e)
                .map_err(std::io::Error::from)
                .and_then(|()| w.write_all(b"\n"));
            if let Err(err) = written {
                self.error.get_or_insert(err);
            }
        }
    }
}

/// What a run produced.
#[derive(Debug)]
pub struct RunOutput {
    /// What the checkers found.
    pub findings: Findings,
    /// The timeline, when it was kept ([`run()`]'s `keep_timeline`).
    pub timeline: Option<TimelineFile>,
    /// The simulated time the run stopped, in microseconds.
    pub end_us: i64,
    /// What the sequencer client saw.
    pub client: ClientStats,
    /// Messages the simulated network carried.
    pub messages: u64,
    /// Requests the protocol's backend served (0 for peer-to-peer protocols).
    pub backend_requests: u64,
    /// Requests the backend served in each 100 ms of the run.
    pub backend_requests_by_100ms: Vec<u64>,
}

/// Runs `resolved` with `seed`, keeping its timeline as a file if `keep_timeline`. Each
/// run gets its own OS thread: madsim keeps per-thread state, and a fresh thread per seed
/// is what keeps runs independent and repeatable. A panic inside the simulation (a
/// simulator bug) or a timeline file that cannot be written comes back as `Err`.
pub fn run(resolved: &Resolved, seed: u64, keep_timeline: bool) -> Result<RunOutput, String> {
    let resolved = resolved.clone();
    std::thread::Builder::new()
        .name(format!("sim-seed-{seed}"))
        .spawn(move || run_here(&resolved, seed, keep_timeline))
        .expect("spawn a simulation thread")
        .join()
        .map_err(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "simulation panicked".into())
        })?
}

fn run_here(resolved: &Resolved, seed: u64, keep_timeline: bool) -> Result<RunOutput, String> {
    let file = if keep_timeline {
        let f = tempfile::tempfile()
            .map_err(|e| format!("cannot create a temporary file for the timeline: {e}"))?;
        Some(BufWriter::new(f))
    } else {
        None
    };
    let sink = Arc::new(Mutex::new(RunSink {
        checks: Some(Checks::new(resolved)),
        file,
        error: None,
    }));
    let timeline = Timeline::streaming(sink.clone());
    let runtime = Net::runtime(seed);
    let resolved = resolved.clone();
    let (end_us, client, messages, backend_requests, backend_buckets) =
        runtime.block_on(async move {
            let s = &resolved.scenario;
            let world = Arc::new(World::build(&resolved, seed, timeline));
            let base = (
                s.network.latency_ms_min,
                s.network.latency_ms_max,
                s.network.loss_ppm,
            );
            let driver = madsim::task::spawn(driver::drive(
                world.clone(),
                resolved.faults.clone(),
                seed,
                base,
            ));
            if let Some(gc) = &s.noise.gc {
                crate::noise::start_gc(&world, gc, seed, s.duration_ms);
            }
            madsim::time::sleep(Duration::from_millis(s.duration_ms)).await;
            let out = (
                crate::clock::global_now_us(),
                world.client_record.stats(),
                Net::current().messages(),
                world
                    .backend_requests
                    .load(std::sync::atomic::Ordering::Relaxed),
                world.backend_requests.by_bucket(),
            );
            // Tear the world down inside the runtime. madsim does not drop a node's parked
            // tasks when the runtime is dropped, and a task waiting on its endpoint is in a
            // reference cycle with it (task -> endpoint -> mailbox -> waker -> task): every
            // run would leak its world (about 12 MB). Killing a node wakes its tasks, and the
            // executor drops a killed node's futures on the next tick.
            driver.abort();
            world.shutdown();
            madsim::time::sleep(Duration::from_millis(1)).await;
            out
        });
    drop(runtime);
    let mut sink = sink.lock().unwrap();
    if let Some(e) = sink.error.take() {
        return Err(format!("cannot write the timeline: {e}"));
    }
    let checks = sink.checks.take().expect("taken once");
    let findings = checks.finish(end_us, &client);
    let timeline = match sink.file.take() {
        Some(w) => Some(TimelineFile(
            w.into_inner()
                .map_err(|e| format!("cannot write the timeline: {e}"))?,
        )),
        None => None,
    };
    Ok(RunOutput {
        findings,
        timeline,
        end_us,
        client,
        messages,
        backend_requests,
        backend_requests_by_100ms: backend_buckets,
    })
}
