//! The reference nodes on real election libraries (issue 37, `examples/<language>-<library>/`)
//! under `conform`, as CI runs them: Curator's `LeaderLatch` and kazoo's `Election` on
//! ZooKeeper, redis-py's `Lock` on Redis, a psycopg row lease on PostgreSQL, and
//! hashicorp/raft among the node processes (node contract v2's `--backend none`).
//!
//! Methodology: each node is built by its own `build.sh` (offline, from Debian's
//! packages); a library that is not installed skips its test with the build script's line
//! (the apt package to install), unless BATON_REQUIRE_LIBRARIES is set (CI sets it), when
//! it fails. Each then runs `conform --quick` on the experiments that tell libraries
//! apart ([`CI_EXPERIMENTS`]: the clean kill's failover, the leader cut off from its
//! backend, the SIGSTOP of TTL + 500 ms fenced and unfenced), two trials at a time, two
//! nodes at a time: every fenced experiment must pass with no trial unsafe, the reproduce
//! commands run the backend's protocol, and nothing of the run is left running. Where the
//! backend ends the paused leader's grant during the pause (every backend but raft: a
//! successor needs an election after the leader's silence, and hashicorp/raft's followers
//! still knowing a leader reject votes, so re-election took 3 to 3.4 s at TTL 2 s in
//! examples/go-raft/README.md's run), the woken leader's held write must be rejected
//! with its token below the resource's, and land with the fence off; a trial whose
//! successor first wrote only after the held write had nothing to fence, and the SIGSTOP
//! pair runs again, three times at most. The whole suite
//! (churn, step-down, the TTL sweep; three trials each) of every node runs in
//! `nightly/conformance.sh`, whose reports are committed: CI's budget (25 minutes on 2
//! cores) does not hold five more whole `--quick` suites.

use crate::common::*;
use std::process::Command;

/// The experiments CI runs for each library node.
const CI_EXPERIMENTS: &str = "clean-kill,partition,gc-pause,gc-pause-unfenced";

/// A reference node on a library.
struct LibraryNode {
    /// Its directory under `examples/`, with its `build.sh`.
    example: &'static str,
    /// The command template, relative to the checkout.
    cmd: &'static str,
    /// `--backend`.
    backend: &'static str,
    /// Baton's protocol on that backend.
    protocol: &'static str,
    /// Whether the backend ends a leader's grant within a pause of TTL + 500 ms.
    grant_ends_in_the_pause: bool,
}

/// Builds the node with its `build.sh`; `false` (after saying why) when its library is
/// missing and BATON_REQUIRE_LIBRARIES is not set.
fn built(example: &str) -> bool {
    let o = Command::new("sh")
        .arg(root().join("examples").join(example).join("build.sh"))
        .current_dir(root())
        .output()
        .unwrap();
    if o.status.success() {
        return true;
    }
    let why = String::from_utf8_lossy(&o.stderr).trim().to_string();
    assert!(
        std::env::var_os("BATON_REQUIRE_LIBRARIES").is_none(),
        "BATON_REQUIRE_LIBRARIES is set but {example} did not build: {why}"
    );
    eprintln!("skipped: {example} did not build: {why}");
    false
}

/// How many times the SIGSTOP pair runs at most before a fenced write must have been seen.
const PAUSE_ATTEMPTS: usize = 3;

impl LibraryNode {
    /// Builds the node and puts it through [`CI_EXPERIMENTS`].
    fn passes(&self) {
        if !built(self.example) {
            return;
        }
        let _one = Slot::take();
        let j = self.conform(CI_EXPERIMENTS);
        assert_eq!(j["experiments"].as_array().unwrap().len(), 4, "{j}");
        if !self.grant_ends_in_the_pause {
            return;
        }
        // The held write is let go at the pause's end. If the successor's claim reached
        // the resource only after it (a cold JVM's first HTTP write on a loaded machine:
        // 2 of 8 trials with four Curator trials at once beside three busy loops), the
        // write was the highest token yet and there was nothing to fence: the trial
        // passes, its protocol verdict says the leader acted past its grant, and
        // conformance.md says "not shown". The pair then runs again, PAUSE_ATTEMPTS times
        // in all. A stale write landing after a successor's fails the experiment, and so
        // the test, in any attempt.
        let mut j = j;
        for attempt in 1..=PAUSE_ATTEMPTS {
            let gc = &experiment(&j, "gc-pause")["trials"][0];
            let rejected = gc["rejections"].as_array().unwrap();
            if let Some(r) = rejected.first() {
                assert!(r["token"].as_u64() < r["max_token"].as_u64(), "{gc}");
                let unfenced = experiment(&j, "gc-pause-unfenced");
                assert_eq!(unfenced["verdict"], "reproduced", "{unfenced}");
                return;
            }
            assert!(
                attempt < PAUSE_ATTEMPTS,
                "{}: the woken leader's write was not fenced in {attempt} attempts: {gc}",
                self.example
            );
            eprintln!(
                "{}: attempt {attempt}: the successor's first write came {} ms after the woken leader's last: nothing to fence; again",
                self.example, gc["failover_ms"][0]
            );
            j = self.conform("gc-pause,gc-pause-unfenced");
        }
    }

