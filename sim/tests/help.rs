//! What `--help` and README.md promise: every source path they name exists, and every
//! subcommand's help ends with its own exit codes, which name only what that command can
//! exit with.
//!
//! Methodology: the real binary's help, as a user reads it (`sim <command> --help`), and
//! README.md as committed. A path is any `sim/src/...`, `model/src/...`, `real/src/...`
//! or `protocols/src/...` word; each must be a file or directory of the repository.

mod common;
use common::sim;
use std::path::Path;

const COMMANDS: [&str; 12] = [
    "run",
    "check-determinism",
    "matrix",
    "sweep",
    "search",
    "shrink",
    "bisect",
    "real",
    "conform",
    "compare",
    "bench",
    "stats",
];

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn help(command: &str) -> String {
    let o = sim(&[command, "--help"], &root());
    assert_eq!(o.status.code(), Some(0), "sim {command} --help");
    String::from_utf8(o.stdout).unwrap()
}

/// Every `<crate>/src/...` path in `text`, without trailing punctuation.
fn source_paths(text: &str) -> Vec<String> {
    let mut out = vec![];
    for start in ["sim/src/", "model/src/", "real/src/", "protocols/src/"] {
        let mut rest = text;
        while let Some(i) = rest.find(start) {
            // Only a path of its own, not the tail of a longer one (`../sim/src/`).
            let before = rest[..i].chars().last();
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || "_/.-".contains(c)))
                .unwrap_or(tail.len());
            let path = tail[..end].trim_end_matches(['.', '/', '-']);
            if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                out.push(path.to_string());
            }
            rest = &tail[end..];
        }
    }
    out
}

#[test]
fn every_source_path_in_readme_and_help_exists() {
    let mut texts = vec![(
        "README.md".to_string(),
        std::fs::read_to_string(root().join("README.md")).unwrap(),
    )];
    for c in COMMANDS {
        texts.push((format!("sim {c} --help"), help(c)));
    }
    let mut missing = vec![];
    let mut seen = 0;
    for (what, text) in &texts {
        for p in source_paths(text) {
            seen += 1;
            if !root().join(&p).exists() {
                missing.push(format!("{what}: {p}"));
            }
        }
    }
    assert!(seen > 10, "the scan found only {seen} paths: is it broken?");
    assert!(
        missing.is_empty(),
        "paths that do not exist:\n{}",
        missing.join("\n")
    );
}

/// Every source file of the workspace, as paths relative to the repository.
fn source_files() -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, root, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let root = root().canonicalize().unwrap();
    let mut out = vec![];
    for c in ["sim", "model", "real", "protocols"] {
        walk(&root.join(c).join("src"), &root, &mut out);
    }
    out
}

#[test]
fn every_file_name_readme_mentions_exists_somewhere() {
    // README also names files by a short path (`service/etcd.rs`, `timeline_html.rs`)
    // where its section says which crate; each must still be the tail of a real file.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let files = source_files();
    let mut missing = vec![];
    for word in readme.split('`').skip(1).step_by(2) {
        if word.ends_with(".rs") && !word.contains(' ') && !word.contains('*') {
            let tail = format!("/{}", word.trim_start_matches("./"));
            if !root().join(word).is_file() && !files.iter().any(|f| f.ends_with(&tail)) {
                missing.push(word.to_string());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "README names files that do not exist: {missing:?}"
    );
}

#[test]
fn the_path_scan_catches_a_missing_file() {
    let found = source_paths("see sim/src/ttl.rs, and (model/src/protocol/ttl.rs).");
    assert_eq!(found, ["sim/src/ttl.rs", "model/src/protocol/ttl.rs"]);
    assert!(
        !root().join(&found[0]).exists(),
        "the canary must not exist"
    );
}

#[test]
fn each_command_lists_its_own_exit_codes() {
    // (command, codes it must list, codes it must not list)
    let table: [(&str, &[&str], &[&str]); 12] = [
        ("run", &["0", "1", "2", "3"], &["130"]),
        ("check-determinism", &["0", "1", "2", "3"], &["130"]),
        ("matrix", &["0", "2", "3", "130"], &["1"]),
        ("sweep", &["0", "2", "3", "130"], &["1"]),
        ("search", &["0", "1", "2", "3", "130"], &[]),
        ("shrink", &["0", "2", "3"], &["1", "130"]),
        ("bisect", &["0", "2", "3"], &["1", "130"]),
        ("real", &["0", "1", "2", "3", "130"], &[]),
        ("conform", &["0", "1", "2", "3", "130"], &[]),
        ("compare", &["0", "1", "2", "3", "130"], &[]),
        ("bench", &["0", "2", "3"], &["1", "130"]),
        ("stats", &["0", "2"], &["1", "3", "130"]),
    ];
    for (command, has, lacks) in table {
        let h = help(command);
        let codes = h
            .split("Exit codes:")
            .nth(1)
            .unwrap_or_else(|| panic!("sim {command} --help has no exit codes:\n{h}"));
        // A code is listed as a line starting with it.
        let listed: Vec<&str> = codes
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|w| w.chars().all(|c| c.is_ascii_digit()))
            .collect();
        for c in has {
            assert!(
                listed.contains(c),
                "sim {command}: exit {c} not listed:\n{codes}"
            );
        }
        for c in lacks {
            assert!(
                !listed.contains(c),
                "sim {command}: lists exit {c}:\n{codes}"
            );
        }
    }
}

#[test]
fn sim_real_help_answers_without_building() {
    // The help is declared in the model crate: `sim real --help` must not start cargo
    // (a first build takes minutes). With CARGO pointing at `false`, any build fails.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(["real", "--help"])
        .env("CARGO", "/bin/false")
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let h = String::from_utf8(o.stdout).unwrap();
    assert!(h.contains("--trials") && h.contains("Exit codes:"), "{h}");
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
