//! Runs one scenario under one seed: a fresh thread, a fresh madsim runtime, the world,
//! the driver, and the checkers reading every event as it is recorded.
//!
//! A run never holds its timeline: each event goes to the checkers ([`Checks`]) and, when
//! the timeline is wanted as a file, to a temporary file of JSON lines. Memory then stays
//! flat in run length.

use crate::world::driver;
use crate::world::net::Net;
use crate::world::timeline::{Entry, EntrySink, Timeline};
use crate::world::World;
use baton_model::checker::Checks;
pub use baton_model::render::artifacts::{report, report_verdict, Artifacts};
use baton_model::render::lanes::LaneBuilder;
use baton_model::scenario::{Resolved, ScenarioError};
pub use baton_model::{RunOutput, TimelineFile};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Why a run gave no report: a scenario its seed could not draw, a simulator that
/// panicked or stalled, a timeline that could not be written, or a user who gave up on it.
#[derive(Clone, Debug, thiserror::Error)]
pub enum RunError {
    /// The swarm drew a schedule the scenario's checks refuse.
    #[error("{0}")]
    Scenario(Box<ScenarioError>),
    /// The simulation panicked (a simulator bug): the panic's message.
    #[error("{0}")]
    Panicked(String),
    /// The simulation's thread ended without a word.
    #[error("the simulation thread vanished")]
    Vanished,
    /// A second Ctrl-C (`sim`'s interrupt handler) gave up on it: not a failure of the
    /// simulator, and not counted as a run.
    #[error("abandoned: interrupted by the user")]
    Abandoned,
    /// Simulated time stopped moving while tasks kept running (a loop that never
    /// sleeps).
    #[error("livelock: simulated time stuck at {at_ms} ms for {stall_s} s of wall time, {events} events recorded at that instant; the last: {last}")]
    Livelock {
        /// Where simulated time stuck.
        at_ms: f64,
        /// How long it stuck, wall-clock seconds.
        stall_s: u64,
        /// Events recorded at that instant.
        events: u64,
        /// The last event seen, as JSON.
        last: String,
    },
    /// The run outlasted its wall-clock budget.
    #[error("the run overran its wall-clock budget of {budget_s} s at simulated {at_ms} ms; the last event: {last}")]
    Overran {
        /// The budget, wall-clock seconds.
        budget_s: u64,
        /// Where simulated time was.
        at_ms: f64,
        /// The last event seen, as JSON.
        last: String,
    },
    /// No temporary file for the timeline.
    #[error("cannot create a temporary file for the timeline: {0}")]
    TimelineFile(Arc<std::io::Error>),
    /// The timeline could not be written.
    #[error("cannot write the timeline: {0}")]
    Timeline(Arc<std::io::Error>),
}

impl From<ScenarioError> for RunError {
    fn from(e: ScenarioError) -> Self {
        RunError::Scenario(Box::new(e))
    }
}

/// One seed's run among many (a search's) that failed: which seed, and why.
#[derive(Clone, Debug, thiserror::Error)]
#[error("seed {seed}: {error}")]
pub struct SeedFailed {
    /// The seed.
    pub seed: u64,
    /// Why its run gave no report.
    pub error: RunError,
}

/// Where a run's events go: the checkers, and the timeline file if one is kept.
struct RunSink {
    probe: Arc<Probe>,
    checks: Option<Checks>,
    lanes: Option<LaneBuilder>,
    file: Option<BufWriter<File>>,
    error: Option<std::io::Error>,
}

