//! The command line of `baton-real`.

use baton_real::load::{self, LoadConfig};
use baton_real::node::{self, NodeConfig};
use baton_real::resource::{self, ResourceConfig};
use baton_real::supervisor::RealError;
use baton_real::trial::smoke::{clean_kill, CleanKillOptions, CleanKillReport};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};

/// Baton's real-network mode: a protocol against its live backend, as processes.
///
/// etcd-lease against etcd, redis-naive and redis-fenced against Redis, zk-sequential
/// against ZooKeeper, db-row against PostgreSQL, and raft among its node processes.
#[derive(Parser)]
#[command(name = "baton-real", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario file against its live backend, as processes, and write the same
    /// report a simulated run writes, once per trial.
    ///
    /// Trial k (seed S+k-1) writes scenario.toml, timeline.jsonl, summary.txt,
    /// report.json, leaders_acting.svg and timeline.html to DIR/trial-<k>/, with the
    /// processes' logs and the SQLite ledger in DIR/trial-<k>/run/; DIR/trials.json lists
    /// every trial. Runs etcd-lease, redis-naive, redis-fenced, zk-sequential, db-row and
    /// raft; a protocol or a fault real mode cannot apply is refused before anything
    /// starts.
    #[command(after_help = baton_model::flags::exit_codes::REAL)]
    Real(baton_model::flags::RealArgs),
    /// Run the spec's experiments against a node of your own (`--node-cmd`) on a live
    /// etcd, Redis, ZooKeeper or PostgreSQL, a few trials each, and write a conformance
    /// report.
    ///
    /// Ten experiments: clean kill under load, the leader partitioned from its backend, a
    /// SIGSTOP of TTL + 500 ms, a graceful step-down and the spec's 9-node churn, each
    /// with fencing on and off (scenarios/conform/), and a TTL sweep; about 23 minutes on
    /// etcd at the defaults four trials at a time, under 2 with --quick (the first line
    /// printed gives the estimate). Writes conformance.md and conformance.json, and
    /// each trial's report under <experiment>/trial-<k>/, to DIR (default
    /// reports/conformance-latest/, or --out).
    #[command(after_help = baton_model::flags::exit_codes::CONFORM)]
    Conform(baton_model::flags::ConformArgs),
    /// Baton's own node (etcd-lease, redis-fenced, zk-sequential or db-row, as the
    /// backend says), started as the node contract starts any node (flags, or the
    /// BATON_* variables): for `conform --node-cmd`.
    ContractNode(Box<baton_real::contract::baton_node::ContractNodeArgs>),
    /// Run clean-kill trials: start etcd, 3 nodes, the resource and the load client,
    /// kill -9 the leader, restart it, and report the failover (last old-leader write
    /// accepted -> first new-leader write accepted).
    Smoke {
        /// Lease TTL asked of etcd (it grants at least 2000).
        #[arg(long, default_value_t = 2000)]
        lease_ttl_ms: u64,
        /// How many trials, one after another.
        #[arg(long, default_value_t = 1)]
        trials: usize,
        /// `next` requests per second.
        #[arg(long, default_value_t = 1000)]
        rate_per_s: u64,
        /// Keep each trial's files in DIR/trial-<i> (default: a temporary directory,
        /// removed afterwards).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// (Started by the supervisor.) A fleet node.
    Node {
        /// Its JSON config.
        #[arg(long)]
        config: PathBuf,
    },
    /// (Started by the supervisor.) The fenced resource.
    Resource {
        /// Its JSON config.
        #[arg(long)]
        config: PathBuf,
    },
    /// (Started by the supervisor.) The load client.
    Load {
        /// Its JSON config.
        #[arg(long)]
        config: PathBuf,
    },
}

/// A child's config that cannot be read (exit 2).
#[derive(Debug, thiserror::Error)]
enum ConfigError {
    /// The file cannot be read.
    #[error("{}: {1}", .0.display())]
    Unreadable(PathBuf, #[source] std::io::Error),
    /// It is not the child's config.
    #[error("{}: {1}", .0.display())]
    NotAConfig(PathBuf, #[source] serde_json::Error),
}

fn read_config<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::Unreadable(path.to_path_buf(), e))?;
    serde_json::from_str(&text).map_err(|e| ConfigError::NotAConfig(path.to_path_buf(), e))
}

/// Why a child process (a node, the resource, the load client) stopped (exit 3).
#[derive(Debug, thiserror::Error)]
enum ChildError {
    /// A node.
    #[error(transparent)]
    Node(#[from] node::NodeError),
    /// The resource.
    #[error(transparent)]
    Resource(#[from] resource::ResourceError),
    /// The load client.
    #[error(transparent)]
    Load(#[from] load::LoadError),
}

type ChildFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), ChildError>>>>;

/// A child process: one thread is plenty, and keeps its timing simple.
fn run_child<F, T>(config: &Path, run: F) -> i32
where
    T: serde::de::DeserializeOwned,
    F: FnOnce(T) -> ChildFuture,
{
    match read_config::<T>(config) {
        Ok(c) => run_child_with(c, run),
        Err(e) => {
            eprintln!("baton-real: {e}");
            2
        }
    }
}

/// A child process with its config read.
fn run_child_with<F, T>(cfg: T, run: F) -> i32
where
    F: FnOnce(T) -> ChildFuture,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime builds");
    match rt.block_on(run(cfg)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("baton-real: {e}");
            3
        }
    }
}

/// The nearest-rank `p`th percentile of ascending `sorted` (as the simulator's reports).
fn nearest_rank(sorted: &[f64], p: usize) -> f64 {
    let n = sorted.len();
    sorted[(p * n).div_ceil(100).clamp(1, n) - 1]
}

