//! The committed manifests that run `sim search` on an engine this machine has not got (a
//! Kubernetes Indexed Job, a GitHub Actions matrix) use flags `sim search` takes, write
//! where their merge reads, and merge into a result. (The Slurm array job is run for real
//! by nightly/search/slurm.sh.)
//!
//! Methodology: every `sim search` command of a manifest (a line starting with it, in a
//! comment or a script, with its `\` continuations) is run by `sh -c` in a sandbox, with
//! the engine's variables set as the engine sets them for two tasks
//! (JOB_COMPLETION_INDEX 0 and 1; the matrix index 1 and 2), the work cut down
//! (`--seeds A..B` to 0..4, `--budget X` to 3seeds) and absolute volume paths moved into
//! the sandbox; nothing else is changed. The merges run last. Each must exit 0 or 1 (2 is
//! bad input), and the merge must hold both tasks' seeds. The canary: the same check on
//! a copy of a manifest with one flag misspelt must fail.

use std::path::Path;

/// The committed manifests, each with how its engine names a task: a variable set in
/// the environment, or a template replaced in the text, and the two values of it.
pub const MANIFESTS: &[(&str, Task)] = &[
    (
        "nightly/search/k8s-indexed-job.yaml",
        Task::Env("JOB_COMPLETION_INDEX", ["0", "1"]),
    ),
    (
        "nightly/search/k8s-continuous-job.yaml",
        Task::Env("JOB_COMPLETION_INDEX", ["0", "1"]),
    ),
    (
        ".github/workflows/search.yml",
        Task::Template("${{ matrix.shard }}", ["1", "2"]),
    ),
    (
        ".github/workflows/search-continuous.yml",
        Task::Template("${{ matrix.shard }}", ["1", "2"]),
    ),
];

#[derive(Clone, Copy)]
pub enum Task {
    Env(&'static str, [&'static str; 2]),
    Template(&'static str, [&'static str; 2]),
}

/// The `sim search` commands of a manifest, each one logical line (continuations
/// joined), in the order they appear.
pub fn commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let l = line.trim_start().trim_start_matches('#').trim_start();
        let Some(at) = ["sim search", "target/release/sim search"]
            .iter()
            .find(|p| l.starts_with(*p))
            .map(|p| p.len())
        else {
            continue;
        };
        let mut cmd = format!("sim search{}", &l[at..]);
        while cmd.ends_with('\\') {
            cmd.pop();
            let next = lines.next().unwrap_or("");
            cmd.push(' ');
            cmd.push_str(next.trim_start().trim_start_matches('#').trim_start());
        }
        out.push(cmd);
    }
    out
}

/// The command with its work cut down and its volume paths moved into the sandbox.
fn cut_down(cmd: &str) -> String {
    let mut words: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
    for i in 1..words.len() {
        match words[i - 1].as_str() {
            "--seeds" => words[i] = "0..4".into(),
            "--budget" => words[i] = "3seeds".into(),
            _ => {}
        }
    }
    words
        .join(" ")
        .replace("/scratch/", "results/")
        .replace("/results", "results")
}

/// Runs every command of `text` as its engine would for two tasks, in `dir`; the error
/// names the command that failed and what it printed.
pub fn check(text: &str, task: Task, dir: &Path) -> Result<usize, String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::fs::create_dir_all(dir.join("results")).unwrap();
    let link = |from: &Path, to: &Path| {
        if !to.exists() {
            std::os::unix::fs::symlink(from, to).unwrap();
        }
    };
    link(Path::new(env!("CARGO_BIN_EXE_sim")), &dir.join("bin/sim"));
    link(&repo.join("scenarios"), &dir.join("scenarios"));
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut commands = commands(text);
    // The shards first, then the merge (a header comment may show the merge first).
    commands.sort_by_key(|c| c.contains("--merge"));
    if commands.is_empty() {
        return Err("no `sim search` command".into());
    }
    for cmd in &commands {
        // The shards run once per task; a merge runs once, after them.
        let runs: Vec<(String, Option<(&str, &str)>)> = match task {
            _ if cmd.contains("--merge") => vec![(cut_down(cmd), None)],
            Task::Env(var, values) => values
                .iter()
                .map(|v| (cut_down(cmd), Some((var, *v))))
                .collect(),
            Task::Template(t, values) => values
                .iter()
                .map(|v| (cut_down(&cmd.replace(t, v)), None))
                .collect(),
        };
        for (line, env) in runs {
            let mut c = std::process::Command::new("sh");
            c.args(["-c", &line]).current_dir(dir).env("PATH", &path);
            // The Indexed Job's manifest passes the shard count as BATON_SHARDS.
            c.env("BATON_SHARDS", "20");
            if let Some((k, v)) = env {
                c.env(k, v);
            }
            let o = c.output().unwrap();
            if !matches!(o.status.code(), Some(0 | 1)) {
                return Err(format!(
                    "`{line}` exited {:?}: {}",
                    o.status.code(),
                    String::from_utf8_lossy(&o.stderr).trim()
                ));
            }
            if line.contains("--merge") {
                let out = std::fs::read_to_string(dir.join(merged_dir(&line)).join("search.json"))
                    .map_err(|e| format!("`{line}` wrote no search.json: {e}"))?;
                let v: serde_json::Value = serde_json::from_str(&out).unwrap();
                // Two tasks: 3 seeds each of a continuous search; one seed each of a
                // range of 4 cut into 8 or 20 slices.
                let want = if text.contains("--budget") { 6 } else { 2 };
                if v["seeds_run"].as_u64() != Some(want) {
                    return Err(format!("`{line}` merged {} seeds: {out}", v["seeds_run"]));
                }
            }
        }
    }
    Ok(commands.len())
}

/// The merge's --out directory.
fn merged_dir(line: &str) -> String {
    let words: Vec<&str> = line.split_whitespace().collect();
    let i = words
        .iter()
        .position(|w| *w == "--out")
        .expect("a merge names --out");
    words[i + 1].to_string()
}
