//! `sim bench`'s output: the Markdown table of what each workload measured, and the
//! targets of issue 8 (and later issues) judged against it, every number computed from
//! the table's.

use crate::cmd::bench::{Measured, Row};
use std::fmt::Write;

fn fmt_speed(x: f64) -> String {
    if x >= 100.0 {
        format!("{:.0}", x)
    } else {
        format!("{:.1}", x)
    }
}

/// The Markdown table of `rows`.
pub fn table(rows: &[Row]) -> String {
    let mut s = String::new();
    s.push_str("| workload | what | runs | simulated s | wall s | sim s / wall s | sim s / wall s (no report) | messages / simulated s | messages / wall s | peak memory (MiB) |\n");
    s.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in rows {
        let m = &r.measured;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.0} | {:.2} | {} | {} | {:.0} | {:.0} | {:.1} |",
            r.workload.name,
            r.workload.what,
            m.runs,
            m.simulated_s,
            m.total_wall_s,
            fmt_speed(m.speed()),
            fmt_speed(m.sim_speed()),
            m.messages as f64 / m.simulated_s,
            m.messages as f64 / m.total_wall_s,
            m.peak_kib as f64 / 1024.0,
        );
    }
    s
}

/// The targets of issue 8, each against the measured figure (a target whose workload
/// was not run is left out).
pub fn targets(rows: &[Row]) -> String {
    let get = |name: &str| {
        rows.iter()
            .find(|r| r.workload.name == name)
            .map(|r| &r.measured)
    };
    let mut s = String::new();
    s.push_str("| target | measured | met |\n|---|---:|:---:|\n");
    let mut line = |what: &str, measured: String, met: bool| {
        let _ = writeln!(
            s,
            "| {what} | {measured} | {} |",
            if met { "yes" } else { "**no**" }
        );
    };
    // Each workload's target: (workload, what is asked, the figure and whether it is met).
    type Judge = fn(&Measured) -> (String, bool);
    let single: [(&str, &str, Judge); 6] = [
        (
            "etcd-5k",
            "etcd-lease at 5,000 next/s: 500 or more simulated s per wall s",
            |m| (fmt_speed(m.speed()), m.speed() >= 500.0),
        ),
        (
            "etcd-50k",
            "etcd-lease at 50,000 next/s: 100 or more simulated s per wall s",
            |m| (fmt_speed(m.speed()), m.speed() >= 100.0),
        ),
        (
            "raft-idle",
            "raft idle: 2,500 or more simulated s per wall s",
            |m| (fmt_speed(m.speed()), m.speed() >= 2500.0),
        ),
        (
            "raft-storm",
            "9-node 10-minute election storm: 5 s of wall time or less per run",
            |m| {
                let per_run = m.total_wall_s / m.runs as f64;
                (format!("{per_run:.2} s"), per_run <= 5.0)
            },
        ),
        (
            "gc-pause-2-jobs",
            "30 s gc-pause runs on 2 jobs: 2,000 or more per minute",
            |m| {
                (
                    format!("{:.0}", m.runs_per_minute()),
                    m.runs_per_minute() >= 2000.0,
                )
            },
        ),
        (
            "swarm-search-2-jobs",
            "swarm search (scenarios/swarm.toml, 60 s runs) on 2 jobs: 100 or more seeds per s",
            |m| {
                let per_s = m.runs_per_minute() / 60.0;
                (format!("{per_s:.0}"), per_s >= 100.0)
            },
        ),
    ];
    for (name, what, judge) in single {
        if let Some(m) = get(name) {
            let (figure, met) = judge(m);
            line(what, figure, met);
        }
    }
    if let (Some(long), Some(short)) = (get("etcd-5k-600s"), get("etcd-5k")) {
        let ratio = long.peak_kib as f64 / short.peak_kib as f64;
        line(
            "memory flat in run length: 600 s at 5,000/s peaks within 1.5x of 60 s",
            format!("{ratio:.2}x"),
            ratio <= 1.5,
        );
    }
    s.push_str(&comparisons(&get));
    s
}

/// What the cluster model costs, and etcd-5k against the two baselines.
fn comparisons<'a>(get: &dyn Fn(&str) -> Option<&'a Measured>) -> String {
    let mut s = String::new();
    if let (Some(c), Some(one)) = (get("etcd-5k"), get("etcd-5k-one-member")) {
        let mut cost = format!(
            "\nThe etcd cluster model's cost (3 members, the default, against the single service of etcd.members=1): etcd-5k {} against {} sim s / wall s ({:.2}x)",
            fmt_speed(c.speed()),
            fmt_speed(one.speed()),
            c.speed() / one.speed()
        );
        if let (Some(g), Some(g1)) = (get("gc-pause-2-jobs"), get("gc-pause-2-jobs-one-member")) {
            let _ = write!(
                cost,
                "; gc-pause on 2 jobs {:.0} against {:.0} runs per minute ({:.2}x)",
                g.runs_per_minute(),
                g1.runs_per_minute(),
                g.runs_per_minute() / g1.runs_per_minute()
            );
        }
        let _ = writeln!(s, "{cost}.");
    }
    if let (Some(b), Some(base)) = (get("etcd-5k"), get("madsim-endpoints")) {
        let _ = writeln!(
            s,
            "\netcd-5k against the bare madsim program exchanging the same messages per simulated second: {:.2}x its speed (Baton {} sim s / wall s, madsim {}).",
            b.speed() / base.speed(),
            fmt_speed(b.speed()),
            fmt_speed(base.speed())
        );
    }
    if let (Some(b), Some(base)) = (get("etcd-5k"), get("baton-net")) {
        let _ = writeln!(
            s,
            "etcd-5k against the same pattern on Baton's own network: {:.2}x its speed (Baton's network alone: {} sim s / wall s).",
            b.speed() / base.speed(),
            fmt_speed(base.speed())
        );
    }
    s
}