fn describe(i: usize, r: &CleanKillReport) -> (String, bool) {
    let o = &r.output;
    let failover = r
        .failovers_ms
        .first()
        .map_or("none".to_string(), |f| format!("{f:.0} ms"));
    let ok = r.failovers_ms.len() == 1
        && o.ledger.non_increasing_steps == 0
        && o.load.reused == 0
        && o.unreadable.is_empty();
    let line = format!(
        "trial {i}: killed {} (token {}), then {} led; failover {failover}{}; ledger: {} batches, \
         {} rejections, {} non-increasing steps (lag check); client: {} of {} next answered, \
         {} reused; {:.1} s wall",
        r.killed,
        r.killed_token.map_or("?".into(), |t| t.to_string()),
        r.new_leader.as_deref().unwrap_or("nobody"),
        if r.failovers_ms.len() > 1 {
            format!(" (and {} more failovers)", r.failovers_ms.len() - 1)
        } else {
            String::new()
        },
        o.ledger.seq_batches,
        o.ledger.rejections,
        o.ledger.non_increasing_steps,
        o.load.ok,
        o.load.sent,
        o.load.reused,
        r.wall_ms as f64 / 1000.0,
    );
    (line, ok)
}

async fn smoke(lease_ttl_ms: u64, trials: usize, rate_per_s: u64, out: Option<PathBuf>) -> i32 {
    let binary = match std::env::current_exe() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("baton-real: cannot find my own binary: {e}");
            return 2;
        }
    };
    baton_real::process::sweep_stale_dirs("baton-real-");
    let tmp = match tempfile::Builder::new()
        .prefix(&baton_real::process::owned_prefix("baton-real-"))
        .tempdir()
    {
        Ok(t) => t,
        Err(e) => {
            eprintln!("baton-real: {e}");
            return 2;
        }
    };
    let base = out.unwrap_or_else(|| tmp.path().to_path_buf());
    let mut failovers = vec![];
    let mut all_ok = true;
    for i in 1..=trials {
        let mut opts = CleanKillOptions::new(
            base.join(format!("trial-{i}")),
            binary.clone(),
            lease_ttl_ms,
        );
        opts.config.rate_per_s = rate_per_s;
        let dir = opts.config.run_dir.clone();
        let r = tokio::select! {
            r = clean_kill(opts) => r,
            _ = tokio::signal::ctrl_c() => {
                // Dropping the trial killed every process and removed etcd's data.
                eprintln!("baton-real: interrupted; files so far in {}", dir.display());
                return 130;
            }
        };
        match r {
            Ok(r) => {
                let (line, ok) = describe(i, &r);
                println!("{line}");
                all_ok &= ok;
                failovers.extend(r.failovers_ms.first().copied());
            }
            Err(
                e @ (RealError::Backend(_) | RealError::RunDirUsed(_) | RealError::Child { .. }),
            ) => {
                eprintln!("baton-real: {e}");
                return 2;
            }
            Err(e) => {
                eprintln!(
                    "baton-real: trial {i} broke: {e} (files in {})",
                    dir.display()
                );
                return 3;
            }
        }
    }
    if trials > 1 && !failovers.is_empty() {
        failovers.sort_by(f64::total_cmp);
        println!(
            "failover over {} trials at lease_ttl_ms {lease_ttl_ms}: min {:.0} ms, median {:.0} ms, max {:.0} ms; all: {}",
            failovers.len(),
            failovers[0],
            nearest_rank(&failovers, 50),
            failovers[failovers.len() - 1],
            failovers
                .iter()
                .map(|f| format!("{f:.0}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    if all_ok {
        0
    } else {
        1
    }
}

/// The runtime of a supervising command (`real`, `smoke`): two workers, so the driver's
/// timers keep firing while the supervisor waits on children and etcd.
fn supervisor_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime builds")
}

/// Parses the command line and runs it; returns the exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Node { config } => run_child(&config, |c: NodeConfig| {
            Box::pin(async move { Ok(node::run(c).await?) })
        }),
        Cmd::Resource { config } => run_child(&config, |c: ResourceConfig| {
            Box::pin(async move { Ok(resource::run(c).await?) })
        }),
        Cmd::Load { config } => run_child(&config, |c: LoadConfig| {
            Box::pin(async move { Ok(load::run(c).await?) })
        }),
        Cmd::ContractNode(args) => match args.config() {
            Ok((cfg, port)) => run_child_with(cfg, |c| {
                Box::pin(async move { Ok(node::run_on(c, port).await?) })
            }),
            Err(e) => {
                eprintln!("baton-real contract-node: {e}");
                2
            }
        },
        Cmd::Conform(args) => {
            match supervisor_runtime().block_on(baton_real::contract::conform::run(args)) {
                Ok(true) => baton_real::trial::command::EXIT_PASS,
                Ok(false) => baton_real::trial::command::EXIT_FAIL,
                Err(e) => {
                    eprintln!("{}", e.render());
                    e.code()
                }
            }
        }
        Cmd::Real(args) => {
            match supervisor_runtime().block_on(baton_real::trial::command::run(args)) {
                Ok(true) => baton_real::trial::command::EXIT_PASS,
                Ok(false) => baton_real::trial::command::EXIT_FAIL,
                Err(e) => {
                    eprintln!("{}", e.render());
                    e.code()
                }
            }
        }
        Cmd::Smoke {
            lease_ttl_ms,
            trials,
            rate_per_s,
            out,
        } => supervisor_runtime().block_on(smoke(lease_ttl_ms, trials, rate_per_s, out)),
    }
}
