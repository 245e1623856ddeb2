//! Progress on stderr for the commands that run many simulations (matrix, sweep, search).

use std::sync::atomic::{AtomicU64, Ordering};

/// What a long command reports as it goes.
pub trait Progress: Sync {
    /// One run finished.
    fn run_done(&self, passed: bool);
}

/// A progress bar on stderr (indicatif): runs done, runs per second and failures so
/// far, shown only when stderr is a terminal and `--quiet` was not given. Piped or
/// redirected, the command prints nothing extra.
pub struct Bar {
    bar: indicatif::ProgressBar,
    failed: AtomicU64,
}

impl Bar {
    /// A bar for `total` runs (counted as `unit`, `runs` or `seeds`); `quiet` keeps it
    /// hidden.
    pub fn new(total: u64, unit: &str, quiet: bool) -> Bar {
        let template = format!("{{bar:40}} {{pos}}/{{len}} {unit}, {{rate}}, {{msg}}, eta {{eta}}");
        Bar::drawn(Some(total), &template, quiet)
    }

    /// A bar without an end (a continuous search under a time budget): runs done, runs
    /// per second, failures so far and the time elapsed.
    pub fn open_ended(unit: &str, quiet: bool) -> Bar {
        let template = format!("{{pos}} {unit}, {{rate}}, {{msg}}, {{elapsed}}");
        Bar::drawn(None, &template, quiet)
    }

    fn drawn(total: Option<u64>, template: &str, quiet: bool) -> Bar {
        use std::io::IsTerminal;
        let show = !quiet && std::io::stderr().is_terminal();
        let bar = indicatif::ProgressBar::with_draw_target(
            total,
            if show {
                indicatif::ProgressDrawTarget::stderr()
            } else {
                indicatif::ProgressDrawTarget::hidden()
            },
        );
        bar.set_style(
            indicatif::ProgressStyle::with_template(template)
                .expect("a valid template")
                .with_key(
                    "rate",
                    |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{:.1}/s", s.per_sec());
                    },
                ),
        );
        bar.set_message("0 failed");
        if show {
            // Drawn at once, and again each second, so that a slow first run does not
            // look like a hang.
            bar.enable_steady_tick(std::time::Duration::from_secs(1));
        }
        Bar {
            bar,
            failed: AtomicU64::new(0),
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Progress for Bar {
    fn run_done(&self, passed: bool) {
        if !passed {
            let n = self.failed.fetch_add(1, Ordering::SeqCst) + 1;
            self.bar.set_message(format!("{n} failed"));
        }
        self.bar.inc(1);
    }
}

/// A spinner on stderr with the time elapsed and a message, for one long wait (a build):
/// drawn only when stderr is a terminal and `--quiet` was not given, and only from
/// [`Spinner::start`] on, so that a wait that never comes (nothing to build) shows
/// nothing. Piped or redirected, the command prints nothing extra.
pub struct Spinner {
    bar: indicatif::ProgressBar,
    shown: bool,
}

impl Spinner {
    /// A spinner, hidden for good when `quiet` or when stderr is not a terminal.
    pub fn new(quiet: bool) -> Spinner {
        use std::io::IsTerminal;
        let shown = !quiet && std::io::stderr().is_terminal();
        let bar = indicatif::ProgressBar::hidden();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} [{elapsed}] {wide_msg}")
                .expect("a valid template"),
        );
        Spinner { bar, shown }
    }

    /// True when it will be drawn (a terminal, no `--quiet`).
    pub fn shown(&self) -> bool {
        self.shown
    }

    /// Starts a step of the wait: draws `message` with the time elapsed counting from now
    /// (redrawn four times a second, so that a long step does not look like a hang);
    /// nothing when hidden.
    pub fn start(&self, message: &str) {
        if !self.shown {
            return;
        }
        self.bar.set_message(message.to_string());
        self.bar.reset_elapsed();
        if self.bar.is_hidden() {
            self.bar
                .set_draw_target(indicatif::ProgressDrawTarget::stderr());
            self.bar
                .enable_steady_tick(std::time::Duration::from_millis(250));
        }
    }

    /// What the wait is at now.
    pub fn set(&self, message: String) {
        self.bar.set_message(message);
    }

    /// Prints a line on stderr above the spinner (or plainly when it is not drawn).
    pub fn say(&self, line: &str) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.suspend(|| eprintln!("{line}"));
        }
    }

    /// Clears it.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
