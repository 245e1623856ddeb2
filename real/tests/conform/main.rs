//! `baton-real conform`: the spec's experiments against a node given by `--node-cmd`,
//! on Baton's own node (through the contract, `contract-node`) and on the reference Go
//! node of `examples/go-node/`, with the report they must write.
//!
//! Methodology: the whole `--quick` suite (ten experiments, one trial each, and the TTL
//! sweep at 1, 3 and 10 s), four trials at a time, as CI runs it and a user would:
//! Baton's own node through the contract on each backend (etcd, Redis, ZooKeeper,
//! PostgreSQL: node contract version 2) must pass every fenced experiment and the sweep,
//! no trial unsafe, with the SIGSTOP's held write rejected (its token shown) and, with
//! the fence off, landing (the bug reproduced), and the spec's criteria 1 to 5 met; on
//! etcd also the first line's estimate, the step-down's gap (never negative) and the
//! TTL etcd granted. The reference Go node of `examples/go-node/` must fail only what
//! its design predicts (no lease deadline of its own: `acted_past_grant` when cut off).
//! Nothing may be left running. The Go node is built by `examples/go-node/build.sh`
//! when it is not there; without Go and etcd's client sources (`apt-get install
//! golang-go golang-etcd-server-dev`) its test says so and passes, unless
//! BATON_REQUIRE_GO is set (CI sets it), when it fails; a server that is not installed
//! skips its test with a line naming the apt package, unless BATON_REQUIRE_SERVERS is
//! set (CI sets it). Bad arguments and a node that breaks the contract in the preflight
//! are refused with exit 2 and one line; on Redis the stand-in's `redis-lock` case (a
//! token that is not its INCR's answer) too (its own control, the stand-in keeping it,
//! is in `node_contract.rs`). Trials side by side (`--jobs`) and Ctrl-C stopping them
//! all. Real processes, two suites at a time (eight trials at once on 2 cores, to fit
//! CI's budget: one at a time took 425 s), in one queue with the library nodes of
//! [`library_nodes`], so neither's last suite runs alone.
#![cfg(not(madsim))]

#[path = "../common/mod.rs"]
mod common;
mod library_nodes;
mod rust_elector;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The Go node's binary, built if needed; `None` (after saying why) when Go is missing
/// and BATON_REQUIRE_GO is not set.
fn go_node() -> Option<PathBuf> {
    let dir = root().join("examples/go-node");
    let bin = dir.join("bin/go-node");
    let built = Command::new("sh")
        .arg(dir.join("build.sh"))
        .output()
        .unwrap();
    if built.status.success() && bin.is_file() {
        return Some(bin.canonicalize().unwrap());
    }
    let why = String::from_utf8_lossy(&built.stderr).trim().to_string();
    assert!(
        std::env::var_os("BATON_REQUIRE_GO").is_none(),
        "BATON_REQUIRE_GO is set but the Go node did not build: {why}"
    );
    eprintln!("skipped: the Go node did not build: {why}");
    None
}

/// Baton's own node through the contract passes the whole `--quick` suite on `backend`
/// (its protocol there: `protocol`), as [`passes_the_quick_suite`] has it.
fn contract_node_passes_the_quick_suite(backend: &str, protocol: &str) -> (Value, String, String) {
    let cmd = format!(
        "{} contract-node --dir {{dir}}",
        env!("CARGO_BIN_EXE_baton-real")
    );
    passes_the_quick_suite(&cmd, backend, protocol)
}

