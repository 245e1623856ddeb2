//! `sim search`: run many seeds of one scenario (a swarm, typically) and keep the ones
//! that fail, grouped by what failed.
//!
//! Each seed is one ordinary run. A failure's **signature** is the sorted list of the
//! properties that failed; for each signature the search keeps the seed whose first
//! violation came earliest in simulated time (ties: the lower seed), and writes that
//! run's resolved scenario, a plain file `sim run` repeats. Before a failure is reported
//! it is run again in a fresh process (`sim run`) and must give the same report: a
//! failure that does not repeat is reported as nondeterministic, not as a finding. A seed
//! that runs past the wall-clock watchdog is reported as a hang, not lost.
//!
//! Seeds can be split over workers (`--partition`, nextest's grammar): `slice:K/N` takes
//! every N-th seed starting with the K-th, `hash:K/N` the seeds whose hash falls in
//! bucket K. `--merge` ([`merge`]) puts the shards' outputs back together; merged shards
//! equal one unsharded search (apart from wall times).
//!
//! A continuous search (`--budget`, [`continuous`]) draws seeds at random instead of
//! running a range, and keeps what it finds in a [`store`].

pub mod budget;
pub mod continuous;
pub mod draw;
pub mod merge;
pub mod store;

use crate::run::{RunError, SeedFailed};
use baton_model::scenario::Resolved;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::Range;
use std::time::{Duration, Instant};

/// Which share of the seeds this worker runs (1-based `index` of `count`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partition {
    /// Every seed.
    All,
    /// Seeds at positions `index - 1`, `index - 1 + count`, ... of the range.
    Slice {
        /// 1-based shard.
        index: u64,
        /// Shards.
        count: u64,
    },
    /// Seeds whose hash modulo `count` is `index - 1`.
    Hash {
        /// 1-based shard.
        index: u64,
        /// Shards.
        count: u64,
    },
}

/// A `--partition` that names no shard.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PartitionError {
    /// Not `slice:K/N`, `hash:K/N` or `auto`.
    #[error("--partition `{0}`: expected slice:K/N or hash:K/N with 1 <= K <= N (nextest's grammar), or auto")]
    Grammar(String),
    /// `auto`: a variable that is not a number.
    #[error("--partition auto: {var}=`{value}` is not a number")]
    NotANumber {
        /// The variable.
        var: String,
        /// Its value.
        value: String,
    },
    /// `auto`: the variables give a shard outside 1 to N.
    #[error("--partition auto: {from} gives shard {index} of {count}: expected 1 to {count}")]
    OutOfRange {
        /// The variables read.
        from: &'static str,
        /// The 1-based shard they give.
        index: u64,
        /// Shards.
        count: u64,
    },
    /// `auto`: no variables.
    #[error("--partition auto: no shard in the environment (CI_NODE_INDEX/CI_NODE_TOTAL, SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT, JOB_COMPLETION_INDEX/BATON_SHARDS or BATON_SHARD/BATON_SHARDS)")]
    NoShard,
}

/// Parses `slice:K/N`, `hash:K/N` (1 <= K <= N), or `auto` (the CI's own variables).
pub fn parse_partition(arg: &str) -> Result<Partition, PartitionError> {
    if arg == "auto" {
        return partition_from_env(|k| std::env::var(k).ok());
    }
    let bad = || PartitionError::Grammar(arg.to_string());
    let (kind, kn) = arg.split_once(':').ok_or_else(bad)?;
    let (k, n) = kn.split_once('/').ok_or_else(bad)?;
    let (index, count): (u64, u64) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if index < 1 || index > count {
        return Err(bad());
    }
    match kind {
        "slice" => Ok(Partition::Slice { index, count }),
        "hash" => Ok(Partition::Hash { index, count }),
        _ => Err(bad()),
    }
}

