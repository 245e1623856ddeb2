//! `baton-real conform`: the spec's experiments against a node given by `--node-cmd`,
//! on Baton's own node (through the contract, `contract-node`) and on the reference Go
//! node of `examples/go-node/`, with the report they must write.
//!
//! Methodology: a short conformance (the clean kill and the graceful step-down under
//! `--quick`: one trial each) on each node, as a user runs it: the first line's time
//! estimate, exit 0, every experiment `pass` in conformance.json, the report's tables
//! and the step-down's gap (never negative), and no process left. The Go node is built by
//! `examples/go-node/build.sh` when it is not there; without Go and etcd's client sources
//! (`apt-get install golang-go golang-etcd-server-dev`) its test says so and passes,
//! unless BATON_REQUIRE_GO is set (CI sets it), when it fails. Bad arguments and a node
//! that breaks the contract in the preflight are refused with exit 2 and one line.
//! On Redis, ZooKeeper and PostgreSQL (node contract version 2), Baton's own node runs
//! one clean kill each through the contract and must pass with a protocol-level verdict
//! that is not `unsafe`, while on Redis the stand-in's `redis-lock` case (a token that
//! is not its INCR's answer) is refused with exit 2 and one line naming that rule (its
//! own control, the stand-in keeping it, is in `node_contract.rs`); a server that is not
//! installed skips its test with a line naming the apt package, unless
//! BATON_REQUIRE_SERVERS is set (CI sets it).
//! The SIGSTOP experiment, fenced and not, on Baton's own node through the contract:
//! its write held through the pause is rejected with the fence and lands without it.
//! Trials side by side (`--jobs`) and Ctrl-C stopping them all. A short TTL sweep names
//! what etcd granted and writes its plot.
//! Real processes, one run at a time.
#![cfg(not(madsim))]

use baton_real::process::processes_mentioning;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn conform(out: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baton-real"))
        .arg("conform")
        .arg("--out")
        .arg(out)
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

fn assert_gone(needle: &str) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5) && !processes_mentioning(needle).is_empty() {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        processes_mentioning(needle),
        Vec::<u32>::new(),
        "left: {needle}"
    );
}

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

/// A short conformance of `node_cmd` passes, with its report; `needle` names its
/// processes.
fn short_conformance_passes(node_cmd: &str, needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("conf");
    let o = conform(
        &out,
        &[
            "--node-cmd",
            node_cmd,
            "--only",
            "clean-kill,graceful-stepdown",
            "--quick",
            "--quiet",
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    // Two trials of 16 s and 12 s of scenario, plus the overhead of each.
    assert!(
        stdout.starts_with("conform: 2 experiment(s) x 1 trial(s) on etcd, about 32 seconds"),
        "{stdout}"
    );
    assert!(
        stdout.contains("conformance: PASS: 2 of 2 experiments passed"),
        "{stdout}"
    );
    assert_gone(needle);
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("conformance.json")).unwrap())
            .unwrap();
    assert_eq!(j["node_cmd"], node_cmd);
    let names: Vec<&str> = j["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["clean-kill", "graceful-stepdown"]);
    for e in j["experiments"].as_array().unwrap() {
        assert_eq!(e["verdict"], "pass", "{e}");
        let t = &e["trials"][0];
        assert_eq!(t["resign_served"], true, "{t}");
        assert_eq!(t["failover_ms"].as_array().unwrap().len(), 1, "{t}");
        assert_eq!(t["double_leader_acting_incidents"], 0);
        let gaps = t["handoff_gaps_ms"].as_array().unwrap();
        assert!(!gaps.is_empty(), "{t}");
        assert!(gaps.iter().all(|g| g.as_f64().unwrap() >= 0.0), "{t}");
        // The first trial keeps its page; a passing one keeps no process files.
        let tdir = out.join(e["name"].as_str().unwrap()).join("trial-1");
        assert!(tdir.join("timeline.html").is_file());
        assert!(tdir.join("summary.txt").is_file());
        assert!(!tdir.join("run").exists());
    }
    let md = std::fs::read_to_string(out.join("conformance.md")).unwrap();
    assert!(md.contains("**PASS: 2 of 2 experiments passed**"), "{md}");
    assert!(md.contains("| clean-kill | on | PASS | 1/1 |"), "{md}");
    assert!(md.contains("Nothing failed."), "{md}");
    // The spec's criteria open the report; these two experiments show the ledger's
    // lag() check and the failover's bound, and cannot show the pause or fence-off ones.
    assert!(md.contains("## The spec's acceptance criteria"), "{md}");
    assert!(md.contains("(a SQL `lag()` check over the ledger finds 0 non-increasing steps): met. Over 2 fenced trials' SQLite ledgers: 0 non-increasing step(s)"), "{md}");
    assert!(md.contains("with its bound named (TTL + an election round for a lease): not shown. Clean-kill failover median"), "{md}");
    assert!(md.contains("against the bound TTL 2000 ms + an election round; the scenario fails a failover above 5000 ms"), "{md}");
    assert!(md.contains("2. the GC-pause run passes: the woken stale leader's write is fenced out, the rejected token shown: not shown. The gc-pause experiment did not run."), "{md}");
    assert!(md.contains("## The spec's figures"), "{md}");
    assert!(
        md.contains("- **graceful-stepdown**: gap from the old leader's stop to the new leader's first write"),
        "{md}"
    );
}

#[test]
fn baton_s_own_node_passes_a_short_conformance_through_the_contract() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    // `{dir}` puts the run's directory on the command line, for the leak check; every
    // other value comes from the BATON_* variables.
    let cmd = format!(
        "{} contract-node --dir {{dir}}",
        env!("CARGO_BIN_EXE_baton-real")
    );
    short_conformance_passes(&cmd, "contract-node --dir");
}

