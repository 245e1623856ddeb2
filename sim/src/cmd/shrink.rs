//! `sim shrink`: reduce a failing run's fault schedule to a minimal scenario file.
//!
//! The failing run's faults (a swarm's drawn schedule, or a file's own) become a proptest
//! value tree ([`ScheduleTree`], proptest's `ValueTree` protocol): it first drops faults
//! one at a time, as proptest's own `vec` tree does, then shrinks each fault left, each
//! fault a tree of its numbers, each number a proptest `BinarySearch` toward 0
//! (durations toward 1 ms). (proptest's `vec` tree itself can only be built by drawing a
//! random length, and a failing schedule has one.) A
//! candidate is kept only if it fails with the same signature (the same sorted failed
//! properties) under the same seed; otherwise proptest backs off (`complicate`). The
//! result is checked twice more before it is written.

use crate::run::{Artifacts, RunError};
use baton_model::checker::Property;
use baton_model::fault::FaultSpec;
use baton_model::scenario::{Resolved, ScenarioError};
use proptest::num::u64::BinarySearch;
use proptest::strategy::ValueTree;
use std::fmt;

/// One fault's shrinkable numbers: its time and, when it has them, its duration and its
/// restart delay.
#[derive(Clone)]
pub struct FaultTree {
    spec: FaultSpec,
    at: BinarySearch,
    duration: Option<BinarySearch>,
    restart: Option<BinarySearch>,
    /// Which number is being shrunk: 0 time, 1 duration, 2 restart; 3 done.
    stage: usize,
}

impl fmt::Debug for FaultTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultTree({:?})", self.current())
    }
}

impl FaultTree {
    fn new(spec: FaultSpec) -> Self {
        FaultTree {
            at: BinarySearch::new(spec.at_ms.unwrap_or(0)),
            duration: spec.duration_ms.map(BinarySearch::new),
            restart: spec.restart_after_ms.map(BinarySearch::new),
            spec,
            stage: 0,
        }
    }

    fn tree(&mut self, stage: usize) -> Option<&mut BinarySearch> {
        match stage {
            0 => Some(&mut self.at),
            1 => self.duration.as_mut(),
            2 => self.restart.as_mut(),
            _ => None,
        }
    }
}

impl ValueTree for FaultTree {
    type Value = FaultSpec;

    fn current(&self) -> FaultSpec {
        let mut f = self.spec.clone();
        if f.at_ms.is_some() {
            f.at_ms = Some(self.at.current());
        }
        if let Some(d) = &self.duration {
            // A pause of 0 ms is not a pause.
            f.duration_ms = Some(d.current().max(1));
        }
        if let Some(r) = &self.restart {
            f.restart_after_ms = Some(r.current());
        }
        f
    }

    fn simplify(&mut self) -> bool {
        while self.stage < 3 {
            let stage = self.stage;
            if let Some(t) = self.tree(stage) {
                if t.simplify() {
                    return true;
                }
            }
            self.stage += 1;
        }
        false
    }

    fn complicate(&mut self) -> bool {
        let stage = self.stage;
        self.tree(stage).is_some_and(|t| t.complicate())
    }
}

/// The whole schedule: which faults are still in, and each fault's numbers.
pub struct ScheduleTree {
    faults: Vec<FaultTree>,
    included: Vec<bool>,
    /// Dropping phase: the fault tried last (`None` before the first try).
    dropping: Option<usize>,
    /// Shrinking phase: the fault whose numbers are being shrunk.
    shrinking: usize,
    /// The last step dropped a fault (so `complicate` puts it back).
    dropped_last: bool,
}

impl ScheduleTree {
    /// A tree over `faults`, all in.
    pub fn new(faults: Vec<FaultSpec>) -> Self {
        ScheduleTree {
            included: vec![true; faults.len()],
            faults: faults.into_iter().map(FaultTree::new).collect(),
            dropping: None,
            shrinking: 0,
            dropped_last: false,
        }
    }
}

impl ValueTree for ScheduleTree {
    type Value = Vec<FaultSpec>;

    fn current(&self) -> Vec<FaultSpec> {
        self.faults
            .iter()
            .zip(&self.included)
            .filter(|(_, i)| **i)
            .map(|(f, _)| f.current())
            .collect()
    }

