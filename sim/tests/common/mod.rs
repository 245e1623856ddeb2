//! Shared helpers for the integration tests.
#![allow(dead_code)]

use baton_model::scenario::{self, Resolved};
use baton_sim::Artifacts;
use std::path::PathBuf;

/// The repository's scenarios directory.
pub fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// Loads `scenarios/<name>.toml` with overrides.
pub fn load(name: &str, set: &[&str]) -> Resolved {
    let path = scenarios_dir().join(format!("{name}.toml"));
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    scenario::load(&path, &set).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `scenarios/<name>.toml` under `seed` with overrides.
pub fn run(name: &str, seed: u64, set: &[&str]) -> Artifacts {
    baton_sim::run(&load(name, set), seed).unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"))
}

/// The report as JSON.
pub fn report(a: &Artifacts) -> serde_json::Value {
    serde_json::from_str(&a.report_json).expect("report.json parses")
}

/// The properties of the violations in a report.
pub fn properties(a: &Artifacts) -> Vec<String> {
    report(a)["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["property"].as_str().unwrap().to_string())
        .collect()
}

/// Runs the `sim` binary with `args` in `cwd`.
pub fn sim(args: &[&str], cwd: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("sim runs")
}

/// A fresh, empty temporary directory for test `tag` of this process.
pub fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("baton-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The Markdown a user reads under `root`: README.md, then every `.md` file under docs/
/// (the book's chapters; not docs/book/, which `mdbook build` writes), each as (its path
/// relative to `root`, its text), in path order so that a failure names the same file
/// every time.
pub fn user_docs(root: &std::path::Path) -> Vec<(String, String)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                if !p.ends_with("docs/book") {
                    walk(&p, out);
                }
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut files = vec![];
    walk(&root.join("docs"), &mut files);
    files.sort();
    let readme = root.join("README.md");
    if readme.is_file() {
        files.insert(0, readme);
    }
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            (rel, text)
        })
        .collect()
}
