//! `sim search`: shards merge into what one unsharded search gives, the reproducer of
//! each signature repeats under plain `sim run`, bad input exits 2, and the committed
//! Kubernetes and GitHub Actions manifests run (search_manifests/).
//!
//! Methodology: the real binary on scenarios/swarm.toml with bully (a peer protocol
//! without a lease, which some swarms break) over 60 seeds, unsharded and as two slice shards and
//! two hash shards merged; failures.jsonl must match line for line apart from wall times.

mod common;
use common::{sim, temp_dir};
use std::path::Path;

fn swarm() -> String {
    format!("{}/../scenarios/swarm.toml", env!("CARGO_MANIFEST_DIR"))
}

fn search(d: &Path, out: &str, extra: &[&str]) -> std::process::Output {
    let s = swarm();
    let mut args = vec![
        "search",
        s.as_str(),
        "--seeds",
        "0..60",
        "--set",
        "protocol=bully",
        "--out",
        out,
        "--quiet",
    ];
    args.extend_from_slice(extra);
    sim(&args, d)
}

/// failures.jsonl without the wall times.
fn failures(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("failures.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("wall_ms");
            v
        })
        .collect()
}

#[test]
fn merged_shards_equal_one_search_and_reproducers_repeat() {
    let d = temp_dir("search");
    let o = search(&d, "all", &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let all = failures(&d.join("all"));
    assert!(!all.is_empty(), "bully survived 60 swarm seeds");
    assert!(all.iter().all(|f| f["check"] == "repeated"), "{all:?}");
    for kind in ["slice", "hash"] {
        for k in ["1", "2"] {
            let p = format!("{kind}:{k}/2");
            let o = search(&d, &format!("{kind}{k}"), &["--partition", &p]);
            assert!(matches!(o.status.code(), Some(0 | 1)), "{p}");
        }
        let (a, b, m) = (
            format!("{kind}1"),
            format!("{kind}2"),
            format!("{kind}-merged"),
        );
        let o = sim(&["search", "--merge", &a, &b, "--out", &m], &d);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(failures(&d.join(&m)), all, "{kind} shards merged");
        for e in std::fs::read_dir(d.join("all")).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".toml") {
                assert_eq!(
                    std::fs::read(d.join("all").join(&name)).unwrap(),
                    std::fs::read(d.join(&m).join(&name)).unwrap(),
                    "{kind}: {name}"
                );
            }
        }
    }
    // Each reproducer is a plain scenario: sim run fails it again, without the swarm.
    for e in std::fs::read_dir(d.join("all")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let text = std::fs::read_to_string(&p).unwrap();
            assert!(!text.contains("[swarm]"), "{}", p.display());
            let seed = text
                .lines()
                .next()
                .unwrap()
                .split("--seed ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .to_string();
            let o = sim(
                &[
                    "run",
                    p.to_str().unwrap(),
                    "--seed",
                    &seed,
                    "--out",
                    "rerun",
                    "--force",
                    "--quiet",
                ],
                &d,
            );
            assert_eq!(o.status.code(), Some(1), "{}", p.display());
        }
    }
}

#[test]
fn bad_search_input_exits_2() {
    let d = temp_dir("search-bad");
    for (extra, needle) in [
        (&["--partition", "3/2"][..], "slice:K/N or hash:K/N"),
        (&["--partition", "slice:3/2"][..], "1 <= K <= N"),
        (
            &["--set", "swarm.weights.meteor=1"][..],
            "unknown fault kind `meteor`",
        ),
        (
            &["--set", "swarm.pause_ms=[5000, 100]"][..],
            "swarm.pause_ms",
        ),
    ] {
        let o = search(&d, "out", extra);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(needle), "{extra:?}: {err}");
        assert!(!d.join("out").exists());
    }
    let o = sim(&["search", "--merge", "nowhere", "--out", "m"], &d);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn first_failure_stops_at_the_first_failing_seed_in_order() {
    // The full search's lowest failing seed is the one --first-failure must write, and
    // it must write no other seed below it and run no seed far beyond it.
    let d = temp_dir("search-first");
    search(&d, "all", &[]);
    let first = failures(&d.join("all"))
        .iter()
        .map(|f| f["seed"].as_u64().unwrap())
        .min()
        .expect("bully fails some of 60 swarm seeds");
    // Two jobs: whichever seeds the other worker took while the first failure ran may
    // fail too, but none below it.
    let o = search(&d, "first", &["--first-failure", "--jobs", "2"]);
    assert_eq!(o.status.code(), Some(1));
    let seeds: Vec<u64> = failures(&d.join("first"))
        .iter()
        .map(|f| f["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(seeds.iter().min(), Some(&first), "{seeds:?}");
    // One job: exactly the seeds up to the first failure run, and nothing after it.
    let o = search(&d, "one", &["--first-failure", "--jobs", "1"]);
    assert_eq!(o.status.code(), Some(1));
    let seeds: Vec<u64> = failures(&d.join("one"))
        .iter()
        .map(|f| f["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(seeds, vec![first]);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("one/search.json")).unwrap()).unwrap();
    assert_eq!(meta["seeds_run"].as_u64(), Some(first + 1), "{meta}");
    assert!(meta.get("interrupted").is_none(), "{meta}");
}

mod search_manifests;

#[test]
fn the_committed_manifests_run_with_the_flags_they_use() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (i, (file, task)) in search_manifests::MANIFESTS.iter().enumerate() {
        let text = std::fs::read_to_string(repo.join(file)).unwrap();
        let d = temp_dir(&format!("manifest-{i}"));
        let n = search_manifests::check(&text, *task, &d).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(n >= 2, "{file}: {n} commands, not a search and its merge");
        // The canary: one flag misspelt must be caught.
        let bad = text.replacen("--jobs", "--job", 1);
        assert_ne!(bad, text, "{file} has no --jobs to misspell");
        let d = temp_dir(&format!("manifest-canary-{i}"));
        assert!(
            search_manifests::check(&bad, *task, &d).is_err(),
            "{file}: a misspelt flag passed the check"
        );
    }
}
