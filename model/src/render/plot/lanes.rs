//! The lanes and the clock view of `leaders_acting.svg`: one row per node (and per service
//! a fault hit) under the leaders-acting counts, on the same time axis.
//!
//! Axes and grid come from plotters charts; the marks are drawn in pixels on the root
//! area at positions the chart computes, so that a 10-minute run can be merged per pixel:
//! accepted writes closer than two pixels become one bar, a label is written only where
//! it fits, and nothing else is dropped. What a lane shows is [`crate::render::lanes::Lanes`].

use crate::render::lanes::{Lanes, Rejection};
use crate::render::plot::style::{
    text_px, Area, DrawResult, Swatch, BELIEF_COLOR, EFFECT_COLOR, REJECTION_COLOR, Y_LABEL_PX,
};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const DOWN_COLOR: RGBColor = RGBColor(60, 60, 60);
const PAUSE_COLOR: RGBColor = RGBColor(148, 103, 189);
const PARTITION_COLOR: RGBColor = RGBColor(140, 86, 75);
const SLOW_COLOR: RGBColor = RGBColor(188, 189, 34);
/// Leading the etcd cluster: a healthy state, pale green, so that it never reads as down.
const ETCD_LEADER_COLOR: RGBColor = RGBColor(44, 160, 44);
const RESTART_COLOR: RGBColor = RGBColor(44, 160, 44);
const RESIGN_COLOR: RGBColor = RGBColor(127, 127, 127);
const TRANSFER_COLOR: RGBColor = RGBColor(227, 119, 194);
const CLOCK_COLOR: RGBColor = RGBColor(23, 190, 207);
/// Colours of the clock lines, one per faulted clock, in lane order.
const CLOCK_LINE_COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];
/// Height of the clock view.
pub(crate) const CLOCK_PX: u32 = 190;
/// Room under the lanes for the time axis, and above them.
const LANES_AXIS_PX: u32 = 34;
const LANES_MARGIN_PX: u32 = 10;

/// How tall one lane is: roomy for a few nodes, tighter for many.
pub(crate) fn lane_px(lanes: usize) -> u32 {
    match lanes {
        0..=4 => 44,
        5..=8 => 34,
        _ => 28,
    }
}

/// Height of the lanes chart.
pub(crate) fn lanes_chart_px(lanes: &Lanes) -> u32 {
    lane_px(lanes.lanes.len()) * lanes.lanes.len().max(1) as u32
        + LANES_AXIS_PX
        + 2 * LANES_MARGIN_PX
}

/// Pixel geometry of the lanes chart, from the chart's own mapping.
struct Geometry {
    /// Pixel x of time 0 and the pixel width of one second.
    x0: f64,
    px_per_s: f64,
    /// Pixel y of the top of lane 0, and one lane's height.
    y0: i32,
    lane_h: i32,
    /// Right edge of the plotting area.
    x_max: i32,
}

impl Geometry {
    fn x(&self, at_us: i64) -> i32 {
        (self.x0 + at_us as f64 / 1e6 * self.px_per_s).round() as i32
    }

    /// The pixel y at `frac` of lane `lane`'s height from its top.
    fn y(&self, lane: usize, frac: f64) -> i32 {
        self.y0 + lane as i32 * self.lane_h + (f64::from(self.lane_h) * frac).round() as i32
    }
}