    fn simplify(&mut self) -> bool {
        // Drop the next fault still in.
        let from = self.dropping.map_or(0, |i| i + 1);
        if let Some(i) = (from..self.faults.len()).find(|&i| self.included[i]) {
            self.dropping = Some(i);
            self.included[i] = false;
            self.dropped_last = true;
            return true;
        }
        self.dropping = Some(self.faults.len());
        self.dropped_last = false;
        // Then shrink the numbers of each fault left, one fault at a time.
        while self.shrinking < self.faults.len() {
            let i = self.shrinking;
            if self.included[i] && self.faults[i].simplify() {
                return true;
            }
            self.shrinking += 1;
        }
        false
    }

    fn complicate(&mut self) -> bool {
        if self.dropped_last {
            // That fault mattered: keep it.
            if let Some(i) = self.dropping {
                self.included[i] = true;
            }
            self.dropped_last = false;
            return true;
        }
        self.faults
            .get_mut(self.shrinking)
            .is_some_and(|f| f.complicate())
    }
}

/// What a shrink did.
pub struct Shrunk {
    /// The minimal faults.
    pub faults: Vec<FaultSpec>,
    /// Candidates run.
    pub runs: u64,
}

/// Shrinks `faults` while `fails(candidate)` holds, within `max_runs` candidates;
/// `progress` hears (runs, faults in the best candidate so far).
pub fn shrink(
    faults: Vec<FaultSpec>,
    max_runs: u64,
    mut fails: impl FnMut(&[FaultSpec]) -> bool,
    mut progress: impl FnMut(u64, usize),
) -> Shrunk {
    let mut tree = ScheduleTree::new(faults);
    let mut best = tree.current();
    let mut runs = 0;
    // proptest's shrinking loop: simplify while the candidate still fails; when one
    // passes, complicate (back off) and go on from there.
    while runs < max_runs && tree.simplify() {
        loop {
            runs += 1;
            let candidate = tree.current();
            if fails(&candidate) {
                best = candidate;
                progress(runs, best.len());
                break;
            }
            if runs >= max_runs || !tree.complicate() {
                break;
            }
        }
    }
    Shrunk { faults: best, runs }
}

/// A run shrunk to its minimal faults, checked.
pub struct Minimal {
    /// The minimal scenario (the original with the fewest faults found).
    pub resolved: Resolved,
    /// The failing run's faults.
    pub faults_before: usize,
    /// Candidates run.
    pub runs: u64,
    /// What it fails: the sorted failed properties, the same before and after.
    pub signature: Vec<Property>,
}

/// Shrinks the failing run of `base` (faults written out: a swarm's materialized) under
/// `seed`, within `max_runs` candidates, and replays the result twice. `None` when the
/// run passes: there is nothing to shrink.
///
/// With `fixed` (the same run with the bug's fix switched on, faults written out), a
/// candidate is kept only if it also passes with the fix, so that the minimal file
/// reproduces this bug and not another failure the faults bring; `Err` when the run
/// fails with the fix too.
///
/// Once `stop()` is true no candidate runs, and the shrink ends with
/// [`MinimizeError::Stopped`] (a continuous search stops its shrinks at Ctrl-C).
pub fn minimize(
    base: &Resolved,
    seed: u64,
    max_runs: u64,
    fixed: Option<&Resolved>,
    stop: &dyn Fn() -> bool,
    progress: impl FnMut(u64, usize),
) -> Result<Option<Minimal>, MinimizeError> {
    let run = |r: &Resolved, seed: u64, recorded: bool| {
        if recorded {
            crate::run::run(r, seed)
        } else {
            crate::run::run_unrecorded(r, seed)
        }
    };
    minimize_by(base, seed, max_runs, fixed, stop, progress, &run)
}

/// How a shrink runs a candidate: `(scenario, seed, recorded)` to its artifacts
/// (`recorded`: with the timeline and the pages, for the replays). Baton's own protocols
/// run through `crate::run`; a library run's user node through `crate::library`.
pub type Runner<'a> = dyn Fn(&Resolved, u64, bool) -> Result<Artifacts, RunError> + 'a;

