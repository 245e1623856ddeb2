//! Where a scenario's values came from, for the errors about them: each table's checks
//! get a [`Cx`] and name file:line:key (or the `--set` that gave a value) through it.

use super::error::ScenarioError;
use super::lines::locate;
use super::types::Scenario;
use std::borrow::Cow;

/// The text a scenario's lines are counted in.
enum Source<'a> {
    /// The file as written (overrides are not in it: a key they set is named by its
    /// `--set`).
    Text(&'a str),
    /// A scenario built in memory (a swarm's drawn schedule, a shrink's candidate): its
    /// lines are those of its TOML, written only when an error needs one.
    Typed(&'a Scenario),
}

/// The context of one scenario's checks: the file, its text and the overrides applied.
pub(super) struct Cx<'a> {
    file: &'a str,
    source: Source<'a>,
    /// Each override's key path, so that an error about a value a `--set` gave names the
    /// `--set` rather than a line of the file, which does not hold that value.
    overridden: Vec<(String, &'a str)>,
}

impl<'a> Cx<'a> {
    /// The checks of `file`, read as `text`, with `overrides` applied.
    pub(super) fn text(file: &'a str, text: &'a str, overrides: &'a [String]) -> Self {
        Cx {
            file,
            source: Source::Text(text),
            overridden: overrides
                .iter()
                .map(|s| {
                    (
                        s.split('=').next().unwrap_or("").trim().to_string(),
                        s.as_str(),
                    )
                })
                .collect(),
        }
    }

    /// The checks of `scenario`, built in memory and named `file`.
    pub(super) fn typed(file: &'a str, scenario: &'a Scenario) -> Self {
        Cx {
            file,
            source: Source::Typed(scenario),
            overridden: vec![],
        }
    }

    /// An error at `line` about `key` (named by its `--set` when an override gave it).
    pub(super) fn err(
        &self,
        line: Option<usize>,
        key: Option<String>,
        message: String,
    ) -> ScenarioError {
        let set = key.as_deref().and_then(|k| {
            self.overridden
                .iter()
                .rev()
                .find(|(p, _)| {
                    p == k || k.starts_with(&format!("{p}.")) || p.starts_with(&format!("{k}."))
                })
                .map(|(_, s)| s.to_string())
        });
        ScenarioError {
            file: self.file.to_string(),
            line: if set.is_some() { None } else { line },
            key,
            set,
            message,
        }
    }

    /// The line of a dotted key path in the file as written (or of the nearest enclosing
    /// key).
    pub(super) fn line(&self, path: &[&str]) -> Option<usize> {
        let text = match &self.source {
            Source::Text(text) => Cow::Borrowed(*text),
            // A scenario built in code (a shrink's candidate) may hold a value TOML cannot
            // write (an integer above i64::MAX): the error then names no line.
            Source::Typed(s) => Cow::Owned(toml::to_string(s).ok()?),
        };
        locate(
            &text,
            &path.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
    }

    /// An error about the key at `path`.
    pub(super) fn fail(&self, path: &[&str], message: String) -> ScenarioError {
        self.err(self.line(path), Some(path.join(".")), message)
    }

    /// `Ok` when `ok`, else an error about the key at `path`.
    pub(super) fn check(
        &self,
        ok: bool,
        path: &[&str],
        message: String,
    ) -> Result<(), ScenarioError> {
        if ok {
            Ok(())
        } else {
            Err(self.fail(path, message))
        }
    }

    /// A duration or count at `path` must be at most `hi`.
    pub(super) fn at_most(&self, v: u64, path: &[&str], hi: i128) -> Result<(), ScenarioError> {
        self.check(
            i128::from(v) <= hi,
            path,
            format!("{v} is out of range: 0 to {hi}"),
        )
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: an error about a scenario built in memory names its line from the
    //! scenario's TOML; one TOML cannot write (a u64 above i64::MAX) must give an error
    //! without a line, not a panic (a continuous search's shrink once panicked here).
    use super::Cx;
    use crate::scenario::types::Scenario;

    #[test]
    fn a_scenario_toml_cannot_write_names_no_line_and_does_not_panic() {
        let written = Scenario::default();
        assert!(Cx::typed("a.toml", &written).line(&["name"]).is_some());
        let unwritable = Scenario {
            seed: Some(u64::MAX),
            ..Scenario::default()
        };
        assert_eq!(Cx::typed("b.toml", &unwritable).line(&["name"]), None);
    }
}
