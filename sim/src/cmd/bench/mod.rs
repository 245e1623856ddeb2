//! `sim bench`: the one source of Baton's speed figures.
//!
//! A benchmark is a list of named workloads (committed scenario files with overrides).
//! `sim bench` runs each in a fresh child process (`sim bench-workload NAME`, hidden), so
//! that its peak memory is its own, `--repeat` times (3), keeps the repetition with the
//! median wall time, and prints one Markdown table: simulated seconds per
//! wall-clock second for the simulation with its checkers and lanes (which read every
//! event as it is recorded) and for the whole run (that, plus rendering the summary,
//! report.json, the plot and timeline.html in memory; no timeline file is kept, as for
//! `sim matrix`), messages per
//! simulated and per wall-clock second, and the child's peak resident memory. A second
//! table ([`crate::cmd::bench::report`]) holds the targets against what was measured; every number in it is
//! computed from the first.
//!
//! Two substrate baselines say how far Baton is from the machinery under it:
//! `madsim-endpoints` (a bare madsim program: three nodes and a client exchanging, over
//! madsim's own endpoints, as many messages per simulated second as the 5,000 `next`/s
//! run) and `baton-net` (the same pattern over Baton's network, [`crate::world::net`]).
//!
//! Figures depend on the machine and on what else it runs; the report says which
//! machine. Tests never time anything: speed lives here.

pub mod report;

use crate::run::{self, RunError};
use crate::world::net::{self, Endpoint, Net};
use baton_model::scenario::{self, Resolved, ScenarioError};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a workload runs.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// Seeds one after another, each a whole run (simulate, check, render).
    Runs,
    /// Seeds spread over this many worker threads; the figure is runs per minute.
    Throughput {
        /// Worker threads.
        jobs: usize,
        /// As `sim search` runs a seed: the scenario's swarm drawn for the seed, and
        /// only the verdict rendered (no plot or timeline.html).
        search: bool,
    },
    /// A bare madsim program over madsim's endpoints (see the module doc).
    MadsimEndpoints,
    /// The same message pattern over Baton's network.
    BatonNet,
}

/// One named workload.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    /// Its name on the command line and in the table.
    pub name: &'static str,
    /// What it is, for the table.
    pub what: &'static str,
    /// The scenario file (relative to the repository root).
    pub scenario: &'static str,
    /// Overrides, as `--set` takes them.
    pub set: &'static [&'static str],
    /// How many seeds (0..seeds).
    pub seeds: u64,
    /// How it runs.
    pub kind: Kind,
}

const CLEAN_KILL: &str = "scenarios/clean-kill.toml";

/// The workload whose messages per simulated second the baselines match.
pub const BASELINE_MATCHES: &str = "etcd-5k";

