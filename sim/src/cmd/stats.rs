//! `sim stats`: figures over many runs' `report.json`, for the nightly scripts (which
//! needed jq and python3 for this before).
//!
//! Each `--get KEY:AGG[:DIGITS]` prints one line. KEY is a dotted path into report.json
//! (`election_latencies_ms`, `elections.starved`, `reads.stale`); the values found there
//! in every report are pooled, a list contributing each of its numbers. AGG is one of:
//!
//! - `count`, `sum`, `mean`, `min`, `max`, or `pN` (nearest-rank percentile, N from 1
//!   to 100, as `sim matrix` computes them) over the pooled numbers;
//! - `per_s`: the sum divided by the reports' simulated seconds (`simulated_ms`);
//! - `nonzero`: how many reports hold a value that is not 0, false, empty or absent;
//! - `eq=V`: how many reports hold exactly V there (`verdict:eq=pass`);
//! - `each`: `LABEL: VALUES` for each report whose value is not zero or empty, joined by
//!   `, ` (`election-storm seed 5: n3, election-storm seed 11: n4`). LABEL is the report's
//!   scenario and seed when no two reports given share both; otherwise (a scenario run
//!   with and without an override, under one seed) it is each report's path as given,
//!   so that a label always names one report.
//!
//! DIGITS rounds to that many decimals (half away from zero). Numbers print in their
//! shortest form (`12`, `18.047`). An aggregate of no numbers prints `--empty` (`none`).

use serde_json::Value;
use std::path::PathBuf;

/// One `--get`: where, what, and how many decimals.
#[derive(Clone, Debug, PartialEq)]
pub struct Get {
    /// The dotted key path.
    pub key: String,
    /// The aggregate.
    pub agg: Agg,
    /// Decimals to round to.
    pub digits: Option<u32>,
}

/// What to compute over a key's values.
#[derive(Clone, Debug, PartialEq)]
pub enum Agg {
    /// How many numbers.
    Count,
    /// Their sum.
    Sum,
    /// Their mean.
    Mean,
    /// The smallest.
    Min,
    /// The largest.
    Max,
    /// The nearest-rank percentile.
    Percentile(usize),
    /// The sum per simulated second.
    PerSecond,
    /// Reports with a value that is not zero or empty.
    Nonzero,
    /// Reports whose value equals this text.
    Equals(String),
    /// `LABEL: VALUES` of each report with a value that is not zero or empty (see
    /// [`labels`]).
    Each,
}

/// The aggregates a `--get` may name, for every error about one.
const AGGREGATES: &str =
    "count, sum, mean, min, max, pN (1 to 100), per_s, nonzero, eq=VALUE, each";

/// A `--get` that cannot be read: the argument as given, and what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GetError {
    /// No `:AGG`.
    #[error("`{0}` is not KEY:AGG[:DIGITS]; AGG is one of {AGGREGATES}")]
    NoAggregate(String),
    /// The key is not a dotted path.
    #[error("`{arg}`: `{key}` is not a dotted key path")]
    NotAKey {
        /// The argument.
        arg: String,
        /// Its key.
        key: String,
    },
    /// An aggregate that is not one of [`AGGREGATES`].
    #[error("`{arg}`: unknown aggregate `{agg}`; allowed: {AGGREGATES}")]
    UnknownAggregate {
        /// The argument.
        arg: String,
        /// Its aggregate.
        agg: String,
    },
    /// Decimals that are not 0 to 9.
    #[error("`{arg}`: `{digits}` is not a number of decimals (0 to 9)")]
    Digits {
        /// The argument.
        arg: String,
        /// Its decimals.
        digits: String,
    },
}

