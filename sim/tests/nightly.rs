//! The nightly scripts cannot corrupt what is committed: they find `sim` through cargo,
//! replace a committed report only when everything succeeded, stop on exit codes 2, 3
//! and 130, and need nothing README does not list (no jq, no python3).
//!
//! Methodology: each script runs from a sandbox (a copy of nightly/ and of the committed
//! reports, with scenarios/ linked in), so that nothing in the repository is touched.
//! `SIM` points the scripts at a stand-in `sim` that exits 2 or 3, or at the real one;
//! `jq` and `python3` on PATH are stand-ins that fail loudly if anything calls them; a
//! stand-in `cargo` prints the build messages cargo prints, to check how the scripts read
//! the binary's path from them.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn executable(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// A sandbox: nightly/, the committed reports and a link to scenarios/, plus a `bin/`
/// of stand-ins (jq and python3 that fail) to put first on PATH.
fn sandbox(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("baton-nightly-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    copy_dir(&repo().join("nightly"), &d.join("nightly"));
    std::fs::create_dir_all(d.join("reports")).unwrap();
    for f in ["bench.md", "lease-storm.md", "read-lease-sweep.md"] {
        std::fs::copy(repo().join("reports").join(f), d.join("reports").join(f)).unwrap();
    }
    copy_dir(
        &repo().join("reports/ttl-sweep"),
        &d.join("reports/ttl-sweep"),
    );
    std::os::unix::fs::symlink(repo().join("scenarios"), d.join("scenarios")).unwrap();
    std::fs::create_dir_all(d.join("bin")).unwrap();
    for tool in ["jq", "python3"] {
        executable(
            &d.join("bin").join(tool),
            &format!("#!/bin/sh\necho \"{tool} was called: the scripts must not need it\" >&2\nexit 99\n"),
        );
    }
    d
}

fn script(d: &Path, sim: &Path, args: &[&str]) -> Output {
    let path = format!(
        "{}:{}",
        d.join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    Command::new("bash")
        .args(args)
        .current_dir(d)
        .env("PATH", path)
        .env("SIM", sim)
        .output()
        .unwrap()
}

/// Every file under `dir` with its bytes, sorted by path.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_run_that_exits_2_or_3_fails_the_script_and_leaves_the_committed_report() {
    let d = sandbox("fail");
    let before = snapshot(&d.join("reports"));
    for status in [2, 3] {
        let fake = d.join(format!("sim-{status}"));
        executable(&fake, &format!("#!/bin/sh\nexit {status}\n"));
        for args in [
            &["nightly/bench.sh"][..],
            &["nightly/ttl-sweep.sh", "1", "1"],
            &["nightly/lease-storm.sh", "1"],
            &["nightly/read-lease-sweep.sh", "1"],
            &["nightly/transfer.sh", "1"],
            &["nightly/swim.sh", "1"],
            &["nightly/sharded.sh", "1"],
            &[
                "nightly/storm.sh",
                "scenarios/raft/flapping-follower.toml",
                "0..1",
            ],
        ] {
            let o = script(&d, &fake, args);
            assert_eq!(
                o.status.code(),
                Some(status),
                "{args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            assert_eq!(
                snapshot(&d.join("reports")),
                before,
                "{args:?} changed reports/"
            );
        }
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_scripts_run_on_sim_alone_without_jq_or_python3() {
    let d = sandbox("real");
    let sim = PathBuf::from(env!("CARGO_BIN_EXE_sim"));
    let o = script(
        &d,
        &sim,
        &[
            "nightly/storm.sh",
            "scenarios/raft/flapping-follower.toml",
            "0..2",
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("\nseeds: 2, pass 2\n"), "{out}");
    assert!(
        out.contains("\nleader changes per seed: p50 0 p99 0 max 0 over 2\n"),
        "{out}"
    );
    let o = script(&d, &sim, &["nightly/read-lease-sweep.sh", "1"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let md = std::fs::read_to_string(d.join("reports/read-lease-sweep.md")).unwrap();
    assert!(
        md.contains("\n| -650000 | 286 | yes | 0 / 1 | 0 | 0 |\n"),
        "{md}"
    );
    assert_eq!(
        md.lines()
            .filter(|l| l.ends_with(" |") && l.starts_with("| -"))
            .count(),
        9
    );
    // A bad scenario is bad input: the script stops with 2.
    let o = script(
        &d,
        &sim,
        &["nightly/storm.sh", "scenarios/missing.toml", "0..1"],
    );
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_scripts_take_the_binary_from_cargos_build_messages() {
    let d = sandbox("cargo");
    let sim = env!("CARGO_BIN_EXE_sim");
    // What `cargo build --message-format=json` prints: a build script's artifact, then
    // sim's, wherever its target directory is.
    executable(
        &d.join("bin/cargo"),
        &format!(
            "#!/bin/sh\necho '{{\"reason\":\"compiler-artifact\",\"target\":{{\"kind\":[\"custom-build\"],\"crate_types\":[\"bin\"],\"name\":\"build-script-build\"}},\"executable\":\"/elsewhere/build-script-build\",\"fresh\":true}}'\necho '{{\"reason\":\"compiler-artifact\",\"target\":{{\"kind\":[\"bin\"],\"crate_types\":[\"bin\"],\"name\":\"sim\"}},\"executable\":\"{sim}\",\"fresh\":true}}'\necho '{{\"reason\":\"build-finished\",\"success\":true}}'\n"
        ),
    );
    let found = |d: &Path| {
        let path = format!(
            "{}:{}",
            d.join("bin").display(),
            std::env::var("PATH").unwrap()
        );
        Command::new("bash")
            .args(["-c", ". nightly/lib.sh; sim_build; echo \"$sim\""])
            .current_dir(d)
            .env("PATH", path)
            .env_remove("SIM")
            .output()
            .unwrap()
    };
    let o = found(&d);
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), sim);
    // A build that reports no binary stops the script; it does not guess target/.
    executable(&d.join("bin/cargo"), "#!/bin/sh\nexit 0\n");
    let o = found(&d);
    assert_eq!(o.status.code(), Some(3));
    std::fs::remove_dir_all(&d).unwrap();
}