impl EntrySink for RunSink {
    fn entry(&mut self, e: &Entry) {
        self.probe.saw(e);
        if let Some(c) = &mut self.checks {
            c.observe(e);
        }
        if let Some(l) = &mut self.lanes {
            l.entry(e);
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

/// Simulates `resolved` under `seed` and renders its report, timeline included.
///
/// A scenario with a `[swarm]` runs (and reports) with the faults its seed draws.
pub fn run(resolved: &Resolved, seed: u64) -> Result<Artifacts, RunError> {
    let resolved = &baton_model::swarm::materialize(resolved, seed)?;
    let out = simulate(resolved, seed, true)?;
    Ok(report(resolved, seed, out))
}

/// As [`run()`], without the timeline file and the pages a person reads (for commands
/// that only read the verdict, the findings, the summary and report.json).
pub fn run_unrecorded(resolved: &Resolved, seed: u64) -> Result<Artifacts, RunError> {
    let resolved = &baton_model::swarm::materialize(resolved, seed)?;
    let out = simulate(resolved, seed, false)?;
    Ok(report_verdict(resolved, seed, out))
}

/// Runs `resolved` with `seed`, keeping its timeline as a file if `keep_timeline`. Each
/// run gets its own OS thread: madsim keeps per-thread state, and a fresh thread per seed
/// is what keeps runs independent and repeatable. A panic inside the simulation (a
/// simulator bug) or a timeline file that cannot be written comes back as `Err`.
pub fn simulate(
    resolved: &Resolved,
    seed: u64,
    keep_timeline: bool,
) -> Result<RunOutput, RunError> {
    simulate_with(resolved, seed, keep_timeline, None)
}

/// As [`simulate`], with `protocol` in place of the one the scenario names when it is
/// given (a library run's user node: [`crate::library`]).
pub(crate) fn simulate_with(
    resolved: &Resolved,
    seed: u64,
    keep_timeline: bool,
    protocol: Option<Arc<dyn crate::world::protocol::Protocol>>,
) -> Result<RunOutput, RunError> {
    let resolved = resolved.clone();
    let probe = Arc::new(Probe::default());
    let p = probe.clone();
    watched(probe, Limits::default(), move || {
        run_here(&resolved, seed, keep_timeline, p, protocol)
    })
}

/// How long a run may go without simulated time moving, and in all, on the wall clock.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Simulated time frozen this long means a livelock: tasks keep running at one
    /// instant (a loop that never sleeps) and the run would never end.
    pub stall: Duration,
    /// The whole run's wall-clock budget.
    pub budget: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        // A healthy run moves simulated time every few microseconds of wall time; an
        // hour-long simulation at the slowest measured speed takes minutes.
        Limits {
            stall: Duration::from_secs(30),
            budget: Duration::from_secs(1800),
        }
    }
}

/// Where a run is, for the watchdog: the simulated time of its latest event.
#[derive(Default)]
pub struct Probe {
    at_us: std::sync::atomic::AtomicI64,
    events: std::sync::atomic::AtomicU64,
    /// A recent event: the first at each new instant, and every 256th.
    last: Mutex<Option<Entry>>,
}

impl Probe {
    /// Notes an event. Cheap: two atomics, and a copy of the event only when simulated
    /// time moved or every 256 events, which is enough to say where a run got stuck.
    pub fn saw(&self, e: &Entry) {
        use std::sync::atomic::Ordering::Relaxed;
        let prev = self.at_us.swap(e.at_us, Relaxed);
        let n = self.events.fetch_add(1, Relaxed);
        if prev != e.at_us || n.is_multiple_of(256) {
            if let Ok(mut l) = self.last.try_lock() {
                *l = Some(e.clone());
            }
        }
    }
}

/// Runs `f` on a fresh thread and waits for it, giving up (with where it was stuck) when
/// the probe's simulated time stops moving for `limits.stall` or the run outlasts
/// `limits.budget`. A run given up on keeps its thread until the process exits.
pub fn watched<T: Send + 'static>(
    probe: Arc<Probe>,
    limits: Limits,
    f: impl FnOnce() -> Result<T, RunError> + Send + 'static,
) -> Result<T, RunError> {
    use std::sync::atomic::Ordering::Relaxed;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("sim-run".into())
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|e| {
                RunError::Panicked(
                    e.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "simulation panicked".into()),
                )
            });
            let _ = tx.send(r);
        })
        .expect("spawn a simulation thread");
    let started = std::time::Instant::now();
    let (mut seen_us, mut seen_events, mut since) = (i64::MIN, u64::MAX, started);
    let tick = limits.stall.min(Duration::from_millis(500));
    loop {
        match rx.recv_timeout(tick) {
            Ok(r) => return r?,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Err(RunError::Vanished),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        if crate::cmd::interrupt::abandoning() {
            return Err(RunError::Abandoned);
        }
        let (at_us, events) = (probe.at_us.load(Relaxed), probe.events.load(Relaxed));
        if at_us != seen_us {
            (seen_us, seen_events, since) = (at_us, events, std::time::Instant::now());
        }
        let last = || {
            probe
                .last
                .lock()
                .ok()
                .and_then(|l| {
                    l.as_ref()
                        .map(|e| serde_json::to_string(e).unwrap_or_default())
                })
                .unwrap_or_else(|| "none recorded".into())
        };
        if since.elapsed() >= limits.stall {
            return Err(RunError::Livelock {
                at_ms: at_us as f64 / 1000.0,
                stall_s: limits.stall.as_secs(),
                events: events.saturating_sub(seen_events),
                last: last(),
            });
        }
        if started.elapsed() >= limits.budget {
            return Err(RunError::Overran {
                budget_s: limits.budget.as_secs(),
                at_ms: at_us as f64 / 1000.0,
                last: last(),
            });
        }
    }
}