#[test]
fn baton_s_own_node_passes_the_quick_suite_on_etcd() {
    let _one = Slot::take();
    let (j, md, stdout) = contract_node_passes_the_quick_suite("etcd", "etcd-lease");
    assert!(
        stdout.starts_with("conform: 10 experiment(s) x 1 trial(s) and the TTL sweep (3 TTLs, one trial each) on etcd, about"),
        "{stdout}"
    );
    assert!(
        stdout.contains("conformance: PASS: 9 of 9 experiments passed; fencing off,"),
        "{stdout}"
    );
    // The step-down's gap, never negative; a passing trial keeps its first page only.
    for name in ["graceful-stepdown", "graceful-stepdown-unfenced"] {
        let t = &experiment(&j, name)["trials"][0];
        assert_eq!(t["resign_served"], true, "{t}");
        let gaps = t["handoff_gaps_ms"].as_array().unwrap();
        assert!(!gaps.is_empty(), "{t}");
        assert!(gaps.iter().all(|g| g.as_f64().unwrap() >= 0.0), "{t}");
    }
    // The sweep names what etcd granted (2 s for 1 s) and never picks a TTL that did
    // not run.
    let s = &j["ttl_sweep"];
    let pairs: Vec<(u64, u64)> = s["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["ttl_asked_ms"].as_u64().unwrap(),
                p["ttl_granted_ms"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(pairs, [(1000, 2000), (3000, 3000), (10_000, 10_000)]);
    assert_ne!(s["pick_ttl_ms"], 1000, "{s}");
    assert!(md.contains("| 1 s | 2 s ("), "{md}");
    assert!(md.contains("### The TTL to pick"), "{md}");
    assert!(md.contains("| clean-kill | on | PASS | 1/1 |"), "{md}");
    assert!(
        md.contains("| gc-pause-unfenced | off | REPRODUCED | 1/1 reproduced |"),
        "{md}"
    );
    assert!(md.contains("against the bound TTL 2000 ms + an election round; the scenario fails a failover above 5000 ms"), "{md}");
    assert!(
        md.contains("- **graceful-stepdown**: gap from the old leader's stop to the new leader's first write"),
        "{md}"
    );
}
/// Trials run side by side (`--jobs 3`), each with its own etcd cluster; Ctrl-C while
/// all three run stops them all: exit 130, no process of theirs left, no etcd data
/// directory of the run left in the temporary directory, and a report that says it was
/// interrupted.
#[test]
fn ctrl_c_stops_every_trial_running_side_by_side_and_leaves_nothing() {
    let _one = Slot::take();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("conf");
    let cmd = format!(
        "{} contract-node --dir {{dir}}",
        env!("CARGO_BIN_EXE_baton-real")
    );
    let child = Command::new(env!("CARGO_BIN_EXE_baton-real"))
        .args(["conform", "--node-cmd", &cmd, "--quick", "--jobs", "3"])
        .args(["--only", "clean-kill,partition,gc-pause", "--out"])
        .arg(&out)
        .current_dir(root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let started = |e: &str| out.join(e).join("trial-1/run/n3.stdout").is_file();
    let t0 = Instant::now();
    while !["clean-kill", "partition", "gc-pause"]
        .iter()
        .all(|e| started(e))
        && t0.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        ["clean-kill", "partition", "gc-pause"]
            .iter()
            .all(|e| started(e)),
        "three trials run at once"
    );
    let etcd_dirs = || -> Vec<String> {
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!("baton-etcd-{pid}-")))
            .collect()
    };
    assert_eq!(etcd_dirs().len(), 3, "one etcd cluster per trial");
    // SAFETY: a plain signal to the child we started.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_gone(&out.to_string_lossy());
    assert_eq!(etcd_dirs(), Vec::<String>::new(), "etcd's data directories");
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("conformance.json")).unwrap())
            .unwrap();
    assert_eq!(j["interrupted"], true, "{j}");
    assert_eq!(j["jobs"], 3, "{j}");
}