/// The shard a CI or batch system gives this worker, as `slice:K/N`:
/// - GitLab parallel jobs: `CI_NODE_INDEX` (1-based) of `CI_NODE_TOTAL`;
/// - Slurm job arrays: `SLURM_ARRAY_TASK_ID` (from `SLURM_ARRAY_TASK_MIN`, default 0) of
///   `SLURM_ARRAY_TASK_COUNT`;
/// - Kubernetes Indexed Jobs: `JOB_COMPLETION_INDEX` (0-based) of `BATON_SHARDS` (the
///   Job's `completions`, which the pod does not see: pass it in the manifest);
/// - anything else, a GitHub Actions matrix included: `BATON_SHARD` (1-based) of
///   `BATON_SHARDS`.
pub fn partition_from_env(
    var: impl Fn(&str) -> Option<String>,
) -> Result<Partition, PartitionError> {
    let num = |k: &str| -> Result<Option<u64>, PartitionError> {
        match var(k) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| PartitionError::NotANumber {
                    var: k.to_string(),
                    value: v,
                }),
        }
    };
    let shard = |index: u64, count: u64, from: &'static str| -> Result<Partition, PartitionError> {
        if index < 1 || index > count {
            return Err(PartitionError::OutOfRange { from, index, count });
        }
        Ok(Partition::Slice { index, count })
    };
    if let (Some(i), Some(n)) = (num("CI_NODE_INDEX")?, num("CI_NODE_TOTAL")?) {
        return shard(i, n, "CI_NODE_INDEX/CI_NODE_TOTAL");
    }
    if let (Some(i), Some(n)) = (num("SLURM_ARRAY_TASK_ID")?, num("SLURM_ARRAY_TASK_COUNT")?) {
        let min = num("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        return shard(
            i.saturating_sub(min) + 1,
            n,
            "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT",
        );
    }
    if let (Some(i), Some(n)) = (num("JOB_COMPLETION_INDEX")?, num("BATON_SHARDS")?) {
        return shard(i + 1, n, "JOB_COMPLETION_INDEX/BATON_SHARDS");
    }
    if let (Some(i), Some(n)) = (num("BATON_SHARD")?, num("BATON_SHARDS")?) {
        return shard(i, n, "BATON_SHARD/BATON_SHARDS");
    }
    Err(PartitionError::NoShard)
}

impl Partition {
    /// The seeds of `range` this shard runs, in order.
    pub fn seeds(self, range: &Range<u64>) -> Vec<u64> {
        range
            .clone()
            .enumerate()
            .filter(|(i, seed)| match self {
                Partition::All => true,
                Partition::Slice { index, count } => *i as u64 % count == index - 1,
                Partition::Hash { index, count } => {
                    baton_model::seed::fork(*seed, "partition").next_u64_stable() % count
                        == index - 1
                }
            })
            .map(|(_, s)| s)
            .collect()
    }

    /// As written on the command line.
    pub fn label(self) -> String {
        match self {
            Partition::All => "all".into(),
            Partition::Slice { index, count } => format!("slice:{index}/{count}"),
            Partition::Hash { index, count } => format!("hash:{index}/{count}"),
        }
    }
}

/// A stable draw for hashing seeds into shards.
trait StableU64 {
    fn next_u64_stable(self) -> u64;
}

impl StableU64 for rand_chacha::ChaCha8Rng {
    fn next_u64_stable(mut self) -> u64 {
        rand::RngCore::next_u64(&mut self)
    }
}

/// One failing seed: a line of `failures.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// The sorted properties that failed; `hang` for a seed past the watchdog.
    pub signature: Vec<String>,
    /// When the first violation happened, simulated ms (a hang: the watchdog's limit).
    pub first_violation_ms: f64,
    /// `repeated` (a fresh process gave the same report), `nondeterministic`, or `hang`.
    pub check: String,
    /// Wall-clock time of the run, ms (the only field that differs between machines).
    pub wall_ms: u64,
}

/// The outcome of one seed.
enum Outcome {
    Pass,
    Fail {
        signature: Vec<String>,
        first_ms: f64,
        report_json: String,
        scenario_toml: String,
    },
    Hang,
    Error(RunError),
}

/// What to search.
pub struct Plan {
    /// The scenario.
    pub resolved: Resolved,
    /// The seed range (before partitioning).
    pub seeds: Range<u64>,
    /// This worker's share.
    pub partition: Partition,
    /// Worker threads.
    pub jobs: usize,
    /// A seed running longer than this on the wall clock is a hang.
    pub watchdog: Duration,
    /// Re-run each failure in a fresh process with this binary (None: skip, for tests
    /// that run in-process).
    pub recheck_with: Option<std::path::PathBuf>,
    /// Start no seed once one has failed (`--first-failure`). Seeds are taken in order
    /// and every seed taken runs to its end, so every seed below the lowest failing one
    /// has run: it is the first failure in seed order, whatever `jobs` is.
    pub first_failure: bool,
}

