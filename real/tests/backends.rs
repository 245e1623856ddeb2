//! `baton-real real` on every live backend but etcd: Redis (redis-fenced, redis-naive),
//! ZooKeeper (zk-sequential), PostgreSQL (db-row), and raft among the node processes.
//!
//! Methodology: as `scenarios.rs`, the command as a user runs it, on the committed
//! scenario shortened with `--set` (a 2 s lease, the faults a few seconds in, a 17 s
//! run), and only what must hold on any machine is asserted: the verdict, the report's
//! stable keys and its protocol, one failover after the kill, the old leader's lease
//! ended by the backend as its observer saw it (`key_deleted` under the old token,
//! raft excepted: its grant ends with the next win), and nothing left running or on disk
//! (no process naming the output directory, no server data directory of this run).
//! The unfenced gc-pause on redis-naive must show the double write a lock without a
//! token allows. A server that is not installed skips its test with a line naming the
//! apt package, unless BATON_REQUIRE_SERVERS is set (CI sets it): then it fails. Two
//! runs go at a time (each with its own servers, ports and directories), as conform runs
//! its trials side by side.
//!
//! `CARGO_ENCODED_RUSTFLAGS= cargo test --release -p baton-real --target-dir target/real`
#![cfg(not(madsim))]

mod common;

use baton_real::process::processes_mentioning;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Whether the server `binary` is here; if not, says so (skip) or fails under
/// BATON_REQUIRE_SERVERS.
fn have(binary: &str, package: &str) -> bool {
    if Path::new(binary).is_file() {
        return true;
    }
    assert!(
        std::env::var_os("BATON_REQUIRE_SERVERS").is_none(),
        "BATON_REQUIRE_SERVERS is set but {binary} is missing: apt-get install {package}"
    );
    eprintln!("skipped: {binary} is missing (apt-get install {package})");
    false
}

fn have_postgres() -> bool {
    let found = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().join("bin/postgres").is_file());
    found || have("/usr/lib/postgresql/<version>/bin/postgres", "postgresql")
}

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(name)
}

/// Runs `baton-real real <scenario> --out <out> -q <args>`; returns its output and pid.
fn real(scenario_file: &Path, out: &Path, args: &[&str]) -> (Output, u32) {
    let child = Command::new(env!("CARGO_BIN_EXE_baton-real"))
        .arg("real")
        .arg(scenario_file)
        .arg("--out")
        .arg(out)
        .arg("--quiet")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    (child.wait_with_output().unwrap(), pid)
}

/// Nothing of the run with supervisor `pid` and output `out` is left: no process names a
/// file under `out`, and no server data directory (`baton-srv-<pid>-...`) remains.
fn assert_nothing_left(pid: u32, out: &Path) {
    let data = format!("{}{pid}-", baton_real::backend::server::DATA_PREFIX);
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5)
        && !(processes_mentioning(&out.to_string_lossy()).is_empty()
            && processes_mentioning(&data).is_empty())
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        processes_mentioning(&out.to_string_lossy()),
        Vec::<u32>::new()
    );
    assert_eq!(processes_mentioning(&data), Vec::<u32>::new());
    let left: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&data))
        .collect();
    assert!(left.is_empty(), "server data left: {left:?}");
}

/// clean-kill.toml under `protocol`, shortened (`lease` sets its 2 s lease): one trial
/// that passes with one failover; returns its report and timeline.
fn clean_kill(protocol: &str, lease: &[&str]) -> (Value, String) {
    let _two = common::Slot::take();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let set_protocol = format!("protocol={protocol}");
    let mut args = vec![
        "--set",
        &set_protocol,
        // The run outlasts every protocol's liveness window after the restart.
        "--set",
        "duration_ms=17000",
        "--set",
        "faults.0.at_ms=4000",
        "--set",
        "faults.1.at_ms=9000",
    ];
    for l in lease {
        args.extend(["--set", l]);
    }
    let (o, pid) = real(&scenario("clean-kill.toml"), &out, &args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{protocol}: {stderr}");
    assert_nothing_left(pid, &out);
    let trial = out.join("trial-1");
    for f in baton_model::render::output_dir::ARTIFACTS {
        let p = trial.join(f);
        assert!(
            p.is_file() && std::fs::metadata(&p).unwrap().len() > 0,
            "{f}"
        );
    }
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(trial.join("report.json")).unwrap()).unwrap();
    for key in baton_model::render::report::STABLE_KEYS {
        assert!(r.pointer(key).is_some(), "{protocol}: {key} missing");
    }
    assert_eq!(r["verdict"], "pass", "{r}");
    assert_eq!(r["protocol"], protocol);
    let f = r["failover_ms"].as_array().unwrap();
    assert_eq!(f.len(), 1, "{protocol}: {f:?}");
    assert!((100.0..8_000.0).contains(&f[0].as_f64().unwrap()), "{f:?}");
    assert_eq!(r["leaders_acting"]["by_effect_max"], 1);
    assert_eq!(r["ledger"]["non_increasing_steps"], 0);
    let timeline = std::fs::read_to_string(trial.join("timeline.jsonl")).unwrap();
    (r, timeline)
}