/// The reference Go node (etcd's `concurrency`) under the `--quick` suite on etcd: what
/// its design predicts and its committed report shows. It keeps no lease deadline of
/// its own, so cut off from etcd it acts past its grant (`acted_past_grant`, fenced or
/// not); everything else passes, and the SIGSTOP's held write is fenced, or lands with
/// the fence off.
// The longest suite: named to sort (libtest's order) before the library nodes, so a
// shorter one runs last.
#[test]
fn go_node_fails_only_what_its_design_predicts_in_the_quick_suite() {
    let Some(bin) = go_node() else {
        return;
    };
    let _one = Slot::take();
    let cmd = format!(
        "{} --id {{id}} --http-port {{http_port}} --etcd-endpoints {{etcd_endpoints}} --election-prefix {{election_prefix}} --lease-ttl-ms {{lease_ttl_ms}} --resource-url {{resource_url}} --peers {{peers}} --tick-ms {{tick_ms}} --write-timeout-ms {{write_timeout_ms}}",
        bin.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("conf");
    let (code, j, md, stdout) = quick_suite(&cmd, "etcd", &out);
    assert!(matches!(code, Some(0 | 1)), "{stdout}\n{md}");
    assert_gone(&bin.display().to_string());
    for e in j["experiments"].as_array().unwrap() {
        let name = e["name"].as_str().unwrap();
        match name {
            "partition" | "partition-unfenced" => {
                for t in e["trials"].as_array().unwrap() {
                    let props: Vec<&str> = t["violations"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v["property"].as_str().unwrap())
                        .collect();
                    assert!(
                        props.is_empty() || props.contains(&"acted_past_grant"),
                        "{t}"
                    );
                }
            }
            "gc-pause-unfenced" => assert_eq!(e["verdict"], "reproduced", "{e}"),
            _ => assert_eq!(e["verdict"], "pass", "{e}"),
        }
    }
    let gc = &experiment(&j, "gc-pause")["trials"][0];
    assert!(!gc["rejections"].as_array().unwrap().is_empty(), "{gc}");
}

#[test]
fn bad_arguments_and_a_node_breaking_the_contract_are_exit_2_in_one_line() {
    let _one = Slot::take();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("conf");
    let script = root().join("real/tests/nodes/bad_node.py");
    let breaking = format!(
        "python3 {} --break next-follower --id {{id}} --http-port {{http_port}} --resource-url {{resource_url}} --dir {{dir}}",
        script.display()
    );
    for (args, says) in [
        (vec!["--node-cmd", "sh", "--backend", "consul"], "--backend \"consul\": not a backend of the node contract (allowed: etcd, redis, zookeeper, postgres, none)"),
        (vec!["--node-cmd", "sh {zk_connect}", "--backend", "redis"], "--node-cmd: {zk_connect} is a placeholder of zookeeper, and this run is on redis (allowed on redis:"),
        (vec!["--node-cmd", "sh", "--only", "clean-kill,split-brain"], "--only: no experiment named \"split-brain\" (allowed: clean-kill, clean-kill-unfenced, partition"),
        (vec!["--node-cmd", "{nope}"], "--node-cmd: unknown placeholder {nope}"),
        (vec!["--node-cmd", breaking.as_str(), "--only", "clean-kill", "--trials", "1", "-q"], "clean-kill trial 1 could not start: node n2 broke node contract v2 rule `next-follower`"),
    ] {
        let o = conform(&out, &args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert_gone(&out.to_string_lossy());
}

/// `conform --backend redis` puts the stand-in through the same preflight as `real`: a
/// leader whose token is not the answer of its INCR (bad_node.py's `redis-lock`) is one
/// line naming rule `redis-lock`, exit 2, and nothing is left running.
#[test]
fn a_node_breaking_a_backend_rule_is_exit_2_in_one_line() {
    if !have_server(
        Path::new(baton_real::backend::redis::server::REDIS_BINARY).is_file(),
        baton_real::backend::redis::server::REDIS_BINARY,
        "redis-server",
    ) {
        return;
    }
    let _one = Slot::take();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("conf");
    let breaking = format!(
        "python3 {} --break redis-lock --id {{id}} --http-port {{http_port}} --resource-url {{resource_url}} --dir {{dir}}",
        root().join("real/tests/nodes/bad_node.py").display()
    );
    let args = [
        "--node-cmd",
        &breaking,
        "--backend",
        "redis",
        "--only",
        "clean-kill",
        "--trials",
        "1",
        "-q",
    ];
    let o = conform(&out, &args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(
            "clean-kill trial 1 could not start: node n1 broke node contract v2 rule `redis-lock`"
        ) && stderr.contains("but baton:leader:token reads 1"),
        "{stderr}"
    );
    assert_gone(&out.to_string_lossy());
}

#[test]
fn baton_s_own_node_passes_the_quick_suite_on_redis() {
    if have_server(
        Path::new(baton_real::backend::redis::server::REDIS_BINARY).is_file(),
        baton_real::backend::redis::server::REDIS_BINARY,
        "redis-server",
    ) {
        let _one = Slot::take();
        contract_node_passes_the_quick_suite("redis", "redis-fenced");
    }
}

#[test]
fn baton_s_own_node_passes_the_quick_suite_on_zookeeper() {
    if have_server(
        Path::new(baton_real::backend::zk::server::ZK_JAR).is_file(),
        baton_real::backend::zk::server::ZK_JAR,
        "zookeeper",
    ) {
        let _one = Slot::take();
        contract_node_passes_the_quick_suite("zookeeper", "zk-sequential");
    }
}

#[test]
fn baton_s_own_node_passes_the_quick_suite_on_postgresql() {
    let found = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().join("bin/postgres").is_file());
    if have_server(
        found,
        "/usr/lib/postgresql/<version>/bin/postgres",
        "postgresql",
    ) {
        let _one = Slot::take();
        contract_node_passes_the_quick_suite("postgres", "db-row");
    }
}
