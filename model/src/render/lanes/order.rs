//! Finishing the lanes at the run's end: which lanes there are and in what order, each
//! item's lane name turned into that lane's index, and whatever was still open (a belief,
//! a faulty window) ended at the run's end.

use super::builder::LaneBuilder;
use super::{LaneEvent, Lanes, Window, SERVICE_LANES};
use std::collections::{BTreeMap, BTreeSet};

impl LaneBuilder {
    /// The lanes of a run that stopped at `end_us`.
    pub fn finish(self, end_us: i64) -> Lanes {
        let lanes = self.lane_order();
        let index: BTreeMap<&str, usize> = lanes
            .iter()
            .enumerate()
            .map(|(i, l)| (l.as_str(), i))
            .collect();
        let at = |l: &str| index[l];
        let mut writes = placed(self.writes, at, |b, lane| b.lane = lane);
        // By lane, then time: the order a drawing merges neighbouring buckets in.
        writes.sort_by_key(|b| (b.lane, b.from_us));
        Lanes {
            end_us,
            spans: placed(self.spans, at, |s, lane| {
                if s.end == "run ended" {
                    s.to_us = end_us;
                }
                s.lane = lane;
            }),
            windows: placed(self.windows, at, |w, lane| {
                ended(w, end_us);
                w.lane = lane;
            }),
            marks: placed(self.marks, at, |m, lane| m.lane = lane),
            global_windows: self
                .global_windows
                .into_iter()
                .map(|mut w| {
                    ended(&mut w, end_us);
                    w
                })
                .collect(),
            writes,
            write_bucket_us: self.bucket_us,
            writes_accepted: self.writes_accepted,
            rejections: placed(self.rejections, at, |r, lane| r.lane = lane),
            events: self
                .events
                .into_iter()
                .map(|(l, entry)| LaneEvent {
                    lane: l.map(|l| at(&l)),
                    entry,
                })
                .collect(),
            clocks: self.clocks.finish(end_us, at),
            not_drawn: self.not_drawn,
            capped: self.capped,
            events_read: self.events_read,
            lanes,
        }
    }

    /// Lanes: the nodes in their order, then any other node named, then the services
    /// something hit, then anything else, each group in name order.
    fn lane_order(&self) -> Vec<String> {
        let mut named: BTreeSet<&str> = BTreeSet::new();
        named.extend(self.spans.iter().map(|(l, _)| l.as_str()));
        named.extend(self.windows.iter().map(|(l, _)| l.as_str()));
        named.extend(self.marks.iter().map(|(l, _)| l.as_str()));
        named.extend(self.writes.iter().map(|(l, _)| l.as_str()));
        named.extend(self.rejections.iter().map(|(l, _)| l.as_str()));
        named.extend(self.events.iter().filter_map(|(l, _)| l.as_deref()));
        named.extend(self.clocks.lanes());
        let mut lanes: Vec<String> = self.nodes.clone();
        let other = |n: &&str| !self.nodes.iter().any(|x| x == *n) && !SERVICE_LANES.contains(n);
        let unknown_nodes: Vec<&str> = named
            .iter()
            .copied()
            .filter(other)
            .filter(|n| n.starts_with('n') && n[1..].parse::<u32>().is_ok())
            .collect();
        lanes.extend(unknown_nodes.iter().map(|s| s.to_string()));
        lanes.extend(
            SERVICE_LANES
                .iter()
                .filter(|s| named.contains(*s))
                .map(|s| s.to_string()),
        );
        lanes.extend(
            named
                .iter()
                .copied()
                .filter(other)
                .filter(|n| !unknown_nodes.contains(n))
                .map(str::to_string),
        );
        lanes
    }
}

/// Items that carried their lane's name, each given its lane's index (`at` the name) by
/// `place`, in their order.
fn placed<T>(
    items: Vec<(String, T)>,
    at: impl Fn(&str) -> usize,
    place: impl Fn(&mut T, usize),
) -> Vec<T> {
    items
        .into_iter()
        .map(|(l, mut item)| {
            place(&mut item, at(&l));
            item
        })
        .collect()
}

/// A window still open at the run's end lasts to it.
fn ended(w: &mut Window, end_us: i64) {
    if w.open_at_end {
        w.to_us = end_us;
    }
}
