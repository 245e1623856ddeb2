//! `sim bisect`: names the first commit under which a scenario fails.
//!
//! It wraps `git bisect run` the way the recipe in `docs/src/bisect.md` does, so that the
//! recipe is true:
//! the scenario is copied out of the tree first (an older commit may not have it, or
//! have another version of it); every candidate commit is checked out in a git worktree
//! of its own (the user's checkout and its branch are never touched) and built there
//! into one shared target directory (a commit after another rebuilds only what changed);
//! a commit that does not build, or that cannot read the scenario (exit 2) or fails
//! inside the simulator (exit 3), answers 125, which `git bisect` reads as "skip".
//!
//! Both ends are tried before bisecting: `--bad` must fail and `--good` must pass, or the
//! answer would be meaningless. Each step keeps its run's `report.json` under the work
//! directory, so the first bad commit is named with the properties that failed there.

use crate::cmd::progress::Spinner;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How long one commit's step (a build and a run) takes on average, measured, for the
/// line that says how long the bisection will be before it starts.
const STEP_S: u64 = 150;
/// Where [`STEP_S`] comes from.
const STEP_MEASURED: &str = "measured on 2 cores: examples/bisect-demo.sh built and ran four commits in 594 s, the first into an empty target directory";

/// What to bisect.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The git repository to bisect (the working directory's).
    pub repo: PathBuf,
    /// A commit under which the scenario passes.
    pub good: String,
    /// A commit under which it fails.
    pub bad: String,
    /// The scenario file, read now (it is copied out of the tree before any checkout).
    pub scenario: PathBuf,
    /// The seed every commit runs.
    pub seed: u64,
    /// `--set` overrides every commit's run gets.
    pub set: Vec<String>,
    /// The target directory shared by every commit's build.
    pub target_dir: PathBuf,
    /// The cargo profile every commit is built with (`release`; `dev` builds faster
    /// between nearby commits, thanks to incremental compilation, and runs slower).
    pub profile: String,
}

/// A problem with the plan (exit 2) or with bisecting it (exit 3).
#[derive(Debug, thiserror::Error)]
pub enum BisectError {
    /// Bad input: a REV that does not exist, a missing scenario, ends the wrong way round.
    #[error("{0}")]
    Input(String),
    /// Bisecting could not finish: git failed, or only skipped commits were left.
    #[error("{0}")]
    Failed(String),
}

/// The answer.
#[derive(Clone, Debug)]
pub struct Found {
    /// The first bad commit's full hash.
    pub commit: String,
    /// Its subject line.
    pub subject: String,
    /// The properties that failed under it (sorted), with the first violation's detail.
    pub failed: Vec<(String, String)>,
    /// Commits tested by `git bisect run` (both ends not counted) and how many skipped.
    pub tested: usize,
    /// Of those, commits skipped (125).
    pub skipped: usize,
}

/// The script `git bisect run sh -c SCRIPT` runs at each commit, with `$BATON_TARGET`,
/// `$BATON_SCENARIO` and `$BATON_RUNS` in its environment. `docs/src/bisect.md` quotes it.
pub fn step_script(profile: &str, seed: u64, set: &[String]) -> String {
    // cargo puts the dev profile's output in `debug/`, every other profile's in its name.
    let (flag, dir) = match profile {
        "release" => ("--release".to_string(), "release"),
        "dev" => ("--profile dev".to_string(), "debug"),
        p => (
            format!("--profile {}", baton_model::render::shell::quote(p)),
            p,
        ),
    };
    let mut run = format!(
        "\"$BATON_TARGET/{dir}/sim\" run \"$BATON_SCENARIO\" --seed {seed} \
         --out \"$BATON_RUNS/$(git rev-parse HEAD)\" --force --quiet"
    );
    for s in set {
        run.push_str(&format!(" --set {}", baton_model::render::shell::quote(s)));
    }
    format!(
        "cargo build {flag} -q -p baton-sim --bin sim --target-dir \"$BATON_TARGET\" || exit 125\n\
         {run}\n\
         rc=$?; [ \"$rc\" -le 1 ] && exit \"$rc\"; exit 125"
    )
}

