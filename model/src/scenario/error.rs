//! A scenario that could not be loaded, as a value: the file, the line (or the `--set`),
//! the key and what is allowed.

use std::fmt;

/// A scenario that could not be loaded: where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file.
    pub file: String,
    /// The 1-based line, when known.
    pub line: Option<usize>,
    /// The dotted key path, when known.
    pub key: Option<String>,
    /// The `--set` the bad value came from, when it came from one (then there is no
    /// line: the file does not hold the value).
    pub set: Option<String>,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_location(f, &self.file, self.set.as_deref(), self.line)?;
        if let Some(key) = &self.key {
            write!(f, ": key `{key}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// Where a bad value is, as every error about a scenario starts: `file`, then `: --set
/// KEY=V` when an override gave it, or `:line` when the file did.
pub fn write_location(
    f: &mut fmt::Formatter<'_>,
    file: &str,
    set: Option<&str>,
    line: Option<usize>,
) -> fmt::Result {
    write!(f, "{file}")?;
    if let Some(set) = set {
        write!(f, ": --set {set}")?;
    } else if let Some(line) = line {
        write!(f, ":{line}")?;
    }
    Ok(())
}
