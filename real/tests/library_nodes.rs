//! The reference nodes on real election libraries (issue 37, `examples/<language>-<library>/`)
//! under the `--quick` conformance suite, as CI runs them: Curator's `LeaderLatch` and
//! kazoo's `Election` on ZooKeeper, redis-py's `Lock` on Redis, a psycopg row lease on
//! PostgreSQL. Each is built by its own `build.sh` (offline, from Debian's packages) and
//! must pass what Baton's own node passes ([`common::passes_the_quick_suite`]): every
//! fenced experiment and the TTL sweep, no trial unsafe, the SIGSTOP's held write
//! rejected and, with the fence off, landing; the spec's criteria 1 to 5 met; nothing
//! left running. A library that is not installed skips its test with the build script's
//! line (the apt package to install), unless BATON_REQUIRE_LIBRARIES is set (CI sets
//! it), when it fails. Two suites at a time, as conform.rs runs its own.
#![cfg(not(madsim))]

mod common;

use common::*;
use std::process::Command;

/// Builds `examples/<example>/` with its `build.sh`; `false` (after saying why) when its
/// library is missing and BATON_REQUIRE_LIBRARIES is not set.
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

/// `examples/<example>/`'s node, started by `program` (relative to the checkout), passes
/// the `--quick` suite on `backend`, whose protocol in Baton is `protocol`.
fn library_node_passes(example: &str, program: &str, backend: &str, protocol: &str) {
    if !built(example) {
        return;
    }
    let _one = Slot::take();
    let cmd = root().join(program);
    passes_the_quick_suite(&cmd.display().to_string(), backend, protocol);
}

#[test]
fn curator_s_leader_latch_passes_the_quick_suite_on_zookeeper() {
    library_node_passes(
        "java-curator",
        "examples/java-curator/bin/curator-node",
        "zookeeper",
        "zk-sequential",
    );
}

#[test]
fn kazoo_s_election_passes_the_quick_suite_on_zookeeper() {
    library_node_passes(
        "python-kazoo",
        "examples/python-kazoo/node.py",
        "zookeeper",
        "zk-sequential",
    );
}

#[test]
fn redis_py_s_lock_passes_the_quick_suite_on_redis() {
    library_node_passes(
        "python-redis",
        "examples/python-redis/node.py",
        "redis",
        "redis-fenced",
    );
}

#[test]
fn a_psycopg_row_lease_passes_the_quick_suite_on_postgresql() {
    library_node_passes(
        "python-psycopg",
        "examples/python-psycopg/node.py",
        "postgres",
        "db-row",
    );
}