/// The SIGSTOP experiment holds a foreign node's next write at its resource proxy
/// through the pause: with the fence, that write is rejected and the report shows its
/// token; without it, the write lands after the new leader's, the bug reproduced, and
/// neither fails the suite. (If the hold never struck, a careful node would write
/// nothing stale: no rejection, nothing reproduced, and this test fails.)
#[test]
fn a_write_held_through_the_pause_is_fenced_and_reproduced_without_the_fence() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let cmd = format!(
        "{} contract-node --dir {{dir}}",
        env!("CARGO_BIN_EXE_baton-real")
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("conf");
    let o = conform(
        &out,
        &[
            "--node-cmd",
            &cmd,
            "--only",
            "gc-pause,gc-pause-unfenced",
            "--quick",
            "--quiet",
        ],
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("conformance: PASS: 1 of 1 experiments passed; fencing off, gc-pause-unfenced reproduced the double write (1 of 1 trials)"),
        "{stdout}"
    );
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("conformance.json")).unwrap())
            .unwrap();
    let fenced = &j["experiments"][0]["trials"][0];
    let rejected = fenced["rejections"].as_array().unwrap();
    assert!(!rejected.is_empty(), "{fenced}");
    assert!(
        rejected[0]["token"].as_u64() < rejected[0]["max_token"].as_u64(),
        "{fenced}"
    );
    assert_eq!(j["experiments"][1]["verdict"], "reproduced");
    let md = std::fs::read_to_string(out.join("conformance.md")).unwrap();
    assert!(md.contains("the rejected token shown: met. gc-pause passed 1 of 1 trials; the woken leader's write was fenced out in 1 (trial 1: n"), "{md}");
    assert!(md.contains("not decoration: met. A stale leader's write landed with the fence off (gc-pause-unfenced: 1 of 1 trials)"), "{md}");
    assert_gone("contract-node --dir");
}

/// Trials run side by side (`--jobs 3`), each with its own etcd cluster; Ctrl-C while
/// all three run stops them all: exit 130, no process of theirs left, no etcd data
/// directory of the run left in the temporary directory, and a report that says it was
/// interrupted.
#[test]
fn ctrl_c_stops_every_trial_running_side_by_side_and_leaves_nothing() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
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

/// The TTL sweep at two TTLs, 5 s of noise each: each TTL's row names what etcd granted
/// (2 s for 1 s), the JSON carries the same, the plot is written, and the knee or pick
/// is never a TTL that did not run (1 s).
#[test]
fn a_short_ttl_sweep_reports_the_granted_ttl_and_its_plot() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("conf");
    let cmd = format!(
        "{} contract-node --dir {{dir}}",
        env!("CARGO_BIN_EXE_baton-real")
    );
    let o = conform(
        &out,
        &[
            "--node-cmd",
            &cmd,
            "--only",
            "ttl-sweep",
            "--sweep-ttls",
            "1,3",
            "--sweep-secs",
            "5",
            "--slo",
            "99.9",
            "--quiet",
        ],
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{stdout}\n{stderr}");
    // 5 + 3 + 5 s and 5 + 4.5 + 5 s of scenario, plus 2 s each.
    assert!(
        stdout.starts_with(
            "conform: the TTL sweep (2 TTLs, one trial each) on etcd, about 32 seconds"
        ),
        "{stdout}"
    );
    assert_gone("contract-node --dir");
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("conformance.json")).unwrap())
            .unwrap();
    let s = &j["ttl_sweep"];
    assert_eq!(s["availability_pct"], 99.9);
    let points = s["points"].as_array().unwrap();
    let asked: Vec<u64> = points
        .iter()
        .map(|p| p["ttl_asked_ms"].as_u64().unwrap())
        .collect();
    let granted: Vec<u64> = points
        .iter()
        .map(|p| p["ttl_granted_ms"].as_u64().unwrap())
        .collect();
    assert_eq!((asked, granted), (vec![1000, 3000], vec![2000, 3000]));
    assert_ne!(s["pick_ttl_ms"], 1000, "{s}");
    assert_eq!(s["plot"], "ttl-sweep.svg");
    assert!(out.join("ttl-sweep.svg").is_file());
    let md = std::fs::read_to_string(out.join("conformance.md")).unwrap();
    assert!(md.contains("## TTL sweep"), "{md}");
    assert!(md.contains("| 1 s | 2 s ("), "{md}");
    assert!(
        md.contains("the knee is TTL") || md.contains("names no knee"),
        "{md}"
    );
    assert!(md.contains("--set etcd-lease.lease_ttl_ms=3000"), "{md}");
}

