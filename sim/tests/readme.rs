//! The shell blocks of README.md and of the book (every Markdown file under docs/) that
//! are meant to run do run, and exit as the text says.
//!
//! Methodology: every fenced block whose info string is `sh run` (exit 0 expected) or
//! `sh run exit=N` runs with bash, in file order (README first, then docs/ in path
//! order), in one fresh directory that links the repository's scenarios/.
//! `cargo run --release --bin sim -- ARGS` there runs the `sim` this test suite built:
//! the same crate in the same release profile with the same flags, so cargo would build
//! the same binary; any other cargo command in a marked block fails the test. `sim` is
//! on PATH, as `cargo install --locked --path sim` puts it.

mod common;
use std::path::{Path, PathBuf};
use std::process::Command;

/// (info string, body) of every fenced block of `text`.
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = vec![];
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        match &mut open {
            None => {
                if let Some(info) = line.strip_prefix("```") {
                    open = Some((info.trim().to_string(), String::new()));
                }
            }
            Some((info, body)) => {
                if line.trim_start() == "```" {
                    out.push((info.clone(), body.clone()));
                    open = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    out
}

/// The exit code a block's info string promises, if it is marked to run.
fn marked(info: &str) -> Option<i32> {
    let mut words = info.split_whitespace();
    if words.next() != Some("sh") || words.next() != Some("run") {
        return None;
    }
    Some(match words.next() {
        None => 0,
        Some(w) => w
            .strip_prefix("exit=")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("bad run mark `{info}`")),
    })
}

#[test]
fn marked_shell_blocks_of_readme_and_docs_run_and_exit_as_they_say() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let docs = common::user_docs(&repo);
    assert!(
        docs.len() > 10 && docs[0].0 == "README.md",
        "README.md and the book's chapters under docs/: found {:?}",
        docs.iter().map(|d| &d.0).collect::<Vec<_>>()
    );
    // (file, exit code, body) of every marked block, README's first.
    let mut runnable: Vec<(&str, i32, String)> = vec![];
    for (file, text) in &docs {
        for (info, body) in blocks(text) {
            if let Some(code) = marked(&info) {
                runnable.push((file, code, body));
            }
        }
        // `cargo install` without --locked re-resolves the dependencies: every install
        // the docs show keeps the committed Cargo.lock.
        for (i, _) in text.match_indices("cargo install") {
            let line = text[i..].lines().next().unwrap();
            assert!(line.contains("--locked"), "{file}: {line}");
        }
    }
    assert!(
        runnable.iter().filter(|r| r.0 == "README.md").count() >= 2,
        "README marks its Quick start blocks to run"
    );
    assert!(docs[0].1.contains("cargo install --locked --path sim"));
    let d = std::env::temp_dir().join(format!("baton-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("bin")).unwrap();
    std::os::unix::fs::symlink(repo.join("scenarios"), d.join("scenarios")).unwrap();
    let sim = Path::new(env!("CARGO_BIN_EXE_sim"));
    std::os::unix::fs::symlink(sim, d.join("bin/sim")).unwrap();
    let prelude = r#"
cargo() {
  if [ "$1 $2 $3 $4 $5" = "run --release --bin sim --" ]; then
    shift 5
    sim "$@"
  else
    echo "docs test: a marked block may only use cargo run --release --bin sim --" >&2
    return 99
  fi
}
set -e
"#;
    let path = format!(
        "{}:{}",
        d.join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    for (file, code, body) in &runnable {
        let o = Command::new("bash")
            .arg("-c")
            .arg(format!("{prelude}{body}"))
            .current_dir(&d)
            .env("PATH", &path)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(*code),
            "{file}: a block exited otherwise than it says:\n{body}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // What the Quick start says the main job writes.
    for f in [
        "scenario.toml",
        "summary.txt",
        "report.json",
        "timeline.jsonl",
    ] {
        assert!(d.join("reports/gc-pause/42").join(f).is_file(), "{f}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_chapter_s_marked_blocks_are_found_and_unmarked_ones_left_alone() {
    // The same reading applies to every file: a chapter's `sh run exit=1` block is
    // found with its code, a plain `sh` or `toml` block is not run.
    let chapter = "# A chapter\n\n```sh run exit=1\nsim run x.toml\n```\n\n```sh\nbash nightly/matrix.sh\n```\n\n```toml\nseed = 1\n```\n\n```sh run\nsim run y.toml\n```\n";
    let found: Vec<(i32, String)> = blocks(chapter)
        .into_iter()
        .filter_map(|(info, body)| marked(&info).map(|c| (c, body)))
        .collect();
    assert_eq!(
        found,
        [
            (1, "sim run x.toml\n".to_string()),
            (0, "sim run y.toml\n".to_string())
        ]
    );
}
