//! Load served: of the sequencer requests the client sent outside fault windows, the share
//! answered with a number. A figure, not a property: no violation comes from it.
//!
//! A fault's window runs from its application to its end (its heal, the end of its
//! duration, or its application for an instantaneous fault such as a kill or a restart)
//! plus the time the scenario gives the system to recover from a fault
//! (`expect.liveness_bound_ms`) plus the client timeout (a request sent just before the
//! window closed may still be waiting). A partition never healed lasts to the end of the
//! run. Start-up, until the first write a leader had accepted plus the client timeout,
//! is left out too: nobody could serve before an election, and nodes boot after seeded
//! delays, so the client's first requests may go to a node still booting and wait out
//! one timeout before it tries another. Requests are counted by when they were sent, in the
//! client's 100 ms slices; a slice that touches a window is left out whole.
//!
//! What it catches: a leader that is elected and acting but does not answer the load. A
//! node that takes one request per simulated millisecond answered about 18% of 5,000
//! requests a second on clean-kill before Baton had its own network.

use super::{us_to_ms, CheckInput};
use crate::checker::client_stats::{ClientStats, SLICE_US};
use crate::scenario::Resolved;
use crate::timeline::{Entry, Event};
use serde::Serialize;

/// The load the client sent outside fault windows, and how much of it was served.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LoadSummary {
    /// Requests sent outside fault windows.
    pub sent_outside_faults: u64,
    /// Of those, requests answered with a number.
    pub ok_outside_faults: u64,
    /// `ok_outside_faults / sent_outside_faults` (1 when nothing was sent).
    pub ok_share_outside_faults: f64,
    /// The windows left out, `[from_ms, to_ms]`: start-up, then each fault's.
    pub fault_windows_ms: Vec<(f64, f64)>,
}

/// The share of the load served outside fault windows.
pub fn check(input: &CheckInput) -> LoadSummary {
    let mut l = Load::default();
    let mut f = super::faults::Faults::default();
    for e in input.entries {
        l.entry(e);
        f.entry(e);
    }
    let windows = f.windows(input.resolved, input.end_us);
    l.finish(input.resolved, input.end_us, &input.client, &windows)
}

/// When work first took effect, read one event at a time.
#[derive(Default)]
pub(crate) struct Load {
    first_write_us: Option<i64>,
}

impl Load {
    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        if self.first_write_us.is_none()
            && matches!(
                e.event,
                Event::WriteAccepted { .. } | Event::BatchCommitted { .. }
            )
        {
            self.first_write_us = Some(e.at_us);
        }
    }

    /// The share served, given the run's fault windows (`[applied, ended]`, µs).
    pub fn finish(
        self,
        resolved: &Resolved,
        end_us: i64,
        client: &ClientStats,
        fault_windows: &[(i64, i64)],
    ) -> LoadSummary {
        let s = &resolved.scenario;
        let margin_us =
            (s.expect.liveness_bound_ms.unwrap_or(0) + s.work.client_timeout_ms) as i64 * 1000;
        let start_up_us = self.first_write_us.map_or(end_us, |t| {
            (t + s.work.client_timeout_ms as i64 * 1000).min(end_us)
        });
        let windows = std::iter::once((0, start_up_us))
            .chain(
                fault_windows
                    .iter()
                    .map(|&(from, to)| (from, to.saturating_add(margin_us).min(end_us))),
            )
            .collect::<Vec<_>>();
        let mut summary = LoadSummary {
            fault_windows_ms: windows
                .iter()
                .map(|&(a, b)| (us_to_ms(a), us_to_ms(b)))
                .collect(),
            ..LoadSummary::default()
        };
        for (i, slice) in client.by_send_time.iter().enumerate() {
            let (from, to) = (i as i64 * SLICE_US, (i as i64 + 1) * SLICE_US);
            if windows.iter().any(|&(a, b)| from <= b && a < to) {
                continue;
            }
            summary.sent_outside_faults += slice.sent;
            summary.ok_outside_faults += slice.ok;
        }
        summary.ok_share_outside_faults = if summary.sent_outside_faults == 0 {
            1.0
        } else {
            summary.ok_outside_faults as f64 / summary.sent_outside_faults as f64
        };
        summary
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: a hand-built client record against a hand-built fault timeline.
    use super::*;
    use crate::checker::client_stats::SentOk;
    use crate::checker::testing::{fault, input, resolved, tick};

    #[test]
    fn slices_touching_a_fault_window_are_left_out() {
        let r = resolved();
        let entries = vec![tick(50, "n1", 1), fault(1000, 0, "kill")];
        let mut i = input(&r, &entries, 20_000);
        // 200 slices of 100 ms: 100 requests each; all served but during the window.
        i.client.by_send_time = vec![SentOk { sent: 100, ok: 100 }; 200];
        let bound_ms =
            r.scenario.expect.liveness_bound_ms.unwrap() + r.scenario.work.client_timeout_ms;
        let window_slices = (bound_ms as usize).div_ceil(100) + 1;
        for s in &mut i.client.by_send_time[10..10 + window_slices] {
            s.ok = 0;
        }
        let s = check(&i);
        assert_eq!(s.ok_share_outside_faults, 1.0, "{s:?}");
        // The first 6 slices hold start-up (the first accepted write, at 50 ms, plus the
        // 500 ms client timeout).
        assert_eq!(
            s.sent_outside_faults,
            (200 - 6 - window_slices as u64) * 100
        );
        // A leader that answers nothing outside the window is seen.
        i.client.by_send_time[7].ok = 0;
        assert!(check(&i).ok_share_outside_faults < 1.0);
    }
}
