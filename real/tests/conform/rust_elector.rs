//! Issue 38's worked example (`examples/rust-elector/`), live: the election module a Rust
//! team writes on `etcd-client`, unchanged, as a node under the node contract on a live
//! 3-member etcd, with and without its planted bug.
//!
//! Methodology: `examples/rust-elector/build.sh` builds the module against
//! `etcd-client` 0.21 alone (`plain/`: no Baton crate in its build, which the script
//! checks with `cargo tree`) and the node twice, honest and with the feature
//! `no-local-deadline`. The honest node must pass `conform --quick` on the clean kill,
//! the leader cut off from etcd and the SIGSTOP of TTL + 500 ms, with no trial unsafe.
//! The planted bug (the leader trusts its keep-alive stream alone) must fail the
//! partition with `acted_past_grant`, the property the simulated search of the same
//! module finds and shrinks (`examples/rust-elector/tests/sim.rs`): a leader cut off
//! from etcd leads on after etcd deleted its key. The simulated tests themselves run in
//! the example's own `cargo test` (`.ci/run` runs it, both ways, after `build.sh`).

use crate::common::*;

const HONEST: &str = "examples/rust-elector/bin/rust-elector";
const BUGGY: &str = "examples/rust-elector/bin/rust-elector-no-local-deadline";

/// Whether `build.sh` has built both nodes (it cannot run from here: it builds in
/// target/real, which this test's own cargo holds); `false` after saying so, unless
/// BATON_REQUIRE_LIBRARIES is set (CI sets it, and `.ci/run` runs `build.sh` first).
fn built() -> bool {
    if [HONEST, BUGGY].iter().all(|b| root().join(b).is_file()) {
        return true;
    }
    let why = "examples/rust-elector/bin/ is not built: run sh examples/rust-elector/build.sh";
    assert!(
        std::env::var_os("BATON_REQUIRE_LIBRARIES").is_none(),
        "BATON_REQUIRE_LIBRARIES is set but {why}"
    );
    eprintln!("skipped: {why}");
    false
}

/// `conform --quick --only <only>` on `bin` (relative to the checkout): exit code and
/// conformance.json.
fn conform_on(bin: &str, only: &str) -> (Option<i32>, serde_json::Value, String) {
    let program = root().join(bin);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("conf");
    let cmd = program.display().to_string();
    let o = conform(
        &out,
        &[
            "--node-cmd",
            &cmd,
            "--quick",
            "--only",
            only,
            "--jobs",
            "2",
            "--quiet",
        ],
    );
    let read = |f: &str| std::fs::read_to_string(out.join(f)).unwrap_or_default();
    let text = format!(
        "{}\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
        read("conformance.md")
    );
    let j = serde_json::from_str(&read("conformance.json"))
        .unwrap_or_else(|_| panic!("{bin}: no report\n{text}"));
    assert_gone(&cmd);
    assert_gone(&out.to_string_lossy());
    (o.status.code(), j, text)
}

/// The properties trial `t` violated.
fn violated(t: &serde_json::Value) -> Vec<&str> {
    t["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["property"].as_str().unwrap())
        .collect()
}

#[test]
fn rust_elector_passes_live_and_its_planted_bug_fails_the_partition() {
    if !built() {
        return;
    }
    let _one = Slot::take();
    let (code, j, text) = conform_on(HONEST, "clean-kill,partition,gc-pause");
    assert_eq!(code, Some(0), "{text}");
    for e in j["experiments"].as_array().unwrap() {
        assert_eq!(e["verdict"], "pass", "{e}");
        for t in e["trials"].as_array().unwrap() {
            assert_ne!(t["protocol_safety"], "unsafe", "{t}");
        }
    }
    let (code, j, text) = conform_on(BUGGY, "partition");
    assert_eq!(code, Some(1), "{text}");
    let partition = experiment(&j, "partition");
    assert_eq!(partition["verdict"], "fail", "{partition}");
    for t in partition["trials"].as_array().unwrap() {
        assert!(violated(t).contains(&"acted_past_grant"), "{t}");
    }
}