/// Every workload, in report order.
pub const WORKLOADS: &[Workload] = &[
    Workload {
        name: "etcd-idle-600s",
        what: "etcd-lease, no load (scheduler tick only), 600 s",
        scenario: CLEAN_KILL,
        set: &["work.rate_per_s=0", "duration_ms=600000"],
        seeds: 3,
        kind: Kind::Runs,
    },
    Workload {
        name: "etcd-1k",
        what: "etcd-lease clean-kill at 1,000 next/s, 60 s",
        scenario: CLEAN_KILL,
        set: &["work.rate_per_s=1000", "duration_ms=60000"],
        seeds: 5,
        kind: Kind::Runs,
    },
    Workload {
        name: "etcd-5k",
        what: "etcd-lease clean-kill at 5,000 next/s, 60 s",
        scenario: CLEAN_KILL,
        set: &["work.rate_per_s=5000", "duration_ms=60000"],
        seeds: 5,
        kind: Kind::Runs,
    },
    Workload {
        name: "etcd-20k",
        what: "etcd-lease clean-kill at 20,000 next/s, 60 s",
        scenario: CLEAN_KILL,
        set: &["work.rate_per_s=20000", "duration_ms=60000"],
        seeds: 5,
        kind: Kind::Runs,
    },
    Workload {
        name: "etcd-50k",
        what: "etcd-lease clean-kill at 50,000 next/s, 60 s",
        scenario: CLEAN_KILL,
        set: &["work.rate_per_s=50000", "duration_ms=60000"],
        seeds: 5,
        kind: Kind::Runs,
    },
    Workload {
        name: "etcd-5k-one-member",
        what: "etcd-5k with the single lease service of before (etcd.members=1): the cluster model's cost",
        scenario: CLEAN_KILL,
        set: &["work.rate_per_s=5000", "duration_ms=60000", "etcd.members=1"],
        seeds: 5,
        kind: Kind::Runs,
    },
    Workload {
        name: "etcd-5k-600s",
        what: "etcd-lease clean-kill at 5,000 next/s, 600 s (memory against etcd-5k)",
        scenario: CLEAN_KILL,
        set: &["work.rate_per_s=5000", "duration_ms=600000"],
        seeds: 1,
        kind: Kind::Runs,
    },
    Workload {
        name: "etcd-9-nodes-5k",
        what: "etcd-lease clean-kill, 9 nodes, 5,000 next/s, 60 s",
        scenario: CLEAN_KILL,
        set: &["nodes=9", "work.rate_per_s=5000", "duration_ms=60000"],
        seeds: 5,
        kind: Kind::Runs,
    },
    Workload {
        name: "raft-idle",
        what: "raft clean-kill, no load, 60 s",
        scenario: CLEAN_KILL,
        set: &["protocol=raft", "work.rate_per_s=0", "duration_ms=60000"],
        seeds: 5,
        kind: Kind::Runs,
    },
    Workload {
        name: "raft-1k",
        what: "raft clean-kill at 1,000 next/s, 60 s",
        scenario: CLEAN_KILL,
        set: &["protocol=raft", "work.rate_per_s=1000", "duration_ms=60000"],
        seeds: 5,
        kind: Kind::Runs,
    },
    Workload {
        name: "raft-storm",
        what: "scenarios/raft/election-storm.toml (9 nodes, 615 s)",
        scenario: "scenarios/raft/election-storm.toml",
        set: &[],
        seeds: 3,
        kind: Kind::Runs,
    },
    Workload {
        name: "gc-pause-2-jobs",
        what: "scenarios/gc-pause.toml (30 s, 1,000 next/s) seeds 0..300 on 2 jobs",
        scenario: "scenarios/gc-pause.toml",
        set: &[],
        seeds: 300,
        kind: Kind::Throughput {
            jobs: 2,
            search: false,
        },
    },
    Workload {
        name: "gc-pause-2-jobs-one-member",
        what: "gc-pause-2-jobs with etcd.members=1 (the cluster model's cost)",
        scenario: "scenarios/gc-pause.toml",
        set: &["etcd.members=1"],
        seeds: 300,
        kind: Kind::Throughput {
            jobs: 2,
            search: false,
        },
    },
    Workload {
        name: "swarm-search-2-jobs",
        what: "`sim search scenarios/swarm.toml --seeds 0..1000` on 2 jobs: each seed's swarm drawn, 60 s runs, verdict only",
        scenario: "scenarios/swarm.toml",
        set: &[],
        seeds: 1000,
        kind: Kind::Throughput {
            jobs: 2,
            search: true,
        },
    },
    Workload {
        name: "madsim-endpoints",
        what: "bare madsim: 3 nodes + client, RPCs over madsim endpoints at etcd-5k's messages/s, 60 s",
        scenario: CLEAN_KILL,
        set: &["duration_ms=60000"],
        seeds: 5,
        kind: Kind::MadsimEndpoints,
    },
    Workload {
        name: "baton-net",
        what: "the same pattern over Baton's network (sim/src/world/net.rs), 60 s",
        scenario: CLEAN_KILL,
        set: &["duration_ms=60000"],
        seeds: 5,
        kind: Kind::BatonNet,
    },
];

/// What a child process measured for one workload.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Measured {
    /// Runs done.
    pub runs: u64,
    /// Simulated seconds over all runs.
    pub simulated_s: f64,
    /// Wall seconds in the simulation and its checkers (summed over runs; for `Throughput`, the
    /// wall time of the whole batch).
    pub sim_wall_s: f64,
    /// Wall seconds for the whole runs: simulate, check, render.
    pub total_wall_s: f64,
    /// Messages carried, over all runs.
    pub messages: u64,
    /// The process's peak resident memory, in KiB (`VmHWM`).
    pub peak_kib: u64,
}