/// What a search found.
pub struct Found {
    /// Seeds run.
    pub seeds_run: u64,
    /// Failures, by seed.
    pub failures: Vec<Failure>,
    /// Per signature, the chosen seed's resolved scenario (with its reproduce header).
    pub reproducers: BTreeMap<String, (u64, String)>,
}

/// The signature as a file-name-safe key.
pub fn signature_key(signature: &[String]) -> String {
    signature.join("+")
}

fn one(resolved: &Resolved, seed: u64, watchdog: Duration) -> Outcome {
    let (tx, rx) = std::sync::mpsc::channel();
    let r = resolved.clone();
    // The run gets its own thread so that the watchdog can give up on it; a hung run's
    // thread is left behind and dies with the process.
    std::thread::spawn(move || {
        let _ = tx.send(crate::run::run_unrecorded(&r, seed));
    });
    match rx.recv_timeout(watchdog) {
        Err(_) => Outcome::Hang,
        Ok(Err(e)) => Outcome::Error(e),
        Ok(Ok(a)) if a.passed => Outcome::Pass,
        Ok(Ok(a)) => {
            // A failure's signature is written as names: a hang's is `hang`, no property.
            let signature = a
                .findings
                .signature()
                .iter()
                .map(|p| p.name().to_string())
                .collect();
            let first_ms = a
                .findings
                .violations
                .iter()
                .map(|v| v.at_ms)
                .fold(f64::INFINITY, f64::min);
            Outcome::Fail {
                signature,
                first_ms,
                report_json: a.report_json,
                scenario_toml: a.scenario_toml,
            }
        }
    }
}

/// Runs `sim run` on `seed` in a fresh process and returns its report.json.
fn rerun(bin: &std::path::Path, r: &Resolved, seed: u64) -> Option<String> {
    let dir = tempfile::tempdir().ok()?;
    let mut cmd = std::process::Command::new(bin);
    cmd.arg("run")
        .arg(&r.path)
        .arg("--seed")
        .arg(seed.to_string())
        .arg("--out")
        .arg(dir.path().join("run"))
        .arg("--quiet");
    for s in &r.overrides {
        cmd.arg("--set").arg(s);
    }
    let out = cmd.output().ok()?;
    if !matches!(out.status.code(), Some(0 | 1)) {
        return None;
    }
    std::fs::read_to_string(dir.path().join("run").join("report.json")).ok()
}

/// A failure run again in a fresh process with `bin` (`sim run`): `repeated` when it
/// gave the same report.json, else `nondeterministic`; `not-rechecked` without `bin` or
/// after a Ctrl-C (no new process then, and one the terminal's SIGINT killed would look
/// like a run that did not repeat).
fn recheck(bin: Option<&std::path::Path>, r: &Resolved, seed: u64, report_json: &str) -> String {
    match bin {
        None => "not-rechecked".into(),
        Some(_) if crate::cmd::interrupt::stopping() => "not-rechecked".into(),
        Some(bin) => match rerun(bin, r, seed) {
            Some(again) if again == report_json => "repeated".into(),
            _ if crate::cmd::interrupt::stopping() => "not-rechecked".into(),
            _ => "nondeterministic".into(),
        },
    }
}

