//! A finished run leaves nothing behind in the process.
//!
//! Methodology: this file holds one test, so no other test's runs are alive at the same
//! time in its process; it counts live timelines before and after three runs.

mod common;
use common::*;

#[test]
fn a_finished_run_leaves_no_tasks_behind() {
    // madsim does not drop parked tasks with the runtime, and a task waiting on its
    // endpoint is in a reference cycle with it; without the teardown in run.rs every
    // run leaked its whole world. A leaked world keeps its timeline alive: count them.
    let r = load("graceful-stepdown", &[]);
    let before = baton_sim::world::timeline::Timeline::live_count();
    for seed in 0..3 {
        baton_sim::simulate(&r, seed, true).unwrap();
    }
    assert_eq!(
        baton_sim::world::timeline::Timeline::live_count(),
        before,
        "a run's timeline outlived it"
    );
}
