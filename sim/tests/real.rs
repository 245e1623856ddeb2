//! Real mode from the simulator's side: `sim real` builds the real-mode binary (the same
//! protocol code without `--cfg madsim`, in target/real) and runs a committed scenario
//! against a live 3-member etcd; then the real crate's own tests run in that build.
//!
//! Methodology: the command of docs/src/real-mode.md as a user types it (`sim real
//! scenarios/clean-kill.toml`), shortened with `--set` (TTL 2 s, faults a few seconds in,
//! a 15 s run): one trial, whose six artefacts and stable report keys are checked, with
//! the SQL check of the ledger in its summary, and no process or port of it left
//! afterwards. The real crate's tests (`real/tests`: gc-pause fenced and unfenced,
//! refusals, Ctrl-C, clean-up, nodes that break the node contract, a short `conform` on
//! Baton's node, the Go node and the library nodes; and baton-etcd-client's real build,
//! which must be etcd-client itself) can only be built without `--cfg madsim`, so this test
//! runs them with cargo in that build, which is how CI runs them. Real processes and the
//! machine's clock: nothing here asserts a timing beyond a generous bound. Without etcd
//! or protoc on the machine the test says so and passes, unless BATON_REQUIRE_ETCD is set
//! (CI sets it).

mod common;
use common::{sim, temp_dir};
use std::path::Path;
use std::process::Command;

fn have_real_mode_tools() -> bool {
    // The check `sim real` makes before it builds (protoc and protoc's includes), and
    // the etcd these tests run on.
    let etcd = (!Path::new("/usr/bin/etcd").is_file())
        .then(|| "real mode on etcd needs it: apt-get install etcd-server".to_string());
    match etcd.or_else(baton_sim::missing_prerequisite) {
        None => true,
        Some(missing) => {
            assert!(
                std::env::var_os("BATON_REQUIRE_ETCD").is_none(),
                "BATON_REQUIRE_ETCD is set but {missing}"
            );
            eprintln!("skipped: {missing}");
            false
        }
    }
}

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut out = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if e.file_name().to_string_lossy().parse::<u32>().is_err() {
            continue;
        }
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            let state = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            // A zombie is gone but for its exit status.
            let zombie = state
                .rsplit(')')
                .next()
                .is_some_and(|s| s.trim_start().starts_with('Z'));
            if cmd.contains(needle) && !zombie {
                out.push(cmd);
            }
        }
    }
    out
}

#[test]
fn sim_real_runs_a_scenario_against_live_etcd_and_the_real_suite_passes() {
    if !have_real_mode_tools() {
        return;
    }
    let d = temp_dir("real");
    let scenario = format!(
        "{}/../scenarios/clean-kill.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let o = sim(
        &[
            "real",
            &scenario,
            "--set",
            "etcd-lease.lease_ttl_ms=2000",
            "--set",
            "duration_ms=15000",
            "--set",
            "faults.0.at_ms=4000",
            "--set",
            "faults.1.at_ms=9000",
            "--out",
            "out",
            "--quiet",
        ],
        &d,
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let trial = d.join("out/trial-1");
    for f in baton_model::render::output_dir::ARTIFACTS {
        let p = trial.join(f);
        assert!(
            p.is_file() && std::fs::metadata(&p).unwrap().len() > 0,
            "{f}"
        );
    }
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(trial.join("report.json")).unwrap()).unwrap();
    for key in baton_model::render::report::STABLE_KEYS {
        assert!(r.pointer(key).is_some(), "report.json lacks {key}");
    }
    assert_eq!(r["mode"], "real");
    assert_eq!(r["lease_ttl_granted_ms"]["min"], 2000);
    assert_eq!(r["failover_ms"].as_array().unwrap().len(), 1, "{r}");
    let summary = std::fs::read_to_string(trial.join("summary.txt")).unwrap();
    assert!(
        summary.contains("SQL check (lag() over the ledger's sequence): 0 non-increasing steps"),
        "{summary}"
    );
    // Where a person points curl: each node's URL, one line a node.
    let urls = std::fs::read_to_string(trial.join("run/nodes.txt")).unwrap();
    let names: Vec<&str> = urls.lines().filter_map(|l| l.split(' ').next()).collect();
    assert_eq!(names, ["n1", "n2", "n3"], "{urls}");
    assert!(
        urls.lines().all(|l| l.contains(" http://127.0.0.1:")),
        "{urls}"
    );
    // Nothing of the run is left: its processes name files under the output directory.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let left = processes_mentioning(&d.join("out").to_string_lossy());
    assert!(left.is_empty(), "left running: {left:?}");

    // The real crate's own tests, in the real build that `sim real` just made.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("real");
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args([
            "test",
            "--release",
            "--locked",
            // Every test binary, so one failure does not hide the next.
            "--no-fail-fast",
            "-p",
            "baton-real",
            // The drop-in client's real build: etcd-client 0.21 itself, re-exported.
            "-p",
            "baton-etcd-client",
            "--target-dir",
        ])
        .arg(&target)
        .current_dir(&root)
        .env("CARGO_ENCODED_RUSTFLAGS", "")
        .env("CARGO_ENCODED_RUSTDOCFLAGS", "")
        .env_remove("RUSTFLAGS")
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the real crate's tests failed (see above)"
    );
}
