//! `baton-real real`: committed scenario files run against a live etcd, checked and
//! reported as a simulated run is, and a run leaves nothing behind however it ends.
//!
//! Methodology: each test runs the command as a user does (a child process, the
//! committed scenario, `--set` to shorten it: TTL 2 s, the faults a few seconds in, the
//! run as short as its liveness window allows) and reads what it wrote. Real processes and
//! the machine's clock: the assertions are what must hold on any machine (the artefacts
//! and their stable keys, who was fenced out with which tokens, the double write without
//! the fence, exit codes, no process or data left), never timings beyond a generous
//! bound. Two runs at a time, each with its own etcd cluster, ports and directories, as
//! conform runs its trials side by side. Real build only:
//!
//! `CARGO_ENCODED_RUSTFLAGS= cargo test --release -p baton-real --target-dir target/real`
#![cfg(not(madsim))]

mod common;

use baton_real::process::processes_mentioning;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_baton-real"))
}

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(name)
}

/// Nothing of the run with supervisor `pid` and output `out` is left: no node,
/// resource or load process (their command lines name files under `out`), no etcd
/// member and no etcd data directory (both named `baton-etcd-<pid>-...`).
fn assert_nothing_left(pid: u32, out: &Path) {
    let etcd = format!("{}{pid}-", baton_real::backend::etcd::cluster::DATA_PREFIX);
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5)
        && !(processes_mentioning(&out.to_string_lossy()).is_empty()
            && processes_mentioning(&etcd).is_empty())
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        processes_mentioning(&out.to_string_lossy()),
        Vec::<u32>::new()
    );
    assert_eq!(processes_mentioning(&etcd), Vec::<u32>::new());
    let left: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&etcd))
        .collect();
    assert!(left.is_empty(), "etcd data left: {left:?}");
}

/// Runs `baton-real real <scenario> --out <out> -q <args>`; returns its output and pid.
fn real(scenario_file: &Path, out: &Path, args: &[&str]) -> (Output, u32) {
    let child = Command::new(binary())
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

fn report(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("trial-1/report.json")).unwrap())
        .unwrap()
}

/// The CI smoke test of the real mode: clean-kill.toml at TTL 2 s, one trial, under a
/// minute, with every artefact and every stable key of a simulated report.
#[test]
fn clean_kill_runs_as_a_scenario_and_writes_the_simulators_artefacts() {
    let _two = common::Slot::take();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let t0 = Instant::now();
    let (o, pid) = real(
        &scenario("clean-kill.toml"),
        &out,
        &[
            "--set",
            "etcd-lease.lease_ttl_ms=2000",
            "--set",
            "duration_ms=15000",
            "--set",
            "faults.0.at_ms=4000",
            "--set",
            "faults.1.at_ms=9000",
        ],
    );
    let wall = t0.elapsed();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(wall < Duration::from_secs(60), "took {wall:?}");
    assert_nothing_left(pid, &out);
    for f in baton_model::render::output_dir::ARTIFACTS {
        let p = out.join("trial-1").join(f);
        assert!(
            p.is_file() && std::fs::metadata(&p).unwrap().len() > 0,
            "{f}"
        );
    }
    let r = report(&out);
    // DESIGN.md's stable keys.
    for key in baton_model::render::report::STABLE_KEYS {
        assert!(r.pointer(key).is_some(), "{key} missing");
    }
    assert_eq!(r["verdict"], "pass");
    assert_eq!(r["mode"], "real");
    assert_eq!(r["protocol"], "etcd-lease");
    // One failover, the kill's: TTL 2 s plus at most an expiry check and a campaign,
    // with room for a loaded machine.
    let f = r["failover_ms"].as_array().unwrap();
    assert_eq!(f.len(), 1, "{f:?}");
    assert!((500.0..6_000.0).contains(&f[0].as_f64().unwrap()), "{f:?}");
    assert_eq!(r["leaders_acting"]["by_effect_max"], 1);
    assert_eq!(r["lease_ttl_granted_ms"]["min"], 2000);
    assert_eq!(r["ledger"]["non_increasing_steps"], 0);
    assert!(r["ledger"]["seq_batches"].as_u64().unwrap() > 0);
    assert!(r["client"]["ok"].as_u64().unwrap() > 0);
    // The job the file asks for is not run, and the report says so.
    assert!(r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().contains("[work.job]")));
    let summary = std::fs::read_to_string(out.join("trial-1/summary.txt")).unwrap();
    assert!(
        summary.contains("SQL check (lag() over the ledger's sequence): 0 non-increasing steps"),
        "{summary}"
    );
    // The faults are logged as the simulator logs them.
    let timeline = std::fs::read_to_string(out.join("trial-1/timeline.jsonl")).unwrap();
    assert!(timeline.contains("\"event\":\"fault_applied\",\"index\":0,\"kind\":\"kill\""));
    assert!(timeline.contains("\"event\":\"fault_applied\",\"index\":1,\"kind\":\"restart\""));
    let trials: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("trials.json")).unwrap()).unwrap();
    assert_eq!(trials["trials"][0]["verdict"], "pass");
    assert_eq!(trials["trials"][0]["failover_ms"], r["failover_ms"]);
}

