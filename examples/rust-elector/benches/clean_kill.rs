//! The example's speed (issue 38's target: 200 or more simulated seconds per wall
//! second on one core): the module on every node of `scenarios/clean-kill.toml` at
//! 5,000 next/s for 60 simulated seconds, seeds 0..5, each run whole (simulation,
//! checkers, report, timeline and its pages), as `sim bench` times Baton's own etcd-5k.
//! Prints a Markdown table; `sh bench.sh` runs it pinned to one core into bench.md.
#![cfg_attr(not(madsim), allow(dead_code))]

#[cfg(madsim)]
#[path = "../tests/common/mod.rs"]
mod host;

#[cfg(madsim)]
fn main() {
    use std::time::Instant;
    const SEEDS: u64 = 5;
    const SIM_S: f64 = 60.0;
    let w = host::world(
        "clean-kill.toml",
        &["work.rate_per_s=5000", "duration_ms=60000"],
    );
    let mut walls = vec![];
    for seed in 0..SEEDS {
        let t0 = Instant::now();
        let run = w.run_seed(seed).expect("the run reports");
        let wall = t0.elapsed().as_secs_f64();
        assert!(run.passed, "seed {seed}: {}", run.summary_txt);
        walls.push(wall);
    }
    let total: f64 = walls.iter().sum();
    let mut sorted = walls.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    println!("| workload | runs | simulated s each | wall s (median run) | sim s / wall s (all runs) | sim s / wall s (median run) | target |");
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| rust-elector clean-kill at 5,000 next/s | {SEEDS} | {SIM_S:.0} | {median:.3} | {:.0} | {:.0} | >= 200 |",
        SIM_S * SEEDS as f64 / total,
        SIM_S / median
    );
}

#[cfg(not(madsim))]
fn main() {
    eprintln!("the bench runs in the simulation build (--cfg madsim)");
    std::process::exit(2);
}
