//! One experiment end to end: simulate, check, and render every artifact in memory.

use crate::checker::{self, CheckInput, Findings};
use crate::run::{self, RunOutput};
use crate::scenario::Resolved;
use crate::{plot, report};

/// Every artifact of a run, rendered, plus the verdict.
#[derive(Clone, Debug)]
pub struct Artifacts {
    /// The resolved scenario, every default filled in.
    pub scenario_toml: String,
    /// One JSON event per line.
    pub timeline_jsonl: String,
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
    /// (file name, content) in the order of [`crate::output::ARTIFACTS`].
    pub fn files(&self) -> Vec<(&'static str, Vec<u8>)> {
        let a = crate::output::ARTIFACTS;
        vec![
            (a[0], self.scenario_toml.clone().into_bytes()),
            (a[1], self.timeline_jsonl.clone().into_bytes()),
            (a[2], self.summary_txt.clone().into_bytes()),
            (a[3], self.report_json.clone().into_bytes()),
            (a[4], self.leaders_acting_svg.clone().into_bytes()),
        ]
    }
}

/// Simulates `resolved` under `seed` and renders its report.
pub fn run(resolved: &Resolved, seed: u64) -> Result<Artifacts, String> {
    let out = run::run(resolved, seed)?;
    Ok(report(resolved, seed, &out))
}

/// Checks a finished run and renders its report.
pub fn report(resolved: &Resolved, seed: u64, out: &RunOutput) -> Artifacts {
    let input = CheckInput {
        resolved,
        entries: &out.entries,
        end_us: out.end_us,
        client: out.client.clone(),
    };
    let findings = checker::check(&input);
    let mut timeline_jsonl = String::new();
    for e in &out.entries {
        timeline_jsonl.push_str(&serde_json::to_string(e).expect("events serialize"));
        timeline_jsonl.push('\n');
    }
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
    Artifacts {
        scenario_toml,
        timeline_jsonl,
        summary_txt: report::summary(resolved, seed, out, &findings),
        report_json: report::json(resolved, seed, out, &findings),
        leaders_acting_svg,
        passed: findings.passed(),
        findings,
    }
}