fn git(dir: &Path, args: &[&str]) -> Result<String, BisectError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| BisectError::Failed(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        return Err(BisectError::Failed(format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The repository holding `dir`, as git sees it.
pub fn repo_of(dir: &Path) -> Result<PathBuf, BisectError> {
    git(dir, &["rev-parse", "--show-toplevel"])
        .map(PathBuf::from)
        .map_err(|_| {
            BisectError::Input(format!("{} is not inside a git repository", dir.display()))
        })
}

/// The full hash of `rev`, or an input error naming the flag it came from.
pub fn resolve(repo: &Path, flag: &str, rev: &str) -> Result<String, BisectError> {
    git(
        repo,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ],
    )
    .map_err(|_| {
        BisectError::Input(format!(
            "{flag} {rev}: no such commit in {} (a branch, tag or hash is allowed)",
            repo.display()
        ))
    })
}

/// Removes the worktree and the work directory however bisecting ends.
struct Cleanup {
    repo: PathBuf,
    tree: PathBuf,
    _work: tempfile::TempDir,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = git(&self.tree, &["bisect", "reset"]);
        let _ = git(
            &self.repo,
            &[
                "worktree",
                "remove",
                "--force",
                &self.tree.to_string_lossy(),
            ],
        );
        let _ = git(&self.repo, &["worktree", "prune"]);
    }
}

/// One step's verdict (0 good, 1 bad, 125 skip) and the last lines it printed.
fn step(tree: &Path, env: &[(&str, &Path)], script: &str) -> Result<(i32, String), BisectError> {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .current_dir(tree)
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .map_err(|e| BisectError::Failed(format!("cannot run sh: {e}")))?;
    let said = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = said.lines().rev().take(8).collect();
    let tail = tail.into_iter().rev().collect::<Vec<_>>().join("\n");
    Ok((out.status.code().unwrap_or(125), tail))
}

/// Bisects `plan`, calling `progress` with a line for each thing it starts (the first
/// says how many builds to expect and how long each takes). `spinner`, when it is drawn,
/// shows the commit being built and run with the time elapsed.
pub fn bisect(
    plan: &Plan,
    spinner: &Spinner,
    mut progress: impl FnMut(&str),
) -> Result<Found, BisectError> {
    if git(
        &plan.repo,
        &["merge-base", "--is-ancestor", &plan.good, &plan.bad],
    )
    .is_err()
    {
        return Err(BisectError::Input(format!(
            "--good {} is not an ancestor of --bad {}: nothing to bisect between them",
            short(&plan.good),
            short(&plan.bad)
        )));
    }
    let ws = Workspace::new(plan)?;
    let env = ws.env();
    let script = step_script(&plan.profile, plan.seed, &plan.set);
    let between = git(
        &plan.repo,
        &[
            "rev-list",
            "--count",
            &format!("{}..{}", plan.good, plan.bad),
        ],
    )?;
    progress(&expected_steps(between.parse().unwrap_or(0)));
    // Both ends first: a bisection between two good (or two bad) commits names nothing.
    for (flag, rev, want) in [("--bad", &plan.bad, 1), ("--good", &plan.good, 0)] {
        let what = format!("building and running {flag} {}", short(rev));
        progress(&what);
        spinner.start(&what);
        git(&ws.tree, &["checkout", "-q", "--detach", rev])?;
        let (verdict, said) = step(&ws.tree, &env, &script)?;
        check_end(flag, rev, want, verdict, &said, plan.seed)?;
    }
    progress("bisecting");
    spinner.start("bisecting");
    let found = run_bisect(plan, &ws, &env, &script, spinner);
    spinner.finish();
    found
}

/// The line that says, before anything is built, how many commits will be built and run
/// and how long each takes: `git bisect` tests about log2(N) of the N commits after
/// `--good`, after the two ends.
fn expected_steps(commits: u64) -> String {
    let steps = u64::from(commits.max(1).next_power_of_two().trailing_zeros());
    let builds = 2 + steps;
    format!(
        "{commits} commit{} after --good: both ends, then about {steps} more, each built and run; about {} minutes in all at about {:.1} minutes a commit ({STEP_MEASURED})",
        if commits == 1 { "" } else { "s" },
        (builds * STEP_S).div_ceil(60),
        STEP_S as f64 / 60.0
    )
}

/// What a bisection works in: the scenario copied out of the tree, a worktree of its
/// own, a directory for the runs and the shared target directory. The worktree is
/// removed when this is dropped.
struct Workspace {
    scenario: PathBuf,
    runs: PathBuf,
    tree: PathBuf,
    target: PathBuf,
    _cleanup: Cleanup,
}

impl Workspace {
    fn new(plan: &Plan) -> Result<Workspace, BisectError> {
        let text = std::fs::read(&plan.scenario).map_err(|e| {
            BisectError::Input(format!(
                "{}: cannot read the scenario: {e}",
                plan.scenario.display()
            ))
        })?;
        let work = tempfile::Builder::new()
            .prefix("baton-bisect-")
            .tempdir()
            .map_err(|e| BisectError::Failed(format!("cannot make a work directory: {e}")))?;
        let name = plan.scenario.file_name();
        let scenario = work
            .path()
            .join(name.unwrap_or_else(|| std::ffi::OsStr::new("scenario.toml")));
        std::fs::write(&scenario, text)
            .map_err(|e| BisectError::Failed(format!("cannot copy the scenario: {e}")))?;
        let (runs, tree) = (work.path().join("runs"), work.path().join("tree"));
        std::fs::create_dir_all(&plan.target_dir).map_err(|e| {
            BisectError::Input(format!(
                "--target-dir {}: cannot create it: {e}",
                plan.target_dir.display()
            ))
        })?;
        let target = plan
            .target_dir
            .canonicalize()
            .unwrap_or(plan.target_dir.clone());
        let tree_arg = tree.to_string_lossy().into_owned();
        git(
            &plan.repo,
            &["worktree", "add", "--detach", &tree_arg, &plan.bad],
        )?;
        let _cleanup = Cleanup {
            repo: plan.repo.clone(),
            tree: tree.clone(),
            _work: work,
        };
        Ok(Workspace {
            scenario,
            runs,
            tree,
            target,
            _cleanup,
        })
    }

    /// The environment every step runs with.
    fn env(&self) -> [(&'static str, &Path); 3] {
        [
            ("BATON_TARGET", self.target.as_path()),
            ("BATON_SCENARIO", self.scenario.as_path()),
            ("BATON_RUNS", self.runs.as_path()),
        ]
    }
}

/// Checks an end's verdict: `--bad` must fail (1), `--good` pass (0).
fn check_end(
    flag: &str,
    rev: &str,
    want: i32,
    verdict: i32,
    said: &str,
    seed: u64,
) -> Result<(), BisectError> {
    match verdict {
        v if v == want => Ok(()),
        125 => Err(BisectError::Failed(format!(
            "{flag} {}: does not build, or cannot run the scenario (exit 2 or 3 \
             there); it said:\n{said}",
            short(rev)
        ))),
        0 => Err(BisectError::Input(format!(
            "the scenario passes at --bad {} (seed {seed}): nothing to bisect",
            short(rev),
        ))),
        _ => Err(BisectError::Input(format!(
            "the scenario already fails at --good {} (seed {seed}): choose an older --good",
            short(rev),
        ))),
    }
}

/// Runs `git bisect run` between the ends and reads what it named; `spinner` shows the
/// commit under test as git names it.
fn run_bisect(
    plan: &Plan,
    ws: &Workspace,
    env: &[(&str, &Path)],
    script: &str,
    spinner: &Spinner,
) -> Result<Found, BisectError> {
    git(&ws.tree, &["bisect", "start", &plan.bad, &plan.good])?;
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(&ws.tree)
        .args(["bisect", "run", "sh", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| BisectError::Failed(format!("cannot run git bisect: {e}")))?;
    // stderr is read beside stdout, so that neither pipe fills while the other is read.
    let stderr = child.stderr.take().map(|mut e| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut e, &mut s);
            s
        })
    });
    let mut log = String::new();
    let mut left = String::new();
    if let Some(out) = child.stdout.take() {
        use std::io::BufRead;
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            // git says `Bisecting: 3 revisions left to test after this (roughly 2 steps)`,
            // then `[HASH] subject` for the commit it checked out next.
            if let Some(rest) = line.strip_prefix("Bisecting: ") {
                left = rest.to_string();
            } else if let Some((hash, _)) = line.strip_prefix('[').and_then(|l| l.split_once(']')) {
                spinner.start(&format!(
                    "bisecting: building and running {} ({left})",
                    short(hash)
                ));
            }
            log.push_str(&line);
            log.push('\n');
        }
    }
    let stderr = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    child
        .wait()
        .map_err(|e| BisectError::Failed(format!("cannot run git bisect: {e}")))?;
    let (tested, skipped) = tested_and_skipped(&ws.tree);
    let Some(commit) = log
        .lines()
        .find_map(|l| l.strip_suffix(" is the first bad commit"))
        .map(str::to_string)
    else {
        let why = if log.contains("only 'skip'ped commits left") {
            "only commits that do not build or run were left; the first bad commit is one of them"
        } else {
            "git bisect run did not name a commit"
        };
        return Err(BisectError::Failed(format!("{why}:\n{log}{stderr}")));
    };
    let subject = git(&plan.repo, &["log", "-1", "--format=%s", &commit])?;
    let failed = failed_properties(&ws.runs.join(&commit).join("report.json"));
    Ok(Found {
        commit,
        subject,
        failed,
        tested,
        skipped,
    })
}