/// Reports that cannot be read, or a `--get` that none of them answers (bad input).
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    /// A report that cannot be read.
    #[error("{}: cannot read: {source}", .file.display())]
    Unreadable {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file that is not a report.json.
    #[error("{}: not a report.json: {source}", .file.display())]
    NotAReport {
        /// The file.
        file: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// A key no report holds (a typo must not read as "none").
    #[error("--get {key}: no report holds the key `{key}`; keys: {}", .keys.join(", "))]
    NoSuchKey {
        /// The key.
        key: String,
        /// The keys the reports hold.
        keys: Vec<String>,
    },
}

/// Parses `KEY:AGG[:DIGITS]`.
pub fn parse_get(s: &str) -> Result<Get, GetError> {
    let mut parts = s.splitn(3, ':');
    let key = parts.next().unwrap_or("").trim();
    let agg = parts
        .next()
        .ok_or_else(|| GetError::NoAggregate(s.to_string()))?;
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(GetError::NotAKey {
            arg: s.to_string(),
            key: key.to_string(),
        });
    }
    let agg = match agg {
        "count" => Agg::Count,
        "sum" => Agg::Sum,
        "mean" => Agg::Mean,
        "min" => Agg::Min,
        "max" => Agg::Max,
        "per_s" => Agg::PerSecond,
        "nonzero" => Agg::Nonzero,
        "each" => Agg::Each,
        a if a.starts_with("eq=") => Agg::Equals(a["eq=".len()..].to_string()),
        a => match a.strip_prefix('p').and_then(|n| n.parse::<usize>().ok()) {
            Some(n) if (1..=100).contains(&n) => Agg::Percentile(n),
            _ => {
                return Err(GetError::UnknownAggregate {
                    arg: s.to_string(),
                    agg: a.to_string(),
                })
            }
        },
    };
    let digits = match parts.next() {
        None => None,
        Some(d) => {
            Some(
                d.parse::<u32>()
                    .ok()
                    .filter(|d| *d <= 9)
                    .ok_or_else(|| GetError::Digits {
                        arg: s.to_string(),
                        digits: d.to_string(),
                    })?,
            )
        }
    };
    Ok(Get {
        key: key.to_string(),
        agg,
        digits,
    })
}

/// Reads every report: a `report.json`, or a report directory holding one. The first
/// that cannot be read or parsed is an error naming it.
pub fn read_reports(paths: &[PathBuf]) -> Result<Vec<Value>, StatsError> {
    paths
        .iter()
        .map(|p| {
            let file: PathBuf = if p.is_dir() {
                p.join("report.json")
            } else {
                p.clone()
            };
            let text = std::fs::read_to_string(&file).map_err(|source| StatsError::Unreadable {
                file: file.clone(),
                source,
            })?;
            serde_json::from_str(&text).map_err(|source| StatsError::NotAReport { file, source })
        })
        .collect()
}

fn lookup<'a>(report: &'a Value, key: &str) -> Option<&'a Value> {
    key.split('.').try_fold(report, |v, seg| match v {
        Value::Array(a) => a.get(seg.parse::<usize>().ok()?),
        _ => v.get(seg),
    })
}

fn numbers(v: &Value, out: &mut Vec<f64>) {
    match v {
        Value::Number(n) => out.extend(n.as_f64()),
        Value::Array(a) => a.iter().for_each(|x| numbers(x, out)),
        _ => {}
    }
}

fn is_nonzero(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(text).collect::<Vec<_>>().join(" "),
        other => other.to_string(),
    }
}

fn number(x: f64, digits: Option<u32>) -> String {
    let x = match digits {
        Some(d) => {
            let scale = 10f64.powi(d as i32);
            (x * scale).round() / scale
        }
        None => x,
    };
    // `{}` prints the shortest form that reads back the same: 12, 18.047. (An empty
    // f64 sum is -0.0, which would print as "-0".)
    format!("{}", if x == 0.0 { 0.0 } else { x })
}

