//! `sim bisect` names the commit that planted a double-leader bug.
//!
//! Methodology: a small git repository is made from Baton's own tracked files, with a
//! history of four commits: the base (good), a README edit, a commit that plants an
//! off-by-one in the fence (a token one below `max_token` is let through, so the woken
//! leader's stale write in gc-pause seed 42 lands), and another README edit (bad). The
//! scenario is given from outside that repository. `sim bisect` must name the planting
//! commit and `double_leader_acting`, leave no worktree behind and not move the
//! repository's HEAD. It builds with `--profile dev` into a target directory of its own:
//! the code path is the release one, and incremental builds keep the test to minutes.
//! Bad input (a REV that does not exist, ends the wrong way round) exits 2 at once.

mod common;
use common::{sim, temp_dir};
use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=Baton test",
            "-c",
            "user.email=test@baton.invalid",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository holding Baton's tracked files, committed as `base`.
fn baton_repo(d: &Path) -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let repo = d.join("repo");
    let files = Command::new("git")
        .arg("-C")
        .arg(&root)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
        .unwrap();
    assert!(
        files.status.success(),
        "Baton's own tree must be a git checkout"
    );
    for f in files.stdout.split(|b| *b == 0).filter(|f| !f.is_empty()) {
        let f = std::str::from_utf8(f).unwrap();
        if f.starts_with("reports/") {
            continue;
        }
        let to = repo.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root.join(f), &to).unwrap();
    }
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "base"]);
    repo
}

fn edit(repo: &Path, file: &str, from: &str, to: &str, message: &str) -> String {
    let path = repo.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{file} no longer holds `{from}`");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    git(repo, &["commit", "-q", "-am", message]);
    git(repo, &["rev-parse", "HEAD"])
}

#[test]
fn bisect_names_the_commit_that_planted_a_double_leader_bug() {
    let d = temp_dir("bisect");
    let repo = baton_repo(&d);
    let base = git(&repo, &["rev-parse", "HEAD"]);
    edit(
        &repo,
        "README.md",
        "# Baton",
        "# Baton (a fork)",
        "README: a fork",
    );
    let planted = edit(
        &repo,
        "sim/src/world/service/resource.rs",
        "w.token < r.max_token",
        "w.token + 1 < r.max_token",
        "resource: let a token one below max_token through",
    );
    edit(
        &repo,
        "README.md",
        "(a fork)",
        "(still a fork)",
        "README: still a fork",
    );
    let head = git(&repo, &["rev-parse", "HEAD"]);
    let scenario = d.join("gc-pause.toml");
    std::fs::copy(repo.join("scenarios/gc-pause.toml"), &scenario).unwrap();

    let target = d.join("target");
    let o = sim(
        &[
            "bisect",
            "--good",
            &base,
            "--bad",
            "main",
            scenario.to_str().unwrap(),
            "--seed",
            "42",
            "--profile",
            "dev",
            "--target-dir",
            target.to_str().unwrap(),
            "--quiet",
        ],
        &repo,
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.starts_with(&format!(
            "first bad commit: {planted} resource: let a token one below max_token through\n"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("fails: double_leader_acting ("), "{stdout}");
    assert!(stdout.contains("reproduce: git checkout "), "{stdout}");
    // The user's checkout is as it was: same HEAD, on its branch, one worktree.
    assert_eq!(git(&repo, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(&repo, &["symbolic-ref", "--short", "HEAD"]), "main");
    assert_eq!(git(&repo, &["worktree", "list"]).lines().count(), 1);
    // The scratch repository holds a dev build of about 1.7 GB: gone once the test
    // passed (a failed test keeps it to look at).
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_bisect_input_exits_2_with_one_line() {
    let d = temp_dir("bisect-bad");
    let repo = d.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "a").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    let one = git(&repo, &["rev-parse", "HEAD"]);
    std::fs::write(repo.join("a.txt"), "b").unwrap();
    git(&repo, &["commit", "-q", "-am", "two"]);
    let scenario = format!("{}/../scenarios/gc-pause.toml", env!("CARGO_MANIFEST_DIR"));
    for (args, says) in [
        (
            vec!["--good", "v9.9", "--bad", "main"],
            "--good v9.9: no such commit",
        ),
        (
            vec!["--good", "main", "--bad", "nope"],
            "--bad nope: no such commit",
        ),
        (
            vec!["--good", "main", "--bad", &one],
            "is not an ancestor of --bad",
        ),
    ] {
        let mut all = vec!["bisect"];
        all.extend(args);
        all.push(&scenario);
        let o = sim(&all, &repo);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
    }
    assert_eq!(git(&repo, &["worktree", "list"]).lines().count(), 1);
}
