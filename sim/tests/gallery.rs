//! The gallery of real bugs (issue 22, part 3): `scenarios/gallery/<name>.toml`.
//!
//! Methodology: every file in the directory is read as a user would use it. Its header
//! must name a `# source:` (a URL), a `# fixed-by: --set <key>=<value>` switch and the
//! `# search:` switches nightly/gallery.sh searches with, and the file must record its
//! seed. `sim run FILE` (the binary, as docs/src/gallery.md says) must exit 1 on that
//! seed, and the library run with the fixed-by switch must pass every seed in 0..99: the
//! bug is the only thing that fails it. At least 10 files.

mod common;

use baton_model::scenario;
use common::{scenarios_dir, sim};
use std::path::{Path, PathBuf};

/// The header lines a gallery file must have: (source, fixed-by `key=value`).
fn header(path: &Path) -> (String, String) {
    let text = std::fs::read_to_string(path).unwrap();
    let line = |tag: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(tag).map(|v| v.trim().to_string()))
            .unwrap_or_else(|| panic!("{}: no `{tag}` line", path.display()))
    };
    let source = line("# source:");
    let fixed_by = line("# fixed-by:");
    let switch = fixed_by
        .strip_prefix("--set ")
        .unwrap_or_else(|| panic!("{}: fixed-by is not `--set k=v`", path.display()))
        .to_string();
    (source, switch)
}

fn gallery() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenarios_dir().join("gallery"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn the_gallery_holds_at_least_ten_bugs_each_with_a_source_and_a_fix() {
    let files = gallery();
    assert!(files.len() >= 10, "{} gallery files", files.len());
    for f in &files {
        let (source, switch) = header(f);
        assert!(source.starts_with("https://"), "{}: {source}", f.display());
        // nightly/gallery.sh's generic search reads this line.
        let text = std::fs::read_to_string(f).unwrap();
        assert!(
            text.lines().any(|l| l.starts_with("# search: --set ")),
            "{}: no `# search: --set ...` line",
            f.display()
        );
        assert!(switch.contains('='), "{}: {switch}", f.display());
        let r = scenario::load(f, &[]).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.scenario.seed.is_some(), "{}: no seed", f.display());
    }
}

#[test]
fn each_bug_fails_on_its_seed_from_the_command_line() {
    let root = scenarios_dir().join("..");
    let out = common::temp_dir("gallery");
    for f in gallery() {
        let o = sim(
            &[
                "run",
                f.to_str().unwrap(),
                "-q",
                "--out",
                out.to_str().unwrap(),
                "--force",
            ],
            &root,
        );
        assert_eq!(
            o.status.code(),
            Some(1),
            "{}: {}",
            f.display(),
            String::from_utf8_lossy(&o.stdout)
        );
    }
}

#[test]
fn each_fix_passes_seeds_0_to_99() {
    let files = gallery();
    let failures: Vec<String> = baton_sim::map_ordered(files.len() * 100, 2, |i| {
        let f = &files[i / 100];
        let seed = (i % 100) as u64;
        let (_, switch) = header(f);
        let r = scenario::load(f, std::slice::from_ref(&switch)).unwrap();
        let a = baton_sim::run_unrecorded(&r, seed).unwrap();
        let report: serde_json::Value = serde_json::from_str(&a.report_json).unwrap();
        (report["verdict"] != "pass").then(|| format!("{} seed {seed} with {switch}", f.display()))
    })
    .into_iter()
    .flatten()
    .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}