/// What `each` calls every report: `SCENARIO seed SEED` from the report itself when that
/// names one report among `reports`, else each report's path as given (`paths[i]` is
/// where `reports[i]` came from), which always does.
pub fn labels(reports: &[Value], paths: &[PathBuf]) -> Vec<String> {
    let named: Vec<String> = reports
        .iter()
        .map(|r| {
            let scenario = r.get("scenario").map_or_else(|| "?".into(), text);
            let seed = r.get("seed").map_or_else(|| "?".into(), text);
            format!("{scenario} seed {seed}")
        })
        .collect();
    let distinct: std::collections::BTreeSet<&String> = named.iter().collect();
    if distinct.len() == named.len() {
        named
    } else {
        paths.iter().map(|p| p.display().to_string()).collect()
    }
}

/// One `--get` over `reports` (each called by its label in `labels`, for `each`), as its
/// printed line.
pub fn compute(get: &Get, reports: &[Value], labels: &[String], empty: &str) -> String {
    let values: Vec<Option<&Value>> = reports.iter().map(|r| lookup(r, &get.key)).collect();
    let mut pooled = vec![];
    for v in values.iter().flatten() {
        numbers(v, &mut pooled);
    }
    pooled.sort_by(f64::total_cmp);
    let or_empty = |x: Option<f64>| x.map_or_else(|| empty.to_string(), |x| number(x, get.digits));
    match &get.agg {
        Agg::Count => pooled.len().to_string(),
        Agg::Sum => number(pooled.iter().sum(), get.digits),
        Agg::Mean => {
            or_empty((!pooled.is_empty()).then(|| pooled.iter().sum::<f64>() / pooled.len() as f64))
        }
        Agg::Min => or_empty(pooled.first().copied()),
        Agg::Max => or_empty(pooled.last().copied()),
        Agg::Percentile(p) => or_empty(
            (!pooled.is_empty()).then(|| baton_model::checker::failover::nearest_rank(&pooled, *p)),
        ),
        Agg::PerSecond => {
            let ms: f64 = reports
                .iter()
                .filter_map(|r| r.get("simulated_ms")?.as_f64())
                .sum();
            or_empty((ms > 0.0).then(|| pooled.iter().sum::<f64>() * 1000.0 / ms))
        }
        Agg::Nonzero => values
            .iter()
            .filter(|v| is_nonzero(**v))
            .count()
            .to_string(),
        Agg::Equals(want) => values
            .iter()
            .filter(|v| v.is_some_and(|v| text(v) == *want))
            .count()
            .to_string(),
        Agg::Each => labels
            .iter()
            .zip(&values)
            .filter(|(_, v)| is_nonzero(**v))
            .map(|(label, v)| format!("{label}: {}", v.map(text).unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Every dotted key path the reports hold (objects' members, at any depth; a list's
/// items are not keys), sorted, once each.
pub fn keys(reports: &[Value]) -> Vec<String> {
    fn walk(v: &Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
        if let Value::Object(o) = v {
            for (k, x) in o {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                walk(x, &key, out);
                out.insert(key);
            }
        }
    }
    let mut out = std::collections::BTreeSet::new();
    for r in reports {
        walk(r, "", &mut out);
    }
    out.into_iter().collect()
}

/// Every `--get` over the reports at `paths`, one line each. A key that no report
/// holds is an error (a typo must not read as "none"), listing the keys they hold.
pub fn run(paths: &[PathBuf], gets: &[Get], empty: &str) -> Result<String, StatsError> {
    let reports = read_reports(paths)?;
    if let Some(g) = gets
        .iter()
        .find(|g| reports.iter().all(|r| lookup(r, &g.key).is_none()))
    {
        return Err(StatsError::NoSuchKey {
            key: g.key.clone(),
            keys: keys(&reports),
        });
    }
    let labels = labels(&reports, paths);
    Ok(gets
        .iter()
        .map(|g| compute(g, &reports, &labels, empty) + "\n")
        .collect())
}

#[cfg(test)]
mod tests {
    //! Methodology: three hand-written reports whose figures are known, every aggregate
    //! over them, and the forms a bad `--get` takes.
    use super::*;
    use serde_json::json;

    fn reports() -> Vec<Value> {
        vec![
            json!({"scenario": "s", "seed": 0, "verdict": "pass", "simulated_ms": 1000, "backend_requests": 10,
                   "lat": [3.0, 1.0], "elections": {"starved": []}, "reads": {"stale": 0}}),
            json!({"scenario": "s", "seed": 5, "verdict": "fail", "simulated_ms": 1000, "backend_requests": 20,
                   "lat": [2.0], "elections": {"starved": ["n3"]}, "reads": {"stale": 4}}),
            json!({"scenario": "s", "seed": 11, "verdict": "pass", "simulated_ms": 2000, "backend_requests": 3,
                   "lat": [], "elections": {"starved": ["n4", "n1"]}}),
        ]
    }

    fn get(s: &str) -> String {
        let paths: Vec<PathBuf> = (0..3).map(|i| format!("r{i}/report.json").into()).collect();
        compute(
            &parse_get(s).unwrap(),
            &reports(),
            &labels(&reports(), &paths),
            "none",
        )
    }

    #[test]
    fn every_aggregate_over_known_reports() {
        assert_eq!(get("lat:count"), "3");
        assert_eq!(get("lat:sum"), "6");
        assert_eq!(get("lat:mean"), "2");
        assert_eq!(get("lat:min"), "1");
        assert_eq!(get("lat:max"), "3");
        assert_eq!(get("lat:p50"), "2");
        assert_eq!(get("lat:p100"), "3");
        assert_eq!(get("backend_requests:per_s:2"), "8.25");
        assert_eq!(get("verdict:eq=pass"), "2");
        assert_eq!(get("elections.starved:nonzero"), "2");
        assert_eq!(
            get("elections.starved:each"),
            "s seed 5: n3, s seed 11: n4 n1"
        );
        assert_eq!(get("reads.stale:nonzero"), "1");
        assert_eq!(get("reads.stale:sum"), "4");
        assert_eq!(get("missing:max"), "none");
        assert_eq!(get("missing:sum"), "0");
        assert_eq!(number(2.0 / 3.0, Some(1)), "0.7");
        assert_eq!(number(18.047, None), "18.047");
    }

    #[test]
    fn each_labels_a_report_by_scenario_and_seed_or_by_path_when_two_share_them() {
        let paths: Vec<PathBuf> = ["a/1/report.json", "b/1/report.json"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let fenced = json!({"scenario": "x", "seed": 1, "verdict": "pass"});
        let unfenced = json!({"scenario": "x", "seed": 1, "verdict": "fail"});
        let both = [fenced.clone(), unfenced];
        let each = parse_get("verdict:each").unwrap();
        assert_eq!(
            compute(&each, &both, &labels(&both, &paths), "none"),
            "a/1/report.json: pass, b/1/report.json: fail"
        );
        let other = json!({"scenario": "y", "seed": 1, "verdict": "fail"});
        let two = [fenced, other];
        assert_eq!(
            compute(&each, &two, &labels(&two, &paths), "none"),
            "x seed 1: pass, y seed 1: fail"
        );
    }

    #[test]
    fn a_key_no_report_holds_is_an_error_listing_the_keys() {
        let dir = std::env::temp_dir().join(format!("baton-stats-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("report.json");
        std::fs::write(&path, reports()[0].to_string()).unwrap();
        let err = run(
            std::slice::from_ref(&path),
            &[parse_get("nosuch.key:mean").unwrap()],
            "none",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("no report holds the key `nosuch.key`"),
            "{err}"
        );
        assert!(
            err.contains("elections.starved") && err.contains("verdict"),
            "{err}"
        );
        let ok = run(&[path], &[parse_get("reads.stale:sum").unwrap()], "none").unwrap();
        assert_eq!(ok, "0\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_bad_get_names_what_is_allowed() {
        let err = |s: &str| parse_get(s).unwrap_err().to_string();
        assert!(err("lat").contains("KEY:AGG"));
        assert!(err("lat:median").contains("allowed: count"));
        assert!(parse_get("lat:p0").is_err());
        assert!(err("lat:max:x").contains("decimals"));
        assert!(parse_get("a..b:max").is_err());
    }
}
