//! Determinism is the product: the same scenario, seed and code give byte-identical
//! artifacts; another seed gives another timeline.
//!
//! Methodology: every committed scenario (scenarios/ and its subdirectories: raft/,
//! storm/) runs twice with one seed, each run on its own thread and runtime (as `sim run`
//! does), and every artifact is compared byte for byte.

mod common;
use common::*;

/// Every scenario file under `dir`, as `sub/name` relative to scenarios/, sorted.
fn scenarios_under(dir: &std::path::Path, prefix: &str, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let stem = p.file_stem().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            scenarios_under(&p, &format!("{prefix}{stem}/"), out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(format!("{prefix}{stem}"));
        }
    }
}

fn scenario_names() -> Vec<String> {
    let mut names = vec![];
    scenarios_under(&scenarios_dir(), "", &mut names);
    names.sort();
    for expected in ["gc-pause", "raft/election-storm", "storm/lease-storm"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} is covered: {names:?}"
        );
    }
    names
}

#[test]
fn same_seed_gives_byte_identical_artifacts_for_every_scenario() {
    for name in scenario_names() {
        let a = run(&name, 42, &[]);
        let b = run(&name, 42, &[]);
        for ((file, x), (_, y)) in a.files().iter().zip(b.files().iter()) {
            assert!(x == y, "{name}: {file} differs between two runs of seed 42");
        }
    }
}

#[test]
fn different_seed_gives_a_different_timeline() {
    for name in scenario_names() {
        let a = run(&name, 42, &[]);
        let b = run(&name, 43, &[]);
        assert_ne!(
            a.timeline_jsonl(),
            b.timeline_jsonl(),
            "{name}: seeds 42 and 43 gave the same timeline"
        );
    }
}

#[test]
fn every_protocol_is_deterministic() {
    for p in baton_sim::world::protocol::ProtocolName::ALL {
        let set = format!("protocol={}", p.name());
        let a = run("gc-pause", 7, &[&set]);
        let b = run("gc-pause", 7, &[&set]);
        for ((file, x), (_, y)) in a.files().iter().zip(b.files().iter()) {
            assert!(
                x == y,
                "{}: {file} differs between two runs of seed 7",
                p.name()
            );
        }
        assert_ne!(
            a.timeline_jsonl(),
            run("gc-pause", 8, &[&set]).timeline_jsonl(),
            "{}: seeds 7 and 8 agree",
            p.name()
        );
    }
}
