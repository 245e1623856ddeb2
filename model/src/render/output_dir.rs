//! Where a report goes, and the rule that protects what a user wrote there.
//!
//! `sim run` writes a fixed set of artifacts plus a marker file naming them. It writes
//! into a directory only if the directory is new, empty, or holds the marker of an
//! earlier Baton report (whose artifacts it then replaces). A directory with anything
//! else in it is refused unless `--force` is given; even then only Baton's own artifact
//! names are written, so other files are never touched.
//!
//! A committed report (the matrix, the TTL sweep, the fidelity comparisons and their
//! live trials under `reports/`) holds a second marker, [`COMMITTED`], kept in git: no
//! command writes into it without `--force`, even though Baton wrote it. No command's
//! default directory is a committed one; the nightly scripts that regenerate them write
//! elsewhere and move the files into place.

use std::path::{Path, PathBuf};

pub use crate::render::artifacts::ARTIFACTS;

/// The marker that says a directory holds a Baton report.
pub const MARKER: &str = ".baton-report";

/// The marker that says a directory holds a committed report, which a trial run must not
/// replace. Its first line says what made it.
pub const COMMITTED: &str = ".baton-committed";

/// The default report directory of a scenario and seed: `reports/<scenario>/<seed>/`,
/// or `reports/<scenario>+<overrides>/<seed>/` when `--set` changed it, so that a
/// counterfactual run never replaces the plain run's report.
pub fn default_dir(scenario: &str, overrides: &[String], seed: u64) -> PathBuf {
    default_dir_for(scenario, overrides, &seed.to_string())
}

