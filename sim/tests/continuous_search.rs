//! `sim search --budget`: a continuous search draws seeds from a seeded generator into a
//! SQLite store. The same draw seed and budget give the same store; a resumed run goes
//! on with the draw and tries no seed twice; two processes writing one store at once
//! lose nothing; Ctrl-C (SIGINT) keeps what was found; `--merge` reads stores; bad
//! input exits 2 with one line naming the flag.
//!
//! Methodology: the real binary on scenarios/swarm.toml with the combination canary
//! (`etcd-lease.canary=fence-retry-when-cut-off`, on the etcd cluster model, where
//! seeds 0..1000 hold 14 failures), so that the search must find something: the
//! reference run asserts it did. Budgets are in seeds, never in time, so the work done
//! does not depend on the machine. Stores are compared table by table, without the wall
//! times (`wall_ms`, `found_at`, the runs' times) and without which run tried a seed.

mod common;
use common::{sim, temp_dir};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

const CANARY: &str = "etcd-lease.canary=fence-retry-when-cut-off";
/// The draw seed and budget of the reference run: chosen so that the draw holds
/// failures of the canary (the reference asserts it).
const DRAW: &str = "1";
const SEEDS: u64 = 120;

fn swarm() -> String {
    format!("{}/../scenarios/swarm.toml", env!("CARGO_MANIFEST_DIR"))
}

/// `sim search swarm.toml --budget ... --draw-seed ... --store STORE` with the canary.
fn args(store: &str, budget: &str, draw: &str) -> Vec<String> {
    let mut a: Vec<String> = vec!["search".into(), swarm()];
    for w in [
        "--budget",
        budget,
        "--draw-seed",
        draw,
        "--store",
        store,
        "--set",
        CANARY,
        "--quiet",
    ] {
        a.push(w.into());
    }
    a
}

