//! One experiment end to end: simulate, check, and render every artifact in memory.

use crate::checker::{self, CheckInput, Findings};
use crate::run::{self, RunOutput};
use crate::scenario::Resolved;
use crate::timeline::Entry;
use crate::{plot, report};
use std::borrow::Cow;

/// Every artifact of a run, rendered, plus the verdict.
#[derive(Clone, Debug)]
pub struct Artifacts {
    /// The resolved scenario, every default filled in.
    pub scenario_toml: String,
    /// Every event, in order (rendered one JSON object a line by
    /// [`Artifacts::timeline_jsonl`], or streamed to a file by [`Artifacts::write_timeline`]:
    /// a long run's timeline is never held twice).
    pub entries: Vec<Entry>,
    /// For a person.
    pub summary_txt: String,
    /// For scripts.
    pub report_json: String,
    /// The leaders-acting plot.
    pub leaders_acting_svg: String,
    /// True when every checked property held.
    pub passed: bool,
    /// What the checkers found.
    pub findings: Findings,
}

impl Artifacts {
    /// (file name, content) in the order of [`crate::output::ARTIFACTS`]; the timeline is
    /// rendered here.
    pub fn files(&self) -> Vec<(&'static str, Cow<'_, [u8]>)> {
        let a = crate::output::ARTIFACTS;
        vec![
            (a[0], Cow::Borrowed(self.scenario_toml.as_bytes())),
            (a[1], Cow::Owned(self.timeline_jsonl().into_bytes())),
            (a[2], Cow::Borrowed(self.summary_txt.as_bytes())),
            (a[3], Cow::Borrowed(self.report_json.as_bytes())),
            (a[4], Cow::Borrowed(self.leaders_acting_svg.as_bytes())),
        ]
    }

    /// The timeline, one JSON event per line.
    pub fn timeline_jsonl(&self) -> String {
        let mut out = Vec::new();
        self.write_timeline(&mut out).expect("writing to memory");
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    /// Writes the timeline, one JSON event per line, to `w`.
    pub fn write_timeline(&self, mut w: impl std::io::Write) -> std::io::Result<()> {
        for e in &self.entries {
            serde_json::to_writer(&mut w, e)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    }
}

/// Simulates `resolved` under `seed` and renders its report.
pub fn run(resolved: &Resolved, seed: u64) -> Result<Artifacts, String> {
    let out = run::run(resolved, seed)?;
    Ok(report(resolved, seed, out))
}

/// Checks a finished run and renders its report (the run's timeline moves into it).
pub fn report(resolved: &Resolved, seed: u64, mut out: RunOutput) -> Artifacts {
    let input = CheckInput {
        resolved,
        entries: &out.entries,
        end_us: out.end_us,
        client: out.client.clone(),
    };
    let findings = checker::check(&input);
    let scenario_toml = format!(
        "# Resolved by `{}`: every default filled in.\n# Run this file as it is to repeat the experiment.\n{}",
        report::reproduce_command(resolved, seed),
        resolved.to_toml()
    );
    let title = format!(
        "{} (seed {seed}, {})",
        resolved.scenario.name,
        resolved.scenario.protocol.name()
    );
    let leaders_acting_svg = plot::leaders_acting_svg(&findings, &out.entries, out.end_us, &title)
        .unwrap_or_else(|e| format!("<svg xmlns=\"http://www.w3.org/2000/svg\"><text x=\"10\" y=\"20\">plot failed: {e}</text></svg>\n"));
    let summary_txt = report::summary(resolved, seed, &out, &findings);
    let report_json = report::json(resolved, seed, &out, &findings);
    Artifacts {
        scenario_toml,
        entries: std::mem::take(&mut out.entries),
        summary_txt,
        report_json,
        leaders_acting_svg,
        passed: findings.passed(),
        findings,
    }
}
