//! The load is served: a scenario's `rate_per_s` is what the leader is asked and answers.
//!
//! Methodology: clean-kill at 5,000 and 50,000 `next`/s under a few seeds; report.json's
//! `load` gives the requests sent outside fault windows and how many got a number (see
//! `checker/load.rs` for the windows). Before Baton had its own network, a node took one
//! request per simulated millisecond and answered about 18% of 5,000/s; 99% is the bar.
//! The client's counts are per request although it sends one batch per millisecond: at
//! 50,000/s it must have sent 50,000 a simulated second. Canary: a client timeout shorter
//! than any round trip, so that nothing is answered in time, must show a share near 0.

mod common;
use common::*;

fn served(set: &[&str], seed: u64) -> (f64, serde_json::Value) {
    let a = run("clean-kill", seed, set);
    let r = report(&a);
    (r["load"]["ok_share_outside_faults"].as_f64().unwrap(), r)
}

#[test]
fn clean_kill_serves_99_percent_of_5k_and_50k_outside_the_fault_window() {
    for rate in ["work.rate_per_s=5000", "work.rate_per_s=50000"] {
        for seed in [0, 1] {
            let (share, r) = served(&[rate], seed);
            assert!(
                share >= 0.99,
                "{rate} seed {seed}: {share}\n{:#}",
                r["load"]
            );
            let sent = r["client"]["sent"].as_u64().unwrap();
            let per_s: u64 = rate.rsplit('=').next().unwrap().parse().unwrap();
            // 35 simulated seconds at the rate, less the first quantum.
            assert!(
                sent + per_s / 1000 >= per_s * 35 - per_s / 100,
                "{rate}: sent {sent}"
            );
            assert_eq!(r["sequence"]["client_reused"], 0);
        }
    }
}

#[test]
fn canary_a_timeout_shorter_than_a_round_trip_serves_nothing() {
    let (share, r) = served(
        &[
            "work.rate_per_s=5000",
            "work.client_timeout_ms=1",
            "work.client_quantum_ms=1",
        ],
        0,
    );
    assert!(share < 0.01, "{share}\n{:#}", r["load"]);
}