impl Measured {
    /// Simulated seconds per wall second, whole runs.
    pub fn speed(&self) -> f64 {
        self.simulated_s / self.total_wall_s
    }
    /// Simulated seconds per wall second, simulation and checks without the report.
    pub fn sim_speed(&self) -> f64 {
        self.simulated_s / self.sim_wall_s
    }
    /// Runs per wall-clock minute.
    pub fn runs_per_minute(&self) -> f64 {
        self.runs as f64 * 60.0 / self.total_wall_s
    }
}

/// Why a workload could not be measured. Every name was checked before the first
/// workload ran: each of these is Baton's fault.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The workload's scenario does not load.
    #[error("{0}")]
    Scenario(Box<ScenarioError>),
    /// A run failed.
    #[error("{0}")]
    Run(#[from] RunError),
    /// A worker thread panicked.
    #[error("a bench worker panicked")]
    WorkerPanicked,
    /// The child process did not start.
    #[error("cannot start a bench workload: {0}")]
    Spawn(std::io::Error),
    /// The child process failed.
    #[error("bench workload {name} failed ({status})")]
    Failed {
        /// The workload.
        name: &'static str,
        /// How its process ended.
        status: std::process::ExitStatus,
    },
    /// The child process printed something that is not its measurement.
    #[error("bench workload {name} said something unreadable: {source}")]
    Unreadable {
        /// The workload.
        name: &'static str,
        /// Why.
        source: serde_json::Error,
    },
}

impl From<ScenarioError> for BenchError {
    fn from(e: ScenarioError) -> Self {
        BenchError::Scenario(Box::new(e))
    }
}

/// The workload called `name`.
pub fn workload(name: &str) -> Option<&'static Workload> {
    WORKLOADS.iter().find(|w| w.name == name)
}

fn resolve(w: &Workload) -> Result<Resolved, ScenarioError> {
    let set: Vec<String> = w.set.iter().map(|s| s.to_string()).collect();
    scenario::load(Path::new(w.scenario), &set)
}

/// Runs `w` in this process and measures it (what `sim bench-workload` does). A baseline
/// exchanges `messages_per_s` messages per simulated second.
pub fn measure(w: &Workload, messages_per_s: u64) -> Result<Measured, BenchError> {
    let resolved = resolve(w)?;
    let duration_s = resolved.scenario.duration_ms as f64 / 1000.0;
    let mut m = Measured::default();
    match w.kind {
        Kind::Runs => {
            for seed in 0..w.seeds {
                let t0 = Instant::now();
                let out = run::simulate(&resolved, seed, false)?;
                let t1 = Instant::now();
                m.messages += out.messages;
                run::report(&resolved, seed, out);
                m.sim_wall_s += (t1 - t0).as_secs_f64();
                m.total_wall_s += t0.elapsed().as_secs_f64();
                m.runs += 1;
                m.simulated_s += duration_s;
            }
        }
        Kind::Throughput { jobs, search } => {
            let next = Arc::new(AtomicU64::new(0));
            let done = Arc::new(Mutex::new((0u64, 0u64, 0.0f64)));
            let resolved = Arc::new(resolved);
            let t0 = Instant::now();
            let workers: Vec<_> = (0..jobs.max(1))
                .map(|_| {
                    let (next, done, resolved, seeds) =
                        (next.clone(), done.clone(), resolved.clone(), w.seeds);
                    std::thread::spawn(move || -> Result<(), BenchError> {
                        loop {
                            let seed = next.fetch_add(1, Ordering::SeqCst);
                            if seed >= seeds {
                                return Ok(());
                            }
                            let t = Instant::now();
                            let drawn;
                            let r = if search {
                                drawn = baton_model::swarm::materialize(&resolved, seed)?;
                                &drawn
                            } else {
                                &*resolved
                            };
                            let out = run::simulate(r, seed, false)?;
                            let sim_s = t.elapsed().as_secs_f64();
                            let messages = out.messages;
                            if search {
                                run::report_verdict(r, seed, out);
                            } else {
                                run::report(r, seed, out);
                            }
                            let mut d = done.lock().unwrap();
                            d.0 += 1;
                            d.1 += messages;
                            d.2 += sim_s;
                        }
                    })
                })
                .collect();
            for h in workers {
                h.join().map_err(|_| BenchError::WorkerPanicked)??;
            }
            let (runs, messages, sim_s) = *done.lock().unwrap();
            m.total_wall_s = t0.elapsed().as_secs_f64();
            // The simulation's share of the batch's wall time.
            m.sim_wall_s = sim_s / jobs.max(1) as f64;
            m.runs = runs;
            m.messages = messages;
            m.simulated_s = duration_s * runs as f64;
        }
        Kind::MadsimEndpoints | Kind::BatonNet => {
            for seed in 0..w.seeds {
                let t0 = Instant::now();
                let duration_ms = resolved.scenario.duration_ms;
                // Each RPC is a request and a reply.
                let rpc_micro_per_ms = messages_per_s * 1_000 / 2;
                let messages = match w.kind {
                    Kind::MadsimEndpoints => baseline_madsim(seed, duration_ms, rpc_micro_per_ms),
                    _ => baseline_baton_net(seed, duration_ms, rpc_micro_per_ms),
                };
                let wall = t0.elapsed().as_secs_f64();
                m.sim_wall_s += wall;
                m.total_wall_s += wall;
                m.messages += messages;
                m.runs += 1;
                m.simulated_s += duration_s;
            }
        }
    }
    m.peak_kib = peak_kib();
    Ok(m)
}