/// As [`minimize`], each candidate run by `run`.
pub fn minimize_by(
    base: &Resolved,
    seed: u64,
    max_runs: u64,
    fixed: Option<&Resolved>,
    stop: &dyn Fn() -> bool,
    progress: impl FnMut(u64, usize),
    run: &Runner<'_>,
) -> Result<Option<Minimal>, MinimizeError> {
    // The failing run's properties, sorted: what a candidate must reproduce.
    let signature = |r: &Resolved, seed: u64| -> Result<Vec<Property>, RunError> {
        Ok(run(r, seed, false)?.findings.signature())
    };
    let wanted = signature(base, seed)?;
    if wanted.is_empty() {
        return Ok(None);
    }
    let passes_fixed = |candidate: &Resolved| -> Result<bool, MinimizeError> {
        match fixed {
            None => Ok(true),
            Some(f) => Ok(signature(&like(f, candidate)?, seed)?.is_empty()),
        }
    };
    if !passes_fixed(base)? {
        return Err(MinimizeError::FailsWithFix);
    }
    let keeps = |candidate: &Resolved| {
        !stop()
            && signature(candidate, seed).is_ok_and(|s| s == wanted)
            && passes_fixed(candidate).unwrap_or(false)
    };
    // Faults fire in time order; a candidate whose times shrank out of order is sorted.
    let sorted = |c: &[FaultSpec]| {
        let mut v = c.to_vec();
        v.sort_by_key(|f| f.at_ms);
        v
    };
    let fails = |c: &[FaultSpec]| with_faults(base, &sorted(c)).is_ok_and(|r| keeps(&r));
    let shrunk = shrink(base.scenario.faults.clone(), max_runs, fails, progress);
    let min = with_faults(base, &sorted(&shrunk.faults))?;
    let (min, runs) = default_timeouts(min, &keeps);
    if stop() {
        return Err(MinimizeError::Stopped);
    }
    // Replayed twice: the minimal file must fail the same way every time.
    let a = run(&min, seed, true)?;
    let b = run(&min, seed, true)?;
    if a.report_json != b.report_json || a.findings.signature() != wanted {
        return Err(MinimizeError::NoReplay {
            got: names(&a.findings.signature()),
            wanted: names(&wanted),
        });
    }
    Ok(Some(Minimal {
        resolved: min,
        faults_before: base.scenario.faults.len(),
        runs: shrunk.runs + runs,
        signature: wanted,
    }))
}

