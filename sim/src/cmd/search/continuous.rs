//! `sim search --budget`: a continuous search. Instead of a range of seeds it draws fresh
//! ones ([`super::draw`]) until its budget is spent, as FoundationDB's Joshua and
//! TigerBeetle's CFO do, and keeps what it finds in a [`Store`] that outlives the
//! process.
//!
//! Each worker (`--jobs`) claims the next seed of the draw from the store, runs it,
//! rechecks a failure in a fresh process as `sim search` does, and records the outcome:
//! every step a transaction of its own, so that Ctrl-C, or a process killed outright,
//! loses nothing already recorded. A failure that becomes its signature's kept seed (the
//! first of its signature, or one whose first violation came earlier in simulated time;
//! ties the lower seed) is shrunk at once by the worker that found it, with `sim
//! shrink`'s code, and the shrunk file joins the store. A shrink stopped by Ctrl-C (or a
//! killed process) leaves the signature's shrink `pending`: the next run into the store
//! does it first.

use super::budget::Budget;
use super::draw::Draw;
use super::store::{Store, StoreError};
use super::{Failure, Outcome};
use crate::cmd::interrupt;
use crate::cmd::progress::Progress;
use crate::cmd::shrink::MinimizeError;
use crate::run::{RunError, SeedFailed};
use baton_model::scenario::Resolved;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The candidates a shrink runs at most, unless `--shrink-max-runs` says otherwise:
/// `sim shrink`'s default.
pub const SHRINK_RUNS: u64 = 500;

/// What to search, and for how long.
pub struct Plan {
    /// The scenario.
    pub resolved: Resolved,
    /// How long to draw.
    pub budget: Budget,
    /// Where the seeds come from.
    pub draw: Draw,
    /// Worker threads.
    pub jobs: usize,
    /// A seed running longer than this on the wall clock is a hang.
    pub watchdog: Duration,
    /// Re-run each failure in a fresh process with this binary (None: skip).
    pub recheck_with: Option<PathBuf>,
    /// The candidates each shrink runs at most; 0 shrinks nothing.
    pub shrink_runs: u64,
}