/// Draws the lanes into `area` (its marks on `root`, in the pixels the chart maps to) and
/// adds what it drew to the legend.
pub(crate) fn draw_lanes(
    root: &Area,
    area: &Area,
    lanes: &Lanes,
    end_s: f64,
    legend: &mut Vec<(String, Swatch)>,
) -> DrawResult {
    let n = lanes.lanes.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .margin(LANES_MARGIN_PX)
        .x_label_area_size(LANES_AXIS_PX)
        .y_label_area_size(Y_LABEL_PX)
        .build_cartesian_2d(0f64..end_s, 0f64..n as f64)?;
    chart
        .configure_mesh()
        .x_label_formatter(&|x| format!("{x}"))
        .y_labels(0)
        .disable_y_mesh()
        .label_style(("sans-serif", 13))
        .light_line_style(WHITE)
        .bold_line_style(BLACK.mix(0.08))
        .draw()?;
    let (left, top) = chart.backend_coord(&(0.0, n as f64));
    let (right, bottom) = chart.backend_coord(&(end_s, 0.0));
    let g = Geometry {
        x0: f64::from(left),
        px_per_s: f64::from(right - left) / end_s,
        y0: top,
        lane_h: (bottom - top) / n as i32,
        x_max: right,
    };

    // Lane backgrounds and names.
    let name_font = ("sans-serif", 13).into_font().color(&BLACK);
    for (i, name) in lanes.lanes.iter().enumerate() {
        if i % 2 == 1 {
            root.draw(&Rectangle::new(
                [(left, g.y(i, 0.0)), (right, g.y(i, 1.0))],
                BLACK.mix(0.035).filled(),
            ))?;
        }
        root.draw(&Text::new(
            name.clone(),
            (left - 8, g.y(i, 0.5)),
            name_font.pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }

    draw_windows(root, lanes, &g, legend)?;
    draw_spans(root, lanes, &g, legend)?;
    draw_writes(root, lanes, &g, legend)?;
    draw_marks(root, lanes, &g, legend)?;
    draw_rejections(root, lanes, &g, legend)?;
    Ok(())
}

/// Faulty stretches fill their lane's height; network faults fill every lane. An etcd
/// member's lane also shows when it led the cluster, labelled with its term where it fits.
fn draw_windows(
    root: &Area,
    lanes: &Lanes,
    g: &Geometry,
    legend: &mut Vec<(String, Swatch)>,
) -> DrawResult {
    let style = |kind: &str| -> (ShapeStyle, &'static str) {
        match kind {
            "down" => (
                DOWN_COLOR.mix(0.45).filled(),
                "down (killed, until restart)",
            ),
            "pause" => (PAUSE_COLOR.mix(0.4).filled(), "paused (scripted)"),
            "gc-pause" => (PAUSE_COLOR.mix(0.2).filled(), "GC pause (noise)"),
            "partition" => (
                PARTITION_COLOR.mix(0.3).filled(),
                "partitioned (label: the cut)",
            ),
            "slow-disk" => (SLOW_COLOR.mix(0.35).filled(), "slow disk (fsync)"),
            "etcd-leader" => (
                ETCD_LEADER_COLOR.mix(0.22).filled(),
                "leads the etcd cluster (term)",
            ),
            _ => (SLOW_COLOR.mix(0.35).filled(), "slow link"),
        }
    };
    let n = lanes.lanes.len();
    for w in &lanes.global_windows {
        let fill = BLACK.mix(0.07).filled();
        root.draw(&Rectangle::new(
            [
                (g.x(w.from_us), g.y(0, 0.0)),
                (g.x(w.to_us).max(g.x(w.from_us) + 1), g.y(n.max(1) - 1, 1.0)),
            ],
            fill,
        ))?;
    }
    if !lanes.global_windows.is_empty() {
        legend.push((
            "network fault (every lane)".into(),
            Swatch::Fill(BLACK.mix(0.07).filled()),
        ));
    }
    let label_font = ("sans-serif", 11).into_font().color(&BLACK.mix(0.8));
    for kind in [
        "etcd-leader",
        "down",
        "pause",
        "gc-pause",
        "partition",
        "slow-link",
        "slow-disk",
    ] {
        let (fill, name) = style(kind);
        let mut any = false;
        for w in lanes.windows.iter().filter(|w| w.kind == kind) {
            any = true;
            let (x0, x1) = (g.x(w.from_us), g.x(w.to_us).max(g.x(w.from_us) + 1));
            root.draw(&Rectangle::new(
                [(x0, g.y(w.lane, 0.04)), (x1, g.y(w.lane, 0.96))],
                fill,
            ))?;
            // A link's window says which cut it is, an etcd leader's its term, where it fits.
            if matches!(kind, "partition" | "slow-link" | "etcd-leader") {
                let label = match kind {
                    "partition" => format!("cut {}", w.label),
                    "slow-link" => format!("slow {}", w.label),
                    _ => w.label.clone(),
                };
                if text_px(&label, 11) + 4 <= x1 - x0 {
                    root.draw(&Text::new(
                        label,
                        (x0 + 3, g.y(w.lane, 0.2)),
                        label_font.pos(Pos::new(HPos::Left, VPos::Center)),
                    ))?;
                }
            }
        }
        if any {
            legend.push((name.into(), Swatch::Fill(fill)));
        }
    }
    Ok(())
}

/// Leadership by belief: a bar per span, labelled with its token where it fits; after
/// the leader said it stopped writing, the bar is paler.
fn draw_spans(
    root: &Area,
    lanes: &Lanes,
    g: &Geometry,
    legend: &mut Vec<(String, Swatch)>,
) -> DrawResult {
    if lanes.spans.is_empty() {
        return Ok(());
    }
    let solid = BELIEF_COLOR.mix(0.55).filled();
    let pale = BELIEF_COLOR.mix(0.2).filled();
    let edge = BELIEF_COLOR.stroke_width(1);
    let font = ("sans-serif", 12).into_font().color(&BLACK);
    let mut any_stopped = false;
    for s in &lanes.spans {
        let (top, bottom) = (g.y(s.lane, 0.36), g.y(s.lane, 0.72));
        let x0 = g.x(s.from_us);
        let x1 = g.x(s.to_us).max(x0 + 1);
        let xs = s.stopped_us.map(|t| g.x(t).clamp(x0, x1)).unwrap_or(x1);
        if xs > x0 {
            root.draw(&Rectangle::new([(x0, top), (xs, bottom)], solid))?;
        }
        if xs < x1 {
            any_stopped = true;
            root.draw(&Rectangle::new([(xs, top), (x1, bottom)], pale))?;
        }
        root.draw(&Rectangle::new([(x0, top), (x1, bottom)], edge))?;
        if let Some(t) = s.token {
            let long = format!("token {t}");
            let label = if text_px(&long, 12) + 6 <= x1 - x0 {
                Some(long)
            } else if text_px(&t.to_string(), 12) + 4 <= x1 - x0 {
                Some(t.to_string())
            } else {
                None
            };
            if let Some(label) = label {
                root.draw(&Text::new(
                    label,
                    (x0 + 3, (top + bottom) / 2),
                    font.pos(Pos::new(HPos::Left, VPos::Center)),
                ))?;
            }
        }
    }
    legend.push(("believes it leads (token)".into(), Swatch::Fill(solid)));
    if any_stopped {
        legend.push(("...after it stopped writing".into(), Swatch::Fill(pale)));
    }
    Ok(())
}

/// Accepted writes as ticks under the span; buckets closer than two pixels merge into
/// one bar, so a dense stretch reads as a band.
fn draw_writes(
    root: &Area,
    lanes: &Lanes,
    g: &Geometry,
    legend: &mut Vec<(String, Swatch)>,
) -> DrawResult {
    if lanes.writes.is_empty() {
        return Ok(());
    }
    let fill = EFFECT_COLOR.mix(0.9).filled();
    let mut run: Option<(usize, i32, i32)> = None;
    let flush = |run: Option<(usize, i32, i32)>| -> DrawResult {
        if let Some((lane, x0, x1)) = run {
            root.draw(&Rectangle::new(
                [(x0, g.y(lane, 0.76)), (x1.max(x0 + 1), g.y(lane, 0.94))],
                fill,
            ))?;
        }
        Ok(())
    };
    // Buckets come by lane, then time.
    for b in &lanes.writes {
        let (x0, x1) = (g.x(b.from_us), g.x(b.to_us));
        run = match run {
            Some((lane, r0, r1)) if lane == b.lane && x0 <= r1 + 2 => Some((lane, r0, r1.max(x1))),
            other => {
                flush(other)?;
                Some((b.lane, x0, x1))
            }
        };
    }
    flush(run)?;
    legend.push((
        "accepted writes (merged where dense)".into(),
        Swatch::Fill(fill),
    ));
    Ok(())
}

/// Instants: a kill (a black triangle pointing down), a restart (green, up), a
/// resignation (grey dot), a transfer (pink dot), a clock fault (a teal diamond, labelled with its value).
fn draw_marks(
    root: &Area,
    lanes: &Lanes,
    g: &Geometry,
    legend: &mut Vec<(String, Swatch)>,
) -> DrawResult {
    let font = ("sans-serif", 11).into_font().color(&CLOCK_COLOR.mix(1.0));
    let mut seen: Vec<&str> = vec![];
    // Labels on one lane must not overwrite each other: each starts right of the last.
    let mut label_end = vec![i32::MIN; lanes.lanes.len()];
    for m in &lanes.marks {
        let x = g.x(m.at_us);
        let y = g.y(m.lane, 0.17);
        let kind = if m.kind.starts_with("clock-") {
            "clock"
        } else {
            m.kind.as_str()
        };
        if !seen.contains(&kind) {
            seen.push(kind);
        }
        match kind {
            "kill" => root.draw(&Polygon::new(
                vec![(x - 5, y - 5), (x + 5, y - 5), (x, y + 4)],
                BLACK.filled(),
            ))?,
            "restart" => root.draw(&Polygon::new(
                vec![(x - 5, y + 4), (x + 5, y + 4), (x, y - 5)],
                RESTART_COLOR.filled(),
            ))?,
            "resign" => root.draw(&Circle::new((x, y), 4, RESIGN_COLOR.filled()))?,
            "transfer" => root.draw(&Circle::new((x, y), 4, TRANSFER_COLOR.filled()))?,
            _ => {
                root.draw(&Polygon::new(
                    vec![(x, y - 6), (x + 5, y), (x, y + 6), (x - 5, y)],
                    CLOCK_COLOR.filled(),
                ))?;
                let w = text_px(&m.label, 11);
                let (lx, anchor, start) = beside(x, w, g.x_max);
                if start > label_end[m.lane] {
                    root.draw(&Text::new(
                        m.label.clone(),
                        (lx, y),
                        font.pos(Pos::new(anchor, VPos::Center)),
                    ))?;
                    label_end[m.lane] = start + w + 6;
                }
            }
        }
    }
    for (kind, name, swatch) in [
        ("kill", "kill", Swatch::TriangleDown(BLACK.filled())),
        (
            "restart",
            "restart",
            Swatch::TriangleUp(RESTART_COLOR.filled()),
        ),
        ("resign", "resign", Swatch::Dot(RESIGN_COLOR.filled())),
        ("transfer", "transfer", Swatch::Dot(TRANSFER_COLOR.filled())),
        (
            "clock",
            "clock fault (value)",
            Swatch::Diamond(CLOCK_COLOR.filled()),
        ),
    ] {
        if seen.contains(&kind) {
            legend.push((name.into(), swatch));
        }
    }
    Ok(())
}

/// Where a label `w` pixels wide goes beside a mark at `x`: right of it where there is
/// room, else left of it. Returns the anchor point, its side and the label's left edge.
fn beside(x: i32, w: i32, x_max: i32) -> (i32, HPos, i32) {
    if x + 8 + w <= x_max {
        (x + 8, HPos::Left, x + 8)
    } else {
        (x - 8, HPos::Right, x - 8 - w)
    }
}

/// What a refused write's label says: `2 < 3` (its token below the resource's highest).
fn rejection_label(r: &Rejection) -> String {
    match (r.kind.as_str(), r.max_token) {
        ("write_rejected", Some(max)) => format!("rejected {} < {max}", r.token),
        ("batch_refused", _) => format!("{} refused", r.token),
        _ => format!("{} late", r.token),
    }
}

/// Refused writes: a red cross on the span's bar, labelled with both tokens where the
/// label does not run into the previous one on its lane.
fn draw_rejections(
    root: &Area,
    lanes: &Lanes,
    g: &Geometry,
    legend: &mut Vec<(String, Swatch)>,
) -> DrawResult {
    if lanes.rejections.is_empty() {
        return Ok(());
    }
    let marker = REJECTION_COLOR.stroke_width(2);
    let font = ("sans-serif", 12).into_font().color(&REJECTION_COLOR);
    let mut label_end = vec![i32::MIN; lanes.lanes.len()];
    for r in &lanes.rejections {
        let (x, y) = (g.x(r.at_us), g.y(r.lane, 0.54));
        root.draw(&Cross::new((x, y), 5, marker))?;
        let label = rejection_label(r);
        let w = text_px(&label, 12);
        // Right of the cross where there is room, else left of it.
        let (lx, anchor, start) = beside(x, w, g.x_max);
        if start > label_end[r.lane] {
            root.draw(&Text::new(
                label,
                (lx, y),
                font.pos(Pos::new(anchor, VPos::Center)),
            ))?;
            label_end[r.lane] = start + w + 6;
        }
    }
    legend.push((
        "write rejected: token < max_token".into(),
        Swatch::Cross(marker),
    ));
    Ok(())
}

/// The clock view: each faulted clock's offset from global time over the run.
pub(crate) fn draw_clocks(area: &Area, lanes: &Lanes, end_s: f64) -> DrawResult {
    let ms = |us: i64| us as f64 / 1000.0;
    let all = lanes
        .clocks
        .iter()
        .flat_map(|c| c.points.iter().map(|p| ms(p.1)));
    let (lo, hi) = all.fold((0f64, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let pad = ((hi - lo) * 0.1).max(1.0);
    let mut chart = ChartBuilder::on(area)
        .margin(LANES_MARGIN_PX)
        .x_label_area_size(40)
        .y_label_area_size(Y_LABEL_PX)
        .caption("clock offset from global time", ("sans-serif", 14))
        .build_cartesian_2d(0f64..end_s, (lo - pad)..(hi + pad))?;
    chart
        .configure_mesh()
        .x_desc("time (simulated s)")
        .y_desc("offset (ms)")
        .x_label_formatter(&|x| format!("{x}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 14))
        .light_line_style(WHITE)
        .bold_line_style(BLACK.mix(0.08))
        .draw()?;
    for (i, c) in lanes.clocks.iter().enumerate() {
        let color = CLOCK_LINE_COLORS[i % CLOCK_LINE_COLORS.len()];
        let name = lanes.lanes[c.lane].clone();
        chart
            .draw_series(LineSeries::new(
                c.points.iter().map(|&(t, o)| (t as f64 / 1e6, ms(o))),
                color.stroke_width(2),
            ))?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 12))
        .draw()?;
    // Every other clock reads global time: say so, so that a missing line is not a gap.
    let others = lanes.lanes.len().saturating_sub(lanes.clocks.len());
    if others > 0 {
        let (x, y) = chart.backend_coord(&(0.0, hi + pad));
        let base = area.get_base_pixel();
        area.draw(&Text::new(
            "every other clock reads global time (offset 0)",
            (x - base.0 + 6, y - base.1 + 10),
            ("sans-serif", 11).into_font().color(&BLACK.mix(0.7)),
        ))?;
    }
    Ok(())
}
