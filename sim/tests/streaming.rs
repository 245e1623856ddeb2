//! The checkers read a run as it goes (a run never holds its timeline); this pins that
//! they find exactly what they find over the whole timeline read back from the file.
//!
//! Methodology: run scenarios whose findings are rich (a fenced pause with a rejection and
//! belief overlap, an unfenced pause with every safety violation, a raft log-mode run
//! with reads and a kill), parse timeline.jsonl back into events, check them in memory
//! with `checker::check`, and compare with the findings the run produced. The client's
//! per-slice counts are not in the timeline, so the load figure is left out.

mod common;
use baton_model::checker::{check, CheckInput};
use baton_sim::world::timeline::Entry;
use common::*;

fn same_findings(name: &str, seed: u64, set: &[&str]) {
    let r = load(name, set);
    let a = baton_sim::run(&r, seed).unwrap();
    let entries: Vec<Entry> = a
        .timeline_jsonl()
        .lines()
        .map(|l| serde_json::from_str(l).expect("an event"))
        .collect();
    assert!(!entries.is_empty());
    let batch = check(&CheckInput {
        resolved: &r,
        entries: &entries,
        end_us: r.scenario.duration_ms as i64 * 1000,
        client: Default::default(),
    });
    let strip = |f: &baton_model::checker::Findings| {
        let mut v = serde_json::to_value(f).unwrap();
        v.as_object_mut().unwrap().remove("load");
        // The client's own count of reuse reaches the checkers at the end of a run only.
        v["sequence"]["client_reused"] = 0.into();
        v
    };
    let mut streamed = strip(&a.findings);
    let mut batched = strip(&batch);
    // SequenceReused comes from the client's count, not the timeline.
    for v in [&mut streamed, &mut batched] {
        let list = v["violations"].as_array_mut().unwrap();
        list.retain(|x| x["property"] != "sequence_reused");
    }
    assert_eq!(streamed, batched, "{name} seed {seed} {set:?}");
    assert_eq!(a.findings.faults, batch.faults);
    assert_eq!(a.findings.events, entries.len());
}

#[test]
fn checking_as_the_run_goes_finds_what_checking_the_whole_timeline_finds() {
    same_findings("gc-pause", 42, &[]);
    same_findings("gc-pause-unfenced", 42, &[]);
    same_findings("partition", 1, &["protocol=bully"]);
    same_findings(
        "clean-kill",
        3,
        &[
            "protocol=raft",
            "raft.sequencer=log",
            "work.read_rate_per_s=500",
        ],
    );
}