/// The token the killed node led under, from the timeline: its last win before the kill.
fn killed_token(timeline: &str) -> u64 {
    let events: Vec<Value> = timeline
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let killed = events
        .iter()
        .find(|e| e["event"] == "node_killed")
        .expect("the kill struck");
    events
        .iter()
        .rfind(|e| {
            e["event"] == "role_changed"
                && e["role"] == "leader"
                && e["node"] == killed["node"]
                && e["at_us"].as_i64() < killed["at_us"].as_i64()
        })
        .expect("the killed node led")["token"]
        .as_u64()
        .unwrap()
}

/// The backend's observer logged the end of the killed leader's grant.
fn grant_ended(timeline: &str) {
    let token = killed_token(timeline);
    let ended = timeline.lines().any(|l| {
        let e: Value = serde_json::from_str(l).unwrap();
        e["event"] == "key_deleted" && e["create_revision"].as_u64() == Some(token)
    });
    assert!(ended, "no key_deleted under token {token}");
}

#[test]
fn redis_fenced_fails_over_on_a_live_redis() {
    if !have(
        baton_real::backend::redis::server::REDIS_BINARY,
        "redis-server",
    ) {
        return;
    }
    let (r, timeline) = clean_kill("redis-fenced", &["redis-fenced.lock_ttl_ms=2000"]);
    assert!(r["fencing"]["rejections"].as_array().is_some());
    grant_ended(&timeline);
}

#[test]
fn zk_sequential_fails_over_on_a_live_zookeeper() {
    if !have(baton_real::backend::zk::server::ZK_JAR, "zookeeper") {
        return;
    }
    let (_, timeline) = clean_kill("zk-sequential", &["zk-sequential.session_timeout_ms=2000"]);
    grant_ended(&timeline);
}

#[test]
fn db_row_fails_over_on_a_live_postgresql() {
    if !have_postgres() {
        return;
    }
    let (r, timeline) = clean_kill("db-row", &["db-row.lease_ttl_ms=2000"]);
    assert_eq!(r["lease_ttl_granted_ms"]["min"], 2000, "{r}");
    grant_ended(&timeline);
}

#[test]
fn raft_fails_over_among_node_processes() {
    let (_, timeline) = clean_kill("raft", &[]);
    // Each node kept its log and vote in its file; the restarted one read its own back.
    assert!(timeline.contains("\"event\":\"node_restarted\""));
}

/// gc-pause-unfenced.toml on redis-naive: a lock with no token; the woken holder's write
/// lands after the next holder's.
#[test]
fn redis_naive_unfenced_gc_pause_shows_the_double_write() {
    if !have(
        baton_real::backend::redis::server::REDIS_BINARY,
        "redis-server",
    ) {
        return;
    }
    let _two = common::Slot::take();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (o, pid) = real(
        &scenario("gc-pause-unfenced.toml"),
        &out,
        &[
            "--set",
            "protocol=redis-naive",
            "--set",
            "redis-naive.lock_ttl_ms=2000",
            "--set",
            "duration_ms=15000",
            "--set",
            "faults.0.at_ms=4000",
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_nothing_left(pid, &out);
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("trial-1/report.json")).unwrap())
            .unwrap();
    assert_eq!(r["verdict"], "fail");
    assert!(
        r["double_leader_acting_incidents"].as_u64().unwrap() >= 1,
        "{r}"
    );
}

/// server-restart.toml on a live Redis: restarted without persistence, it forgets the
/// lock and the token counter, and the next holder draws a token the resource has seen
/// (1, as the first holder's): the run fails with a second leadership under a token no
/// higher than an earlier one. On PostgreSQL the row survives the restart: one
/// leadership, and the run passes.
#[test]
fn a_server_restart_loses_redis_fencing_and_keeps_the_database_row() {
    if !have(
        baton_real::backend::redis::server::REDIS_BINARY,
        "redis-server",
    ) || !have_postgres()
    {
        return;
    }
    let _two = common::Slot::take();
    for (protocol, want) in [("redis-fenced", 1), ("db-row", 0)] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let set = format!("protocol={protocol}");
        let (o, pid) = real(
            &scenario("server-restart.toml"),
            &out,
            &[
                "--set",
                &set,
                "--set",
                "duration_ms=16000",
                "--set",
                "faults.0.at_ms=5000",
            ],
        );
        assert_eq!(
            o.status.code(),
            Some(want),
            "{protocol}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_nothing_left(pid, &out);
        let timeline = std::fs::read_to_string(out.join("trial-1/timeline.jsonl")).unwrap();
        assert!(timeline.contains("\"event\":\"member_restarted\",\"member\":\"backend\""));
        let tokens: Vec<u64> = timeline
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["event"] == "role_changed" && e["role"] == "leader")
            .map(|e| e["token"].as_u64().unwrap())
            .collect();
        if protocol == "redis-fenced" {
            assert!(
                tokens.windows(2).any(|w| w[1] <= w[0]),
                "a token repeats after the restart: {tokens:?}"
            );
        } else {
            assert_eq!(
                tokens.len(),
                1,
                "one leadership across the restart: {tokens:?}"
            );
        }
    }
}
