//! What `--help`, README.md and the book promise: every repository path they name
//! exists, and every subcommand's help ends with its own exit codes, which name only what
//! that command can exit with.
//!
//! Methodology: the real binary's help, as a user reads it (`sim <command> --help`), and
//! README.md and every Markdown file under docs/ as committed. A path is any word that
//! starts with a crate's source folder (`sim/src/...`, `model/src/...`, `real/src/...`,
//! `protocols/src/...`) or another committed folder (`scenarios/`, `nightly/`,
//! `examples/`, `docs/`, `.ci/`, `.github/`); each must be a file or directory of the
//! repository. Under `reports/`, where most paths are a run's output, only a path into
//! a committed report (its first folder exists) must exist. A canary runs the same scan
//! over a scratch repository whose chapter names files that do not exist.

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

/// Where the scan looks for paths: a word starting with one of these.
const PREFIXES: [&str; 11] = [
    "sim/src/",
    "model/src/",
    "real/src/",
    "protocols/src/",
    "scenarios/",
    "nightly/",
    "examples/",
    "docs/",
    ".ci/",
    ".github/",
    "reports/",
];

/// What a command makes and git ignores: named in the docs, absent from a fresh clone.
/// (An example's build output is told by its own `.gitignore`: [`built_by_an_example`].)
const MADE_BY_A_COMMAND: [&str; 1] = ["docs/book"];

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn help(command: &str) -> String {
    let o = sim(&[command, "--help"], &root());
    assert_eq!(o.status.code(), Some(0), "sim {command} --help");
    String::from_utf8(o.stdout).unwrap()
}

/// Every repository path in `text` (a word starting with one of [`PREFIXES`]), without
/// trailing punctuation.
fn repo_paths(text: &str) -> Vec<String> {
    let mut out = vec![];
    for start in PREFIXES {
        let mut rest = text;
        while let Some(i) = rest.find(start) {
            // Only a path of its own, not the tail of a longer one (`../sim/src/`,
            // `baton-real/src/`, `sim/tests/`'s `reports/`).
            let before = rest[..i].chars().last();
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || "_/.-".contains(c)))
                .unwrap_or(tail.len());
            let path = tail[..end].trim_end_matches(['.', '/', '-']);
            if !before.is_some_and(|c| c.is_ascii_alphanumeric() || "_/.-".contains(c)) {
                out.push(path.to_string());
            }
            rest = &tail[end..];
        }
    }
    out
}

/// Whether `path`, named in a text, must exist under `root`.
fn must_exist(root: &Path, path: &str) -> bool {
    if MADE_BY_A_COMMAND.iter().any(|m| path.starts_with(m)) || built_by_an_example(root, path) {
        return false;
    }
    match path.strip_prefix("reports/") {
        // A committed report is a folder or file directly under reports/.
        Some(rest) => {
            let first = rest.split('/').next().unwrap_or("");
            !first.is_empty() && root.join("reports").join(first).exists()
        }
        None => true,
    }
}

