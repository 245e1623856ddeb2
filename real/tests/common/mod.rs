//! What the live tests share (`conform/`, `backends.rs`, `node_contract.rs`, `scenarios.rs`): at most
//! [`AT_ONCE`] runs at a time, running `conform` as a user would, and the checks a node
//! that keeps the contract must pass.
#![allow(dead_code)] // each test binary uses a part

use baton_real::process::processes_mentioning;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Suites running now, at most [`AT_ONCE`]: each test holds a [`Slot`] while it runs.
static RUNNING: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());
pub const AT_ONCE: usize = 2;

/// One of the [`AT_ONCE`] places for a suite, given back when dropped.
pub struct Slot;

impl Slot {
    pub fn take() -> Slot {
        let (count, freed) = &RUNNING;
        let mut n = count.lock().unwrap_or_else(|p| p.into_inner());
        while *n >= AT_ONCE {
            n = freed.wait(n).unwrap_or_else(|p| p.into_inner());
        }
        *n += 1;
        Slot
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let (count, freed) = &RUNNING;
        *count.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
        freed.notify_one();
    }
}

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn conform(out: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baton-real"))
        .arg("conform")
        .arg("--out")
        .arg(out)
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

pub fn assert_gone(needle: &str) {
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

/// `--quick` on `backend` for `node_cmd`, four trials at a time (as on a 2-core machine by
/// default): its exit code, conformance.json, conformance.md and first line.
pub fn quick_suite(
    node_cmd: &str,
    backend: &str,
    out: &Path,
) -> (Option<i32>, Value, String, String) {
    let o = conform(
        out,
        &[
            "--node-cmd",
            node_cmd,
            "--backend",
            backend,
            "--quick",
            "--jobs",
            "4",
            "--quiet",
        ],
    );
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let j: Value = std::fs::read_to_string(out.join("conformance.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| panic!("{backend}: no report\n{stdout}\n{stderr}"));
    let md = std::fs::read_to_string(out.join("conformance.md")).unwrap();
    (o.status.code(), j, md, stdout)
}

/// The experiment named `name` of report `j`.
pub fn experiment<'a>(j: &'a Value, name: &str) -> &'a Value {
    j["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {j}"))
}

/// The node `cmd` passes the whole `--quick` suite on `backend` (Baton's protocol
/// there: `protocol`): every fenced experiment and the TTL sweep pass,
/// not one trial unsafe; the SIGSTOP's held write is rejected with its token shown and,
/// with the fence off, lands (the bug reproduced); the spec's criteria 1 to 5 are met;
/// each reproduce command runs the backend's protocol; nothing is left running.
pub fn passes_the_quick_suite(cmd: &str, backend: &str, protocol: &str) -> (Value, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("conf");
    let (code, j, md, stdout) = quick_suite(cmd, backend, &out);
    assert_eq!(code, Some(0), "{backend}: {stdout}\n{md}");
    assert_gone(&out.to_string_lossy());
    assert_eq!(j["backend"], backend);
    assert_eq!(j["jobs"], 4);
    for e in j["experiments"].as_array().unwrap() {
        let name = e["name"].as_str().unwrap();
        let want = match name {
            "partition-unfenced" => vec!["not_reproduced", "reproduced"],
            "gc-pause-unfenced" => vec!["reproduced"],
            _ => vec!["pass"],
        };
        assert!(
            want.contains(&e["verdict"].as_str().unwrap()),
            "{backend}: {e}"
        );
        for t in e["trials"].as_array().unwrap() {
            if e["fencing"] == true {
                assert_ne!(t["protocol_safety"], "unsafe", "{backend}: {t}");
            }
            if backend != "etcd" {
                let r = t["reproduce"].as_str().unwrap();
                assert!(r.contains(&format!("--set protocol={protocol}")), "{r}");
            }
        }
    }
    let gc = &experiment(&j, "gc-pause")["trials"][0];
    let rejected = gc["rejections"].as_array().unwrap();
    // Every backend's grant ends inside the TTL + 500 ms pause (ZooKeeper's too: it
    // expires a session at the first tick after its timeout, and conform's ticks are a
    // tenth of the TTL), so the woken leader's held write is always there to fence.
    assert!(
        !rejected.is_empty(),
        "{backend}: the held write was not fenced: {gc}"
    );
    assert!(
        rejected[0]["token"].as_u64() < rejected[0]["max_token"].as_u64(),
        "{gc}"
    );
    for n in 1..=5 {
        let says = md
            .lines()
            .find(|l| l.starts_with(&format!("{n}. ")))
            .unwrap_or_default();
        assert!(says.contains(": met. "), "{backend}: criterion {n}: {says}");
    }
    assert!(out.join("ttl-sweep.svg").is_file(), "{backend}");
    (j, md, stdout)
}

/// Whether a server Baton starts is installed (`found`); if not, says so (skip) or fails
/// under BATON_REQUIRE_SERVERS, as `real/tests/backends.rs` does.
pub fn have_server(found: bool, what: &str, package: &str) -> bool {
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
