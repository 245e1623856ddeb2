//! `[noise.gc]` in real mode: the simulator's seeded GC pauses, carried out on live node
//! processes with SIGSTOP and SIGCONT.
//!
//! Methodology: one short run of a scenario with frequent pauses on a live etcd, as a
//! user runs it (`baton-real real`), then its timeline against the schedule the simulator
//! draws for the same seed (`baton_model::noise::gc_schedule`). What is asserted holds on
//! any machine: every pause logged is the schedule's, node by node, in order and at its
//! length (the first one a node ran may have been cut short: the run's clock starts
//! before the fault driver does, see real/src/trial/noise.rs); each pause ends before the
//! next one of its node; and a stopped process writes nothing. No timing is asserted.
//! Real build only:
//!
//! `CARGO_ENCODED_RUSTFLAGS= cargo test --release -p baton-real --target-dir target/real --test noise`
#![cfg(not(madsim))]

use baton_model::timeline::{Entry, Event};
use std::path::PathBuf;
use std::process::Command;

const SCENARIO: &str = r#"name = "gc-noise-real"
protocol = "etcd-lease"
duration_ms = 14000
nodes = 3
fencing = true
start_delay_ms_max = 0

[etcd-lease]
lease_ttl_ms = 2000

[work]
rate_per_s = 200
tick_interval_ms = 100

[noise.gc]
mean_interval_ms = 1500
pause_p50_ms = 300
pause_p99_ms = 1500
pause_max_ms = 2500
"#;

const SEED: u64 = 11;

#[test]
fn noise_stops_the_nodes_at_the_simulator_s_pauses() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gc-noise-real.toml");
    std::fs::write(&file, SCENARIO).unwrap();
    let out = dir.path().join("out");
    let o = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_baton-real")))
        .arg("real")
        .arg(&file)
        .args(["--seed", &SEED.to_string(), "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{stderr}");
    let timeline: Vec<Entry> = std::fs::read_to_string(out.join("trial-1").join("timeline.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let r = baton_model::scenario::load_str("x.toml", "x", SCENARIO, &[]).unwrap();
    let cfg = r.scenario.noise.gc.as_ref().unwrap();
    let mut applied = 0;
    for node in ["n1", "n2", "n3"] {
        let schedule = baton_model::noise::gc_schedule(cfg, SEED, node, 14_000);
        // (at_us, length) of each pause, and whether it ended before the next began.
        let mut pauses: Vec<(i64, u64)> = vec![];
        let mut open = false;
        for e in &timeline {
            match &e.event {
                Event::GcPaused {
                    node: n,
                    duration_ms,
                } if n == node => {
                    assert!(!open, "{node}: a pause began before the last one ended");
                    open = true;
                    pauses.push((e.at_us, *duration_ms));
                }
                Event::GcResumed { node: n } if n == node => {
                    assert!(open, "{node}: resumed without a pause");
                    open = false;
                }
                _ => {}
            }
        }
        // The run's last pause may still be open when the run ends.
        let skipped = schedule.len() - pauses.len();
        let tail = &schedule[skipped..];
        assert!(!pauses.is_empty(), "{node}: no pause ran of {schedule:?}");
        assert!(pauses[0].1 <= tail[0].1, "{node}: {pauses:?} {tail:?}");
        let lens: Vec<u64> = pauses[1..].iter().map(|p| p.1).collect();
        let want: Vec<u64> = tail[1..].iter().map(|p| p.1).collect();
        assert_eq!(lens, want, "{node}: the schedule's lengths, in order");
        // A stopped process sends nothing: no write attempt of the node stamped inside
        // one of its pauses (100 ms in from either end, for a stamp read just before).
        for (at_us, len_ms) in &pauses {
            let (from, to) = (at_us + 100_000, at_us + *len_ms as i64 * 1000 - 100_000);
            let during = timeline.iter().filter(|e| {
                (from..to).contains(&e.at_us)
                    && matches!(&e.event, Event::WriteAttempted { node: n, .. } if n == node)
            });
            assert_eq!(
                during.count(),
                0,
                "{node} wrote while stopped at {at_us} us"
            );
        }
        applied += pauses.len();
    }
    assert!(applied >= 6, "{applied} pauses ran");
}
