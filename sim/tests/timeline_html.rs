//! The reports people read: `timeline.html` and the lanes of `leaders_acting.svg`.
//!
//! Methodology: real runs of committed scenarios. Always: the page is self-contained (it
//! names nothing to load), its embedded data parse, and for gc-pause seed 42 the data
//! and the header show the two overlapping leaderships and the rejected write with both
//! tokens; every committed scenario's SVG has a lane per node; a 10-minute 9-node storm's
//! page stays small. With Chromium on the machine (`.ci/run` installs it; set
//! `BATON_REQUIRE_CHROMIUM=1` to fail rather than skip without it), each page is opened
//! headless with `#selftest`: the page drives itself (hover, pin, zoom, pan, filter,
//! jump) and the test reads the DOM Chromium dumps: no script error, the self-test passed,
//! and the drawn spans and cross are where the data put them. Each check has a canary: a
//! page that loads a script from the network, and a page whose data are broken, must be
//! caught.

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why `html` is not self-contained, if it is not: anything a browser would fetch.
fn not_self_contained(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    for needle in [
        "<link",
        "<iframe",
        "<img",
        "<object",
        "<embed",
        " src=",
        "@import",
        "url(",
        "fetch(",
        "xmlhttprequest",
        "websocket",
        "import(",
        "new worker",
        "//fonts.",
    ] {
        if let Some(at) = lower.find(needle) {
            let from = at.saturating_sub(40);
            return Some(format!(
                "`{needle}` at byte {at}: …{}…",
                &html[from..(at + 60).min(html.len())]
            ));
        }
    }
    for scheme in ["http://", "https://", "ftp://", "//cdn"] {
        if let Some(at) = lower.find(scheme) {
            return Some(format!("`{scheme}` at byte {at}"));
        }
    }
    None
}

#[test]
fn the_self_contained_check_catches_a_page_that_loads_something() {
    let a = run("gc-pause", 42, &[]);
    assert_eq!(not_self_contained(&a.timeline_html), None);
    let canaries = [
        a.timeline_html.replace(
            "<script>",
            "<script src=\"https://cdn.example/d3.js\"></script><script>",
        ),
        a.timeline_html
            .replace("<style>", "<style>@import 'fonts.css';"),
        a.timeline_html
            .replace("</header>", "<img src=\"logo.png\"></header>"),
    ];
    for page in canaries {
        assert!(not_self_contained(&page).is_some());
    }
}

