//! `sim search --merge`: put searches back together by signature. Each path is a shard's
//! output directory (`sim search --partition`), a continuous search's store
//! (`sim search --budget`), or a directory holding stores (one per task of an array
//! job). The result is what one search over all their seeds writes: every failure, and
//! per signature the reproducer of the seed whose first violation came earliest (a
//! store's shrunk file beside it).

use super::store::{Identity, Kept, Store, StoreError};
use super::{best_per_signature, Failure};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Searches put back together.
pub struct Merged {
    /// Every failure (a seed two stores tried, once).
    pub failures: Vec<Failure>,
    /// Seeds run over all shards and stores.
    pub seeds_run: u64,
    /// Each shard's command, each store's runs' commands.
    pub commands: Vec<String>,
    /// The reproducer of each signature, and a store's shrunk file: (file name,
    /// contents), from the shard or store that ran its seed.
    pub files: Vec<(String, Vec<u8>)>,
}

/// Why searches cannot be merged: the directory or file at fault (bad input: exit 2).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Neither a shard's directory nor a store, nor a directory holding stores.
    #[error("--merge {}: no search.json from sim search there, and no search store (a SQLite file from sim search --budget)", .0.display())]
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
    /// A file that is not a store, or one that cannot be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Two stores of different searches.
    #[error("--merge: {} holds a search of `{theirs}` and {} another (a different resolved scenario): merge stores of one search", .first.display(), .other.display())]
    OtherSearch {
        /// The first store.
        first: PathBuf,
        /// Its search.
        theirs: String,
        /// The store that differs.
        other: PathBuf,
    },
}

/// One thing to merge.
enum Source {
    Shard(PathBuf),
    Store(PathBuf),
}

/// What each path is: a file is a store; a directory with `search.json` a shard; any
/// other directory, the stores in it (by name).
fn sources(paths: &[PathBuf]) -> Vec<Source> {
    let mut out = vec![];
    for p in paths {
        if p.is_file() {
            out.push(Source::Store(p.clone()));
            continue;
        }
        let stores = if p.is_dir() && !p.join("search.json").is_file() {
            stores_in(p)
        } else {
            vec![]
        };
        if stores.is_empty() {
            out.push(Source::Shard(p.clone()));
        } else {
            out.extend(stores.into_iter().map(Source::Store));
        }
    }
    out
}

/// The files in `dir` that begin as a SQLite database does, by name (not their `-wal`
/// and `-shm` companions, which do not).
fn stores_in(dir: &Path) -> Vec<PathBuf> {
    let sqlite = |p: &Path| {
        use std::io::Read;
        let mut head = [0u8; 16];
        std::fs::File::open(p)
            .and_then(|mut f| f.read_exact(&mut head))
            .is_ok_and(|()| &head == b"SQLite format 3\0")
    };
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && sqlite(p))
        .collect();
    found.sort();
    found
}

/// Merges searches; an error names the directory or file at fault (bad input: exit 2).
pub fn merge(paths: &[PathBuf]) -> Result<Merged, MergeError> {
    let mut m = Merged {
        failures: vec![],
        seeds_run: 0,
        commands: vec![],
        files: vec![],
    };
    let mut shards = vec![];
    let mut kept: Vec<Kept> = vec![];
    let mut tried: BTreeSet<u64> = BTreeSet::new();
    let mut first: Option<(PathBuf, Identity)> = None;
    for source in sources(paths) {
        match source {
            Source::Shard(d) => {
                read_shard(&d, &mut m)?;
                shards.push(d);
            }
            Source::Store(p) => {
                let (store, identity) = Store::open_existing(&p)?;
                match &first {
                    None => first = Some((p.clone(), identity)),
                    Some((f, theirs)) if theirs.resolved_toml != identity.resolved_toml => {
                        return Err(MergeError::OtherSearch {
                            first: f.clone(),
                            theirs: theirs.search.clone(),
                            other: p,
                        })
                    }
                    Some(_) => {}
                }
                // Two stores may have tried one seed (one draw seed each): counted once.
                let before: BTreeSet<u64> = m.failures.iter().map(|f| f.seed).collect();
                m.failures.extend(
                    store
                        .failures()?
                        .into_iter()
                        .filter(|f| !before.contains(&f.seed)),
                );
                tried.extend(store.tried()?);
                m.commands.extend(store.commands()?);
                kept.extend(store.kept()?);
            }
        }
    }
    m.seeds_run += tried.len() as u64;
    for (key, seed) in best_per_signature(&m.failures) {
        if let Some(k) = kept.iter().find(|k| k.signature == key && k.seed == seed) {
            m.files
                .push((format!("{key}.toml"), k.scenario_toml.clone().into_bytes()));
            if let Some(min) = &k.min_toml {
                m.files
                    .push((format!("{key}.min.toml"), min.clone().into_bytes()));
            }
            continue;
        }
        let name = format!("{key}.toml");
        // A signature's best seed overall is also its shard's best: that shard wrote
        // the file.
        let text = shards
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

/// Adds a shard directory's seeds, command and failures to `m`.
fn read_shard(d: &Path, m: &mut Merged) -> Result<(), MergeError> {
    let meta: serde_json::Value = std::fs::read_to_string(d.join("search.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| MergeError::NotASearch(d.to_path_buf()))?;
    m.seeds_run += meta["seeds_run"].as_u64().unwrap_or(0);
    m.commands
        .push(meta["command"].as_str().unwrap_or("").to_string());
    let path = d.join("failures.jsonl");
    let text = std::fs::read_to_string(&path).map_err(|source| MergeError::Failures {
        dir: d.to_path_buf(),
        source,
    })?;
    for (i, line) in text.lines().enumerate() {
        m.failures.push(
            serde_json::from_str(line).map_err(|source| MergeError::NotAFailure {
                file: path.clone(),
                line: i + 1,
                source,
            })?,
        );
    }
    Ok(())
}
