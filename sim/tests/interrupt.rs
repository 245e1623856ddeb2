//! Long commands on a terminal and under Ctrl-C: `sim matrix` shows its progress bar on
//! a terminal (and nothing extra when piped: see contract.rs), and a Ctrl-C stops it
//! starting runs, writes the matrix of the runs that finished, marked "interrupted
//! after N of M runs", and exits 130.
//!
//! Methodology: `script` (util-linux) gives the real binary a terminal. The test waits
//! until the bar shows a finished run, then types Ctrl-C into the terminal (the byte
//! 0x03, which the terminal turns into SIGINT for the command), as a user would. Nothing
//! is timed: the test waits for what the bar says, not for a duration, and the matrix
//! is far too large to finish first (30,000 runs).

use std::io::{Read, Write};
use std::process::{Command, Stdio};

#[test]
fn ctrl_c_on_a_terminal_writes_a_partial_matrix_marked_interrupted() {
    let d = std::env::temp_dir().join(format!("baton-ctrl-c-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let scenarios = format!("{}/../scenarios", env!("CARGO_MANIFEST_DIR"));
    let command = format!(
        "{} matrix {s}/gc-pause.toml {s}/partition.toml {s}/clean-kill.toml --seeds 0..1000 --out m",
        env!("CARGO_BIN_EXE_sim"),
        s = scenarios
    );
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(&d)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect(
            "the terminal test needs script(1) from util-linux (Debian: apt-get install bsdutils)",
        );
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    // Read the terminal until the bar counts a finished run ("1/30000 runs" or more).
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let finished_runs = |text: &str| -> u64 {
        text.split(" runs,")
            .filter_map(|before| before.rsplit(' ').next()?.split('/').next()?.parse().ok())
            .max()
            .unwrap_or(0)
    };
    loop {
        let n = stdout.read(&mut buf).expect("read the terminal");
        assert!(
            n > 0,
            "the matrix ended before any progress showed: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
        if finished_runs(&String::from_utf8_lossy(&seen)) >= 1 {
            break;
        }
    }
    stdin.write_all(&[0x03]).unwrap();
    stdin.flush().unwrap();
    stdout.read_to_end(&mut seen).unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    let shown = String::from_utf8_lossy(&seen);
    assert_eq!(status.code(), Some(130), "{shown}");
    assert!(
        shown.contains("30000 runs,") && shown.contains(" failed"),
        "the bar: {shown}"
    );
    assert!(shown.contains("interrupted after "), "{shown}");

    let md = std::fs::read_to_string(d.join("m/matrix.md")).unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("m/matrix.json")).unwrap()).unwrap();
    let done = json["runs_done"].as_u64().unwrap();
    assert_eq!(json["runs_planned"], 30_000);
    assert_eq!(json["interrupted"], true);
    assert!((1..30_000).contains(&done), "{done}");
    assert!(
        md.contains(&format!("**Interrupted after {done} of 30000 runs**")),
        "{md}"
    );
    // The cells hold exactly the runs that finished, each with its seed's verdict.
    let cells = json["cells"].as_array().unwrap();
    let in_cells: u64 = cells.iter().map(|c| c["seeds"].as_u64().unwrap()).sum();
    assert_eq!(in_cells, done);
    let listed: usize = cells
        .iter()
        .map(|c| c["runs"].as_array().unwrap().len())
        .sum();
    assert_eq!(listed as u64, done);
    assert!(
        md.contains("| not run |"),
        "cells with no finished run are marked"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
