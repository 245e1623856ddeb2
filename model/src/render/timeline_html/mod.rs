//! `timeline.html`: one self-contained page per run that a person reads in a browser.
//!
//! The page holds its data as JSON in a `<script type="application/json">` element and
//! draws it with a small hand-written script (`timeline_html/page.js`) into an inline
//! SVG: the leaders-acting counts, one lane per node (and per service a fault hit) with
//! the same marks as `leaders_acting.svg`, the other events as dots, and the clock view
//! when a clock was faulted. It zooms (wheel, buttons) and pans (drag) over time, shows an
//! event's fields on hover and pins them on click, filters by kind and lane, and lists
//! the verdict, the violations and the notable moments at the top, each a link that jumps
//! to its moment. It loads nothing: no network, no external script, style or font.
//!
//! The page is a function of the lanes ([`crate::render::lanes::Lanes`]) and the findings only,
//! written in a fixed order with no timestamp, so the same run gives the same bytes.
//! What keeps it fast for a long run is the lanes' own bound (writes in about 2,000
//! buckets per node, other events capped per kind); the page says what was left out.

use crate::checker::{Findings, Violation};
use crate::render::lanes::Lanes;
use serde::Serialize;
use std::fmt::Write;

/// The page's script: draws the lanes from the embedded data.
const SCRIPT: &str = include_str!("page.js");
/// The page's style.
const STYLE: &str = include_str!("page.css");
/// The id of the element holding the data, for the script and for tests.
pub const DATA_ID: &str = "baton-data";
/// How many moments of one sort the header lists before it says how many more.
const MOMENTS_LISTED: usize = 20;

/// What the page shows.
pub struct Page<'a> {
    /// The run's title (`gc-pause (seed 42, etcd-lease)`).
    pub title: &'a str,
    /// What the checkers found.
    pub findings: &'a Findings,
    /// Who led, wrote and was hit, when.
    pub lanes: &'a Lanes,
    /// The run's summary, shown folded.
    pub summary_txt: &'a str,
}

/// The data the script draws from, embedded as JSON.
#[derive(Serialize)]
struct Data<'a> {
    title: &'a str,
    verdict: &'static str,
    violations: &'a [Violation],
    /// `(at_us, count)` at every change of leaders by belief.
    belief: &'a [(i64, u32)],
    /// `(at_us, count)` at every change of leaders by effect.
    effect: &'a [(i64, u32)],
    lanes: &'a Lanes,
}

/// Escapes text for HTML content and attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Seconds with millisecond precision, as the page writes times.
fn secs(at_us: i64) -> String {
    format!("{:.3} s", at_us as f64 / 1e6)
}

/// A number with thousands separators (`26,963`).
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A link that jumps the view to `[from_us, to_us]`.
fn jump(from_us: i64, to_us: i64, text: &str) -> String {
    format!(
        "<a href=\"#t={from_us},{to_us}\" class=\"jump\" data-from-us=\"{from_us}\" data-to-us=\"{to_us}\">{}</a>",
        esc(text)
    )
}

/// The header's list of notable moments: belief overlaps and refused writes.
fn moments(f: &Findings, l: &Lanes) -> String {
    let mut out = String::new();
    let mut section = |name: &str, links: Vec<String>| {
        if links.is_empty() {
            return;
        }
        let more = links.len().saturating_sub(MOMENTS_LISTED);
        let _ = write!(out, "<p class=\"moments\"><b>{}</b>: ", esc(name));
        out.push_str(
            &links
                .into_iter()
                .take(MOMENTS_LISTED)
                .collect::<Vec<_>>()
                .join(" · "),
        );
        if more > 0 {
            let _ = write!(out, " · and {more} more (see the lanes)");
        }
        out.push_str("</p>\n");
    };
    section(
        "two or more believed they led",
        f.belief
            .overlaps
            .iter()
            .map(|o| {
                let (from, to) = ((o.from_ms * 1000.0) as i64, (o.to_ms * 1000.0) as i64);
                jump(
                    from,
                    to,
                    &format!("{} .. {}: {}", secs(from), secs(to), o.nodes.join(", ")),
                )
            })
            .collect(),
    );
    section(
        "writes refused",
        l.rejections
            .iter()
            .map(|r| {
                let what = match r.max_token {
                    Some(max) => format!("token {} < max_token {max}", r.token),
                    None => format!("token {} ({})", r.token, r.kind.replace('_', " ")),
                };
                jump(
                    r.at_us,
                    r.at_us,
                    &format!("{}: {} {what}", secs(r.at_us), l.lanes[r.lane]),
                )
            })
            .collect(),
    );
    out
}