const GC_PAUSE_SHORT: [&str; 6] = [
    "--set",
    "etcd-lease.lease_ttl_ms=2000",
    "--set",
    "duration_ms=15000",
    "--set",
    "faults.0.at_ms=4000",
];

/// gc-pause.toml: the leader stops just before a write for longer than its lease; the
/// woken leader's write reaches the SQLite ledger with its old token and is rejected,
/// with both tokens.
#[test]
fn gc_pause_the_woken_leaders_write_is_rejected_with_both_tokens() {
    let _two = common::Slot::take();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (o, pid) = real(&scenario("gc-pause.toml"), &out, &GC_PAUSE_SHORT);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_nothing_left(pid, &out);
    let r = report(&out);
    let timeline = std::fs::read_to_string(out.join("trial-1/timeline.jsonl")).unwrap();
    let paused = timeline
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == "fault_applied" && e["kind"] == "pause")
        .expect("the pause struck")["target"]
        .clone();
    let rej = r["fencing"]["rejections"].as_array().unwrap();
    assert!(!rej.is_empty(), "{r}");
    for x in rej {
        assert_eq!(x["node"], paused);
        assert!(x["token"].as_u64().unwrap() < x["max_token"].as_u64().unwrap());
    }
    assert_eq!(r["ledger"]["rejections"].as_u64(), Some(rej.len() as u64));
    assert_eq!(r["leaders_acting"]["by_effect_max"], 1);
    assert_eq!(r["double_leader_acting_incidents"], 0);
}

/// The same without the fence: the woken leader's write lands after the new leader's.
#[test]
fn gc_pause_without_fencing_shows_the_double_write() {
    let _two = common::Slot::take();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut args = GC_PAUSE_SHORT.to_vec();
    args.extend(["--set", "fencing=false"]);
    let (o, pid) = real(&scenario("gc-pause.toml"), &out, &args);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_nothing_left(pid, &out);
    let r = report(&out);
    assert_eq!(r["verdict"], "fail");
    assert!(
        r["double_leader_acting_incidents"].as_u64().unwrap() > 0,
        "{r}"
    );
    assert!(r["fencing"]["rejections"].as_array().unwrap().is_empty());
    assert!(r["violations"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["property"] == "double_leader_acting"));
}

/// What real mode cannot apply is refused with exit 2 and one line, before anything
/// starts: nothing is written, no etcd runs.
#[test]
fn an_unsupported_fault_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("node-to-node.toml");
    std::fs::write(
        &file,
        "duration_ms = 20000\n\n[[faults]]\nkind = \"partition\"\nat_ms = 5000\nfrom = \"n1\"\nto = \"leader\"\n",
    )
    .unwrap();
    let cases: Vec<(PathBuf, Vec<&str>, &str)> = vec![
        (file.clone(), vec![], ":7: key `faults.0.to`"),
        (
            scenario("clean-kill.toml"),
            vec!["--set", "protocol=bully"],
            "--set protocol=bully: key `protocol`",
        ),
        (
            scenario("clean-kill.toml"),
            vec!["--set", "etcd-lease.min_lease_ttl_ms=500"],
            "key `etcd-lease.min_lease_ttl_ms`",
        ),
        (
            scenario("clean-kill.toml"),
            vec!["--set", "network.loss_ppm=1000"],
            "key `network.loss_ppm`",
        ),
    ];
    for (f, args, says) in cases {
        let out = dir.path().join("out");
        let t0 = Instant::now();
        let (o, pid) = real(&f, &out, &args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(stderr.contains("real mode cannot run this"), "{stderr}");
        assert!(!out.exists(), "nothing is written");
        // etcd alone takes longer than this to start.
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert_nothing_left(pid, &out);
    }
}

/// Ctrl-C during a trial: every process stops, etcd's data goes, exit 130.
#[test]
fn ctrl_c_stops_every_process_and_exits_130() {
    let _two = common::Slot::take();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let child = Command::new(binary())
        .arg("real")
        .arg(scenario("clean-kill.toml"))
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let marker = out.to_string_lossy().into_owned();
    let t0 = Instant::now();
    while processes_mentioning(&marker).len() < 6 && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        processes_mentioning(&marker).len() >= 6,
        "the supervisor, the resource, the fleet and the load client run"
    );
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_nothing_left(pid, &out);
    let trials: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("trials.json")).unwrap()).unwrap();
    assert_eq!(trials["interrupted"], true);
}