/// Why a shrink could not be done.
#[derive(Debug, thiserror::Error)]
pub enum MinimizeError {
    /// The run fails with the fix on as well: nothing tells the bug apart (the command
    /// words it, naming the fix).
    #[error("the run fails with the fix on as well: nothing tells the bug apart")]
    FailsWithFix,
    /// A run could not be made (a simulator error).
    #[error(transparent)]
    Run(#[from] RunError),
    /// A candidate the scenario's checks refuse, where every candidate should pass them.
    #[error(transparent)]
    Scenario(Box<ScenarioError>),
    /// `stop()` turned true: the shrink ended early, and its result is not minimal.
    #[error("the shrink was stopped before its end")]
    Stopped,
    /// The result did not replay.
    #[error("the shrunk scenario did not replay the same way (signature {got} against {wanted})")]
    NoReplay {
        /// The replay's signature.
        got: String,
        /// The failing run's.
        wanted: String,
    },
}

impl From<ScenarioError> for MinimizeError {
    fn from(e: ScenarioError) -> Self {
        MinimizeError::Scenario(Box::new(e))
    }
}

/// `fixed` with `candidate`'s faults and drawn work keys: the candidate with the fix on.
fn like(fixed: &Resolved, candidate: &Resolved) -> Result<Resolved, ScenarioError> {
    let mut s = fixed.scenario.clone();
    s.swarm = None;
    s.faults = candidate.scenario.faults.clone();
    for copy in baton_model::swarm::DRAWN_WORK_KEYS {
        copy(&mut s.work, &candidate.scenario.work);
    }
    fixed.with_scenario(s)
}

impl Minimal {
    /// The `.min.toml` file: a header (command, runs, wall time when given, signature,
    /// faults before and after, how to repeat it), then the resolved scenario. Without
    /// the wall time, the same shrink gives the same bytes.
    pub fn file_text(
        &self,
        command: &str,
        wall: Option<std::time::Duration>,
        file: &std::path::Path,
        seed: u64,
    ) -> String {
        // A scenario of its own: its name gives its runs their own report directory
        // (reports/<name>.min/<seed>/, never the original's), and it records its seed.
        let mut s = self.resolved.scenario.clone();
        s.name = format!("{}.min", s.name);
        s.seed = Some(seed);
        s.origin = None;
        let file = baton_model::render::shell::quote(&file.display().to_string());
        let wall = wall.map_or(String::new(), |w| {
            format!(", {:.1} s of wall time", w.as_secs_f64())
        });
        format!(
            "# Shrunk by `{command}`: {} runs{wall}.\n# Signature: {}.\n# Faults: {} before, {} after. Replayed twice: the same report.\n# Repeat it with: sim run {file} (the seed, {seed}, is recorded below)\n{}",
            self.runs,
            names(&self.signature),
            self.faults_before,
            self.resolved.scenario.faults.len(),
            toml::to_string(&s).expect("a scenario always serializes")
        )
    }
}

/// A signature for a human: its properties' names, comma-separated.
pub fn names(signature: &[Property]) -> String {
    let names: Vec<&str> = signature.iter().map(|p| p.name()).collect();
    names.join(", ")
}

/// The work keys a swarm draws per seed, shrunk too: each one set back to its default
/// where the candidate is still kept. Returns the result and the runs tried.
fn default_timeouts(mut min: Resolved, keeps: &impl Fn(&Resolved) -> bool) -> (Resolved, u64) {
    let default = baton_model::scenario::WorkConfig::default();
    let mut runs = 0;
    for set in baton_model::swarm::DRAWN_WORK_KEYS {
        let mut s = min.scenario.clone();
        set(&mut s.work, &default);
        if s.work == min.scenario.work {
            continue;
        }
        runs += 1;
        // A candidate the scenario's checks refuse (a quantum above the client's
        // timeout) is not one.
        if let Ok(candidate) = min.with_scenario(s) {
            if keeps(&candidate) {
                min = candidate;
            }
        }
    }
    (min, runs)
}

/// `resolved` with `faults` instead of its own (and no swarm): a candidate.
pub fn with_faults(resolved: &Resolved, faults: &[FaultSpec]) -> Result<Resolved, ScenarioError> {
    let mut s = resolved.scenario.clone();
    s.swarm = None;
    s.faults = faults.to_vec();
    resolved.with_scenario(s)
}

#[cfg(test)]
mod tests {
    //! Methodology: shrink against a stand-in predicate with a known minimum: "fails"
    //! while a pause of at least 2,000 ms is in the schedule, whatever else is there.
    use super::*;
    use baton_model::fault::FaultKind;

    fn fault(kind: FaultKind, at_ms: u64, duration_ms: Option<u64>) -> FaultSpec {
        FaultSpec {
            duration_ms,
            ..FaultSpec::at(kind, at_ms)
        }
    }

    #[test]
    fn drops_what_does_not_matter_and_shrinks_what_does() {
        let faults = vec![
            fault(FaultKind::Partition, 5_000, Some(4_000)),
            fault(FaultKind::Pause, 9_000, Some(7_000)),
            fault(FaultKind::Network, 12_000, Some(3_000)),
            fault(FaultKind::Pause, 20_000, Some(1_000)),
        ];
        let fails = |c: &[FaultSpec]| {
            c.iter()
                .any(|f| f.kind == FaultKind::Pause && f.duration_ms.unwrap_or(0) >= 2_000)
        };
        let s = shrink(faults, 1_000, fails, |_, _| {});
        assert_eq!(s.faults.len(), 1, "{:?}", s.faults);
        assert_eq!(s.faults[0].kind, FaultKind::Pause);
        assert_eq!(s.faults[0].duration_ms, Some(2_000));
        assert_eq!(s.faults[0].at_ms, Some(0));
        assert!(s.runs < 1_000);
    }
}
