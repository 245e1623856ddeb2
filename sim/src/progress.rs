//! Progress on stderr for the commands that run many simulations (sweep, search).

use std::sync::atomic::{AtomicU64, Ordering};

/// What a long command reports as it goes.
pub trait Progress: Sync {
    /// One run finished.
    fn run_done(&self, passed: bool);
}

/// A progress bar on stderr (indicatif): shown once the command has run for a second
/// and a half, and only when stderr is a terminal and `--quiet` was not given.
pub struct Bar {
    bar: indicatif::ProgressBar,
    failed: AtomicU64,
    show: bool,
    started: std::time::Instant,
    shown: std::sync::atomic::AtomicBool,
}

impl Bar {
    /// A bar for `total` runs (counted as `unit`, `runs` or `seeds`); `quiet` keeps it
    /// hidden.
    pub fn new(total: u64, unit: &str, quiet: bool) -> Bar {
        use std::io::IsTerminal;
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(total),
            indicatif::ProgressDrawTarget::hidden(),
        );
        bar.set_style(
            indicatif::ProgressStyle::with_template(&format!(
                "{{bar:40}} {{pos}}/{{len}} {unit}, {{per_sec}}, {{msg}}, eta {{eta}}"
            ))
            .expect("a valid template"),
        );
        bar.set_message("0 failed");
        Bar {
            bar,
            failed: AtomicU64::new(0),
            show: !quiet && std::io::stderr().is_terminal(),
            started: std::time::Instant::now(),
            shown: false.into(),
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
        if self.show
            && self.started.elapsed() > std::time::Duration::from_millis(1500)
            && !self.shown.swap(true, Ordering::SeqCst)
        {
            self.bar
                .set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
        self.bar.inc(1);
    }
}