fn search(d: &Path, store: &str, budget: &str, draw: &str, extra: &[&str]) -> Output {
    let mut a = args(store, budget, draw);
    a.extend(extra.iter().map(|s| s.to_string()));
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    sim(&a, d)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn open(store: &Path) -> rusqlite::Connection {
    let c = rusqlite::Connection::open(store).unwrap();
    c.busy_timeout(std::time::Duration::from_secs(60)).unwrap();
    c
}

/// A store's contents, apart from wall times and which run tried a seed.
#[derive(Debug, PartialEq)]
struct Dump {
    /// (seed, draw seed, position, outcome), by seed.
    seeds: Vec<(i64, i64, i64, String)>,
    /// (seed, signature, properties, first violation ms, recheck), by seed.
    failures: Vec<(i64, String, String, f64, String)>,
    /// (signature, seed, first violation ms, scenario, shrink, shrunk file).
    signatures: Vec<(String, i64, f64, String, String, Option<String>)>,
    /// (draw seed, next position).
    draws: Vec<(i64, i64)>,
}

fn dump(store: &Path) -> Dump {
    let c = open(store);
    let seeds = c
        .prepare("SELECT seed, draw_seed, position, outcome FROM seeds ORDER BY seed")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let failures = c
        .prepare("SELECT seed, signature, properties, first_violation_ms, recheck FROM failures ORDER BY seed")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let signatures = c
        .prepare("SELECT signature, seed, first_violation_ms, scenario_toml, shrink, min_toml FROM signatures ORDER BY signature")
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let draws = c
        .prepare("SELECT draw_seed, next_position FROM draws ORDER BY draw_seed")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    Dump {
        seeds,
        failures,
        signatures,
        draws,
    }
}

/// The seeds each run tried, by run.
fn seeds_by_run(store: &Path) -> Vec<Vec<i64>> {
    let c = open(store);
    let runs: Vec<i64> = c
        .prepare("SELECT id FROM runs ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    runs.iter()
        .map(|run| {
            c.prepare("SELECT seed FROM seeds WHERE run = ?1 ORDER BY position")
                .unwrap()
                .query_map([run], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        })
        .collect()
}

/// One search of `SEEDS` seeds into a fresh store, two jobs: what every other run of
/// the same draw must give. Made once, by whichever test asks first.
fn reference() -> &'static (PathBuf, Dump) {
    static REFERENCE: OnceLock<(PathBuf, Dump)> = OnceLock::new();
    REFERENCE.get_or_init(|| {
        let d = temp_dir("continuous-reference");
        let budget = format!("{SEEDS}seeds");
        let o = search(&d, "stores/ref.sqlite", &budget, DRAW, &["--jobs", "2"]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let store = d.join("stores/ref.sqlite");
        let dump = dump(&store);
        // The canary: the draw found the combination, rechecked in a fresh process and
        // shrunk.
        assert!(!dump.failures.is_empty(), "no failure in {SEEDS} seeds");
        assert!(
            dump.failures
                .iter()
                .all(|f| f.1.contains("double_leader_acting") && f.4 == "repeated"),
            "{:?}",
            dump.failures
        );
        for s in &dump.signatures {
            assert_eq!(s.4, "done", "{}: shrink {}", s.0, s.4);
            let min = s.5.as_deref().unwrap();
            assert!(min.contains(&format!("seed = {}", s.1)), "{min}");
            assert!(min.matches("[[faults]]").count() <= 3, "{min}");
        }
        // Drawn at random, not a range: every position once, seeds far apart.
        let mut positions: Vec<i64> = dump.seeds.iter().map(|s| s.2).collect();
        positions.sort();
        assert_eq!(positions, (0..SEEDS as i64).collect::<Vec<_>>());
        assert!(dump.seeds.iter().all(|s| s.3 != "running"));
        assert!(
            dump.seeds.last().unwrap().0 > 1_000_000_000,
            "{:?}",
            dump.seeds
        );
        assert_eq!(dump.draws, vec![(DRAW.parse().unwrap(), SEEDS as i64)]);
        (store, dump)
    })
}

#[test]
fn the_same_draw_seed_and_budget_give_the_same_store() {
    let (_, want) = reference();
    let d = temp_dir("continuous-again");
    let budget = format!("{SEEDS}seeds");
    // One job this time: the store must not depend on how many ran it.
    let o = search(&d, "again.sqlite", &budget, DRAW, &["--jobs", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(&dump(&d.join("again.sqlite")), want);
    // Another draw seed draws other seeds.
    let o = search(
        &d,
        "other.sqlite",
        "3seeds",
        "2",
        &["--shrink-max-runs", "0"],
    );
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let other = dump(&d.join("other.sqlite"));
    assert!(other
        .seeds
        .iter()
        .all(|s| !want.seeds.iter().any(|w| w.0 == s.0)));
}

#[test]
fn a_resumed_run_goes_on_with_the_draw_and_tries_no_seed_twice() {
    let (_, want) = reference();
    let d = temp_dir("continuous-resume");
    let half = format!("{}seeds", SEEDS / 2);
    let o = search(&d, "r.sqlite", &half, DRAW, &[]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    // The second run, without --quiet: the table of signatures.
    let mut a = args("r.sqlite", &half, DRAW);
    a.retain(|w| w != "--quiet");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let o = sim(&a, &d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("| signature | failures | first seen (UTC) | kept seed | shrunk |"),
        "{table}"
    );
    assert!(
        table.contains(&format!("The store: {SEEDS} seeds tried in 2 runs")),
        "{table}"
    );
    for s in &want.signatures {
        assert!(table.contains(&format!("| {} |", s.1)), "{table}");
    }
    let runs = seeds_by_run(&d.join("r.sqlite"));
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].len() as u64, SEEDS / 2);
    assert_eq!(runs[1].len() as u64, SEEDS / 2);
    assert!(
        runs[1].iter().all(|s| !runs[0].contains(s)),
        "a seed tried twice"
    );
    assert_eq!(&dump(&d.join("r.sqlite")), want);
}

#[test]
fn two_processes_writing_one_store_at_once_lose_nothing() {
    let (_, want) = reference();
    let d = temp_dir("continuous-two");
    let half = format!("{}seeds", SEEDS / 2);
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_sim"))
                .args(args("shared.sqlite", &half, DRAW))
                .args(["--jobs", "1"])
                .current_dir(&d)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    }
    let store = d.join("shared.sqlite");
    assert_eq!(&dump(&store), want);
    let runs = seeds_by_run(&store);
    assert_eq!(
        runs.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![(SEEDS / 2) as usize; 2]
    );
    // They ran at once: each began before the other ended.
    let c = open(&store);
    let times: Vec<(String, String)> = c
        .prepare("SELECT started_at, ended_at FROM runs ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        times[0].0 <= times[1].1 && times[1].0 <= times[0].1,
        "{times:?}"
    );
}

#[test]
fn an_interrupted_run_keeps_what_it_found_and_resumes() {
    let d = temp_dir("continuous-sigint");
    let store = d.join("s.sqlite");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(args("s.sqlite", "100000seeds", DRAW))
        .args(["--jobs", "2"])
        .current_dir(&d)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for what the store says, not for a duration: a failure committed.
    let found: Vec<i64> = loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("sim ended before it found anything: {status}");
        }
        let seen: Option<Vec<i64>> = store.is_file().then(|| {
            let read = || -> rusqlite::Result<Vec<i64>> {
                let c = rusqlite::Connection::open(&store)?;
                c.busy_timeout(std::time::Duration::from_secs(5))?;
                let mut stmt = c.prepare("SELECT seed FROM failures ORDER BY seed")?;
                let rows = stmt.query_map([], |r| r.get(0))?;
                rows.collect()
            };
            // Before the schema is made the query fails: nothing found yet.
            read().unwrap_or_default()
        });
        match seen {
            Some(s) if !s.is_empty() => break s,
            _ => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    };
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(stderr(&o).contains("interrupted"), "{}", stderr(&o));
    let after = dump(&store);
    let kept: Vec<i64> = after.failures.iter().map(|f| f.0).collect();
    assert!(found.iter().all(|s| kept.contains(s)), "{found:?} {kept:?}");
    assert!(
        after.seeds.iter().all(|s| s.3 != "running"),
        "{:?}",
        after.seeds
    );
    let c = open(&store);
    let ending: String = c
        .query_row("SELECT ending FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ending, "interrupted");
    let tried = after.seeds.len();
    assert!(tried < 100_000);
    // The next run goes on with the draw, shrinks what the interrupt left pending, and
    // tries none of the first run's seeds.
    let o = search(&d, "s.sqlite", "4seeds", DRAW, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let runs = seeds_by_run(&store);
    assert_eq!(runs[0].len(), tried);
    assert_eq!(runs[1].len(), 4);
    assert!(runs[1].iter().all(|s| !runs[0].contains(s)));
    let resumed = dump(&store);
    let first_positions = resumed.seeds.iter().filter(|s| runs[0].contains(&s.0));
    let last_first = first_positions.map(|s| s.2).max().unwrap();
    assert!(resumed
        .seeds
        .iter()
        .filter(|s| runs[1].contains(&s.0))
        .all(|s| s.2 > last_first));
    assert!(
        resumed.signatures.iter().all(|s| s.4 == "done"),
        "{:?}",
        resumed.signatures
    );
}

#[test]
fn merge_reads_stores_and_directories_of_stores() {
    let (store, want) = reference();
    let d = temp_dir("continuous-merge");
    for (from, out) in [
        (store.to_str().unwrap(), "m-file"),
        (store.parent().unwrap().to_str().unwrap(), "m-dir"),
    ] {
        let o = sim(&["search", "--merge", from, "--out", out], &d);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let lines: Vec<serde_json::Value> =
            std::fs::read_to_string(d.join(out).join("failures.jsonl"))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        let seeds: Vec<i64> = lines.iter().map(|f| f["seed"].as_i64().unwrap()).collect();
        assert_eq!(seeds, want.failures.iter().map(|f| f.0).collect::<Vec<_>>());
        let meta: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(d.join(out).join("search.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(meta["seeds_run"].as_u64(), Some(SEEDS), "{meta}");
        for s in &want.signatures {
            let toml = std::fs::read_to_string(d.join(out).join(format!("{}.toml", s.0))).unwrap();
            assert_eq!(toml, s.3);
            let min =
                std::fs::read_to_string(d.join(out).join(format!("{}.min.toml", s.0))).unwrap();
            assert_eq!(Some(min), s.5);
        }
    }
    // The shrunk file is a plain scenario that fails under sim run.
    let s = &want.signatures[0];
    let min = d.join("m-file").join(format!("{}.min.toml", s.0));
    let o = sim(
        &["run", min.to_str().unwrap(), "--out", "rerun", "--quiet"],
        &d,
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // The same store twice: each seed counted once.
    let from = store.to_str().unwrap();
    let o = sim(&["search", "--merge", from, from, "--out", "twice"], &d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("twice/search.json")).unwrap())
            .unwrap();
    assert_eq!(meta["seeds_run"].as_u64(), Some(SEEDS), "{meta}");
    assert_eq!(meta["failures"].as_u64(), Some(want.failures.len() as u64));
}

#[test]
fn bad_input_exits_2_with_one_line_naming_the_flag() {
    let d = temp_dir("continuous-bad");
    // A budget in no unit: clap's first line names the flag and the units.
    for bad in ["10x", "10", "0seeds"] {
        let o = search(&d, "s.sqlite", bad, "0", &[]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        let first = stderr(&o).lines().next().unwrap_or("").to_string();
        assert!(
            first.contains("--budget") && first.contains("s, m or h") && first.contains("seeds"),
            "{bad}: {first}"
        );
        assert!(!d.join("s.sqlite").exists());
    }
    // A file that is not a store: one line, and the file is left as it was.
    std::fs::write(d.join("notes.txt"), "my notes\n".repeat(200)).unwrap();
    let foreign = d.join("other.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
        .unwrap();
    let foreign_bytes = std::fs::read(&foreign).unwrap();
    for (file, why) in [
        ("notes.txt", "not a SQLite database"),
        ("other.db", "a SQLite database of something else"),
    ] {
        let o = search(&d, file, "5seeds", "0", &[]);
        assert_eq!(o.status.code(), Some(2), "{file}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("--store {file}: not a Baton search store ({why})")),
            "{err}"
        );
        let o = sim(&["search", "--merge", file, "--out", "m"], &d);
        assert_eq!(o.status.code(), Some(2), "{file}: {}", stderr(&o));
        assert!(stderr(&o).contains(&format!("--merge {file}: not a Baton search store")));
        assert!(!d.join("m").exists());
    }
    assert_eq!(
        std::fs::read_to_string(d.join("notes.txt")).unwrap(),
        "my notes\n".repeat(200)
    );
    assert_eq!(std::fs::read(&foreign).unwrap(), foreign_bytes);
    // A store of another search: the same file with another --set.
    let o = search(&d, "one.sqlite", "1seeds", "0", &["--shrink-max-runs", "0"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let o = search(&d, "one.sqlite", "1seeds", "0", &["--set", "fencing=false"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("--store one.sqlite: the store holds a search of"));
    // --budget's companions without it, and --budget with a range.
    for extra in [
        &["--store", "x.sqlite"][..],
        &["--draw-seed", "3"][..],
        &["--budget", "5seeds", "--seeds", "0..10"][..],
    ] {
        let mut a = vec!["search", "../s.toml"];
        a.extend_from_slice(extra);
        let o = sim(&a, &d);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
    }
}