/// Whether `path` is `examples/<name>/<entry>...` with `<entry>` what that example's
/// `build.sh` makes: a name its own `.gitignore` lists (`bin/`, `gopath/`, `build/`).
fn built_by_an_example(root: &Path, path: &str) -> bool {
    let mut parts = path.split('/');
    let (Some("examples"), Some(name), Some(entry)) = (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let ignore = root.join("examples").join(name).join(".gitignore");
    std::fs::read_to_string(ignore)
        .unwrap_or_default()
        .lines()
        .any(|l| l.trim().trim_matches('/') == entry)
}

/// (how many paths the texts name, the ones that do not exist under `root`).
fn missing_paths(root: &Path, texts: &[(String, String)]) -> (usize, Vec<String>) {
    let mut missing = vec![];
    let mut seen = 0;
    for (what, text) in texts {
        for p in repo_paths(text) {
            seen += 1;
            if must_exist(root, &p) && !root.join(&p).exists() {
                missing.push(format!("{what}: {p}"));
            }
        }
    }
    (seen, missing)
}

#[test]
fn every_path_in_readme_docs_and_help_exists() {
    let mut texts = common::user_docs(&root());
    assert!(
        texts.iter().any(|(f, _)| f.starts_with("docs/src/")),
        "the scan found no chapter under docs/src/"
    );
    for c in COMMANDS {
        texts.push((format!("sim {c} --help"), help(c)));
    }
    let (seen, missing) = missing_paths(&root(), &texts);
    assert!(
        seen > 100,
        "the scan found only {seen} paths: is it broken?"
    );
    assert!(
        missing.is_empty(),
        "paths that do not exist:\n{}",
        missing.join("\n")
    );
}

/// Every source file of the workspace under `root`, as paths relative to it.
fn source_files(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, root, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let root = root.canonicalize().unwrap();
    let mut out = vec![];
    for c in ["sim", "model", "real", "protocols"] {
        walk(&root.join(c).join("src"), &root, &mut out);
    }
    out
}

/// The short `.rs` names in backquotes (`service/etcd.rs`, `checker/load.rs`) that are
/// neither a file under `root` nor the tail of a source file's path.
fn missing_file_names(root: &Path, texts: &[(String, String)]) -> Vec<String> {
    let files = source_files(root);
    let mut missing = vec![];
    for (what, text) in texts {
        for word in text.split('`').skip(1).step_by(2) {
            if word.ends_with(".rs") && !word.contains(' ') && !word.contains('*') {
                let tail = format!("/{}", word.trim_start_matches("./"));
                if !root.join(word).is_file() && !files.iter().any(|f| f.ends_with(&tail)) {
                    missing.push(format!("{what}: {word}"));
                }
            }
        }
    }
    missing
}

#[test]
fn every_file_name_readme_and_docs_mention_exists_somewhere() {
    // The docs also name files by a short path (`service/etcd.rs`, `checker/load.rs`)
    // where the text says which crate; each must still be the tail of a real file.
    let missing = missing_file_names(&root(), &common::user_docs(&root()));
    assert!(
        missing.is_empty(),
        "the docs name files that do not exist: {missing:?}"
    );
}

#[test]
fn the_path_scan_catches_a_missing_file() {
    let found = repo_paths("see sim/src/ttl.rs, and (model/src/protocol/ttl.rs).");
    assert_eq!(found, ["sim/src/ttl.rs", "model/src/protocol/ttl.rs"]);
    assert!(
        !root().join(&found[0]).exists(),
        "the canary must not exist"
    );
}

#[test]
fn the_scan_catches_a_missing_path_in_a_chapter() {
    // A scratch repository: a README that names what exists, and a chapter under
    // docs/src/ that names a source file, a script, a committed report's file and a
    // short file name that do not exist, beside ones that do and a run's output.
    let d = common::temp_dir("help-canary");
    for dir in [
        "sim/src/world",
        "nightly",
        "reports/matrix",
        "docs/src",
        "examples/demo",
    ] {
        std::fs::create_dir_all(d.join(dir)).unwrap();
    }
    std::fs::write(d.join("examples/demo/.gitignore"), "bin/\n").unwrap();
    std::fs::write(d.join("sim/src/world/net.rs"), "").unwrap();
    std::fs::write(d.join("nightly/matrix.sh"), "").unwrap();
    std::fs::write(d.join("README.md"), "See `sim/src/world/net.rs`.\n").unwrap();
    std::fs::write(
        d.join("docs/src/chapter.md"),
        "# A chapter\n\n`sim/src/world/net.rs`, `net.rs`, `nightly/matrix.sh`, \
         reports/gc-pause/42/ and reports/matrix/ exist or are a run's output;\n\
         `sim/src/world/gone.rs`, nightly/gone.sh, reports/matrix/gone.md and `vanished.rs` \
         do not;\n`examples/demo/bin/demo` is what its build.sh makes, examples/demo/lib/ is not.\n",
    )
    .unwrap();
    let texts = common::user_docs(&d);
    assert_eq!(
        texts.iter().map(|t| t.0.as_str()).collect::<Vec<_>>(),
        ["README.md", "docs/src/chapter.md"]
    );
    let (seen, missing) = missing_paths(&d, &texts);
    assert_eq!(seen, 10, "{missing:?}");
    assert_eq!(
        missing,
        [
            "docs/src/chapter.md: sim/src/world/gone.rs",
            "docs/src/chapter.md: nightly/gone.sh",
            "docs/src/chapter.md: examples/demo/lib",
            "docs/src/chapter.md: reports/matrix/gone.md",
        ]
    );
    assert_eq!(
        missing_file_names(&d, &texts),
        [
            "docs/src/chapter.md: sim/src/world/gone.rs",
            "docs/src/chapter.md: vanished.rs"
        ]
    );
    std::fs::remove_dir_all(&d).unwrap();
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
