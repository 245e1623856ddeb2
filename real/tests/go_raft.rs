//! The reference node on hashicorp/raft (`examples/go-raft/`) under `conform --quick` on
//! node contract v2's no-backend mode (`--backend none`): the nodes elect among
//! themselves, each talking to its peers through Baton's proxies.
//!
//! Methodology: `examples/go-raft/build.sh` builds the node offline from Debian's
//! `golang-go`, `golang-github-hashicorp-raft-dev` and
//! `golang-github-hashicorp-raft-boltdb-dev` (GOPATH mode); without them the test says
//! which package is missing and passes, unless BATON_REQUIRE_GO is set (CI sets it), when
//! it fails. The whole `--quick` suite (ten experiments, one trial each, and the TTL
//! sweep at 1, 3 and 10 s), two trials at a time: every fenced experiment and the sweep
//! must pass (so no leader acted past its grant: a newer term's leader seen while the old
//! one still believed or wrote; no two leaders in one term), no trial is unsafe, and
//! nothing of the run is left running. With the fence off, the SIGSTOP and partition
//! experiments may pass or reproduce the stale write, as the timing of raft's
//! re-election falls (failovers of 2.4 to 3.4 s at TTL 2 s in the README's run, around
//! the 2.5 s pause). The test took 132 s here (2 shared cores, Go build cache warm), plus
//! the Go build: see examples/go-raft/README.md.
#![cfg(not(madsim))]

use baton_real::process::processes_mentioning;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The node's binary, built by its build.sh; `None` (after saying why) when Go or the
/// sources are missing and BATON_REQUIRE_GO is not set.
fn go_raft() -> Option<PathBuf> {
    let dir = root().join("examples/go-raft");
    let built = Command::new("sh")
        .arg(dir.join("build.sh"))
        .output()
        .unwrap();
    let bin = dir.join("bin/go-raft");
    if built.status.success() && bin.is_file() {
        return Some(bin.canonicalize().unwrap());
    }
    let why = String::from_utf8_lossy(&built.stderr).trim().to_string();
    assert!(
        std::env::var_os("BATON_REQUIRE_GO").is_none(),
        "BATON_REQUIRE_GO is set but the hashicorp/raft node did not build: {why}"
    );
    eprintln!("skipped: the hashicorp/raft node did not build: {why}");
    None
}

#[test]
fn the_hashicorp_raft_node_passes_the_quick_suite_with_no_backend() {
    let Some(bin) = go_raft() else {
        return;
    };
    let cmd = format!(
        "{} --id {{id}} --http-port {{http_port}} --raft-port {{raft_port}} --raft-peers {{raft_peers}} --election-timeout-ms {{election_timeout_ms}} --leader-lease-ms {{leader_lease_ms}} --resource-url {{resource_url}} --peers {{peers}} --tick-ms {{tick_ms}} --write-timeout-ms {{write_timeout_ms}} --dir {{dir}}",
        bin.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("conf");
    let o = Command::new(env!("CARGO_BIN_EXE_baton-real"))
        .args(["conform", "--out"])
        .arg(&out)
        .args(["--node-cmd", &cmd, "--backend", "none", "--quick"])
        .args(["--jobs", "2", "--quiet"])
        .current_dir(root())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let j: Value = std::fs::read_to_string(out.join("conformance.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| panic!("no report\n{stdout}\n{stderr}"));
    let t0 = Instant::now();
    let needle = bin.display().to_string();
    while t0.elapsed() < Duration::from_secs(5) && !processes_mentioning(&needle).is_empty() {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(processes_mentioning(&needle), Vec::<u32>::new(), "left");
    assert_eq!(j["backend"], "none", "{j}");
    let experiments = j["experiments"].as_array().unwrap();
    assert_eq!(experiments.len(), 11, "{j}");
    for e in experiments {
        let name = e["name"].as_str().unwrap();
        let verdict = e["verdict"].as_str().unwrap();
        if name.ends_with("-unfenced") {
            assert!(
                matches!(verdict, "pass" | "reproduced" | "not_reproduced"),
                "{name}: {e}"
            );
        } else {
            assert_eq!(verdict, "pass", "{name}: {e}");
        }
        for t in e["trials"].as_array().into_iter().flatten() {
            assert_ne!(t["protocol_safety"], "unsafe", "{name}: {t}");
        }
    }
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
}