/// The process's peak resident set (`VmHWM` in /proc/self/status), in KiB; 0 where
/// there is no /proc.
pub fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// A baseline request: the payload the client sends.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Ping(u64);
impl madsim::net::rpc::Request for Ping {
    type Response = u64;
    const ID: u64 = 0xba70_0001;
}
impl net::Request for Ping {
    type Response = u64;
    const ID: u64 = 0xba70_0001;
}

fn node_ip(i: u8) -> std::net::IpAddr {
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(10, 9, 0, i))
}

/// The baseline program on one network: in runtime `$rt`, three nodes bind with `$bind`
/// (an expression on an address, giving an endpoint) and answer a `Ping` RPC at once; a
/// client calls them in turn, one spawned call per RPC (the way to have calls in flight
/// together), `$rate` millionths of a call per simulated millisecond, for `$duration_ms`.
/// Evaluates to the messages `$messages` counted.
macro_rules! baseline {
    ($rt:expr, |$addr:ident| $bind:expr, $rate:expr, $duration_ms:expr, $messages:expr) => {{
        let (rate, duration_ms) = ($rate, $duration_ms);
        $rt.block_on(async move {
            let h = madsim::runtime::Handle::current();
            let mut ids = vec![];
            for i in 1..=3u8 {
                let n = h
                    .create_node()
                    .ip(node_ip(i))
                    .init(move || async move {
                        let $addr: std::net::SocketAddr = (node_ip(i), 1).into();
                        let ep = $bind;
                        ep.add_rpc_handler(|p: Ping| async move { p.0 });
                        futures::future::pending::<()>().await;
                    })
                    .build();
                ids.push(n.id());
            }
            let client = h
                .create_node()
                .ip(node_ip(9))
                .init(move || async move {
                    let $addr: std::net::SocketAddr = (node_ip(9), 1).into();
                    let ep = Arc::new($bind);
                    let (mut credit, mut k) = (0u64, 0u64);
                    loop {
                        madsim::time::sleep(Duration::from_millis(1)).await;
                        credit += rate;
                        while credit >= 1_000_000 {
                            credit -= 1_000_000;
                            k += 1;
                            let (ep, dst) = (ep.clone(), (node_ip(1 + (k % 3) as u8), 1));
                            madsim::task::spawn(async move {
                                let _ = ep
                                    .call_timeout(dst.into(), Ping(k), Duration::from_millis(500))
                                    .await;
                            });
                        }
                    }
                })
                .build();
            ids.push(client.id());
            madsim::time::sleep(Duration::from_millis(duration_ms)).await;
            let messages = $messages;
            for id in ids {
                h.kill(id);
            }
            madsim::time::sleep(Duration::from_millis(1)).await;
            messages
        })
    }};
}