/// What the page draws and what it leaves out, in words.
fn drawn_note(l: &Lanes) -> String {
    let mut parts = vec![format!(
        "{} events read. Accepted writes ({}) are drawn in buckets of at most {} ms per node \
         and token ({} buckets); buckets closer than 2 pixels merge on screen (hover one for \
         its count, zoom in to separate them).",
        count(l.events_read),
        count(l.writes_accepted),
        l.write_bucket_us as f64 / 1000.0,
        count(l.writes.len() as u64)
    )];
    // Attempts and hand-outs are drawn as what became of them; reads only as counts.
    let not_drawn = |outcome: bool| -> Vec<String> {
        l.not_drawn
            .iter()
            .filter(|(k, _)| (k.as_str() != "read_served") == outcome)
            .map(|(k, n)| format!("{k} ({})", count(*n)))
            .collect()
    };
    let (outcomes, reads) = (not_drawn(true), not_drawn(false));
    if !outcomes.is_empty() {
        parts.push(format!(
            "Not drawn, since what became of them is: {}.",
            outcomes.join(", ")
        ));
    }
    if !reads.is_empty() {
        parts.push(format!(
            "Not drawn: {} (report.json's reads counts them).",
            reads.join(", ")
        ));
    }
    if !l.capped.is_empty() {
        let kinds: Vec<String> = l
            .capped
            .iter()
            .map(|(k, n)| format!("{k} ({} more)", count(*n)))
            .collect();
        parts.push(format!(
            "Left out beyond the cap of {} events per kind ({} for windows, marks and refused \
             writes): {}; timeline.jsonl has every one.",
            count(crate::render::lanes::MAX_EVENTS_PER_KIND as u64),
            count(crate::render::lanes::MAX_ITEMS as u64),
            kinds.join(", ")
        ));
    }
    parts.join(" ")
}

/// The JSON of the data, safe inside a `<script>` element: every `<` is escaped (JSON
/// allows `\u003c` in strings, the only place one can occur), so no `</script>` can end
/// the element early.
fn embedded_json(data: &Data) -> String {
    serde_json::to_string(data)
        .expect("the page data always serializes")
        .replace('<', "\\u003c")
}

/// Renders the page.
pub fn timeline_html(page: &Page) -> String {
    let f = page.findings;
    let l = page.lanes;
    let passed = f.passed();
    let violations = &f.violations;
    let mut h = String::with_capacity(64 * 1024);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{} - Baton timeline</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<header>\n\
         <h1>{}</h1>\n",
        esc(page.title),
        esc(page.title)
    );
    let _ = writeln!(
        h,
        "<p class=\"verdict {}\">{}</p>",
        if passed { "pass" } else { "fail" },
        if passed {
            "PASS: every checked property held".to_string()
        } else {
            format!(
                "FAIL: {} violation{}",
                violations.len(),
                if violations.len() == 1 { "" } else { "s" }
            )
        }
    );
    if !violations.is_empty() {
        h.push_str("<ol class=\"violations\">\n");
        for v in violations {
            let at = (v.at_ms * 1000.0) as i64;
            let _ = writeln!(
                h,
                "<li>{}: {}</li>",
                jump(at, at, &format!("{} at {}", v.property, secs(at))),
                esc(&v.detail)
            );
        }
        h.push_str("</ol>\n");
    }
    h.push_str(&moments(f, l));
    let _ = write!(
        h,
        "<details><summary>summary.txt</summary><pre>{}</pre></details>\n\
         <p class=\"note\" id=\"drawn-note\">{}</p>\n</header>\n",
        esc(page.summary_txt),
        esc(&drawn_note(l))
    );
    h.push_str(
        "<section id=\"controls\">\n\
         <button type=\"button\" id=\"zoom-in\" title=\"zoom in (or the mouse wheel)\">+</button>\n\
         <button type=\"button\" id=\"zoom-out\" title=\"zoom out\">&minus;</button>\n\
         <button type=\"button\" id=\"fit\">whole run</button>\n\
         <span id=\"range\"></span>\n\
         <span class=\"hint\">wheel: zoom at the pointer · drag: pan · hover: fields · click: pin</span>\n\
         <div id=\"filters\"><fieldset id=\"kind-filter\"><legend>kinds</legend></fieldset>\n\
         <fieldset id=\"lane-filter\"><legend>lanes</legend></fieldset></div>\n\
         </section>\n\
         <div id=\"view\"><svg id=\"chart\" role=\"img\" aria-label=\"lanes over time\"></svg></div>\n\
         <div id=\"tip\" hidden></div>\n\
         <section id=\"details\"><h2>Selected</h2><p id=\"details-hint\">Click a mark to pin its fields here.</p>\
         <table id=\"fields\"></table></section>\n\
         <p id=\"errors\" hidden></p>\n\
         <noscript><p>The lanes are drawn by this page's own script; the verdict and moments above \
         do not need it.</p></noscript>\n",
    );
    let data = Data {
        title: page.title,
        verdict: if passed { "pass" } else { "fail" },
        violations,
        belief: &f.belief.series,
        effect: &f.effect.series,
        lanes: l,
    };
    let _ = write!(
        h,
        "<script type=\"application/json\" id=\"{DATA_ID}\">{}</script>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n",
        embedded_json(&data)
    );
    h
}

