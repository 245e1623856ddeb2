//! `sim search --merge`: shards' output directories put back together by signature.

use super::{best_per_signature, Failure};
use std::path::PathBuf;

/// Shards put back together.
pub struct Merged {
    /// Every shard's failures.
    pub failures: Vec<Failure>,
    /// Seeds run over all shards.
    pub seeds_run: u64,
    /// Each shard's command.
    pub commands: Vec<String>,
    /// The reproducer of each signature: (file name, contents), from the shard that
    /// ran its seed.
    pub files: Vec<(String, Vec<u8>)>,
}

/// Why shards cannot be merged: the directory or file at fault (bad input: exit 2).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A directory without a readable `search.json`.
    #[error("--merge {}: no search.json from sim search there", .0.display())]
    NotASearch(PathBuf),
    /// A shard's `failures.jsonl` cannot be read.
    #[error("--merge {}: failures.jsonl: {source}", .dir.display())]
    Failures {
        /// The shard.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line of it is not a failure.
    #[error("{}:{line}: not a failure line: {source}", .file.display())]
    NotAFailure {
        /// The file.
        file: PathBuf,
        /// The 1-based line.
        line: usize,
        /// Why.
        source: serde_json::Error,
    },
    /// No shard wrote a signature's reproducer.
    #[error("--merge: no shard holds {name} for seed {seed}")]
    NoReproducer {
        /// The reproducer's file name.
        name: String,
        /// Its seed.
        seed: u64,
    },
}

/// Merges the output directories of `sim search` shards; an error names the directory
/// or file at fault (bad input: exit 2).
pub fn merge(dirs: &[PathBuf]) -> Result<Merged, MergeError> {
    let mut m = Merged {
        failures: vec![],
        seeds_run: 0,
        commands: vec![],
        files: vec![],
    };
    for d in dirs {
        let meta: serde_json::Value = std::fs::read_to_string(d.join("search.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .ok_or_else(|| MergeError::NotASearch(d.clone()))?;
        m.seeds_run += meta["seeds_run"].as_u64().unwrap_or(0);
        m.commands
            .push(meta["command"].as_str().unwrap_or("").to_string());
        let path = d.join("failures.jsonl");
        let text = std::fs::read_to_string(&path).map_err(|source| MergeError::Failures {
            dir: d.clone(),
            source,
        })?;
        for (i, line) in text.lines().enumerate() {
            m.failures
                .push(
                    serde_json::from_str(line).map_err(|source| MergeError::NotAFailure {
                        file: path.clone(),
                        line: i + 1,
                        source,
                    })?,
                );
        }
    }
    for (key, seed) in best_per_signature(&m.failures) {
        let name = format!("{key}.toml");
        // A signature's best seed overall is also its shard's best: that shard wrote
        // the file.
        let text = dirs
            .iter()
            .find_map(|d| {
                let t = std::fs::read_to_string(d.join(&name)).ok()?;
                t.contains(&format!("--seed {seed}")).then_some(t)
            })
            .ok_or_else(|| MergeError::NoReproducer {
                name: name.clone(),
                seed,
            })?;
        m.files.push((name, text.into_bytes()));
    }
    Ok(m)
}