#[test]
fn the_go_node_passes_a_short_conformance() {
    let Some(bin) = go_node() else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let cmd = format!(
        "{} --id {{id}} --http-port {{http_port}} --etcd-endpoints {{etcd_endpoints}} --election-prefix {{election_prefix}} --lease-ttl-ms {{lease_ttl_ms}} --resource-url {{resource_url}} --peers {{peers}} --tick-ms {{tick_ms}} --write-timeout-ms {{write_timeout_ms}}",
        bin.display()
    );
    short_conformance_passes(&cmd, &bin.display().to_string());
}

#[test]
fn bad_arguments_and_a_node_breaking_the_contract_are_exit_2_in_one_line() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("conf");
    let script = root().join("real/tests/nodes/bad_node.py");
    let breaking = format!(
        "python3 {} --break next-follower --id {{id}} --http-port {{http_port}} --resource-url {{resource_url}} --dir {{dir}}",
        script.display()
    );
    for (args, says) in [
        (vec!["--node-cmd", "sh", "--backend", "consul"], "--backend \"consul\": not a backend of the node contract (allowed: etcd, redis, zookeeper, postgres)"),
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

/// Whether a server Baton starts is installed (`found`); if not, says so (skip) or fails
/// under BATON_REQUIRE_SERVERS, as `real/tests/backends.rs` does.
fn have_server(found: bool, what: &str, package: &str) -> bool {
    if found {
        return true;
    }
    assert!(
        std::env::var_os("BATON_REQUIRE_SERVERS").is_none(),
        "BATON_REQUIRE_SERVERS is set but {what} is missing: apt-get install {package}"
    );
    eprintln!("skipped: {what} is missing (apt-get install {package})");
    false
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
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
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

/// One clean kill of Baton's own node through the contract on `backend` (node contract
/// version 2): it passes, its report names the backend, the trial ran the backend's
/// protocol (and its reproduce command says so), and the protocol-level verdict is
/// given and is not `unsafe`.
fn contract_node_passes_a_clean_kill_on(backend: &str, protocol: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("conf");
    let cmd = format!(
        "{} contract-node --dir {{dir}}",
        env!("CARGO_BIN_EXE_baton-real")
    );
    let o = conform(
        &out,
        &[
            "--node-cmd",
            &cmd,
            "--backend",
            backend,
            "--only",
            "clean-kill",
            "--trials",
            "1",
            "--quiet",
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{backend}: {stdout}\n{stderr}");
    assert_gone(&out.to_string_lossy());
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("conformance.json")).unwrap())
            .unwrap();
    assert_eq!(j["backend"], backend);
    let e = &j["experiments"][0];
    assert_eq!(e["verdict"], "pass", "{e}");
    let t = &e["trials"][0];
    let outcome = t["protocol_safety"].as_str().unwrap();
    assert!(
        ["protocol-safe", "fence-saved"].contains(&outcome),
        "{backend}: {outcome}"
    );
    assert!(
        t["reproduce"]
            .as_str()
            .unwrap()
            .contains(&format!("--set protocol={protocol}")),
        "{t}"
    );
    let r: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("clean-kill/trial-1/report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(r["protocol"], protocol);
    assert_eq!(r["protocol_safety"]["outcome"], outcome, "{r}");
}

#[test]
fn baton_s_own_node_passes_a_clean_kill_through_the_contract_on_redis() {
    if have_server(
        Path::new(baton_real::backend::redis::server::REDIS_BINARY).is_file(),
        baton_real::backend::redis::server::REDIS_BINARY,
        "redis-server",
    ) {
        contract_node_passes_a_clean_kill_on("redis", "redis-fenced");
    }
}

#[test]
fn baton_s_own_node_passes_a_clean_kill_through_the_contract_on_zookeeper() {
    if have_server(
        Path::new(baton_real::backend::zk::server::ZK_JAR).is_file(),
        baton_real::backend::zk::server::ZK_JAR,
        "zookeeper",
    ) {
        contract_node_passes_a_clean_kill_on("zookeeper", "zk-sequential");
    }
}

#[test]
fn baton_s_own_node_passes_a_clean_kill_through_the_contract_on_postgresql() {
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
        contract_node_passes_a_clean_kill_on("postgres", "db-row");
    }
}
