//! What hit a lane, as the builder reads it: a fault's window on each lane it hit (a link
//! fault on both ends, a network fault on every lane), a state that opens with one event
//! and closes with another (down, paused, leading the etcd cluster), and the marks of
//! instant faults (a kill, a restart, a clock fault).

use super::builder::LaneBuilder;
use super::{Mark, Window, MAX_ITEMS};
use crate::fault::FaultKind;
use std::collections::VecDeque;

/// The two ends of a link fault's target (`a<->b` or `a->b`).
fn link_ends(target: &str) -> Option<(&str, &str)> {
    target.split_once("<->").or_else(|| target.split_once("->"))
}

impl LaneBuilder {
    /// A scripted fault fired: a mark for an instant, a window per end for a link, a window
    /// over every lane for the network.
    pub(super) fn fault_applied(
        &mut self,
        index: usize,
        kind: FaultKind,
        target: &str,
        at_us: i64,
    ) {
        let name = kind.name();
        match kind {
            FaultKind::Kill | FaultKind::Resign | FaultKind::Transfer => {
                self.mark(target, name, at_us, name.to_string(), Some(index))
            }
            FaultKind::ClockOffset | FaultKind::ClockDrift | FaultKind::ClockStep => {
                let label = self.clocks.fault(target, index, name, at_us);
                self.mark(target, name, at_us, label, Some(index));
            }
            FaultKind::Partition | FaultKind::SlowLink => {
                self.link_fault(index, name, target, at_us)
            }
            FaultKind::Network => self.network_fault(index, name, at_us),
            FaultKind::SlowDisk => {
                let opened = self.open_window(target, name, at_us, target, Some(index));
                self.open_fault
                    .entry(index)
                    .or_default()
                    .push_back(opened.into_iter().collect());
            }
            // A pause is drawn from the node's own `node_paused` (an armed pause strikes
            // later than its fault fires), a restart from `node_restarted`, and a heal by
            // the windows it closes.
            FaultKind::Pause | FaultKind::Restart | FaultKind::Heal => {}
        }
    }

    /// A link fault opens a window on both of its ends, closed together by its heal.
    fn link_fault(&mut self, index: usize, kind: &str, target: &str, at_us: i64) {
        let Some((a, b)) = link_ends(target) else {
            return;
        };
        let mut opened = vec![];
        for end in [a, b] {
            if let Some(i) = self.open_window(end, kind, at_us, target, Some(index)) {
                opened.push(i);
            }
        }
        self.open_fault.entry(index).or_default().push_back(opened);
    }

    /// A network fault hits every message, so its window covers every lane.
    fn network_fault(&mut self, index: usize, kind: &str, at_us: i64) {
        if self.global_windows.len() < MAX_ITEMS {
            self.open_global
                .entry(index)
                .or_default()
                .push_back(self.global_windows.len());
            self.global_windows.push(Window {
                lane: 0,
                kind: kind.to_string(),
                from_us: at_us,
                to_us: at_us,
                open_at_end: true,
                label: "every message".into(),
                fault: Some(index),
            });
        } else {
            self.capped(kind);
        }
    }

    pub(super) fn fault_healed(&mut self, index: usize, at_us: i64) {
        if let Some(opened) = self
            .open_fault
            .get_mut(&index)
            .and_then(VecDeque::pop_front)
        {
            for i in opened {
                self.close_window(i, at_us);
            }
        }
        if let Some(i) = self
            .open_global
            .get_mut(&index)
            .and_then(VecDeque::pop_front)
        {
            let w = &mut self.global_windows[i];
            w.to_us = at_us;
            w.open_at_end = false;
        }
    }

    fn open_window(
        &mut self,
        lane: &str,
        kind: &str,
        at_us: i64,
        label: &str,
        fault: Option<usize>,
    ) -> Option<usize> {
        if self.windows.len() >= MAX_ITEMS {
            self.capped(kind);
            return None;
        }
        let i = self.windows.len();
        self.windows.push((
            lane.to_string(),
            Window {
                lane: 0,
                kind: kind.to_string(),
                from_us: at_us,
                to_us: at_us,
                open_at_end: true,
                label: label.to_string(),
                fault,
            },
        ));
        Some(i)
    }

    fn close_window(&mut self, i: usize, at_us: i64) {
        let w = &mut self.windows[i].1;
        w.to_us = at_us;
        w.open_at_end = false;
    }

    /// A node state that opens with one event and closes with another (down, paused).
    pub(super) fn open_state(&mut self, lane: &str, kind: &str, at_us: i64, label: &str) {
        if let Some(i) = self.open_window(lane, kind, at_us, label, None) {
            self.open_state
                .entry((lane.to_string(), kind.to_string()))
                .or_default()
                .push_back(i);
        }
    }

    pub(super) fn close_state(&mut self, lane: &str, kind: &str, at_us: i64) {
        let key = (lane.to_string(), kind.to_string());
        if let Some(i) = self.open_state.get_mut(&key).and_then(VecDeque::pop_front) {
            self.close_window(i, at_us);
        }
    }

    pub(super) fn mark(
        &mut self,
        lane: &str,
        kind: &str,
        at_us: i64,
        label: String,
        fault: Option<usize>,
    ) {
        if self.marks.len() >= MAX_ITEMS {
            self.capped(kind);
            return;
        }
        self.marks.push((
            lane.to_string(),
            Mark {
                lane: 0,
                kind: kind.to_string(),
                at_us,
                label,
                fault,
            },
        ));
    }
}
