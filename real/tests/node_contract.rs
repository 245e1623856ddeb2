//! `--node-cmd`: nodes that break the node contract (docs/src/node-contract.md) get one
//! line naming the rule they broke, and nothing of their run is left behind.
//!
//! Methodology: `real/tests/nodes/bad_node.py` is a stand-in node (Python's standard
//! library: n1 says it leads under token 1 and does the leader's fenced writes, the
//! others follow) that breaks one rule on purpose, chosen by `--break`. Each case runs
//! `baton-real real` on a short scenario with no faults and checks the exit code (2 for
//! a breach before the run, 1 for one during it), the rule named on stderr or in the
//! report, and that no process of the run survives it (every node's command line names
//! its `{dir}`, under the run's output). The control, `--break none`, keeps every rule
//! and must pass: the breaking variants differ from it only in the rule. Bad templates
//! and scenarios a foreign node cannot take are refused before anything starts; Ctrl-C
//! during a run stops every node. On Redis, ZooKeeper and PostgreSQL (node contract
//! version 2), n1 takes a real grant (the stand-in speaks each server's wire protocol
//! with the standard library) and each backend's rule is broken by a wrong token, beside
//! the control on the same backend; a server that is not installed skips its case
//! unless BATON_REQUIRE_SERVERS is set. With no backend (`protocol=raft`), n1 leads once
//! it has connected to each peer through its proxy; the variant that never connects is
//! named `raft-peers`. Real processes, two tests at a time (each run with its own
//! servers, ports and directories); needs python3 (CI installs it).
#![cfg(not(madsim))]

mod common;

use baton_real::process::processes_mentioning;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Eight quiet seconds on etcd: no faults, a light load.
const QUIET: &str = "name = \"quiet\"\nprotocol = \"etcd-lease\"\nduration_ms = 8000\nnodes = 3\nstart_delay_ms_max = 0\n[etcd-lease]\nlease_ttl_ms = 2000\n[work]\nrate_per_s = 100\ntick_interval_ms = 200\n";

fn bad_node(rule: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nodes/bad_node.py");
    format!(
        "python3 {} --break {rule} --id {{id}} --http-port {{http_port}} --resource-url {{resource_url}} --dir {{dir}}",
        script.display()
    )
}

/// Runs `baton-real real <dir>/quiet.toml --out <dir>/out -q ARGS`.
fn real(dir: &Path, args: &[&str]) -> Output {
    let scenario = dir.join("quiet.toml");
    std::fs::write(&scenario, QUIET).unwrap();
    Command::new(env!("CARGO_BIN_EXE_baton-real"))
        .arg("real")
        .arg(&scenario)
        .arg("--out")
        .arg(dir.join("out"))
        .arg("--quiet")
        .args(args)
        .output()
        .unwrap()
}

/// No process names anything under `out` (every node's `{dir}` is there).
fn assert_nothing_left(out: &Path) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5)
        && !processes_mentioning(&out.to_string_lossy()).is_empty()
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        processes_mentioning(&out.to_string_lossy()),
        Vec::<u32>::new(),
        "left running"
    );
}

fn have_python() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("BATON_REQUIRE_ETCD").is_none(),
            "BATON_REQUIRE_ETCD is set but python3 is missing: apt-get install python3"
        );
        eprintln!("skipped: python3 is missing");
    }
    ok
}

