//! One `[[faults]]` table as written ([`FaultSpec`]): its repetitions, and how it is
//! checked against its kind and resolved into a typed [`Fault`].

use super::{
    Fault, FaultError, FaultKind, PausePoint, Trigger, When, MAX_LATENCY_MS, MAX_MS, MAX_SKEW_MS,
};
use serde::{Deserialize, Serialize};

/// One `[[faults]]` table as written. Keys not taken by `kind` are rejected by `resolve`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// What to inject.
    pub kind: FaultKind,
    /// When, in simulated ms since the start. Exactly one of `at_ms` and `after`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
    /// Or: what to wait for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Trigger>,
    /// Extra wait after the trigger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// A seeded offset, drawn uniformly from 0 to this many ms for every firing, added to
    /// the fault's time (`at_ms`, or the trigger plus `delay_ms`): the fault lands at a
    /// different phase of the protocol's timers under each seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<u64>,
    /// A node name, `leader` (whoever leads when it fires), `previous` (what the previous
    /// fault hit), and for clocks also `backend`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// How long a pause, partition or network change lasts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Where a pause lands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub point: Option<PausePoint>,
    /// With `kind = "kill"`: start the killed node again this long after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_after_ms: Option<u64>,
    /// One end of a partition: a node name, `leader`, `previous`, `backend` (the
    /// protocol's service; for peer-to-peer protocols, the node's peers), `resource` or
    /// `client`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The other end of a partition; or a transfer's designated successor (a node name
    /// or `next`, the default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Cut only `from -> to`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub one_way: Option<bool>,
    /// Clock offset from global time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_ms: Option<i64>,
    /// Clock rate error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift_ppm: Option<i64>,
    /// Clock jump.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_ms: Option<i64>,
    /// Lowest one-way latency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms_min: Option<u64>,
    /// Highest one-way latency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms_max: Option<u64>,
    /// Packet loss in parts per million.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_ppm: Option<u64>,
    /// Repeat the fault every this many ms from `at_ms` (with `count` or `until_ms`).
    /// The resolved scenario lists every repetition as a fault of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub every_ms: Option<u64>,
    /// With `every_ms`: how many times the fault fires in all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// With `every_ms`: the last time it may fire (inclusive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until_ms: Option<u64>,
}

/// The most repetitions one scenario may expand to, so that a slip of the pen cannot
/// ask for millions of faults.
pub const MAX_REPETITIONS: u64 = 100_000;

/// `min..=max` as a latency range, or the error naming `latency_ms_min`.
fn latency_range(min: u64, max: u64) -> Result<(u64, u64), FaultError> {
    if min > max {
        return Err(FaultError::new(
            "latency_ms_min",
            format!("{min} is above latency_ms_max {max}"),
        ));
    }
    Ok((min, max))
}

impl FaultSpec {
    /// A table of `kind` firing at `at_ms`, every other key unset.
    pub fn at(kind: FaultKind, at_ms: u64) -> FaultSpec {
        FaultSpec {
            kind,
            at_ms: Some(at_ms),
            after: None,
            delay_ms: None,
            jitter_ms: None,
            target: None,
            duration_ms: None,
            point: None,
            restart_after_ms: None,
            from: None,
            to: None,
            one_way: None,
            offset_ms: None,
            drift_ppm: None,
            step_ms: None,
            latency_ms_min: None,
            latency_ms_max: None,
            loss_ppm: None,
            every_ms: None,
            count: None,
            until_ms: None,
        }
    }