    /// Runs `conform --quick --only <only>`, checks what every run must show (the fenced
    /// experiments pass and no trial is unsafe, the reproduce lines run the backend's
    /// protocol, nothing is left running) and returns conformance.json.
    fn conform(&self, only: &str) -> serde_json::Value {
        // The program's path made absolute, its arguments as written.
        let (first, rest) = self.cmd.split_once(' ').unwrap_or((self.cmd, ""));
        let program = root().join(first);
        let cmd = format!("{} {rest}", program.display());
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("conf");
        let o = conform(
            &out,
            &[
                "--node-cmd",
                &cmd,
                "--backend",
                self.backend,
                "--quick",
                "--only",
                only,
                "--jobs",
                "2",
                "--quiet",
            ],
        );
        let stdout = String::from_utf8_lossy(&o.stdout);
        let stderr = String::from_utf8_lossy(&o.stderr);
        let read = |f: &str| std::fs::read_to_string(out.join(f)).unwrap_or_default();
        let j: serde_json::Value = serde_json::from_str(&read("conformance.json"))
            .unwrap_or_else(|_| panic!("{}: no report\n{stdout}\n{stderr}", self.example));
        let md = read("conformance.md");
        assert_eq!(o.status.code(), Some(0), "{}: {stdout}\n{md}", self.example);
        assert_gone(&program.display().to_string());
        assert_gone(&out.to_string_lossy());
        assert_eq!(j["backend"], self.backend);
        for e in j["experiments"].as_array().unwrap() {
            for t in e["trials"].as_array().unwrap() {
                if e["fencing"] == true {
                    assert_eq!(e["verdict"], "pass", "{}: {e}", self.example);
                    assert_ne!(t["protocol_safety"], "unsafe", "{}: {t}", self.example);
                }
                let r = t["reproduce"].as_str().unwrap();
                assert!(
                    r.contains(&format!("--set protocol={}", self.protocol)),
                    "{r}"
                );
            }
        }
        j
    }
}

#[test]
fn curator_s_leader_latch_on_zookeeper() {
    LibraryNode {
        example: "java-curator",
        cmd: "examples/java-curator/bin/curator-node",
        backend: "zookeeper",
        protocol: "zk-sequential",
        grant_ends_in_the_pause: true,
    }
    .passes();
}

#[test]
fn kazoo_s_election_on_zookeeper() {
    LibraryNode {
        example: "python-kazoo",
        cmd: "examples/python-kazoo/node.py",
        backend: "zookeeper",
        protocol: "zk-sequential",
        grant_ends_in_the_pause: true,
    }
    .passes();
}

#[test]
fn redis_py_s_lock_on_redis() {
    LibraryNode {
        example: "python-redis",
        cmd: "examples/python-redis/node.py",
        backend: "redis",
        protocol: "redis-fenced",
        grant_ends_in_the_pause: true,
    }
    .passes();
}

#[test]
fn a_psycopg_row_lease_on_postgresql() {
    LibraryNode {
        example: "python-psycopg",
        cmd: "examples/python-psycopg/node.py",
        backend: "postgres",
        protocol: "db-row",
        grant_ends_in_the_pause: true,
    }
    .passes();
}

#[test]
fn hashicorp_raft_among_the_nodes() {
    LibraryNode {
        example: "go-raft",
        cmd: "examples/go-raft/bin/go-raft --id {id} --http-port {http_port} --raft-port {raft_port} --raft-peers {raft_peers} --election-timeout-ms {election_timeout_ms} --leader-lease-ms {leader_lease_ms} --resource-url {resource_url} --peers {peers} --tick-ms {tick_ms} --write-timeout-ms {write_timeout_ms} --dir {dir}",
        backend: "none",
        protocol: "raft",
        grant_ends_in_the_pause: false,
    }
    .passes();
}
