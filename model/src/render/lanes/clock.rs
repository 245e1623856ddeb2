//! The clock view of the lanes: what each clock fault did to its node's clock, replayed
//! with the simulated clock's own arithmetic ([`Skew`]), so that every faulted clock's
//! offset from global time can be drawn over the run. The timeline names a clock fault
//! by its index only, so the values come from the scenario.

pub use crate::clock_model::ClockChange;
use crate::clock_model::Skew;
use serde::Serialize;
use std::collections::BTreeMap;

/// One clock's offset from global time over the run: straight lines between points.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClockSeries {
    /// Index into [`super::Lanes::lanes`].
    pub lane: usize,
    /// `(at_us, offset_us)`: at each change, the offset just before and just after, then
    /// the offset at the run's end.
    pub points: Vec<(i64, i64)>,
}

/// The clocks the faults moved so far, while the builder reads the timeline: each one's
/// state and the points of its series, by lane name.
pub(super) struct Clocks {
    /// Each fault's value by its index; `None` for a fault that is not a clock fault.
    changes: Vec<Option<ClockChange>>,
    /// By lane: the clock's state now, and its series' points so far.
    series: BTreeMap<String, (Skew, Vec<(i64, i64)>)>,
}

impl Clocks {
    /// No clock moved yet; the scenario's clock faults, by index, set `changes`.
    pub(super) fn new(changes: Vec<Option<ClockChange>>) -> Self {
        Clocks {
            changes,
            series: BTreeMap::new(),
        }
    }

    /// Moves `lane`'s clock by fault `index` (of kind `kind`) at `at_us`, and returns the
    /// label its mark carries: the fault's value, or its kind when the scenario does not
    /// give one (a hand-built timeline), in which case no clock moves.
    pub(super) fn fault(&mut self, lane: &str, index: usize, kind: &str, at_us: i64) -> String {
        let change = self.changes.get(index).copied().flatten();
        let label = change
            .map(|c| c.label())
            .unwrap_or_else(|| kind.to_string());
        if let Some(change) = change {
            let (state, points) = self
                .series
                .entry(lane.to_string())
                .or_insert((Skew::default(), vec![(0, 0)]));
            points.push((at_us, state.offset_at(at_us)));
            state.apply(at_us, change);
            points.push((at_us, state.offset_at(at_us)));
        }
        label
    }

    /// The lanes whose clock a fault moved.
    pub(super) fn lanes(&self) -> impl Iterator<Item = &str> {
        self.series.keys().map(String::as_str)
    }

    /// Each moved clock's series, ended at the run's end `end_us`, on the lane `at` gives
    /// its name, in lane order.
    pub(super) fn finish(self, end_us: i64, at: impl Fn(&str) -> usize) -> Vec<ClockSeries> {
        let mut clocks: Vec<ClockSeries> = self
            .series
            .into_iter()
            .map(|(l, (state, mut points))| {
                points.push((end_us, state.offset_at(end_us)));
                ClockSeries {
                    lane: at(&l),
                    points,
                }
            })
            .collect();
        clocks.sort_by_key(|c| c.lane);
        clocks
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: a clock series checked against the simulated clock's own arithmetic.
    use super::*;
    use crate::checker::testing::*;
    use crate::render::lanes::{build, LaneBuilder};
    use crate::timeline::Event;

    #[test]
    fn clock_series_follow_the_node_clock_arithmetic() {
        let builder = LaneBuilder::new(
            vec!["n1".into(), "n2".into(), "n3".into()],
            30_000_000,
            vec![None, Some(ClockChange::Drift(-400_000)), None],
        );
        let entries = vec![at(
            10_000,
            Event::FaultApplied {
                index: 1,
                kind: crate::fault::FaultKind::ClockDrift,
                target: "n2".into(),
            },
        )];
        let l = build(builder, &entries, 30_000_000);
        assert_eq!(l.clocks.len(), 1);
        // 40% slow for 20 s: 8 s behind at the end.
        assert_eq!(
            l.clocks[0].points,
            [
                (0, 0),
                (10_000_000, 0),
                (10_000_000, 0),
                (30_000_000, -8_000_000)
            ]
        );
        assert_eq!(l.marks[0].label, "drift -400000 ppm");
        let mut s = Skew::default();
        s.apply(1_000_000, ClockChange::Offset(200));
        assert_eq!(s.offset_at(2_000_000), 200_000);
        s.apply(2_000_000, ClockChange::Step(-300));
        assert_eq!(s.offset_at(2_000_000), -100_000);
        s.apply(2_000_000, ClockChange::Drift(-500_000));
        assert_eq!(s.offset_at(3_000_000), -600_000);
    }
}