    fn present_keys(&self) -> Vec<&'static str> {
        let mut keys = vec![];
        macro_rules! has {
            ($($f:ident),*) => { $( if self.$f.is_some() { keys.push(stringify!($f)); } )* };
        }
        has!(
            target,
            duration_ms,
            point,
            restart_after_ms,
            from,
            to,
            one_way,
            offset_ms,
            drift_ppm,
            step_ms,
            latency_ms_min,
            latency_ms_max,
            loss_ppm
        );
        keys
    }

    /// Whether the table asks to repeat (`every_ms`, `count` or `until_ms`).
    pub fn repeats(&self) -> bool {
        self.every_ms.is_some() || self.count.is_some() || self.until_ms.is_some()
    }

    /// The fault's firings: itself if it does not repeat; else one copy per repetition,
    /// at `at_ms + k * every_ms`, without the repetition keys. The run lasts
    /// `duration_ms`; every firing must come before its end.
    pub fn repetitions(&self, duration_ms: u64) -> Result<Vec<FaultSpec>, FaultError> {
        if !self.repeats() {
            return Ok(vec![self.clone()]);
        }
        let every = self.every_ms.ok_or_else(|| {
            let key = if self.count.is_some() {
                "count"
            } else {
                "until_ms"
            };
            FaultError::new(key, "repeats only with every_ms")
        })?;
        if every == 0 {
            return Err(FaultError::new("every_ms", "must be at least 1"));
        }
        let Some(first) = self.at_ms else {
            return Err(FaultError::new(
                "every_ms",
                "a repeating fault needs at_ms (when it first fires), not after",
            ));
        };
        let n = match (self.count, self.until_ms) {
            (Some(_), Some(_)) => {
                return Err(FaultError::new(
                    "until_ms",
                    "give count or until_ms, not both",
                ))
            }
            (None, None) => {
                return Err(FaultError::new(
                    "every_ms",
                    "needs count (how many times) or until_ms (until when)",
                ))
            }
            (Some(0), None) => return Err(FaultError::new("count", "must be at least 1")),
            (Some(c), None) => c,
            (None, Some(u)) if u < first => {
                return Err(FaultError::new(
                    "until_ms",
                    format!("{u} is before at_ms {first}"),
                ))
            }
            (None, Some(u)) => (u - first) / every + 1,
        };
        // The key that set how many times it fires.
        let key = if self.count.is_some() {
            "count"
        } else {
            "until_ms"
        };
        if n > MAX_REPETITIONS {
            return Err(FaultError::new(
                key,
                format!("{n} repetitions: at most {MAX_REPETITIONS}"),
            ));
        }
        let last = first.saturating_add((n - 1).saturating_mul(every));
        if last >= duration_ms {
            return Err(FaultError::new(
                key,
                format!("the last repetition would fire at {last} ms, not before duration_ms {duration_ms}"),
            ));
        }
        Ok((0..n)
            .map(|k| FaultSpec {
                at_ms: Some(first + k * every),
                every_ms: None,
                count: None,
                until_ms: None,
                ..self.clone()
            })
            .collect())
    }

    /// Checks the table against its kind and returns when it fires and what it does.
    /// `base_network` fills a `network` fault's unset keys.
    pub fn resolve(
        &self,
        base_latency_ms: (u64, u64),
        base_loss_ppm: u64,
    ) -> Result<(When, Fault), FaultError> {
        self.check_keys()?;
        let when = self.when()?;
        let fault = self.fault(base_latency_ms, base_loss_ppm)?;
        if let Fault::Pause { duration_ms: 0, .. } | Fault::SlowDisk { duration_ms: 0, .. } = fault
        {
            return Err(FaultError::new("duration_ms", "must be at least 1"));
        }
        self.check_limits()?;
        Ok((when, fault))
    }

    /// Every key given belongs to the kind, and every key the kind requires is given.
    fn check_keys(&self) -> Result<(), FaultError> {
        let allowed = self.kind.keys();
        let names: Vec<&str> = allowed.iter().map(|(k, _)| *k).collect();
        let present = self.present_keys();
        if let Some(key) = present.iter().find(|k| !names.contains(k)) {
            let takes = if names.is_empty() {
                "no other keys".to_string()
            } else {
                names.join(", ")
            };
            return Err(FaultError::new(
                key.to_string(),
                format!(
                    "not a key of kind `{}` (it takes: {takes})",
                    self.kind.name()
                ),
            ));
        }
        match allowed
            .iter()
            .find(|(k, required)| *required && !present.contains(k))
        {
            Some((key, _)) => Err(FaultError::new(
                key.to_string(),
                format!("missing: kind `{}` requires it", self.kind.name()),
            )),
            None => Ok(()),
        }
    }

    /// When it fires: `at_ms`, or `delay_ms` after its trigger.
    fn when(&self) -> Result<When, FaultError> {
        match (self.at_ms, self.after) {
            (Some(_), None) if self.delay_ms.is_some() => Err(FaultError::new(
                "delay_ms",
                "only with `after` (use `at_ms` alone for a fixed time)",
            )),
            (Some(at), None) => Ok(When::At(at)),
            (None, Some(t)) => Ok(When::After(t, self.delay_ms.unwrap_or(0))),
            (Some(_), Some(_)) => Err(FaultError::new(
                "after",
                "give `at_ms` or `after`, not both",
            )),
            (None, None) => Err(FaultError::new(
                "at_ms",
                "missing: give `at_ms` or `after` (leader-elected, previous-fault-ended)",
            )),
        }
    }

    /// The typed fault; a `network` fault's unset keys come from the scenario's network.
    fn fault(&self, base_latency_ms: (u64, u64), base_loss_ppm: u64) -> Result<Fault, FaultError> {
        let target = || self.target.clone().unwrap_or_default();
        let (from, to) = (
            || self.from.clone().unwrap_or_default(),
            || self.to.clone().unwrap_or_default(),
        );
        Ok(match self.kind {
            FaultKind::Kill => Fault::Kill {
                target: target(),
                restart_after_ms: self.restart_after_ms,
            },
            FaultKind::Restart => Fault::Restart { target: target() },
            FaultKind::Resign => Fault::Resign { target: target() },
            FaultKind::Transfer => Fault::Transfer {
                target: target(),
                to: self.to.clone().unwrap_or_else(|| super::NEXT.to_string()),
            },
            FaultKind::Pause => Fault::Pause {
                target: target(),
                duration_ms: self.duration_ms.unwrap_or(0),
                point: self.point.unwrap_or_default(),
            },
            FaultKind::Partition => Fault::Partition {
                from: from(),
                to: to(),
                one_way: self.one_way.unwrap_or(false),
                duration_ms: self.duration_ms,
            },
            FaultKind::SlowDisk => Fault::SlowDisk {
                target: target(),
                duration_ms: self.duration_ms.unwrap_or(0),
            },
            FaultKind::Heal => Fault::Heal,
            FaultKind::ClockOffset => Fault::ClockOffset {
                target: target(),
                offset_ms: self.offset_ms.unwrap_or(0),
            },
            FaultKind::ClockDrift => Fault::ClockDrift {
                target: target(),
                drift_ppm: self.drift_ppm.unwrap_or(0),
            },
            FaultKind::ClockStep => Fault::ClockStep {
                target: target(),
                step_ms: self.step_ms.unwrap_or(0),
            },
            FaultKind::SlowLink => {
                let (min, max) = latency_range(
                    self.latency_ms_min.unwrap_or(0),
                    self.latency_ms_max.unwrap_or(0),
                )?;
                Fault::SlowLink {
                    from: from(),
                    to: to(),
                    latency_ms_min: min,
                    latency_ms_max: max,
                    duration_ms: self.duration_ms,
                }
            }
            FaultKind::Network => {
                let (min, max) = latency_range(
                    self.latency_ms_min.unwrap_or(base_latency_ms.0),
                    self.latency_ms_max.unwrap_or(base_latency_ms.1),
                )?;
                let loss_ppm = self.loss_ppm.unwrap_or(base_loss_ppm);
                if loss_ppm > 1_000_000 {
                    return Err(FaultError::new(
                        "loss_ppm",
                        format!("{loss_ppm} is above 1000000 (all packets)"),
                    ));
                }
                Fault::Network {
                    latency_ms_min: min,
                    latency_ms_max: max,
                    loss_ppm,
                    duration_ms: self.duration_ms,
                }
            }
        })
    }

    /// Bounds that keep every later computation (ms -> µs, sums) far from overflow: a
    /// table of (key, value given, lowest, highest, the range in words).
    fn check_limits(&self) -> Result<(), FaultError> {
        const HOUR: &str = "0 to 3600000 (one simulated hour)";
        const DAY: &str = "-86400000 to 86400000 (a day)";
        let ms = |v: Option<u64>| v.map(i128::from);
        let signed = |v: Option<i64>| v.map(i128::from);
        let limits: [(&str, Option<i128>, i128, i128, &str); 9] = [
            ("duration_ms", ms(self.duration_ms), 0, MAX_MS, HOUR),
            (
                "restart_after_ms",
                ms(self.restart_after_ms),
                0,
                MAX_MS,
                HOUR,
            ),
            ("delay_ms", ms(self.delay_ms), 0, MAX_MS, HOUR),
            ("jitter_ms", ms(self.jitter_ms), 0, MAX_MS, HOUR),
            (
                "offset_ms",
                signed(self.offset_ms),
                -MAX_SKEW_MS,
                MAX_SKEW_MS,
                DAY,
            ),
            (
                "step_ms",
                signed(self.step_ms),
                -MAX_SKEW_MS,
                MAX_SKEW_MS,
                DAY,
            ),
            (
                "drift_ppm",
                signed(self.drift_ppm),
                -999_999,
                1_000_000,
                "-999999 to 1000000 (a clock must run forwards)",
            ),
            (
                "latency_ms_min",
                ms(self.latency_ms_min),
                0,
                MAX_LATENCY_MS,
                "0 to 60000",
            ),
            (
                "latency_ms_max",
                ms(self.latency_ms_max),
                0,
                MAX_LATENCY_MS,
                "0 to 60000",
            ),
        ];
        for (key, v, lo, hi, allowed) in limits {
            if let Some(v) = v.filter(|v| *v < lo || *v > hi) {
                return Err(FaultError::new(
                    key,
                    format!("{v} is out of range: {allowed}"),
                ));
            }
        }
        Ok(())
    }

    /// The same table with every optional key of its kind filled in with the value in
    /// force, for the resolved `scenario.toml`.
    pub fn filled(&self, fault: &Fault) -> FaultSpec {
        let mut out = self.clone();
        match fault {
            Fault::Pause { point, .. } => out.point = Some(*point),
            Fault::Partition { one_way, .. } => out.one_way = Some(*one_way),
            Fault::Transfer { to, .. } => out.to = Some(to.clone()),
            Fault::Network {
                latency_ms_min,
                latency_ms_max,
                loss_ppm,
                ..
            } => {
                out.latency_ms_min = Some(*latency_ms_min);
                out.latency_ms_max = Some(*latency_ms_max);
                out.loss_ppm = Some(*loss_ppm);
            }
            _ => {}
        }
        if out.after.is_some() && out.delay_ms.is_none() {
            out.delay_ms = Some(0);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-written tables; each error names the key a user must fix.
    use super::*;

    fn kill(at_ms: Option<u64>) -> FaultSpec {
        FaultSpec {
            at_ms,
            target: Some("leader".into()),
            ..FaultSpec::at(FaultKind::Kill, 0)
        }
    }

    fn times(f: &FaultSpec, duration_ms: u64) -> Vec<u64> {
        f.repetitions(duration_ms)
            .unwrap()
            .iter()
            .map(|r| {
                assert!(!r.repeats(), "a repetition does not repeat again");
                r.at_ms.unwrap()
            })
            .collect()
    }

    #[test]
    fn every_kind_parses_back_from_its_name() {
        for k in FaultKind::ALL {
            assert_eq!(FaultKind::parse(k.name()), Some(k));
        }
        assert_eq!(FaultKind::parse("nap"), None);
    }

    #[test]
    fn repetitions_by_count_and_by_until() {
        let once = kill(Some(500));
        assert_eq!(times(&once, 10_000), vec![500]);
        let by_count = FaultSpec {
            every_ms: Some(1000),
            count: Some(3),
            ..kill(Some(500))
        };
        assert_eq!(times(&by_count, 10_000), vec![500, 1500, 2500]);
        let by_until = FaultSpec {
            every_ms: Some(1000),
            until_ms: Some(2500),
            ..kill(Some(500))
        };
        assert_eq!(times(&by_until, 10_000), vec![500, 1500, 2500]);
    }

    #[test]
    fn bad_repetitions_name_their_key() {
        let key = |f: FaultSpec| f.repetitions(10_000).unwrap_err().key;
        let rep = |every_ms, count, until_ms, at_ms| FaultSpec {
            every_ms,
            count,
            until_ms,
            ..kill(at_ms)
        };
        assert_eq!(key(rep(None, Some(3), None, Some(0))), "count");
        assert_eq!(key(rep(Some(0), Some(3), None, Some(0))), "every_ms");
        assert_eq!(key(rep(Some(100), None, None, Some(0))), "every_ms");
        assert_eq!(key(rep(Some(100), Some(3), Some(900), Some(0))), "until_ms");
        assert_eq!(key(rep(Some(100), Some(0), None, Some(0))), "count");
        assert_eq!(key(rep(Some(100), None, Some(5), Some(10))), "until_ms");
        assert_eq!(key(rep(Some(100), Some(3), None, None)), "every_ms");
        assert_eq!(key(rep(Some(1000), Some(11), None, Some(0))), "count");
        assert_eq!(
            key(rep(Some(1), Some(MAX_REPETITIONS + 1), None, Some(0))),
            "count"
        );
    }
}
