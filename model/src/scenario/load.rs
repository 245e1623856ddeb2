//! Loading, one step a table: file -> `--set` overrides -> typed [`Scenario`] -> each
//! table's checks (`check.rs`, `faults.rs`) -> [`Resolved`] (every default filled in,
//! faults typed). A scenario already typed (a swarm's drawn schedule, a shrink's
//! candidate) skips the text and starts at the checks.

use super::check;
use super::context::Cx;
use super::error::ScenarioError;
use super::faults::{self, Faults};
use super::lines::{line_of, locate};
use super::overrides::apply_set;
use super::types::{Resolved, Scenario};
use super::words::{plain_words, seg_name};
use crate::protocol::{self, ProtocolConfig, ProtocolModel};
use crate::NodeId;
use std::path::Path;
use std::sync::Arc;

/// How Baton writes a scenario path into what it reports (the reproduce command, report
/// directories, the commands heading matrix.md and sweep.md): relative to the current
/// directory when the file is under it, absolute otherwise, whatever way it was typed
/// (`./x.toml`, `/abs/x.toml`, `a/../x.toml`). The same run then writes the same bytes.
/// A path that cannot be resolved (a missing file) stays as typed.
pub fn display_path(path: &Path) -> String {
    let Ok(abs) = std::fs::canonicalize(path) else {
        return path.display().to_string();
    };
    let cwd = std::env::current_dir().and_then(std::fs::canonicalize);
    match cwd.as_ref().map(|c| abs.strip_prefix(c)) {
        Ok(Ok(rel)) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => abs.display().to_string(),
    }
}

/// Reads, overrides, parses and checks a scenario file.
pub fn load(path: &Path, overrides: &[String]) -> Result<Resolved, ScenarioError> {
    let file = display_path(path);
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        file: file.clone(),
        line: None,
        key: None,
        set: None,
        message: format!("cannot read: {e}"),
    })?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    load_str(&file, &stem, &text, overrides)
}

/// As [`load`], from text already read.
pub fn load_str(
    file: &str,
    stem: &str,
    text: &str,
    overrides: &[String],
) -> Result<Resolved, ScenarioError> {
    let cx = Cx::text(file, text, overrides);
    let effective = effective_text(&cx, file, text, overrides)?;
    let mut scenario = parse(&cx, text, &effective, !overrides.is_empty())?;
    if scenario.name.is_empty() {
        scenario.name = stem.to_string();
    }
    // Later checks name lines of the file as written (a key an override set is named by
    // its `--set` instead, in `Cx::err`).
    let checked = check_tables(&cx, &scenario)?;
    Ok(finish(scenario, checked, file, overrides))
}

/// As [`load_str`], from a scenario already typed (named `file` in errors): no text is
/// parsed; an error's line is the key's line in the scenario written as TOML.
pub fn resolve(file: &str, scenario: Scenario) -> Result<Resolved, ScenarioError> {
    let checked = check_tables(&Cx::typed(file, &scenario), &scenario)?;
    Ok(finish(scenario, checked, file, &[]))
}

impl Resolved {
    /// This run with `scenario` in place of its own (a swarm's drawn faults written in, a
    /// shrink's candidate), checked and resolved again as its file would be; the path
    /// and overrides stay this run's.
    pub fn with_scenario(&self, scenario: Scenario) -> Result<Resolved, ScenarioError> {
        let mut out = resolve(&self.path, scenario)?;
        out.overrides = self.overrides.clone();
        out.command = self.command.clone();
        Ok(out)
    }
}

/// The file's text with the overrides applied.
fn effective_text(
    cx: &Cx,
    file: &str,
    text: &str,
    overrides: &[String],
) -> Result<String, ScenarioError> {
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let line = e.span().map(|s| line_of(text, s.start));
        cx.err(
            line,
            None,
            format!("not valid TOML: {}", e.message().trim().replace('\n', "; ")),
        )
    })?;
    for set in overrides {
        apply_set(&mut doc, set).map_err(|m| ScenarioError {
            file: file.to_string(),
            line: None,
            key: Some(set.split('=').next().unwrap_or("").trim().to_string()),
            set: Some(set.clone()),
            message: m.to_string(),
        })?;
    }
    Ok(doc.to_string())
}

/// The typed scenario of the `effective` text (the file's `text` with overrides applied
/// when `overridden`).
fn parse(
    cx: &Cx,
    text: &str,
    effective: &str,
    overridden: bool,
) -> Result<Scenario, ScenarioError> {
    let de = toml::Deserializer::new(effective);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path: Vec<String> = e.path().iter().filter_map(seg_name).collect();
        let key = path.join(".");
        let inner = e.into_inner();
        // Spans point into the effective text, which overrides may have moved: with
        // overrides, lines come from the file as written.
        let line = inner
            .span()
            .filter(|_| !overridden)
            .map(|s| line_of(text, s.start))
            .or_else(|| locate(text, &path));
        let message = plain_words(inner.message().trim(), &key, effective, &path);
        cx.err(line, (!key.is_empty()).then_some(key), message)
    })
}

/// What the checks found: the faults typed and filled, and the protocol built from its
/// table.
struct Checked {
    faults: Faults,
    config: ProtocolConfig,
    protocol: Arc<dyn ProtocolModel>,
}

/// Every table's checks, in the order a file is read; the first failure is the error.
fn check_tables(cx: &Cx, s: &Scenario) -> Result<Checked, ScenarioError> {
    check::top_level(cx, s)?;
    check::partitions(cx, s)?;
    check::network(cx, &s.network)?;
    check::work(cx, &s.work)?;
    check::expect(cx, &s.expect)?;
    // Faults and GC noise name their nodes as text, checked against the fleet's names.
    let nodes: Vec<String> = NodeId::fleet(s.nodes as usize)
        .into_iter()
        .map(String::from)
        .collect();
    if let Some(sw) = &s.swarm {
        check::swarm(cx, sw, s)?;
    }
    if let Some(job) = &s.work.job {
        check::job(cx, job)?;
    }
    if let Some(slo) = &s.slo {
        check::slo(cx, slo)?;
    }
    if let Some(c) = &s.etcd {
        check::etcd(cx, c)?;
    }
    if let Some(c) = &s.swim {
        check::swim(cx, c)?;
    }
    if let Some(gc) = &s.noise.gc {
        check::gc(cx, gc, &nodes)?;
    }
    let faults = faults::check(cx, s, &nodes)?;
    // The protocol's table, with the real system's defaults where it is silent.
    let config = s.protocol_config().filled();
    let protocol = protocol::build(config.clone(), s.fleet());
    check::protocol(cx, protocol.as_ref(), &s.work)?;
    Ok(Checked {
        faults,
        config,
        protocol,
    })
}

/// The checked scenario with every default filled in.
fn finish(mut scenario: Scenario, checked: Checked, file: &str, overrides: &[String]) -> Resolved {
    scenario.faults = checked.faults.filled;
    scenario.set_protocol_config(checked.config);
    if scenario.expect.liveness_bound_ms.is_none() {
        scenario.expect.liveness_bound_ms = Some(checked.protocol.default_liveness_bound_ms());
    }
    Resolved {
        scenario,
        faults: checked.faults.firings,
        path: file.to_string(),
        overrides: overrides.to_vec(),
        command: None,
        protocol: checked.protocol,
    }
}