/// How many commits `git bisect` tested between the ends, and how many of those it
/// skipped, from its log.
fn tested_and_skipped(tree: &Path) -> (usize, usize) {
    let steps: Vec<String> = git(tree, &["bisect", "log"])
        .map(|l| {
            l.lines()
                .filter(|x| {
                    ["git bisect good", "git bisect bad", "git bisect skip"]
                        .iter()
                        .any(|p| x.starts_with(p))
                })
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let skipped = steps
        .iter()
        .filter(|x| x.starts_with("git bisect skip"))
        .count();
    (steps.len(), skipped)
}

/// The sorted failed properties of a report, each with its first violation's detail.
fn failed_properties(report: &Path) -> Vec<(String, String)> {
    let Ok(text) = std::fs::read_to_string(report) else {
        return vec![];
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return vec![];
    };
    let mut out: Vec<(String, String)> = vec![];
    for x in v["violations"].as_array().into_iter().flatten() {
        let p = x["property"].as_str().unwrap_or("?").to_string();
        if !out.iter().any(|(q, _)| *q == p) {
            let detail = format!(
                "at {} ms: {}",
                x["at_ms"],
                x["detail"].as_str().unwrap_or_default()
            );
            out.push((p, detail));
        }
    }
    out.sort();
    out
}

fn short(rev: &str) -> &str {
    if rev.len() == 40 && rev.chars().all(|c| c.is_ascii_hexdigit()) {
        &rev[..12]
    } else {
        rev
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_is_said_from_the_commits_between_the_ends() {
        // The demo's three commits: both ends and about two more, as it measured (four
        // builds in 594 s).
        let three = expected_steps(3);
        assert!(
            three.starts_with("3 commits after --good: both ends, then about 2 more")
                && three.contains("about 10 minutes in all"),
            "{three}"
        );
        assert!(expected_steps(1000).contains("about 10 more"));
        assert!(expected_steps(1).contains("1 commit after --good: both ends, then about 0 more"));
    }

    #[test]
    fn the_step_script_maps_exit_codes_and_quotes_overrides() {
        let s = step_script("release", 977, &["etcd-lease.prefix=/my election".into()]);
        assert!(
            s.starts_with("cargo build --release -q -p baton-sim"),
            "{s}"
        );
        assert!(s.contains("\"$BATON_TARGET/release/sim\" run"), "{s}");
        let d = step_script("dev", 1, &[]);
        assert!(
            d.contains("--profile dev") && d.contains("/debug/sim"),
            "{d}"
        );
        assert!(s.contains("|| exit 125"), "{s}");
        assert!(s.contains("--seed 977"), "{s}");
        assert!(s.contains("--set 'etcd-lease.prefix=/my election'"), "{s}");
        assert!(s.ends_with("exit 125"), "{s}");
    }

    #[test]
    fn the_bisect_chapter_quotes_the_very_line_sim_bisect_runs() {
        let chapter = include_str!("../../../docs/src/bisect.md");
        let line = format!("git bisect run sh -c '{}'", step_script("release", 42, &[]));
        assert!(
            chapter.contains(&line),
            "docs/src/bisect.md must hold:\n{line}"
        );
    }
}