/// Runs the plan's share of seeds. After a Ctrl-C ([`crate::cmd::interrupt`]) no seed
/// starts, and `seeds_run` counts the seeds that finished.
pub fn run(
    plan: &Plan,
    progress: &dyn crate::cmd::progress::Progress,
) -> Result<Found, SeedFailed> {
    let seeds = plan.partition.seeds(&plan.seeds);
    let failed = std::sync::atomic::AtomicBool::new(false);
    let stop = || {
        crate::cmd::interrupt::stopping()
            || (plan.first_failure && failed.load(std::sync::atomic::Ordering::SeqCst))
    };
    let results = crate::cmd::pool::map_ordered_until(seeds.len(), plan.jobs, &stop, |k| {
        let started = Instant::now();
        let o = one(&plan.resolved, seeds[k], plan.watchdog);
        if matches!(o, Outcome::Fail { .. } | Outcome::Hang) {
            failed.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        if !matches!(o, Outcome::Error(RunError::Abandoned)) {
            progress.run_done(matches!(o, Outcome::Pass));
        }
        (o, started.elapsed().as_millis() as u64)
    });
    let mut found = Found {
        seeds_run: 0,
        failures: vec![],
        reproducers: BTreeMap::new(),
    };
    // Each failing seed's resolved scenario, until the reproducers are chosen.
    let mut tomls: BTreeMap<u64, String> = BTreeMap::new();
    for (seed, result) in seeds.iter().zip(results) {
        // Not started after a Ctrl-C, or abandoned after a second: not a result.
        let Some((o, wall_ms)) = result else { continue };
        if matches!(o, Outcome::Error(RunError::Abandoned)) {
            continue;
        }
        found.seeds_run += 1;
        match o {
            Outcome::Pass => {}
            Outcome::Error(error) => return Err(SeedFailed { seed: *seed, error }),
            Outcome::Hang => found.failures.push(Failure {
                seed: *seed,
                signature: vec!["hang".into()],
                first_violation_ms: plan.watchdog.as_millis() as f64,
                check: "hang".into(),
                wall_ms,
            }),
            Outcome::Fail {
                signature,
                first_ms,
                report_json,
                scenario_toml,
            } => {
                let check = recheck(
                    plan.recheck_with.as_deref(),
                    &plan.resolved,
                    *seed,
                    &report_json,
                );
                tomls.insert(*seed, scenario_toml);
                found.failures.push(Failure {
                    seed: *seed,
                    signature,
                    first_violation_ms: first_ms,
                    check,
                    wall_ms,
                });
            }
        }
    }
    for (key, seed) in best_per_signature(&found.failures) {
        let toml = tomls
            .remove(&seed)
            .expect("a failing seed kept its scenario");
        found.reproducers.insert(key, (seed, toml));
    }
    Ok(found)
}

/// `failures.jsonl`: one failure a line, by seed.
pub fn failures_jsonl(failures: &[Failure]) -> String {
    let mut v: Vec<&Failure> = failures.iter().collect();
    v.sort_by_key(|f| f.seed);
    v.iter()
        .map(|f| serde_json::to_string(f).expect("a failure serializes") + "\n")
        .collect()
}

/// The reproducer of each signature: the failure with the earliest first violation
/// (ties: the lower seed), among those that repeated.
pub fn best_per_signature(failures: &[Failure]) -> BTreeMap<String, u64> {
    let mut best: BTreeMap<String, (f64, u64)> = BTreeMap::new();
    let mut v: Vec<&Failure> = failures.iter().collect();
    v.sort_by_key(|f| f.seed);
    for f in v {
        if f.check == "nondeterministic" {
            continue;
        }
        let key = signature_key(&f.signature);
        if best
            .get(&key)
            .is_none_or(|(ms, _)| f.first_violation_ms < *ms)
        {
            best.insert(key, (f.first_violation_ms, f.seed));
        }
    }
    best.into_iter().map(|(k, (_, s))| (k, s)).collect()
}

/// A search's (or a merge's) three summary files: `failures.jsonl`, `search.md` and
/// `search.json`, marked when Ctrl-C stopped it after `done` of `planned` seeds.
pub fn outputs(
    command: &str,
    seeds_run: u64,
    failures: &[Failure],
    merged: &[String],
    interrupted: Option<(u64, u64)>,
) -> [(&'static str, String); 3] {
    let jsonl = failures_jsonl(failures);
    let mut md = summary(command, seeds_run, failures);
    let mut meta = serde_json::json!({
        "command": command,
        "seeds_run": seeds_run,
        "failures": failures.len(),
        "merged": merged,
    });
    if let Some((done, planned)) = interrupted {
        let mark = format!(
            "**Interrupted after {done} of {planned} runs** (Ctrl-C): the seeds that finished.\n\n"
        );
        let at = md.find("\n\n").map_or(0, |i| i + 2);
        md.insert_str(at, &mark);
        meta["interrupted"] = serde_json::json!({ "runs_done": done, "runs_planned": planned });
    }
    let meta = serde_json::to_string_pretty(&meta).expect("serializes") + "\n";
    [
        ("failures.jsonl", jsonl),
        ("search.md", md),
        ("search.json", meta),
    ]
}

/// `search.md`: what was searched and what was found.
pub fn summary(command: &str, seeds_run: u64, failures: &[Failure]) -> String {
    let best = best_per_signature(failures);
    let mut t = format!(
        "# Search\n\nMade by `{command}`.\n\n{seeds_run} seeds run, {} failed",
        failures.len()
    );
    let odd = failures
        .iter()
        .filter(|f| f.check == "nondeterministic")
        .count();
    if odd > 0 {
        t.push_str(&format!(
            " ({odd} did not repeat in a fresh process: nondeterministic)"
        ));
    }
    t.push_str(".\n\n");
    if best.is_empty() {
        t.push_str("No failure.\n");
        return t;
    }
    t.push_str("| signature | seeds | reproducer (earliest first violation) |\n|---|---:|---|\n");
    for (key, seed) in &best {
        let n = failures
            .iter()
            .filter(|f| signature_key(&f.signature) == *key)
            .count();
        t.push_str(&format!("| {key} | {n} | `{key}.toml` (seed {seed}) |\n"));
    }
    t
}

#[cfg(test)]
mod tests {
    //! Methodology: partitions by hand (every seed in exactly one shard), the CI
    //! variables, and the choice of reproducer.
    use super::*;

    #[test]
    fn shards_cover_every_seed_once() {
        for kind in ["slice", "hash"] {
            let mut all = vec![];
            for k in 1..=3 {
                all.extend(
                    parse_partition(&format!("{kind}:{k}/3"))
                        .unwrap()
                        .seeds(&(0..100)),
                );
            }
            all.sort();
            assert_eq!(all, (0..100).collect::<Vec<_>>(), "{kind}");
        }
        assert_eq!(
            parse_partition("slice:2/3").unwrap().seeds(&(10..20)),
            vec![11, 14, 17]
        );
        for bad in [
            "slice:0/3",
            "slice:4/3",
            "3/2",
            "slice:1",
            "range:1/2",
            "slice:a/b",
        ] {
            assert!(parse_partition(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ci_variables_name_the_shard() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let slice = |index, count| Partition::Slice { index, count };
        assert_eq!(
            partition_from_env(env(&[("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "4")])),
            Ok(slice(2, 4))
        );
        assert_eq!(
            partition_from_env(env(&[
                ("SLURM_ARRAY_TASK_ID", "5"),
                ("SLURM_ARRAY_TASK_MIN", "1"),
                ("SLURM_ARRAY_TASK_COUNT", "8")
            ])),
            Ok(slice(5, 8))
        );
        assert_eq!(
            partition_from_env(env(&[("JOB_COMPLETION_INDEX", "0"), ("BATON_SHARDS", "3")])),
            Ok(slice(1, 3))
        );
        assert_eq!(
            partition_from_env(env(&[("BATON_SHARD", "3"), ("BATON_SHARDS", "3")])),
            Ok(slice(3, 3))
        );
        assert!(
            partition_from_env(env(&[("JOB_COMPLETION_INDEX", "3"), ("BATON_SHARDS", "3")]))
                .is_err()
        );
        assert!(partition_from_env(env(&[])).is_err());
    }

    #[test]
    fn the_earliest_failure_of_a_signature_reproduces_it() {
        let f = |seed, sig: &str, ms, check: &str| Failure {
            seed,
            signature: vec![sig.into()],
            first_violation_ms: ms,
            check: check.into(),
            wall_ms: 0,
        };
        let failures = vec![
            f(9, "a", 500.0, "repeated"),
            f(3, "a", 500.0, "repeated"),
            f(4, "a", 900.0, "repeated"),
            f(1, "b", 100.0, "nondeterministic"),
            f(7, "b", 800.0, "repeated"),
        ];
        let best = best_per_signature(&failures);
        assert_eq!(best.get("a"), Some(&3));
        assert_eq!(best.get("b"), Some(&7));
    }
}
