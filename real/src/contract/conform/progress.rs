//! Progress of a `conform` run on stderr: the trials done of all, the experiment and
//! trial running, and the time left.
//!
//! The time left is the [`estimate`](crate::contract::conform::estimate) of the trials
//! not yet finished, less what each running trial has already run (never below zero):
//! the same figures as the first line, counted down. On a terminal it is a bar
//! (indicatif) redrawn every second; piped or redirected (a CI log), one line per trial
//! as it starts. `--quiet` shows neither.

use crate::contract::conform::estimate;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The trials still to finish, and the ones running.
struct State {
    /// The estimates of the trials not started yet, summed.
    waiting_ms: u64,
    /// Each running trial: its label, its start and its estimate.
    running: Vec<(String, Instant, u64)>,
}

impl State {
    fn left_ms(&self) -> u64 {
        let running: u64 = self
            .running
            .iter()
            .map(|(_, t0, est)| est.saturating_sub(t0.elapsed().as_millis() as u64))
            .sum();
        self.waiting_ms + running
    }

    fn labels(&self) -> String {
        let l: Vec<&str> = self.running.iter().map(|(l, _, _)| l.as_str()).collect();
        l.join(", ")
    }
}

/// The progress of one run.
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    plain: bool,
    state: Arc<Mutex<State>>,
}

impl Progress {
    /// Progress over `trials` trials whose estimates sum to `total_ms`; `quiet` shows
    /// nothing.
    pub fn new(trials: u64, total_ms: u64, quiet: bool) -> Progress {
        let state = Arc::new(Mutex::new(State {
            waiting_ms: total_ms,
            running: vec![],
        }));
        let terminal = std::io::stderr().is_terminal();
        let bar = (!quiet && terminal).then(|| {
            let bar = indicatif::ProgressBar::new(trials);
            let s = state.clone();
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} trials, {left} left: {msg}",
                )
                .expect("a valid template")
                .with_key(
                    "left",
                    move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                        let left = s.lock().unwrap().left_ms();
                        let _ = w.write_str(&estimate::say(left));
                    },
                ),
            );
            bar.enable_steady_tick(Duration::from_secs(1));
            bar
        });
        Progress {
            bar,
            plain: !quiet && !terminal,
            state,
        }
    }

    /// Trial `label` (`gc-pause trial 2/3 (seed 1)`), estimated at `estimate_ms`, starts.
    pub fn started(&self, label: &str, estimate_ms: u64) {
        let mut s = self.state.lock().unwrap();
        s.waiting_ms = s.waiting_ms.saturating_sub(estimate_ms);
        s.running
            .push((label.to_string(), Instant::now(), estimate_ms));
        if let Some(bar) = &self.bar {
            bar.set_message(s.labels());
        } else if self.plain {
            eprintln!("{label} ... ({} left)", estimate::say(s.left_ms()));
        }
    }

    /// Trial `label` finished.
    pub fn finished(&self, label: &str) {
        let mut s = self.state.lock().unwrap();
        s.running.retain(|(l, _, _)| l != label);
        if let Some(bar) = &self.bar {
            bar.inc(1);
            bar.set_message(s.labels());
        }
    }

    /// Writes `text` to stdout, above the bar (ignoring a closed pipe).
    pub fn out(&self, text: &str) {
        use std::io::Write;
        let write = || {
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
        };
        match &self.bar {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }

    /// The time left, ms.
    pub fn left_ms(&self) -> u64 {
        self.state.lock().unwrap().left_ms()
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: a hidden progress (`quiet`) counted down by hand: a started trial
    //! leaves the waiting sum and counts down from its own estimate, a finished one
    //! counts no more.
    use super::*;

    #[test]
    fn the_time_left_counts_down_the_estimates() {
        let p = Progress::new(3, 60_000, true);
        assert_eq!(p.left_ms(), 60_000);
        p.started("a trial 1/3", 20_000);
        let left = p.left_ms();
        assert!((59_000..=60_000).contains(&left), "{left}");
        p.finished("a trial 1/3");
        assert_eq!(p.left_ms(), 40_000);
        p.started("a trial 2/3", 20_000);
        p.started("a trial 3/3", 20_000);
        assert!(p.left_ms() <= 40_000);
        p.finished("a trial 2/3");
        p.finished("a trial 3/3");
        assert_eq!(p.left_ms(), 0);
    }
}