fn run_here(
    resolved: &Resolved,
    seed: u64,
    keep_timeline: bool,
    probe: Arc<Probe>,
    protocol: Option<Arc<dyn crate::world::protocol::Protocol>>,
) -> Result<RunOutput, RunError> {
    let file = if keep_timeline {
        let f = tempfile::tempfile().map_err(|e| RunError::TimelineFile(Arc::new(e)))?;
        Some(BufWriter::new(f))
    } else {
        None
    };
    let sink = Arc::new(Mutex::new(RunSink {
        probe,
        checks: Some(Checks::new(resolved)),
        lanes: Some(LaneBuilder::for_scenario(resolved)),
        file,
        error: None,
    }));
    let timeline = Timeline::streaming(sink.clone());
    let runtime = Net::runtime(seed);
    let resolved = resolved.clone();
    let (end_us, client, messages, backend_requests, backend_buckets) =
        runtime.block_on(async move {
            let s = &resolved.scenario;
            let world = Arc::new(World::build_with(&resolved, seed, timeline, protocol));
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
                crate::world::noise::start_gc(&world, gc, seed, s.duration_ms);
            }
            madsim::time::sleep(Duration::from_millis(s.duration_ms)).await;
            let out = (
                crate::world::clock::global_now_us(),
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
        return Err(RunError::Timeline(Arc::new(e)));
    }
    let checks = sink.checks.take().expect("taken once");
    let findings = checks.finish(end_us, &client);
    let lanes = sink.lanes.take().expect("taken once").finish(end_us);
    let timeline = match sink.file.take() {
        Some(w) => Some(TimelineFile(
            w.into_inner()
                .map_err(|e| RunError::Timeline(Arc::new(e.into_error())))?,
        )),
        None => None,
    };
    Ok(RunOutput {
        findings,
        lanes,
        timeline,
        end_us,
        client,
        messages,
        backend_requests,
        backend_requests_by_100ms: backend_buckets,
    })
}

#[cfg(test)]
mod tests {
    //! Methodology: the watchdog over closures that stand for runs: one that records
    //! events at one instant for ever (a livelock), one that never records at all, and
    //! one that moves on and ends.
    use super::*;
    use crate::world::timeline::Event;

    fn entry(at_us: i64) -> Entry {
        Entry {
            at_us,
            event: Event::NodeKilled { node: "n1".into() },
        }
    }

    fn limits() -> Limits {
        Limits {
            stall: Duration::from_millis(300),
            budget: Duration::from_secs(60),
        }
    }

    #[test]
    fn a_run_stuck_at_one_instant_is_given_up_on_and_says_where() {
        let probe = Arc::new(Probe::default());
        let p = probe.clone();
        let r: Result<(), RunError> = watched(probe, limits(), move || loop {
            p.saw(&entry(10_512_300));
            std::thread::sleep(Duration::from_millis(1));
        });
        let e = r.unwrap_err().to_string();
        assert!(
            e.starts_with("livelock: simulated time stuck at 10512.3 ms"),
            "{e}"
        );
        assert!(e.contains("node_killed"), "{e}");
    }

    #[test]
    fn a_run_past_its_budget_is_given_up_on() {
        let probe = Arc::new(Probe::default());
        let p = probe.clone();
        let mut t = 0;
        let l = Limits {
            stall: Duration::from_secs(60),
            budget: Duration::from_millis(300),
        };
        let r: Result<(), RunError> = watched(probe, l, move || loop {
            t += 1;
            p.saw(&entry(t));
            std::thread::sleep(Duration::from_millis(1));
        });
        assert!(r
            .unwrap_err()
            .to_string()
            .contains("overran its wall-clock budget"));
    }

    #[test]
    fn a_run_that_moves_on_ends_normally() {
        let probe = Arc::new(Probe::default());
        let p = probe.clone();
        let r = watched(probe, limits(), move || {
            for t in 0..50 {
                p.saw(&entry(t));
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(7)
        });
        assert_eq!(r.ok(), Some(7));
    }
}
