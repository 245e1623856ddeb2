//! A write in flight is its leader still acting: the release-in-flight canary, end to
//! end.
//!
//! Methodology: `etcd-lease.canary` (and `raft.canary`) = `"release-in-flight"` plants a
//! leader that, asked to step down, lets its grant go at once while a protected write it
//! sent is still on a slow link to the resource. `scenarios/step-down-in-flight.toml`
//! arms that moment by hand: with the canary it must fail (exit 1, fence on, the late
//! write rejected: `acted_past_grant` and `acted_after_release`, protocol-level verdict
//! fence-saved), and without it pass protocol-safe with a positive handoff gap, on every
//! seed tried. Then a generic swarm search (`scenarios/swarm.toml`, no hand-written
//! schedule) must find the canary within 200 seeds, and `sim shrink` must bring the
//! first failure to at most 3 faults that fail with the canary and pass without it. The
//! honest protocol passes the same 200 seeds.

mod common;
use common::{report, run, sim, temp_dir};

fn scenario(name: &str) -> String {
    format!("{}/../scenarios/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The protocol's `--set`s: its name and its canary switch.
fn switches(protocol: &str, canary: &str) -> Vec<String> {
    vec![
        format!("protocol={protocol}"),
        format!("{protocol}.canary={canary}"),
    ]
}

#[test]
fn step_down_in_flight_fails_with_the_canary_and_passes_without() {
    for protocol in ["etcd-lease", "raft"] {
        for seed in 0..4 {
            let honest = switches(protocol, "none");
            let honest: Vec<&str> = honest.iter().map(String::as_str).collect();
            let a = run("step-down-in-flight", seed, &honest);
            assert!(a.passed, "{protocol} seed {seed}:\n{}", a.summary_txt);
            let r = report(&a);
            assert_eq!(
                r["protocol_safety"]["outcome"], "protocol-safe",
                "{protocol} {seed}"
            );
            let gap = r["handoff_gaps"][0]["gap_ms"].as_f64().unwrap();
            assert!(gap > 0.0, "{protocol} seed {seed}: gap {gap}");

            let canary = switches(protocol, "release-in-flight");
            let canary: Vec<&str> = canary.iter().map(String::as_str).collect();
            let a = run("step-down-in-flight", seed, &canary);
            let r = report(&a);
            let props: Vec<&str> = r["violations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["property"].as_str().unwrap())
                .collect();
            assert_eq!(
                props,
                ["acted_after_release", "acted_past_grant"],
                "{protocol} seed {seed}:\n{}",
                a.summary_txt
            );
            assert_eq!(
                r["protocol_safety"]["outcome"], "fence-saved",
                "{protocol} {seed}"
            );
            assert_eq!(r["protocol_safety"]["writes_landed_past_grant"], 1);
            assert_eq!(r["fencing"]["rejections"].as_array().unwrap().len(), 1);
            assert_eq!(r["double_leader_acting_incidents"], 0);
            assert!(a
                .summary_txt
                .contains("the old leader had not stopped by then: its write sent at"));
        }
    }
    // As a user runs it: exit 1 with the fence on.
    let d = temp_dir("in-flight-cli");
    let file = scenario("step-down-in-flight.toml");
    let o = sim(
        &[
            "run",
            &file,
            "--set",
            "etcd-lease.canary=release-in-flight",
            "--out",
            "canary",
            "--quiet",
        ],
        &d,
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = sim(&["run", &file, "--out", "honest", "--quiet"], &d);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_swarm_search_finds_the_canary_and_shrink_reduces_it() {
    let d = temp_dir("in-flight-search");
    let swarm = scenario("swarm.toml");
    for protocol in ["etcd-lease", "raft"] {
        let canary = format!("{protocol}.canary=release-in-flight");
        let honest = format!("{protocol}.canary=none");
        let p = format!("protocol={protocol}");
        // The honest protocol: nothing to find on these seeds.
        let o = sim(
            &[
                "search",
                &swarm,
                "--seeds",
                "0..200",
                "--set",
                &p,
                "--out",
                &format!("{protocol}-stock"),
                "--quiet",
            ],
            &d,
        );
        assert_eq!(o.status.code(), Some(0), "{protocol}: {}", stderr(&o));
        // The canary: found within 200 seeds.
        let found = format!("{protocol}-found");
        let o = sim(
            &[
                "search",
                &swarm,
                "--seeds",
                "0..200",
                "--set",
                &p,
                "--set",
                &canary,
                "--first-failure",
                "--out",
                &found,
                "--quiet",
            ],
            &d,
        );
        assert_eq!(o.status.code(), Some(1), "{protocol}: {}", stderr(&o));
        let lines = std::fs::read_to_string(d.join(&found).join("failures.jsonl")).unwrap();
        let first: serde_json::Value =
            serde_json::from_str(lines.lines().next().expect("a failure")).unwrap();
        let signature = first["signature"].to_string();
        assert!(
            signature.contains("acted_past_grant"),
            "{protocol}: {first}"
        );
        let seed = first["seed"].as_u64().unwrap().to_string();
        // Shrunk, keeping only candidates that pass without the canary.
        let min = format!("{protocol}.min.toml");
        let o = sim(
            &[
                "shrink",
                &swarm,
                "--seed",
                &seed,
                "--set",
                &p,
                "--set",
                &canary,
                "--fixed-by",
                &honest,
                "--out",
                &min,
                "--quiet",
            ],
            &d,
        );
        assert_eq!(o.status.code(), Some(0), "{protocol}: {}", stderr(&o));
        let text = std::fs::read_to_string(d.join(&min)).unwrap();
        let faults = text.matches("[[faults]]").count();
        assert!(
            (1..=3).contains(&faults),
            "{protocol}: {faults} faults:\n{text}"
        );
        let o = sim(
            &[
                "run",
                &min,
                "--out",
                &format!("{protocol}-rerun"),
                "--quiet",
            ],
            &d,
        );
        assert_eq!(o.status.code(), Some(1), "{protocol}: {}", stderr(&o));
        let o = sim(
            &[
                "run",
                &min,
                "--set",
                &honest,
                "--out",
                &format!("{protocol}-honest"),
                "--quiet",
            ],
            &d,
        );
        assert_eq!(o.status.code(), Some(0), "{protocol}: {}", stderr(&o));
    }
}