#[test]
fn a_breach_before_the_run_is_one_line_naming_the_rule_and_exit_2() {
    if !have_python() {
        return;
    }
    let _two = common::Slot::take();
    for (rule, says) in [
        ("listen", "nothing answered GET"),
        ("status", "field `role` is missing"),
        ("leader-emerges", "no node reported role \"leader\""),
        ("next-follower", "POST /next answered 200"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let o = real(dir.path(), &["--node-cmd", &bad_node(rule)]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{rule}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{rule}: {stderr}");
        assert!(
            lines[0].contains(&format!("node contract v2 rule `{rule}`"))
                && lines[0].contains(says),
            "{rule}: {stderr}"
        );
        assert_nothing_left(&dir.path().join("out"));
    }
}

#[test]
fn a_breach_during_the_run_fails_it_with_the_rule_and_the_control_passes() {
    if !have_python() {
        return;
    }
    let _two = common::Slot::take();
    for (rule, code) in [("none", 0), ("status-later", 1), ("exit-later", 1)] {
        let dir = tempfile::tempdir().unwrap();
        let o = real(dir.path(), &["--node-cmd", &bad_node(rule)]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{rule}: {stderr}");
        assert_nothing_left(&dir.path().join("out"));
        let r: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("out/trial-1/report.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(r["node_cmd"], bad_node(rule), "{r}");
        let broken: Vec<&str> = r["violations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v["property"] == "node_contract")
            .map(|v| v["detail"].as_str().unwrap())
            .collect();
        let want = match rule {
            "none" => None,
            "status-later" => Some("rule `status`"),
            _ => Some("n2 broke rule `keeps-running`"),
        };
        match want {
            None => assert!(broken.is_empty(), "{broken:?}"),
            Some(w) => assert!(broken.iter().any(|d| d.contains(w)), "{rule}: {broken:?}"),
        }
    }
}

#[test]
fn bad_templates_and_what_a_foreign_node_cannot_take_are_refused_before_anything_starts() {
    let _two = common::Slot::take();
    let dir = tempfile::tempdir().unwrap();
    let with_fault = |name: &str, fault: &str| {
        let p = dir.path().join(format!("{name}.toml"));
        std::fs::write(&p, format!("{QUIET}[[faults]]\n{fault}")).unwrap();
        p
    };
    let cases: Vec<(PathBuf, Vec<&str>, &str)> = vec![
        (dir.path().join("quiet.toml"), vec!["--node-cmd", "sh --id {identity}"], "--node-cmd: unknown placeholder {identity}"),
        (dir.path().join("quiet.toml"), vec!["--node-cmd", "./no/such/node --id {id}"], "--node-cmd: ./no/such/node does not exist"),
        (dir.path().join("quiet.toml"), vec!["--node-cmd", "sh -c 'true", ], "unclosed quote"),
        (dir.path().join("quiet.toml"), vec!["--node-cmd", "sh", "--set", "protocol=redis-naive"], "key `protocol`: redis-naive: a --node-cmd node elects on etcd, Redis, ZooKeeper or PostgreSQL"),
        (dir.path().join("quiet.toml"), vec!["--node-cmd", "sh --key {redis_key}"], "--node-cmd: {redis_key} is a placeholder of redis, and this run is on etcd (allowed on etcd: {id}"),
        (with_fault("clock", "kind = \"clock-step\"\nat_ms = 3000\ntarget = \"leader\"\nstep_ms = 500\n"), vec!["--node-cmd", "sh"], "clock-step: a --node-cmd node reads the machine's clock"),
    ];
    std::fs::write(dir.path().join("quiet.toml"), QUIET).unwrap();
    for (scenario, args, says) in cases {
        let out = dir.path().join("out");
        let o = Command::new(env!("CARGO_BIN_EXE_baton-real"))
            .arg("real")
            .arg(&scenario)
            .arg("--out")
            .arg(&out)
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!out.exists(), "nothing is written: {args:?}");
    }
}

#[test]
fn ctrl_c_during_a_node_cmd_run_leaves_nothing() {
    if !have_python() {
        return;
    }
    let _two = common::Slot::take();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("quiet.toml");
    std::fs::write(&scenario, QUIET).unwrap();
    let out = dir.path().join("out");
    let child = Command::new(env!("CARGO_BIN_EXE_baton-real"))
        .arg("real")
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .args(["--quiet", "--node-cmd", &bad_node("none")])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the fleet runs: the nodes' process files appear as they start.
    let t0 = Instant::now();
    while !out.join("trial-1/run/n3.stdout").is_file() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !processes_mentioning(&out.to_string_lossy()).is_empty(),
        "the nodes run"
    );
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: a plain signal to the child we started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_nothing_left(&out);
}

/// Whether the server of `backend` is installed; if not, says so (skip) or fails under
/// BATON_REQUIRE_SERVERS, as `real/tests/backends.rs` does.
fn have_server(backend: &str) -> bool {
    let (found, package) = match backend {
        "redis" => (
            Path::new(baton_real::backend::redis::server::REDIS_BINARY).is_file(),
            "redis-server",
        ),
        "zookeeper" => (
            Path::new(baton_real::backend::zk::server::ZK_JAR).is_file(),
            "zookeeper",
        ),
        _ => (
            std::fs::read_dir("/usr/lib/postgresql")
                .into_iter()
                .flatten()
                .flatten()
                .any(|e| e.path().join("bin/postgres").is_file()),
            "postgresql",
        ),
    };
    if !found {
        assert!(
            std::env::var_os("BATON_REQUIRE_SERVERS").is_none(),
            "BATON_REQUIRE_SERVERS is set but {backend} is missing: apt-get install {package}"
        );
        eprintln!("skipped: {backend} is missing (apt-get install {package})");
    }
    found
}

/// Node contract version 2's backend rules. On each backend n1 of the stand-in takes its
/// grant as the contract says (bad_node.py speaks Redis's, ZooKeeper's and PostgreSQL's
/// wire protocols with the standard library) and keeps it renewed. The control leads
/// under the backend's own number for the grant and passes a short run; each breaking
/// variant differs from it in one thing (another token, no lock, a znode that is not
/// ephemeral or not its session's only one, a second row), and the
/// preflight, which reads the backend directly, stops the run with one line naming the
/// backend's rule.
#[test]
fn a_token_that_is_not_the_backend_s_is_one_line_naming_the_backend_s_rule() {
    if !have_python() {
        return;
    }
    let _two = common::Slot::take();
    let token_101 = "its /status says it leads under token 101, but";
    for (backend, sets, breaking) in [
        (
            "redis",
            &["protocol=redis-fenced", "redis-fenced.lock_ttl_ms=2000"][..],
            &[
                (
                    "redis-lock",
                    "redis-lock",
                    format!("{token_101} baton:leader:token reads 1 (the token is the answer"),
                ),
                (
                    "redis-no-set",
                    "redis-lock",
                    "leads under token 1, but baton:leader is not set (the lock is taken with SET"
                        .to_string(),
                ),
            ][..],
        ),
        (
            "zookeeper",
            &[
                "protocol=zk-sequential",
                "zk-sequential.session_timeout_ms=2000",
                "zk-sequential.tick_time_ms=1000",
            ],
            &[
                (
                    "zk-znode",
                    "zk-znode",
                    "leads under token 0, but no child of /election has czxid 0".to_string(),
                ),
                (
                    "zk-persistent",
                    "zk-znode",
                    "/election/n_0000000000, created at that zxid, is not ephemeral".to_string(),
                ),
                (
                    "zk-two",
                    "zk-znode",
                    "also owns /election/n_0000000001 (create one child per session)".to_string(),
                ),
            ],
        ),
        (
            "postgres",
            // A candidate's poll as conform sets it (a fifth of the TTL): at the default
            // 2 s, waits of up to 2.2 polls put the liveness bound past the 8 s run.
            &[
                "protocol=db-row",
                "db-row.lease_ttl_ms=2000",
                "db-row.poll_interval_ms=400",
            ],
            &[
                (
                    "pg-row",
                    "pg-row",
                    format!("{token_101} the lease row holds node \"n1\" at generation 1"),
                ),
                (
                    "pg-row-insert",
                    "pg-row",
                    "leads under token 1, but leader holds 2 rows, not Baton's one".to_string(),
                ),
            ],
        ),
    ] {
        if !have_server(backend) {
            continue;
        }
        let run = |case: &str| {
            let dir = tempfile::tempdir().unwrap();
            let mut args = vec!["--node-cmd".to_string(), bad_node(case)];
            for set in sets {
                args.extend(["--set".to_string(), set.to_string()]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = real(dir.path(), &args);
            assert_nothing_left(&dir.path().join("out"));
            (
                o.status.code(),
                String::from_utf8_lossy(&o.stderr).into_owned(),
            )
        };
        let (code, stderr) = run("none");
        assert_eq!(code, Some(0), "{backend} control: {stderr}");
        for (case, rule, says) in breaking {
            let (code, stderr) = run(case);
            assert_eq!(code, Some(2), "{case}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{case}: {stderr}");
            assert!(
                stderr.contains(&format!("node n1 broke node contract v2 rule `{rule}`"))
                    && stderr.contains(says.as_str()),
                "{case}: {stderr}"
            );
        }
    }
}

/// No backend: the control connects to each peer through the address `{raft_peers}`
/// gives (Baton's proxy) and passes a short run; the variant that leads without a word to
/// its peers stops before the run with one line naming `raft-peers` and both silent
/// peers.
#[test]
fn a_leader_that_never_reached_its_peers_is_one_line_naming_raft_peers() {
    if !have_python() {
        return;
    }
    let _two = common::Slot::take();
    let run = |case: &str| {
        let dir = tempfile::tempdir().unwrap();
        let o = real(
            dir.path(),
            &["--node-cmd", &bad_node(case), "--set", "protocol=raft"],
        );
        assert_nothing_left(&dir.path().join("out"));
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, stderr) = run("none");
    assert_eq!(code, Some(0), "control: {stderr}");
    let (code, stderr) = run("raft-peers");
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("node n1 broke node contract v2 rule `raft-peers`")
            && stderr.contains("never connected to n2, n3 through its {raft_peers} address"),
        "{stderr}"
    );
}
