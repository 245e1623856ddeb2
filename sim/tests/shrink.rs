//! `sim shrink`: a failing swarm seed shrinks to a smaller scenario that fails the same
//! way under plain `sim run`; a passing run has nothing to shrink.
//!
//! Methodology: the real binary on scenarios/swarm.toml with bully, whose seed 14 fails
//! (found by `sim search`, see sim/tests/search.rs), then the minimal file replayed.

mod common;
use common::{sim, temp_dir};

fn swarm() -> String {
    format!("{}/../scenarios/swarm.toml", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn a_failing_swarm_seed_shrinks_to_a_file_that_still_fails() {
    let d = temp_dir("shrink");
    let s = swarm();
    let o = sim(
        &[
            "shrink",
            &s,
            "--seed",
            "14",
            "--set",
            "protocol=bully",
            "--out",
            "min.toml",
            "--quiet",
        ],
        &d,
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(d.join("min.toml")).unwrap();
    assert!(text.starts_with("# Shrunk by `sim shrink "), "{text}");
    assert!(!text.contains("[swarm]"));
    let header = text.lines().nth(2).unwrap();
    let counts: Vec<usize> = header
        .trim_start_matches("# Faults: ")
        .split(|c: char| !c.is_ascii_digit())
        .filter(|x| !x.is_empty())
        .map(|x| x.parse().unwrap())
        .collect();
    assert!(counts[1] < counts[0] && counts[1] <= 3, "{header}");
    // The timeouts the seed drew (1,753 ms for the client, 116 ms for the resource)
    // do not matter to this failure: they shrink back to the defaults.
    assert!(
        text.contains("\nclient_timeout_ms = 500\n")
            && text.contains("\nresource_timeout_ms = 500\n"),
        "{text}"
    );
    // A scenario of its own (its runs get their own report directory), with its seed:
    // run as it is, it fails.
    assert!(
        text.contains("\nname = \"swarm.min\"\nseed = 14\n"),
        "{text}"
    );
    let o = sim(&["run", "min.toml", "--out", "rerun", "--quiet"], &d);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the minimal scenario must still fail"
    );
    // Nothing a user wrote is replaced without --force.
    let o = sim(
        &[
            "shrink",
            &s,
            "--seed",
            "14",
            "--set",
            "protocol=bully",
            "--out",
            "min.toml",
        ],
        &d,
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_passing_run_has_nothing_to_shrink() {
    let d = temp_dir("shrink-pass");
    let s = swarm();
    let o = sim(&["shrink", &s, "--seed", "3", "--out", "min.toml"], &d);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("nothing to shrink"));
    assert!(!d.join("min.toml").exists());
}

/// `--fixed-by`: the consul gallery bug (lock-delay 0, fence off) fails swarm seed 58;
/// shrunk without the option, the minimal file fails with the fix on too (the faults
/// left break the protocol another way); with it, the minimal file passes with the fix.
/// A "fix" that fixes nothing is refused with exit 2.
#[test]
fn fixed_by_keeps_the_minimal_file_to_this_bug() {
    let d = temp_dir("shrink-fixed-by");
    let s = swarm();
    let bug = [
        "--set",
        "protocol=consul-session",
        "--set",
        "fencing=false",
        "--set",
        "consul-session.lock_delay_ms=0",
    ];
    let shrink = |out: &str, extra: &[&str]| {
        let mut args = vec![
            "shrink",
            s.as_str(),
            "--seed",
            "58",
            "--out",
            out,
            "--quiet",
        ];
        args.extend_from_slice(&bug);
        args.extend_from_slice(extra);
        sim(&args, &d)
    };
    let with_fix = |file: &str| {
        sim(
            &[
                "run",
                file,
                "--set",
                "consul-session.lock_delay_ms=1500",
                "--out",
                &format!("{file}.fixed"),
                "--quiet",
            ],
            &d,
        )
        .status
        .code()
    };
    assert_eq!(shrink("plain.toml", &[]).status.code(), Some(0));
    assert_eq!(with_fix("plain.toml"), Some(1));
    let o = shrink(
        "this-bug.toml",
        &["--fixed-by", "consul-session.lock_delay_ms=1500"],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(with_fix("this-bug.toml"), Some(0));
    let o = shrink("none.toml", &["--fixed-by", "work.rate_per_s=1000"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("as well: nothing tells the bug apart"),
        "{err}"
    );
    assert!(!d.join("none.toml").exists());
}
