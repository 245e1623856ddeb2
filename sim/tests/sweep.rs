//! `sim sweep`: the reduced TTL sweep CI runs, and its bad-input contract.
//!
//! Methodology: run the real binary on the committed sweep scenario with 2 TTLs x 2
//! protocols x 3 seeds (the nightly sweep is 4 x 7 x 50), and check every artefact exists,
//! parses and is non-empty, that the numbers move the way the trade-off says they must
//! (failover grows with the TTL; raft's false failovers under GC noise fall), and that the
//! outputs do not depend on --jobs. Bad grids exit 2 with one line naming the key and
//! what is allowed, and write nothing.

mod common;
use common::{sim, temp_dir};
use std::path::Path;
use std::process::Output;

fn scenario() -> String {
    format!("{}/../scenarios/ttl-sweep.toml", env!("CARGO_MANIFEST_DIR"))
}

const PLOTS: [&str; 4] = [
    "failover_vs_ttl.svg",
    "false_failovers_vs_ttl.svg",
    "election_latency_cdf.svg",
    "unavailability_vs_ttl.svg",
];

fn reduced(d: &Path, out: &str, jobs: &str) -> Output {
    sim(
        &[
            "sweep",
            &scenario(),
            "--grid",
            "ttl_ms=1000,10000",
            "--protocols",
            "etcd-lease,raft",
            "--seeds",
            "0..3",
            "--jobs",
            jobs,
            "--out",
            out,
            "--quiet",
        ],
        d,
    )
}

#[test]
fn reduced_sweep_writes_every_artefact_and_the_trade_off_shows() {
    let d = temp_dir("reduced");
    let o = reduced(&d, "a", "2");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Quiet and piped: no progress bar, no table; only where the sweep went.
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "sweep: a");
    let dir = d.join("a");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("sweep.json")).unwrap()).unwrap();
    let cells = json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    let md = std::fs::read_to_string(dir.join("sweep.md")).unwrap();
    assert!(
        md.contains("## Findings") && md.contains("### raft") && md.contains("s/h"),
        "{md}"
    );
    for plot in PLOTS {
        let svg = std::fs::read_to_string(dir.join(plot)).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{plot}"
        );
        assert!(svg.contains("<text"), "{plot} has no labels");
    }
    let cell = |proto: &str, ttl: u64| {
        cells
            .iter()
            .find(|c| c["protocol"] == proto && c["ttl_ms"] == ttl)
            .unwrap_or_else(|| panic!("no cell {proto} {ttl}"))
    };
    for proto in ["etcd-lease", "raft"] {
        let (short, long) = (cell(proto, 1000), cell(proto, 10000));
        assert_eq!(short["seeds"], serde_json::json!([0, 3]));
        let p50 = |c: &serde_json::Value| c["failover_ms"]["p50"].as_f64().unwrap();
        assert!(
            p50(short) > 0.0 && p50(long) > p50(short),
            "{proto}: {short} {long}"
        );
    }
    let ff = |c: &serde_json::Value| c["false_failovers_per_hour"].as_f64().unwrap();
    assert!(ff(cell("raft", 1000)) > ff(cell("raft", 10000)));
    // --jobs changes nothing but the wall time.
    let o = reduced(&d, "b", "1");
    assert_eq!(o.status.code(), Some(0));
    for f in ["sweep.json", "sweep.md"].iter().chain(PLOTS.iter()) {
        assert_eq!(
            std::fs::read(dir.join(f)).unwrap(),
            std::fs::read(d.join("b").join(f)).unwrap(),
            "{f} depends on --jobs"
        );
    }
}

#[test]
fn bad_grids_exit_2_with_one_line_and_write_nothing() {
    let d = temp_dir("bad");
    let s = scenario();
    let cases: [(&[&str], &str); 7] = [
        (
            &["--grid", "etcd-lease.lease_tll_ms=1000,2000"],
            "etcd-lease.lease_tll_ms",
        ),
        (&["--grid", "work.rate_per_s=fast,slow"], "work.rate_per_s"),
        (&["--grid", "ttl_ms="], "the grid is empty"),
        (
            &["--grid", "ttl_ms=1s"],
            "`1s` is not a TTL: expected whole milliseconds",
        ),
        (
            &[
                "--grid",
                "zk-sequential.tick_time_ms=500",
                "--protocols",
                "etcd-lease,zk-sequential",
            ],
            "protocol etcd-lease has no such key",
        ),
        (
            &["--grid", "ttl_ms=1000", "--protocols", "etcd-lease,paxos"],
            "unknown protocol `paxos`",
        ),
        (&["--grid", "ttl_ms=1000", "--jobs", "0"], "--jobs"),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["sweep", s.as_str(), "--seeds", "0..1", "--out", "out"];
        args.extend_from_slice(extra);
        let o = sim(&args, &d);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(needle), "{extra:?}: {err}");
        assert!(!d.join("out").exists(), "{extra:?} wrote output");
    }
}
