//! `--budget`: how long a continuous search draws seeds, as wall-clock time (`10m`) or as
//! a number of seeds (`200seeds`, for tests and scripts whose work must not depend on
//! the machine's speed).

use std::time::{Duration, Instant};

/// How much a continuous search may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// Start seeds until this much wall-clock time has passed.
    Time(Duration),
    /// Start this many seeds (seeds this process claims; seeds another process claimed
    /// do not count).
    Seeds(u64),
}

/// A `--budget` that names no budget.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("--budget `{0}`: expected a whole number above 0 and a unit: s, m or h (wall-clock time, e.g. 10m) or seeds (seeds to try, e.g. 200seeds)")]
pub struct BudgetError(pub String);

/// Parses `90s`, `10m`, `2h` or `200seeds`.
pub fn parse_budget(arg: &str) -> Result<Budget, BudgetError> {
    let bad = || BudgetError(arg.to_string());
    let text = arg.trim();
    let digits = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let n: u64 = text[..digits].parse().map_err(|_| bad())?;
    if n == 0 {
        return Err(bad());
    }
    let secs = |per: u64| {
        n.checked_mul(per)
            .map(|s| Budget::Time(Duration::from_secs(s)))
    };
    match &text[digits..] {
        "s" => secs(1),
        "m" => secs(60),
        "h" => secs(3600),
        "seeds" => Some(Budget::Seeds(n)),
        _ => None,
    }
    .ok_or_else(bad)
}

impl Budget {
    /// As `--budget` takes it.
    pub fn label(self) -> String {
        match self {
            Budget::Seeds(n) => format!("{n}seeds"),
            Budget::Time(d) => {
                let s = d.as_secs();
                if s % 3600 == 0 {
                    format!("{}h", s / 3600)
                } else if s % 60 == 0 {
                    format!("{}m", s / 60)
                } else {
                    format!("{s}s")
                }
            }
        }
    }

    /// Whether another seed may start, `claimed` seeds into a search that began at
    /// `started`.
    pub fn allows(self, claimed: u64, started: Instant) -> bool {
        match self {
            Budget::Seeds(n) => claimed < n,
            Budget::Time(d) => started.elapsed() < d,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: every unit, its label read back, and the inputs to refuse.
    use super::*;

    #[test]
    fn units_parse_and_label_back() {
        for (text, budget) in [
            ("90s", Budget::Time(Duration::from_secs(90))),
            ("10m", Budget::Time(Duration::from_secs(600))),
            ("2h", Budget::Time(Duration::from_secs(7200))),
            ("200seeds", Budget::Seeds(200)),
        ] {
            assert_eq!(parse_budget(text), Ok(budget), "{text}");
            assert_eq!(budget.label(), text);
        }
        assert_eq!(parse_budget("120s").unwrap().label(), "2m");
    }

    #[test]
    fn bad_budgets_name_the_flag_and_the_units() {
        for bad in [
            "10",
            "10x",
            "m",
            "0m",
            "0seeds",
            "1.5h",
            "-3m",
            "10 m",
            "99999999999999999999h",
        ] {
            let e = parse_budget(bad).unwrap_err().to_string();
            assert!(e.starts_with("--budget `"), "{bad}: {e}");
            assert!(e.contains("s, m or h") && e.contains("seeds"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_seed_budget_counts_claims() {
        let now = Instant::now();
        assert!(Budget::Seeds(2).allows(1, now));
        assert!(!Budget::Seeds(2).allows(2, now));
        assert!(!Budget::Time(Duration::ZERO).allows(0, now));
    }
}