/// Why a page's embedded data could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedDataError {
    /// The page has no data element.
    #[error("no element with id {}", DATA_ID)]
    Missing,
    /// The data element has no end.
    #[error("the data element is not closed")]
    NotClosed,
    /// The data are not JSON.
    #[error("the data do not parse: {0}")]
    NotJson(#[from] serde_json::Error),
}

/// The embedded data of a page, parsed: what a test (or a tool) reads back.
pub fn embedded_data(html: &str) -> Result<serde_json::Value, EmbeddedDataError> {
    let open = format!("<script type=\"application/json\" id=\"{DATA_ID}\">");
    let start = html.find(&open).ok_or(EmbeddedDataError::Missing)? + open.len();
    let len = html[start..]
        .find("</script>")
        .ok_or(EmbeddedDataError::NotClosed)?;
    Ok(serde_json::from_str(&html[start..start + len])?)
}

#[cfg(test)]
mod tests {
    //! Methodology: render a hand-built run and read the page back as a browser would
    //! have to: the data element parses to the lanes it was built from, nothing in it
    //! could end its element early, and identical inputs give identical bytes.
    use super::*;
    use crate::checker::testing::*;
    use crate::checker::{check, CheckInput};
    use crate::render::lanes::{build, LaneBuilder};

    fn page_for(entries: &[crate::timeline::Entry], summary: &str) -> String {
        let r = resolved();
        let end_us = 20_000_000;
        let f = check(&CheckInput {
            resolved: &r,
            entries,
            end_us,
            client: Default::default(),
        });
        let nodes = vec!["n1".into(), "n2".into()];
        let l = build(LaneBuilder::new(nodes, end_us, vec![]), entries, end_us);
        timeline_html(&Page {
            title: "t <sample>",
            findings: &f,
            lanes: &l,
            summary_txt: summary,
        })
    }

    #[test]
    fn the_data_round_trip_and_nothing_ends_the_script_early() {
        let mut entries = clean_failover();
        // A reason that tries to close the data element.
        entries.push(stopped(6000, "n2", 2, "</script><script>alert(1)</script>"));
        let html = page_for(&entries, "summary </pre> & more");
        let data = embedded_data(&html).unwrap();
        assert_eq!(data["lanes"]["lanes"], serde_json::json!(["n1", "n2"]));
        assert_eq!(data["lanes"]["spans"][1]["token"], 2);
        assert_eq!(
            data["lanes"]["spans"][1]["stop_reason"],
            "</script><script>alert(1)</script>"
        );
        assert_eq!(
            html.matches("</script>").count(),
            2,
            "only the two real closings"
        );
        assert!(html.contains("summary &lt;/pre&gt; &amp; more"));
        assert!(html.contains("<h1>t &lt;sample&gt;</h1>"));
        assert_eq!(html, page_for(&entries, "summary </pre> & more"));
    }

    #[test]
    fn every_kind_of_window_has_a_colour_and_a_legend_label() {
        // A kind the script has no colour for is drawn opaque black, and reads as a
        // node down: the etcd leader's lane once did (issue 34).
        for kind in [
            "down",
            "pause",
            "gc-pause",
            "partition",
            "slow-link",
            "slow-disk",
            "etcd-leader",
        ] {
            let key = if kind.contains('-') {
                format!("\"{kind}\": ")
            } else {
                format!("{kind}: ")
            };
            assert!(
                SCRIPT.contains(&format!("{key}\"#")),
                "no colour for {kind}"
            );
            assert!(SCRIPT.matches(&key).count() >= 2, "no opacity for {kind}");
        }
        assert!(SCRIPT.contains("\"etcd-leader\": \"leads the etcd cluster (lease service)\""));
    }

    #[test]
    fn counts_read_with_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(26_963), "26,963");
        assert_eq!(count(1_234_567), "1,234,567");
    }
}