/// The baseline over madsim's own endpoints (1-5 ms latency, as the scenarios).
fn baseline_madsim(seed: u64, duration_ms: u64, rpc_micro_per_ms: u64) -> u64 {
    std::thread::spawn(move || {
        let mut config = madsim::Config::default();
        config.net.send_latency = Duration::from_millis(1)..Duration::from_millis(5);
        let rt = madsim::runtime::Runtime::with_seed_and_config(seed, config);
        baseline!(
            rt,
            |addr| madsim::net::Endpoint::bind(addr).await.unwrap(),
            rpc_micro_per_ms,
            duration_ms,
            madsim::net::NetSim::current().stat().msg_count
        )
    })
    .join()
    .expect("the baseline ran")
}

/// The same program over Baton's network, so the difference is the network alone.
fn baseline_baton_net(seed: u64, duration_ms: u64, rpc_micro_per_ms: u64) -> u64 {
    std::thread::spawn(move || {
        let rt = Net::runtime(seed);
        baseline!(
            rt,
            |addr| Endpoint::bind(addr).unwrap(),
            rpc_micro_per_ms,
            duration_ms,
            Net::current().messages()
        )
    })
    .join()
    .expect("the baseline ran")
}

/// Runs `w` in a fresh `sim bench-workload` process of `exe` (so that one workload's heap
/// and threads never weigh on another's figures) and reads what it measured.
fn measure_in_child(
    exe: &Path,
    w: &'static Workload,
    messages_per_s: u64,
) -> Result<Measured, BenchError> {
    let out = std::process::Command::new(exe)
        .args(["bench-workload", w.name, "--messages-per-s"])
        .arg(messages_per_s.to_string())
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(BenchError::Spawn)?;
    if !out.status.success() {
        return Err(BenchError::Failed {
            name: w.name,
            status: out.status,
        });
    }
    serde_json::from_slice(&out.stdout).map_err(|source| BenchError::Unreadable {
        name: w.name,
        source,
    })
}

/// Measures each of `chosen` `repeat` times, each in a fresh process, keeping the run
/// with the median wall time (a shared machine's noise only ever adds time, and the
/// median does not pick the luckiest run either); rows in the order of [`WORKLOADS`].
/// `say` gets a line as each workload starts.
pub fn measure_all(
    exe: &Path,
    chosen: &[&'static Workload],
    repeat: u32,
    mut say: impl FnMut(&str),
) -> Result<Vec<Row>, BenchError> {
    let median = |w: &'static Workload, rate: u64| -> Result<Measured, BenchError> {
        let mut runs = (0..repeat)
            .map(|_| measure_in_child(exe, w, rate))
            .collect::<Result<Vec<_>, _>>()?;
        runs.sort_by(|a, b| a.total_wall_s.total_cmp(&b.total_wall_s));
        Ok(runs.swap_remove(runs.len() / 2))
    };
    // The baselines exchange as many messages per simulated second as the workload they
    // match: measure that one first.
    let needs_rate = chosen
        .iter()
        .any(|w| matches!(w.kind, Kind::MadsimEndpoints | Kind::BatonNet));
    let mut rows: Vec<Row> = vec![];
    let mut rate = 0;
    if needs_rate {
        let w = workload(BASELINE_MATCHES).expect("a listed workload");
        let m = median(w, 0)?;
        rate = (m.messages as f64 / m.simulated_s).round() as u64;
        if chosen.iter().any(|c| c.name == w.name) {
            rows.push(Row {
                workload: w,
                measured: m,
            });
        }
    }
    for w in chosen {
        if rows.iter().any(|r| r.workload.name == w.name) {
            continue;
        }
        say(&format!("bench: {} ...", w.name));
        let measured = median(w, rate)?;
        rows.push(Row {
            workload: w,
            measured,
        });
    }
    rows.sort_by_key(|r| WORKLOADS.iter().position(|w| w.name == r.workload.name));
    Ok(rows)
}

/// A measured workload, for the report.
pub struct Row {
    /// The workload.
    pub workload: &'static Workload,
    /// What its child process measured.
    pub measured: Measured,
}