/// Why a continuous search stopped before its budget was spent.
#[derive(Debug, thiserror::Error)]
pub enum ContinuousError {
    /// A seed's run failed (a simulator bug): its seed was given back to the store.
    #[error(transparent)]
    Seed(#[from] SeedFailed),
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a continuous search ends with.
pub struct Report {
    /// The table of signatures, with what this run and the store hold.
    pub text: String,
    /// Ctrl-C stopped it.
    pub interrupted: bool,
    /// The store holds a failure (this run's or an earlier one's).
    pub failed: bool,
}

/// Runs `plan` into `store`, recorded as `command`: first the shrinks an earlier run
/// left pending, then seeds until the budget is spent or Ctrl-C.
pub fn search(
    plan: &Plan,
    store: Store,
    command: &str,
    progress: &dyn Progress,
) -> Result<Report, ContinuousError> {
    // The time budget counts from here: the shrinks left pending are part of it.
    let started = Instant::now();
    let run = store.begin_run(command, plan.draw, &plan.budget.label())?;
    let store = Mutex::new(store);
    let result = pending_shrinks(plan, &store)
        .and_then(|()| draw_seeds(plan, &store, run, started, progress));
    let store = store.into_inner().unwrap_or_else(|e| e.into_inner());
    let interrupted = interrupt::stopping();
    let ending = match &result {
        Err(e) => format!("error: {e}"),
        Ok(()) if interrupted => "interrupted".into(),
        Ok(()) => "budget spent".into(),
    };
    store.end_run(run, &ending)?;
    result?;
    Ok(Report {
        text: table(plan, &store, run, interrupted)?,
        interrupted,
        failed: store.counts(None)?.failed > 0,
    })
}

fn lock(store: &Mutex<Store>) -> MutexGuard<'_, Store> {
    store.lock().unwrap_or_else(|e| e.into_inner())
}

/// Shrinks the kept seeds whose shrink an earlier run left pending.
fn pending_shrinks(plan: &Plan, store: &Mutex<Store>) -> Result<(), ContinuousError> {
    if plan.shrink_runs == 0 {
        return Ok(());
    }
    let kept = lock(store).kept()?;
    for k in kept.iter().filter(|k| k.shrink == "pending") {
        if interrupt::stopping() {
            break;
        }
        shrink_kept(plan, store, &k.signature, k.seed)?;
    }
    Ok(())
}

/// Runs `jobs` workers, each claiming and running seeds while the budget (counted from
/// `started`) allows; the first error stops them all.
fn draw_seeds(
    plan: &Plan,
    store: &Mutex<Store>,
    run: i64,
    started: Instant,
    progress: &dyn Progress,
) -> Result<(), ContinuousError> {
    let claimed = AtomicU64::new(0);
    let broken = AtomicBool::new(false);
    let first_error: Mutex<Option<ContinuousError>> = Mutex::new(None);
    let more = || {
        !interrupt::stopping()
            && !broken.load(Ordering::SeqCst)
            && plan
                .budget
                .allows(claimed.fetch_add(1, Ordering::SeqCst), started)
    };
    std::thread::scope(|s| {
        for _ in 0..plan.jobs.max(1) {
            s.spawn(|| {
                while more() {
                    match one_seed(plan, store, run, progress) {
                        Ok(true) => {}
                        Ok(false) => return,
                        Err(e) => {
                            broken.store(true, Ordering::SeqCst);
                            first_error.lock().unwrap().get_or_insert(e);
                            return;
                        }
                    }
                }
            });
        }
    });
    match first_error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Claims a seed, runs it and records what it gave; shrinks it when it is now its
/// signature's kept seed. `Ok(false)`: the run was abandoned (a second Ctrl-C), and
/// the seed given back.
fn one_seed(
    plan: &Plan,
    store: &Mutex<Store>,
    run: i64,
    progress: &dyn Progress,
) -> Result<bool, ContinuousError> {
    let (_, seed) = lock(store).claim(plan.draw, run)?;
    let started = Instant::now();
    let outcome = super::one(&plan.resolved, seed, plan.watchdog);
    let wall_ms = started.elapsed().as_millis() as u64;
    let (failure, toml) = match outcome {
        Outcome::Error(RunError::Abandoned) => {
            lock(store).release(seed)?;
            return Ok(false);
        }
        Outcome::Error(error) => {
            lock(store).release(seed)?;
            return Err(SeedFailed { seed, error }.into());
        }
        Outcome::Pass => {
            lock(store).finish(seed, wall_ms, None, "")?;
            progress.run_done(true);
            return Ok(true);
        }
        Outcome::Hang => (
            Failure {
                seed,
                signature: vec!["hang".into()],
                first_violation_ms: plan.watchdog.as_millis() as f64,
                check: "hang".into(),
                wall_ms,
            },
            hang_toml(&plan.resolved, seed),
        ),
        Outcome::Fail {
            signature,
            first_ms,
            report_json,
            scenario_toml,
        } => {
            let check = super::recheck(
                plan.recheck_with.as_deref(),
                &plan.resolved,
                seed,
                &report_json,
            );
            let failure = Failure {
                seed,
                signature,
                first_violation_ms: first_ms,
                check,
                wall_ms,
            };
            (failure, scenario_toml)
        }
    };
    let shrink = if failure.check == "hang" {
        "not shrunk: a hang"
    } else if plan.shrink_runs == 0 {
        "off"
    } else {
        "pending"
    };
    let kept = lock(store).finish(seed, wall_ms, Some((&failure, &toml)), shrink)?;
    progress.run_done(false);
    if kept && shrink == "pending" {
        shrink_kept(plan, store, &super::signature_key(&failure.signature), seed)?;
    }
    Ok(true)
}

/// A hang's reproducer: the seed's resolved scenario, the faults drawn written out.
fn hang_toml(r: &Resolved, seed: u64) -> String {
    let body = baton_model::swarm::materialize(r, seed)
        .map_or_else(|_| r.to_toml_for_run(seed), |m| m.to_toml_for_run(seed));
    format!(
        "# A hang: `{}` ran past the watchdog.\n{body}",
        baton_model::render::report::reproduce_command(r, seed)
    )
}

/// Shrinks `signature`'s kept `seed` as `sim shrink` would and records the result,
/// unless Ctrl-C stopped it (the shrink stays pending).
fn shrink_kept(
    plan: &Plan,
    store: &Mutex<Store>,
    signature: &str,
    seed: u64,
) -> Result<(), ContinuousError> {
    let stop = interrupt::stopping;
    let result = baton_model::swarm::materialize(&plan.resolved, seed)
        .map_err(MinimizeError::from)
        .and_then(|base| {
            crate::cmd::shrink::minimize(&base, seed, plan.shrink_runs, None, &stop, |_, _| {})
        });
    let (shrink, text) = match result {
        Err(_) if interrupt::stopping() => return Ok(()),
        Ok(Some(min)) => {
            let file = format!("{signature}.min.toml");
            let text = min.file_text(&shrink_command(plan, seed), None, Path::new(&file), seed);
            ("done".to_string(), Some(text))
        }
        Ok(None) => ("failed: the seed passed when run again".to_string(), None),
        Err(e) => (format!("failed: {e}"), None),
    };
    lock(store).shrunk(signature, seed, &shrink, text.as_deref())?;
    Ok(())
}

/// The `sim shrink` command that makes the same file.
fn shrink_command(plan: &Plan, seed: u64) -> String {
    let seed = seed.to_string();
    let runs = plan.shrink_runs.to_string();
    let mut words = vec![
        "sim",
        "shrink",
        plan.resolved.path.as_str(),
        "--seed",
        &seed,
    ];
    for set in &plan.resolved.overrides {
        words.extend(["--set", set.as_str()]);
    }
    if plan.shrink_runs != SHRINK_RUNS {
        words.extend(["--max-runs", &runs]);
    }
    baton_model::render::shell::join(words)
}

/// What the run did, what the store holds, and the table of signatures: failures, when
/// first found (wall clock, UTC), the kept seed and its shrink.
fn table(plan: &Plan, store: &Store, run: i64, interrupted: bool) -> Result<String, StoreError> {
    let this = store.counts(Some(run))?;
    let all = store.counts(None)?;
    let path = baton_model::render::shell::quote(&store.path().display().to_string());
    let mut t = format!(
        "# Continuous search\n\nStore: {path} (draw seed {}).\n\nThis run: {} seeds tried, {} failed; ",
        plan.draw.seed, this.tried, this.failed
    );
    if interrupted {
        t.push_str("interrupted (Ctrl-C): every seed that finished is in the store, and the same command goes on from there.\n");
    } else {
        t.push_str(&format!("budget {} spent.\n", plan.budget.label()));
    }
    t.push_str(&format!(
        "The store: {} seeds tried in {} run{}, {} failed",
        all.tried,
        all.runs,
        if all.runs == 1 { "" } else { "s" },
        all.failed
    ));
    if all.running > 0 {
        t.push_str(&format!(
            "; {} claimed and not finished (in flight in another process, or left by one that was killed)",
            all.running
        ));
    }
    t.push_str(".\n\n");
    let rows = store.table()?;
    if rows.is_empty() {
        t.push_str("No failure.\n");
        return Ok(t);
    }
    t.push_str("| signature | failures | first seen (UTC) | kept seed | shrunk |\n|---|---:|---|---:|---|\n");
    for r in rows {
        let seed = r
            .seed
            .map_or("none (nondeterministic)".into(), |s| s.to_string());
        let shrunk = match (r.shrink.as_deref(), &r.min_toml) {
            (Some("done"), Some(min)) => format!("to {} faults", min.matches("[[faults]]").count()),
            (Some(s), _) => s.to_string(),
            (None, _) => "-".into(),
        };
        t.push_str(&format!(
            "| {} | {} | {} | {seed} | {shrunk} |\n",
            r.signature, r.failures, r.first_seen
        ));
    }
    t.push_str(&format!(
        "\nEach signature's scenario and shrunk file: sim search --merge {path} --out DIR\n"
    ));
    Ok(t)
}