/// The spans of the embedded data: (lane name, token, from_us, to_us).
fn spans(data: &serde_json::Value) -> Vec<(String, u64, i64, i64)> {
    let lanes = &data["lanes"];
    lanes["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let lane = lanes["lanes"][s["lane"].as_u64().unwrap() as usize]
                .as_str()
                .unwrap()
                .to_string();
            (
                lane,
                s["token"].as_u64().unwrap_or(0),
                s["from_us"].as_i64().unwrap(),
                s["to_us"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn gc_pause_seed_42_shows_both_leaderships_overlapping_and_the_rejected_write() {
    let a = run("gc-pause", 42, &[]);
    let html = &a.timeline_html;
    assert_eq!(not_self_contained(html), None);
    let data =
        baton_model::render::timeline_html::embedded_data(html).expect("the embedded data parse");
    assert_eq!(data["verdict"], "pass");
    assert_eq!(
        data["lanes"]["lanes"],
        serde_json::json!(["n1", "n2", "n3", "etcd-1", "etcd-2", "etcd-3"])
    );
    let s = spans(&data);
    let old = s.iter().find(|s| s.1 == 2).expect("a token-2 span");
    let new = s.iter().find(|s| s.1 == 3).expect("a token-3 span");
    assert_ne!(old.0, new.0, "two nodes");
    assert!(
        old.2 < new.2 && new.2 < old.3,
        "the token-3 leadership began while the token-2 one still believed: {old:?} {new:?}"
    );
    let r = &data["lanes"]["rejections"][0];
    assert_eq!(
        (r["token"].as_u64(), r["max_token"].as_u64()),
        (Some(2), Some(3))
    );
    assert_eq!(
        data["lanes"]["lanes"][r["lane"].as_u64().unwrap() as usize],
        old.0.as_str()
    );
    // The header says it in words, with links to the moments.
    // The moment comes from the data (it moves with the interleaving); it must fall
    // just after the pause ended at 13.5 s, inside the overlap.
    let at_us = r["at_us"].as_i64().unwrap();
    assert!(
        (13_500_000..old.3).contains(&at_us),
        "rejected after the pause, before the old belief ended: {at_us}"
    );
    let moment = format!("{:.3} s", at_us as f64 / 1e6);
    assert!(
        html.contains(&format!("{moment}: {} token 2 &lt; max_token 3", old.0)),
        "the rejection is listed at {moment}"
    );
    assert!(html.contains("two or more believed they led"));
    assert!(html.contains("class=\"verdict pass\""));
    // The SVG shows the same, in its lanes.
    assert!(a.leaders_acting_svg.contains("rejected 2 &lt; 3"));
    assert!(a.leaders_acting_svg.contains("token 2") && a.leaders_acting_svg.contains("token 3"));
}

#[test]
fn a_failing_run_lists_its_violations_as_links_to_their_moments() {
    let a = run("gc-pause-unfenced", 42, &[]);
    let data = baton_model::render::timeline_html::embedded_data(&a.timeline_html).unwrap();
    assert_eq!(data["verdict"], "fail");
    let violations = data["violations"].as_array().unwrap();
    assert!(!violations.is_empty());
    assert!(a.timeline_html.contains("class=\"verdict fail\""));
    for v in violations {
        let at_us = (v["at_ms"].as_f64().unwrap() * 1000.0) as i64;
        let link = format!("href=\"#t={at_us},{at_us}\" class=\"jump\"");
        assert!(a.timeline_html.contains(&link), "no link to {v}");
    }
}

/// Every committed scenario, by path below scenarios/ without `.toml`.
fn committed_scenarios() -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if p.is_dir() {
                walk(&p, &format!("{prefix}{name}/"), out);
            } else if let Some(stem) = name.strip_suffix(".toml") {
                out.push(format!("{prefix}{stem}"));
            }
        }
    }
    let mut out = vec![];
    walk(&scenarios_dir(), "", &mut out);
    out
}

#[test]
fn every_committed_scenario_draws_a_lane_per_node() {
    let names = committed_scenarios();
    assert!(names.iter().any(|n| n == "storm/lease-storm"), "{names:?}");
    for name in names {
        let r = load(&name, &[]);
        // The plot is rendered by a run that writes its pages (a search's runs do not).
        let a = baton_sim::run(&r, 42).unwrap();
        let svg = &a.leaders_acting_svg;
        // A sharded fleet's plot is the partitions each node leads, a line per node.
        let per_node = if r.scenario.partitions > 0 {
            "partitions led (by belief)"
        } else {
            "lanes (one per node)"
        };
        assert!(svg.contains(per_node), "{name}: no lanes");
        for node in r.node_names() {
            assert!(
                svg.contains(&format!(">\n{node}\n<")),
                "{name}: no lane for {node}"
            );
        }
        let data = baton_model::render::timeline_html::embedded_data(&a.timeline_html).unwrap();
        let lanes = data["lanes"]["lanes"].as_array().unwrap();
        assert!(lanes.len() >= r.node_names().len(), "{name}");
        // A scenario that faults a clock shows the clock view.
        let clocks = !data["lanes"]["clocks"].as_array().unwrap().is_empty();
        assert_eq!(
            svg.contains("clock offset from global time"),
            clocks,
            "{name}"
        );
    }
}

#[test]
fn a_ten_minute_nine_node_storm_stays_small() {
    let a = run("storm/lease-storm", 0, &[]);
    let data = baton_model::render::timeline_html::embedded_data(&a.timeline_html).unwrap();
    let l = &data["lanes"];
    // Nine nodes, then the three etcd members.
    assert_eq!(l["lanes"].as_array().unwrap().len(), 12);
    assert!(
        l["spans"].as_array().unwrap().len() >= 100,
        "a leadership per kill"
    );
    // Writes come in at most ~2,000 buckets per lane and token run, not one per write.
    let buckets = l["writes"].as_array().unwrap().len() as u64;
    let writes = l["writes_accepted"].as_u64().unwrap();
    assert!(
        buckets * 10 < writes,
        "{buckets} buckets for {writes} writes"
    );
    assert!(
        a.timeline_html.len() < 1_500_000,
        "{} bytes",
        a.timeline_html.len()
    );
    // Attempts are not drawn (what became of them is); a cluster's lease renewals neither.
    let not_drawn = a
        .timeline_html
        .split("Not drawn, since what became of them is: ")
        .nth(1)
        .expect("the not-drawn sentence");
    let sentence = not_drawn.split(").").next().unwrap();
    assert!(sentence.contains("write_attempted ("), "{sentence}");
}

// ----- in a real browser -----

/// Chromium, if the machine has it.
fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("BATON_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Chromium, or `None` with a note when it is absent and not required.
fn require_chromium() -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        assert!(
            std::env::var("BATON_REQUIRE_CHROMIUM").is_err(),
            "BATON_REQUIRE_CHROMIUM is set but no chromium is on PATH"
        );
        eprintln!("note: no chromium on PATH; the headless-browser check is skipped");
    }
    found
}

/// Opens `page` (with `fragment`) in headless Chromium and returns the DOM it dumps once
/// the page's scripts ran.
fn dump_dom(chromium: &Path, page: &Path, fragment: &str) -> String {
    let profile = temp_dir(&format!(
        "chromium-profile-{}",
        page.file_name().unwrap().to_string_lossy()
    ));
    let url = format!(
        "file://{}{fragment}",
        page.canonicalize().unwrap().display()
    );
    let mut child = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1400,1000",
            "--virtual-time-budget=5000",
            &format!("--user-data-dir={}", profile.display()),
            "--dump-dom",
            &url,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).map(|_| s)
    });
    // A guard against a hung browser, not a measurement: time here is the wall clock's.
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("chromium did not finish with {url}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = std::fs::remove_dir_all(&profile);
    reader.join().unwrap().expect("chromium's output is text")
}

