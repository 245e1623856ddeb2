//! Every artifact of a finished run, rendered in memory: the resolved scenario, the
//! timeline, the summary, report.json and the plot. Both worlds render through here.

use crate::checker::Findings;
use crate::run_output::{RunOutput, TimelineFile};
use crate::scenario::Resolved;
use crate::trial::TrialReport;
use crate::{render::plot, render::report, render::timeline_html};
use std::borrow::Cow;

/// The files of a report, in the order they are written.
pub const ARTIFACTS: [&str; 6] = [
    "scenario.toml",
    "timeline.jsonl",
    "summary.txt",
    "report.json",
    "leaders_acting.svg",
    "timeline.html",
];

/// Every artifact of a run, rendered, plus the verdict.
#[derive(Debug)]
pub struct Artifacts {
    /// The resolved scenario, every default filled in.
    pub scenario_toml: String,
    /// The timeline, one JSON event a line, in a temporary file (`None` for a run that
    /// did not keep it: `baton_sim::run_unrecorded`). Read it with [`Artifacts::timeline_jsonl`] or
    /// copy it with [`Artifacts::write_timeline`].
    pub timeline: Option<TimelineFile>,
    /// For a person.
    pub summary_txt: String,
    /// For scripts.
    pub report_json: String,
    /// The leaders-acting plot, with its lanes (empty for a run reported by
    /// [`report_verdict`]).
    pub leaders_acting_svg: String,
    /// The page a person reads in a browser: the lanes, zoomable, with every event's
    /// fields (empty for a run reported by [`report_verdict`]).
    pub timeline_html: String,
    /// True when every checked property held.
    pub passed: bool,
    /// What the checkers found.
    pub findings: Findings,
}

impl Artifacts {
    /// (file name, content) in the order of [`ARTIFACTS`]; the timeline is rendered here.
    pub fn files(&self) -> Vec<(&'static str, Cow<'_, [u8]>)> {
        let a = ARTIFACTS;
        vec![
            (a[0], Cow::Borrowed(self.scenario_toml.as_bytes())),
            (a[1], Cow::Owned(self.timeline_jsonl().into_bytes())),
            (a[2], Cow::Borrowed(self.summary_txt.as_bytes())),
            (a[3], Cow::Borrowed(self.report_json.as_bytes())),
            (a[4], Cow::Borrowed(self.leaders_acting_svg.as_bytes())),
            (a[5], Cow::Borrowed(self.timeline_html.as_bytes())),
        ]
    }

    /// The timeline, one JSON event per line.
    pub fn timeline_jsonl(&self) -> String {
        let mut out = Vec::new();
        self.write_timeline(&mut out).expect("writing to memory");
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    /// Writes the timeline, one JSON event per line, to `w` (nothing for a run that did
    /// not keep it).
    pub fn write_timeline(&self, w: impl std::io::Write) -> std::io::Result<()> {
        match &self.timeline {
            Some(t) => t.copy_to(w),
            None => Ok(()),
        }
    }
}

/// Renders the report of a finished run (its timeline file moves into it).
pub fn report(resolved: &Resolved, seed: u64, out: RunOutput) -> Artifacts {
    render(resolved, seed, out, None, true)
}

/// As [`report()`], without the pages a person reads (the plot and timeline.html stay
/// empty): for commands that read only the verdict, the findings, the summary and
/// report.json, such as a search, which would otherwise draw a plot and a page per
/// seed that nobody opens.
pub fn report_verdict(resolved: &Resolved, seed: u64, out: RunOutput) -> Artifacts {
    render(resolved, seed, out, None, false)
}

/// As [`report()`], for a run in the real world when `real` is given: the same files, with
/// what a real run adds to the summary and report.json (see [`crate::TrialReport`]).
pub fn report_with(
    resolved: &Resolved,
    seed: u64,
    out: RunOutput,
    real: Option<&TrialReport>,
) -> Artifacts {
    render(resolved, seed, out, real, true)
}

/// Every artifact, the two pages only with `pages`.
fn render(
    resolved: &Resolved,
    seed: u64,
    mut out: RunOutput,
    real: Option<&TrialReport>,
    pages: bool,
) -> Artifacts {
    let scenario_toml = match real {
        None => format!(
            "# Resolved by `{}`: every default filled in.\n# Run this file as it is to repeat the run: `sim run FILE` takes the seed below and\n# writes to the run's report directory (named by [origin]).\n{}",
            report::reproduce_command(resolved, seed),
            resolved.to_toml_for_run(seed)
        ),
        Some(x) => format!(
            "# Resolved by `{}` (trial {}, against {}): every default filled in.\n# A real run does not repeat exactly: `sim run FILE` runs this scenario with the seed\n# below in the simulator, for comparison.\n{}",
            x.command,
            x.trial,
            x.backend,
            resolved.to_toml_for_run(seed)
        ),
    };
    let title = match real {
        None => format!(
            "{} (seed {seed}, {})",
            resolved.scenario.name,
            resolved.scenario.protocol.name()
        ),
        Some(x) => format!(
            "{} (real, trial {}, seed {seed}, {})",
            resolved.scenario.name,
            x.trial,
            resolved.scenario.protocol.name()
        ),
    };
    let findings = &out.findings;
    // A sharded fleet's leaders acting are its nodes' shares of the partitions.
    let drawn = if resolved.scenario.partitions > 0 {
        let end_ms = out.end_us as f64 / 1000.0;
        crate::render::plot::shards::partitions_svg(
            &findings.shards,
            &resolved.node_names(),
            end_ms,
            &title,
        )
    } else {
        plot::leaders_acting_svg(findings, &out.lanes, out.end_us, &title)
    };
    let leaders_acting_svg = if pages {
        drawn.unwrap_or_else(|e| format!("<svg xmlns=\"http://www.w3.org/2000/svg\"><text x=\"10\" y=\"20\">plot failed: {e}</text></svg>\n"))
    } else {
        String::new()
    };
    // The plot's time axis is the simulator's; a real run's is the run's clock.
    let leaders_acting_svg = match real {
        None => leaders_acting_svg,
        Some(_) => {
            leaders_acting_svg.replace("time (simulated s)", "time (s since the run started)")
        }
    };
    let summary_txt = report::summary_with(resolved, seed, &out, real);
    let report_json = report::json_with(resolved, seed, &out, real);
    let timeline_html = if pages {
        timeline_html::timeline_html(&timeline_html::Page {
            title: &title,
            findings: &out.findings,
            lanes: &out.lanes,
            summary_txt: &summary_txt,
        })
    } else {
        String::new()
    };
    Artifacts {
        scenario_toml,
        timeline: out.timeline.take(),
        summary_txt,
        report_json,
        leaders_acting_svg,
        timeline_html,
        passed: out.findings.passed(),
        findings: out.findings,
    }
}
