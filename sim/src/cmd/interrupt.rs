//! Ctrl-C for the commands that run many simulations (`matrix`, `sweep`, `search`).
//!
//! The first Ctrl-C stops starting runs; the runs in flight finish. A second abandons
//! the runs in flight (the watchdog in [`crate::run::watched`] stops waiting for them).
//! Either way the command writes what it has, marked "interrupted after N of M runs",
//! and exits [`EXIT_INTERRUPTED`]. A third ends the process at once. Commands that run
//! one simulation keep the default: Ctrl-C ends them, and they write nothing.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Exit status after an interrupt: 128 + SIGINT, as a shell reports a Ctrl-C.
pub const EXIT_INTERRUPTED: i32 = 130;

static PRESSES: AtomicU8 = AtomicU8::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Installs the Ctrl-C handler (once per process; later calls do nothing).
pub fn install() {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    // ctrlc runs this on a thread of its own, not in the signal handler: printing is safe.
    let installed = ctrlc::set_handler(|| {
        let n = PRESSES.fetch_add(1, Ordering::SeqCst) + 1;
        match n {
            1 => eprintln!(
                "\ninterrupted: starting no more runs; the runs in flight finish first (Ctrl-C again to abandon them)"
            ),
            2 => eprintln!("\ninterrupted again: abandoning the runs in flight"),
            _ => std::process::exit(EXIT_INTERRUPTED),
        }
    });
    if let Err(e) = installed {
        // Without the handler Ctrl-C still ends the process, as before: say so, go on.
        eprintln!(
            "warning: cannot catch Ctrl-C ({e}): an interrupt will lose this command's results"
        );
    }
}

/// True once Ctrl-C was pressed: start no more runs.
pub fn stopping() -> bool {
    PRESSES.load(Ordering::SeqCst) >= 1
}

/// True once Ctrl-C was pressed twice: stop waiting for the runs in flight.
pub fn abandoning() -> bool {
    PRESSES.load(Ordering::SeqCst) >= 2
}