/// The attributes of every tag drawn in the chart of `dom` whose class list starts with
/// `class` (the page's script, also in the DOM, is left out).
fn tags(dom: &str, class: &str) -> Vec<BTreeMap<String, String>> {
    let open = dom
        .find("<svg id=\"chart\"")
        .expect("the chart is in the DOM");
    let dom = &dom[open..open + dom[open..].find("</svg>").expect("the chart closes")];
    let needle = format!("class=\"{class}");
    let mut out = vec![];
    let mut rest = dom;
    while let Some(at) = rest.find(&needle) {
        let start = rest[..at].rfind('<').unwrap();
        let end = at + rest[at..].find('>').unwrap();
        let mut attrs = BTreeMap::new();
        let mut tag = &rest[start..end];
        while let Some(eq) = tag.find("=\"") {
            let name = tag[..eq].rsplit(' ').next().unwrap().to_string();
            let value_end = eq + 2 + tag[eq + 2..].find('"').unwrap();
            attrs.insert(name, tag[eq + 2..value_end].to_string());
            tag = &tag[value_end + 1..];
        }
        out.push(attrs);
        rest = &rest[end..];
    }
    out
}

/// What is wrong with `page` in a browser, if anything: a script error, a self-test that
/// failed or never finished, nothing drawn. Returns the dumped DOM when all is well.
fn browser_check(chromium: &Path, page: &Path) -> Result<String, String> {
    let dom = dump_dom(chromium, page, "#selftest");
    let open = dom.find("<body").ok_or("no body in the dumped DOM")?;
    let body_tag = &dom[open..open + dom[open..].find('>').unwrap()];
    if let Some(at) = body_tag.find("data-errors=") {
        return Err(format!("script errors: {}", &body_tag[at..]));
    }
    if !body_tag.contains("data-rendered=\"lanes=") {
        return Err(format!("the lanes were never drawn: {body_tag}"));
    }
    match body_tag.find("data-selftest=\"ok:") {
        Some(_) => Ok(dom),
        None => Err(format!("the self-test did not pass: {body_tag}")),
    }
}

#[test]
fn pages_render_in_headless_chromium_without_script_errors() {
    let Some(chromium) = require_chromium() else {
        return;
    };
    let d = temp_dir("timeline-html-browser");
    let gc = run("gc-pause", 42, &[]);
    let page = d.join("gc-pause-42.html");
    std::fs::write(&page, &gc.timeline_html).unwrap();
    let dom = browser_check(&chromium, &page).unwrap_or_else(|e| panic!("gc-pause 42: {e}"));
    assert!(
        dom.contains("data-selftest=\"ok: hover pin zoom pan filter jump\""),
        "every step ran"
    );
    // What the browser drew: the token-2 and token-3 spans on two lanes, overlapping,
    // and the cross of the rejected write on the token-2 lane.
    let spans = tags(&dom, "span");
    let span = |token: &str| {
        spans
            .iter()
            .find(|s| s.get("data-token").map(String::as_str) == Some(token))
            .unwrap_or_else(|| panic!("no drawn span with token {token}: {spans:?}"))
    };
    let (old, new) = (span("2"), span("3"));
    assert_ne!(old["data-lane"], new["data-lane"]);
    let us = |s: &BTreeMap<String, String>, k: &str| s[k].parse::<i64>().unwrap();
    assert!(
        us(new, "data-from-us") < us(old, "data-to-us"),
        "they overlap"
    );
    let crosses = tags(&dom, "rejection");
    assert_eq!(crosses.len(), 1, "{crosses:?}");
    assert_eq!(
        (
            crosses[0]["data-lane"].as_str(),
            crosses[0]["data-token"].as_str(),
            crosses[0]["data-max-token"].as_str()
        ),
        (old["data-lane"].as_str(), "2", "3")
    );
    assert!(
        dom.contains("rejected 2 &lt; 3"),
        "the cross is labelled with both tokens"
    );

    // The 9-node, 10-minute storm, and a clock scenario, open and pass too.
    for (name, seed) in [("storm/lease-storm", 0), ("slow-clock-partition", 42)] {
        let a = run(name, seed, &[]);
        let page = d.join(format!("{}.html", name.replace('/', "-")));
        std::fs::write(&page, &a.timeline_html).unwrap();
        let dom = browser_check(&chromium, &page).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(dom.contains("class=\"lane-name\""), "{name}");
    }

    // Canary: a page whose data are broken must be caught.
    let broken = gc.timeline_html.replacen("{\"title\":", "{\"title\" ", 1);
    let page = d.join("broken.html");
    std::fs::write(&page, broken).unwrap();
    let e = browser_check(&chromium, &page).expect_err("broken data must fail the check");
    assert!(e.contains("script errors"), "{e}");
    std::fs::remove_dir_all(&d).unwrap();
}
