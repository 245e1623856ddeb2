//! The live side of `sim compare --conform-dir DIR --experiment NAME`: one experiment's
//! trials from a `sim conform` run, a library's node run live under the spec's experiment.
//!
//! A conformance run keeps, per experiment, every trial's `report.json` and the
//! `scenario.toml` the trial resolved (the node's TTL, the load, the faults: what ran).
//! The simulated side runs that same scenario, so both sides share every setting but the
//! protocol's own, which the user sets (`--set`) to behave as the library does
//! (docs/src/fidelity.md, "A library's conformance run against Baton's model").
//!
//! Only an experiment whose trials all ran one scenario can be pooled (a TTL sweep runs
//! one TTL per trial), and only one with a failover has figures to compare: anything else
//! is bad input, refused before the simulator runs.

use super::{read_live, LiveError, RunFigures};
use std::path::{Path, PathBuf};

/// A conformance run's directory or experiment that cannot be compared (bad input).
#[derive(Debug, thiserror::Error)]
pub enum ConformDirError {
    /// No readable `conformance.json` naming its experiments.
    #[error("--conform-dir {}: not a conformance run ({1}; `sim conform --out DIR` writes DIR/conformance.json)", .0.display())]
    NotAConformanceRun(PathBuf, String),
    /// The run has no experiment of that name.
    #[error("--experiment {name}: {} ran no such experiment; it ran: {}", .dir.display(), .known.join(", "))]
    UnknownExperiment {
        /// The conformance run.
        dir: PathBuf,
        /// The name asked for.
        name: String,
        /// The experiments it ran, in its order.
        known: Vec<String>,
    },
    /// A trial's `scenario.toml` cannot be read.
    #[error("{}: {1}", .0.display())]
    Unreadable(PathBuf, #[source] std::io::Error),
    /// The trials ran different scenarios (beyond their seeds): nothing to pool.
    #[error("--experiment {experiment}: {} differs from {} beyond its seed (a sweep runs one setting per trial): no one scenario to compare", .differs.display(), .first.display())]
    TrialsDiffer {
        /// The experiment.
        experiment: String,
        /// The first trial's scenario.
        first: PathBuf,
        /// The first one that differs from it.
        differs: PathBuf,
    },
    /// The live trials saw no failover: no failover or election after one to compare.
    #[error("--experiment {0}: its live trials saw no failover, so there is nothing to compare (pick an experiment with a kill, pause or partition)")]
    NoFailover(String),
    /// A trial's report cannot be read.
    #[error("{0}")]
    Live(#[from] LiveError),
}

/// One experiment of a conformance run, read and checked.
#[derive(Debug)]
pub struct ConformExperiment {
    /// The library: the run directory's name (`go-etcd`).
    pub library: String,
    /// The scenario the trials ran: the first trial's `scenario.toml`.
    pub scenario: PathBuf,
    /// Every trial's figures, in trial order.
    pub live: Vec<RunFigures>,
}

/// The experiments `conformance.json` names, in its order.
fn experiments(dir: &Path) -> Result<Vec<String>, ConformDirError> {
    let not_a_run = |why: String| ConformDirError::NotAConformanceRun(dir.to_path_buf(), why);
    let path = dir.join("conformance.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| not_a_run(format!("no conformance.json: {e}")))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| not_a_run(format!("conformance.json is not JSON: {e}")))?;
    let list = v["experiments"]
        .as_array()
        .ok_or_else(|| not_a_run("conformance.json has no experiments list".into()))?;
    Ok(list
        .iter()
        .filter_map(|e| e["name"].as_str().map(str::to_string))
        .collect())
}

/// A trial's scenario without the lines that name its trial and seed: the comment
/// header (its command) and `seed = N`.
fn without_seed(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("seed = "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads experiment `name` of the conformance run in `dir`: its trials' figures and the
/// scenario they ran, checked to be one scenario with a failover.
pub fn open(dir: &Path, name: &str) -> Result<ConformExperiment, ConformDirError> {
    let known = experiments(dir)?;
    if !known.iter().any(|k| k == name) {
        return Err(ConformDirError::UnknownExperiment {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            known,
        });
    }
    let trials_dir = dir.join(name);
    let live = read_live(&trials_dir)?;
    let mut scenarios: Vec<PathBuf> = std::fs::read_dir(&trials_dir)
        .map_err(|e| ConformDirError::Unreadable(trials_dir.clone(), e))?
        .filter_map(|e| e.ok().map(|e| e.path().join("scenario.toml")))
        .filter(|p| p.is_file())
        .collect();
    // Trial order (trial-1, trial-2, ... trial-10): by the number, not the name.
    let number = |p: &Path| -> u64 {
        let trial = p
            .parent()
            .and_then(Path::file_name)
            .and_then(|n| n.to_str());
        trial
            .and_then(|n| n.strip_prefix("trial-"))
            .and_then(|n| n.parse().ok())
            .unwrap_or(u64::MAX)
    };
    scenarios.sort_by_key(|p| (number(p), p.clone()));
    let read = |p: &PathBuf| {
        std::fs::read_to_string(p).map_err(|e| ConformDirError::Unreadable(p.clone(), e))
    };
    let first = scenarios.first().cloned().ok_or_else(|| {
        ConformDirError::Unreadable(
            trials_dir.join("trial-1/scenario.toml"),
            std::io::ErrorKind::NotFound.into(),
        )
    })?;
    let first_text = without_seed(&read(&first)?);
    for s in &scenarios[1..] {
        if without_seed(&read(s)?) != first_text {
            return Err(ConformDirError::TrialsDiffer {
                experiment: name.to_string(),
                first,
                differs: s.clone(),
            });
        }
    }
    if live.iter().all(|r| r.failover_ms.is_empty()) {
        return Err(ConformDirError::NoFailover(name.to_string()));
    }
    let library = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "library".into());
    Ok(ConformExperiment {
        library,
        scenario: first,
        live,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Methodology: a trial's scenario differs from another's in its header and seed
    /// only; anything else (the TTL a sweep changes) is a difference.
    #[test]
    fn only_the_header_and_seed_may_differ() {
        let a = "# trial 1, seed 0\nname = \"x\"\nseed = 0\n[etcd-lease]\nlease_ttl_ms = 2000\n";
        let b = "# trial 2, seed 1\nname = \"x\"\nseed = 1\n[etcd-lease]\nlease_ttl_ms = 2000\n";
        let c = "# trial 2, seed 1\nname = \"x\"\nseed = 1\n[etcd-lease]\nlease_ttl_ms = 3000\n";
        assert_eq!(without_seed(a), without_seed(b));
        assert_ne!(without_seed(a), without_seed(c));
    }
}
