//! One clean-kill trial end to end: the real-mode smoke test.
//!
//! Starts a run (3 nodes, etcd, resource, load), waits for a leader and a steady flow of
//! writes, kills the leader with SIGKILL at a random moment within one second (so the
//! kill lands at any phase of the keepalive cycle, as a real crash does), waits for
//! another node to lead and write, restarts the killed node, lets it settle, stops
//! everything and merges the timeline. The failover is measured on that timeline as the
//! simulator's checker defines it: from the last write the resource accepted from the
//! old leader to the first it accepted from the new one.
//!
//! This is a driver, the way the scenario runner will be one: it decides when, and the
//! [`Supervisor`] does. It logs the faults (`fault_applied` for the kill, index 0, and
//! the restart, index 1) as a scenario with those two faults would.

use crate::events::{Entry, Event};
use crate::supervisor::{RealConfig, RealError, StoppedRun, Supervisor};
use baton_model::NodeId;
use rand::{Rng, SeedableRng};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A clean-kill trial's knobs.
#[derive(Clone, Debug)]
pub struct CleanKillOptions {
    /// The run's configuration (lease TTL, load, directories, binaries).
    pub config: RealConfig,
    /// After the first leader is seen, how long before the kill window opens.
    pub warmup_ms: u64,
    /// The kill lands uniformly within this window.
    pub kill_jitter_ms: u64,
    /// How long to wait for a new leader after the kill before giving up.
    pub failover_timeout_ms: u64,
    /// After a new leader is seen, how long before the restart.
    pub restart_after_ms: u64,
    /// After the restart, how long before the run stops.
    pub settle_ms: u64,
}

impl CleanKillOptions {
    /// A quick trial (about 10 s of run time plus etcd's start) at `lease_ttl_ms`.
    pub fn new(run_dir: PathBuf, binary: PathBuf, lease_ttl_ms: u64) -> Self {
        let mut config = RealConfig::new(run_dir, binary);
        config.protocol = crate::protocol::RealProtocol::EtcdLease(
            baton_protocols::etcd_lease::EtcdLeaseConfig {
                lease_ttl_ms,
                ..Default::default()
            },
        );
        CleanKillOptions {
            config,
            warmup_ms: 1500,
            kill_jitter_ms: 1000,
            failover_timeout_ms: 3 * lease_ttl_ms.max(2000) + 5000,
            restart_after_ms: 1000,
            settle_ms: 1500,
        }
    }
}

/// What a clean-kill trial measured.
#[derive(Debug)]
pub struct CleanKillReport {
    /// The leader killed.
    pub killed: NodeId,
    /// Its token.
    pub killed_token: Option<u64>,
    /// Who led after it, if anyone did in time.
    pub new_leader: Option<NodeId>,
    /// Every failover of the run (the kill's, normally the only one), in ms.
    pub failovers_ms: Vec<f64>,
    /// The run's output (timeline, ledger, load counts, ports and pids).
    pub output: StoppedRun,
    /// Wall time of the whole trial, etcd's start included.
    pub wall_ms: u64,
}

/// Failovers over a timeline, as the simulator's checker measures them
/// (`sim/src/checker/failover.rs`): over accepted writes in timeline order, each time a
/// write carries a token higher than every earlier one, the time from the accepted write
/// just before it to it. The first leadership's first write is not a failover.
pub fn failovers_ms(timeline: &[Entry]) -> Vec<f64> {
    let mut out = vec![];
    let mut highest: Option<u64> = None;
    let mut last_us: Option<i64> = None;
    for e in timeline {
        if let Event::WriteAccepted { token, .. } = &e.event {
            if highest.is_some_and(|h| *token > h) {
                if let Some(prev) = last_us {
                    out.push((e.at_us - prev) as f64 / 1000.0);
                }
            }
            highest = Some(highest.map_or(*token, |h| h.max(*token)));
            last_us = Some(e.at_us);
        }
    }
    out
}

/// Runs one clean-kill trial.
pub async fn clean_kill(opts: CleanKillOptions) -> Result<CleanKillReport, RealError> {
    let wall = Instant::now();
    let mut sup = Supervisor::start(opts.config.clone()).await?;
    let first = sup
        .wait_for_leader(&[], Duration::from_secs(30))
        .await
        .ok_or_else(|| RealError::Control {
            node: "any".into(),
            why: "no node became leader within 30 s".into(),
        })?;
    let seed = crate::run_clock::monotonic_us() as u64;
    let jitter = rand_chacha::ChaCha8Rng::seed_from_u64(seed).gen_range(0..=opts.kill_jitter_ms);
    tokio::time::sleep(Duration::from_millis(opts.warmup_ms + jitter)).await;
    // The leader may have changed during the warm-up: kill whoever leads now.
    let killed = sup.leader().await.unwrap_or(first);
    let killed_token = sup.status(&killed).await.and_then(|s| s.fence_token);
    sup.record(Event::FaultApplied {
        index: 0,
        kind: baton_model::fault::FaultKind::Kill,
        target: killed.to_string(),
    });
    sup.kill(&killed)?;
    let new_leader = sup
        .wait_for_leader(
            &[killed.as_str()],
            Duration::from_millis(opts.failover_timeout_ms),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(opts.restart_after_ms)).await;
    sup.record(Event::FaultApplied {
        index: 1,
        kind: baton_model::fault::FaultKind::Restart,
        target: killed.to_string(),
    });
    sup.restart(&killed).await?;
    tokio::time::sleep(Duration::from_millis(opts.settle_ms)).await;
    let output = sup.stop().await?;
    Ok(CleanKillReport {
        failovers_ms: failovers_ms(&output.timeline),
        killed,
        killed_token,
        new_leader,
        output,
        wall_ms: wall.elapsed().as_millis() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::WriteOp;

    fn acc(at_ms: i64, token: u64) -> Entry {
        Entry {
            at_us: at_ms * 1000,
            event: Event::WriteAccepted {
                node: format!("t{token}").into(),
                token,
                max_token: 0,
                op: WriteOp::Claim,
            },
        }
    }

    #[test]
    fn a_failover_runs_from_the_old_leaders_last_write_to_the_new_ones_first() {
        let t = vec![
            acc(100, 3),
            acc(200, 3),
            acc(3_300, 7),
            acc(3_400, 7),
            acc(9_000, 9),
        ];
        assert_eq!(failovers_ms(&t), vec![3_100.0, 5_600.0]);
        assert!(failovers_ms(&t[..2]).is_empty());
    }
}