/// The default directory of a command's output over a scenario: `reports/<scenario>/<leaf>/`
/// (`sweep`, `search`, `shrink`, `compare`, `real`), or
/// `reports/<scenario>+<overrides>/<leaf>/` when `--set` changed the scenario, so that a
/// counterfactual never replaces the plain command's output.
pub fn default_dir_for(scenario: &str, overrides: &[String], leaf: &str) -> PathBuf {
    // Both parts are the user's text: keep them to one safe path component.
    let safe = |t: &str| -> String {
        t.trim()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._=-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let mut name = safe(scenario).trim_start_matches('.').to_string();
    if name.is_empty() {
        name.push_str("scenario");
    }
    for set in overrides {
        name.push('+');
        name.push_str(&safe(set));
    }
    Path::new("reports").join(name).join(leaf)
}

/// A report directory that may not be written, and what is in the way. Found before
/// anything runs: the commands treat it as bad input.
#[derive(Debug, thiserror::Error)]
pub enum OutputDirError {
    /// The path is a file.
    #[error("{} exists and is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// The nearest existing part of the path is not a directory.
    #[error("cannot write to {}: {} is not a directory", .dir.display(), .existing.display())]
    ParentNotADirectory {
        /// The directory asked for.
        dir: PathBuf,
        /// The nearest part of its path that exists.
        existing: PathBuf,
    },
    /// No file can be created there.
    #[error("cannot write to {}: cannot create a file in {}: {source}", .dir.display(), .existing.display())]
    NotWritable {
        /// The directory asked for.
        dir: PathBuf,
        /// Where the test file was to go.
        existing: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// It holds a committed report.
    #[error("refusing to write into {}: it holds a committed report ({what}); pass --force to replace it, or choose another --out", .dir.display())]
    Committed {
        /// The directory.
        dir: PathBuf,
        /// The first line of its [`COMMITTED`] marker: what made it.
        what: String,
    },
    /// Its listing cannot be read.
    #[error("cannot read {}: {source}", .dir.display())]
    Unreadable {
        /// The directory.
        dir: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// It holds a file Baton did not write.
    #[error("refusing to write into {}: it holds `{name}`, which sim did not write; pass --force to write Baton's files beside it, or choose another --out", .dir.display())]
    Foreign {
        /// The directory.
        dir: PathBuf,
        /// The first such file, by name.
        name: String,
    },
    /// A default directory holds another scenario's report.
    #[error("{} holds the report of {theirs}, another scenario with the same name; give {ours} its own `name`, or choose --out DIR", .dir.display())]
    OtherScenario {
        /// The directory.
        dir: PathBuf,
        /// The scenario file whose report it holds.
        theirs: String,
        /// This run's scenario file.
        ours: String,
    },
}

/// Checks that `dir` may be written; returns what is in the way if not.
///
/// Checked before anything runs: the directory (or the nearest part of its path that
/// exists) must be a directory this process can create files in, and it must be new,
/// empty, or a Baton report's, unless `force`.
pub fn check_writable(dir: &Path, force: bool) -> Result<(), OutputDirError> {
    if dir.exists() && !dir.is_dir() {
        return Err(OutputDirError::NotADirectory(dir.to_path_buf()));
    }
    let mut existing = dir;
    while !existing.exists() {
        match existing.parent() {
            Some(p) if !p.as_os_str().is_empty() => existing = p,
            _ => {
                existing = Path::new(".");
                break;
            }
        }
    }
    if !existing.is_dir() {
        return Err(OutputDirError::ParentNotADirectory {
            dir: dir.to_path_buf(),
            existing: existing.to_path_buf(),
        });
    }
    // The one honest test of "can I write here": create a file (gone when dropped).
    tempfile::tempfile_in(existing).map_err(|source| OutputDirError::NotWritable {
        dir: dir.to_path_buf(),
        existing: existing.to_path_buf(),
        source,
    })?;
    if !dir.exists() || force {
        return Ok(());
    }
    if let Ok(text) = std::fs::read_to_string(dir.join(COMMITTED)) {
        let what = text.lines().next().unwrap_or("").trim();
        return Err(OutputDirError::Committed {
            dir: dir.to_path_buf(),
            what: what.to_string(),
        });
    }
    if dir.join(MARKER).is_file() {
        return Ok(());
    }
    let first = std::fs::read_dir(dir)
        .map_err(|source| OutputDirError::Unreadable {
            dir: dir.to_path_buf(),
            source,
        })?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .min();
    match first {
        None => Ok(()),
        Some(name) => Err(OutputDirError::Foreign {
            dir: dir.to_path_buf(),
            name,
        }),
    }
}

/// Checks that a default report directory does not hold the report of another scenario
/// file that has the same `name` (read from the `[origin]` of its `scenario.toml`):
/// two scenarios must never write into one directory. `origin_file` is this run's
/// [`crate::scenario::Resolved::origin`] file.
pub fn check_same_scenario(dir: &Path, origin_file: &str) -> Result<(), OutputDirError> {
    let Ok(text) = std::fs::read_to_string(dir.join("scenario.toml")) else {
        return Ok(());
    };
    let theirs = text
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| t.get("origin")?.get("file")?.as_str().map(String::from));
    match theirs {
        Some(theirs) if theirs != origin_file => Err(OutputDirError::OtherScenario {
            dir: dir.to_path_buf(),
            theirs,
            ours: origin_file.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Writes every artifact of a run and the marker naming them into `dir`, the timeline
/// streamed straight to its file.
pub fn write_run(dir: &Path, a: &crate::render::artifacts::Artifacts) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let small = [
        (ARTIFACTS[0], a.scenario_toml.as_bytes()),
        (ARTIFACTS[2], a.summary_txt.as_bytes()),
        (ARTIFACTS[3], a.report_json.as_bytes()),
        (ARTIFACTS[4], a.leaders_acting_svg.as_bytes()),
        (ARTIFACTS[5], a.timeline_html.as_bytes()),
    ];
    for (name, content) in small {
        std::fs::write(dir.join(name), content)?;
    }
    let mut timeline = std::io::BufWriter::new(std::fs::File::create(dir.join(ARTIFACTS[1]))?);
    a.write_timeline(&mut timeline)?;
    std::io::Write::flush(&mut timeline)?;
    let marker = format!("Written by `sim`. Files: {}\n", ARTIFACTS.join(", "));
    std::fs::write(dir.join(MARKER), marker)
}

/// Writes the files (name, content) and the marker naming them into `dir`.
pub fn write_all(dir: &Path, files: &[(&str, &[u8])]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, content) in files {
        std::fs::write(dir.join(name), content)?;
    }
    let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
    let marker = format!("Written by `sim`. Files: {}\n", names.join(", "));
    std::fs::write(dir.join(MARKER), marker)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_get_their_own_directory() {
        assert_eq!(
            default_dir("gc-pause", &[], 42),
            Path::new("reports/gc-pause/42")
        );
        let set = vec![
            "fencing=false".to_string(),
            "etcd-lease.prefix=/a b".to_string(),
        ];
        assert_eq!(
            default_dir("gc-pause", &set, 7),
            Path::new("reports/gc-pause+fencing=false+etcd-lease.prefix=_a_b/7")
        );
    }

    #[test]
    fn refuses_a_directory_with_a_users_file_and_accepts_its_own() {
        let dir = std::env::temp_dir().join(format!("baton-out-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            check_writable(&dir, false).is_ok(),
            "a new directory is fine"
        );
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("notes.md"), "mine").unwrap();
        let err = check_writable(&dir, false).unwrap_err().to_string();
        assert!(err.contains("notes.md"), "{err}");
        assert!(check_writable(&dir, true).is_ok());
        std::fs::remove_file(dir.join("notes.md")).unwrap();
        write_all(&dir, &[("summary.txt", b"x".as_slice())]).unwrap();
        assert!(
            check_writable(&dir, false).is_ok(),
            "an earlier report may be replaced"
        );
        std::fs::write(dir.join(COMMITTED), "made by nightly/x.sh\n").unwrap();
        let err = check_writable(&dir, false).unwrap_err().to_string();
        assert!(
            err.contains("committed report (made by nightly/x.sh)"),
            "{err}"
        );
        assert!(check_writable(&dir, true).is_ok(), "--force replaces it");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
