//! The `leaders_acting.svg` plot: leaders by belief and by effect over simulated time,
//! with the fault windows and the fence's rejections on the same axis; under it, one lane
//! per node (and per service a fault hit) showing who believed it led with which token,
//! its accepted and rejected writes and what hit it ([`crate::render::plot::lanes`]); and, when a
//! scenario faulted clocks, each faulted clock's offset from global time.
//!
//! The plot is one of a run's artifacts, so it must be byte-identical for identical
//! inputs: it is drawn from the findings and the lanes only, in their order, into an
//! in-memory string.
//!
//! Text needs no font files: without plotters' `ttf` or `ab_glyph` features its
//! built-in estimator sizes labels for layout and the SVG backend writes them as
//! `<text>` elements that the viewer renders with its own fonts. That keeps the build
//! offline and free of system fonts, and the bytes independent of the machine.

pub mod lanes;
pub mod shards;
pub mod style;
pub mod ttl_sweep;

use crate::checker::Findings;
use crate::render::lanes::Lanes;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use style::{
    text_px, Area, DrawResult, Swatch, BELIEF_COLOR, EFFECT_COLOR, REJECTION_COLOR, Y_LABEL_PX,
};

/// A plot that could not be drawn: plotters' own error, worded as plotters words it.
/// Drawing into an in-memory string fails only on a plotters bug, so a run's report
/// shows it in place of the plot rather than failing the run.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct PlotError(#[from] DrawingAreaErrorKind<std::io::Error>);

/// Width of the plot, and the height of its title and of the counts chart, in pixels.
const WIDTH_PX: u32 = 1200;
const TITLE_PX: u32 = 36;
const COUNTS_PX: u32 = 330;
/// Room at the right for the legend.
const LEGEND_WIDTH_PX: u32 = 250;
const FAULT_COLOR: RGBColor = RGBColor(120, 120, 120);

/// One fault on the time axis, in seconds.
struct FaultMark {
    kind: String,
    from_s: f64,
    /// `None` for an instantaneous fault, drawn as a line.
    to_s: Option<f64>,
}

/// Renders the leaders-acting plot of a run, with its lanes, as an SVG document.
pub fn leaders_acting_svg(
    findings: &Findings,
    lanes: &Lanes,
    end_us: i64,
    title: &str,
) -> Result<String, PlotError> {
    let lanes_px = lanes::lanes_chart_px(lanes);
    let clock_px = if lanes.clocks.is_empty() {
        0
    } else {
        lanes::CLOCK_PX
    };
    let size = (WIDTH_PX, TITLE_PX + COUNTS_PX + lanes_px + clock_px);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw(&root, findings, lanes, end_us, title, lanes_px)?;
        root.present()?;
    }
    Ok(svg)
}

fn seconds(at_us: i64) -> f64 {
    at_us as f64 / 1e6
}

/// A step line through `(at_us, count)` change points, held until `end_s`.
fn steps(series: &[(i64, u32)], end_s: f64) -> Vec<(f64, f64)> {
    let mut points = vec![];
    let mut last = 0.0;
    for (i, &(at_us, count)) in series.iter().enumerate() {
        let (x, y) = (seconds(at_us), f64::from(count));
        if i > 0 {
            points.push((x, last));
        }
        points.push((x, y));
        last = y;
    }
    points.push((end_s, last));
    points
}

/// Fault windows from applied/healed pairs (same index). A fault with a duration that
/// never healed lasts to the end of the run; the others are instants.
fn fault_marks(findings: &Findings, end_s: f64) -> Vec<FaultMark> {
    findings
        .faults
        .iter()
        .filter(|r| !r.skipped)
        .map(|r| FaultMark {
            kind: r.kind.map_or("skipped", |k| k.name()).to_string(),
            from_s: seconds(r.at_us),
            to_s: match r.healed_us {
                Some(h) => Some(seconds(h)),
                None if r.kind.is_some_and(|k| k.lasts()) => Some(end_s),
                None => None,
            },
        })
        .collect()
}

/// The counts chart: leaders acting over simulated time, in data coordinates.
type Counts<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Lays the plot out (title, counts chart, lanes, clock view, legend column) and draws
/// each part in turn, gathering the legend's rows as they are drawn.
fn draw(
    root: &Area,
    findings: &Findings,
    lanes: &Lanes,
    end_us: i64,
    title: &str,
    lanes_px: u32,
) -> DrawResult {
    root.fill(&WHITE)?;
    let body = root.titled(title, ("sans-serif", 20))?;
    // The legend gets a column of its own, so it never hides a fault label or a line.
    let (main, legend_area) = body.split_horizontally(WIDTH_PX - LEGEND_WIDTH_PX);
    let (plot_area, below) = main.split_vertically(COUNTS_PX);
    let (lanes_area, clock_area) = below.split_vertically(lanes_px);
    let end_s = if end_us > 0 { seconds(end_us) } else { 1.0 };

    let mut legend: Vec<(String, Swatch)> = vec![];
    draw_counts(&plot_area, findings, end_s, &mut legend)?;
    // The lanes, and the clocks when a fault moved one, each with its own legend rows
    // under a heading.
    let counts_rows = legend.len();
    lanes::draw_lanes(root, &lanes_area, lanes, end_s, &mut legend)?;
    let lanes_rows = legend.len() - counts_rows;
    if !lanes.clocks.is_empty() {
        lanes::draw_clocks(&clock_area, lanes, end_s)?;
    }
    draw_legend(&legend_area, &legend, counts_rows, lanes_rows)
}

/// The counts chart: its axes, the faults behind, then leaders by effect and by belief,
/// then the fence's rejections on top.
fn draw_counts(
    area: &Area,
    findings: &Findings,
    end_s: f64,
    legend: &mut Vec<(String, Swatch)>,
) -> DrawResult {
    let observed_max = findings.belief.max.max(findings.effect.max);
    let y_top = (observed_max + 1).max(3);
    let y_max = f64::from(y_top);
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(Y_LABEL_PX)
        .build_cartesian_2d(0f64..end_s, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("time (simulated s)")
        .y_desc("leaders acting")
        // One label per integer: plotters' nice-step search settles on a step of 1 when
        // asked for exactly as many labels as there are integers in the range.
        .y_labels(y_top as usize + 1)
        .x_label_formatter(&|x| format!("{x}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .light_line_style(WHITE)
        .draw()?;
    let marks = fault_marks(findings, end_s);
    draw_fault_marks(&mut chart, &marks, y_max, legend)?;
    draw_fault_labels(&mut chart, &marks, y_max)?;
    draw_leaders(&mut chart, findings, end_s, legend)?;
    draw_rejections(&mut chart, findings, legend)
}

/// Faults with a duration as shaded windows, instantaneous ones as vertical lines.
fn draw_fault_marks(
    chart: &mut Counts,
    marks: &[FaultMark],
    y_max: f64,
    legend: &mut Vec<(String, Swatch)>,
) -> DrawResult {
    let fill = FAULT_COLOR.mix(0.18).filled();
    let windows: Vec<&FaultMark> = marks.iter().filter(|m| m.to_s.is_some()).collect();
    if !windows.is_empty() {
        chart.draw_series(windows.iter().map(|m| {
            let to_s = m.to_s.unwrap_or(m.from_s);
            Rectangle::new([(m.from_s, 0.0), (to_s, y_max)], fill)
        }))?;
        legend.push(("fault window".into(), Swatch::Fill(fill)));
    }
    let instants: Vec<&FaultMark> = marks.iter().filter(|m| m.to_s.is_none()).collect();
    if !instants.is_empty() {
        let line = FAULT_COLOR.mix(0.8).stroke_width(1);
        chart.draw_series(
            instants
                .iter()
                .map(|m| PathElement::new(vec![(m.from_s, 0.0), (m.from_s, y_max)], line)),
        )?;
        legend.push(("instant fault".into(), Swatch::VerticalLine(line)));
    }
    Ok(())
}

/// Labels are staggered over three rows so faults close in time stay readable; a label
/// that would run into the one before it in every row is left out (a storm of kills is
/// read on the lanes, and in full in timeline.html).
fn draw_fault_labels(chart: &mut Counts, marks: &[FaultMark], y_max: f64) -> DrawResult {
    let label_style = ("sans-serif", 12).into_font().color(&BLACK.mix(0.75));
    let mut row_end = [i32::MIN; 3];
    let mut labels = vec![];
    for m in marks {
        let text = format!(" {}", m.kind);
        let x = chart.backend_coord(&(m.from_s, 0.0)).0;
        let width = text_px(&text, 12);
        if let Some(row) = (0..3).find(|&r| x > row_end[r]) {
            row_end[row] = x + width + 4;
            let y = y_max - 0.08 - 0.22 * row as f64;
            labels.push(Text::new(text, (m.from_s, y), label_style.clone()));
        }
    }
    chart.draw_series(labels)?;
    Ok(())
}

/// Leaders by effect and by belief, as step lines.
fn draw_leaders(
    chart: &mut Counts,
    findings: &Findings,
    end_s: f64,
    legend: &mut Vec<(String, Swatch)>,
) -> DrawResult {
    // Effect is drawn wide and under belief, so both stay visible where they agree.
    let effect_style = EFFECT_COLOR.mix(0.85).stroke_width(5);
    chart.draw_series(LineSeries::new(
        steps(&findings.effect.series, end_s),
        effect_style,
    ))?;
    legend.push((
        "by effect (accepted writes)".into(),
        Swatch::Line(effect_style),
    ));
    let belief_style = BELIEF_COLOR.stroke_width(2);
    chart.draw_series(LineSeries::new(
        steps(&findings.belief.series, end_s),
        belief_style,
    ))?;
    legend.push(("by belief (role)".into(), Swatch::Line(belief_style)));
    Ok(())
}

/// The fence's rejections, as crosses.
fn draw_rejections(
    chart: &mut Counts,
    findings: &Findings,
    legend: &mut Vec<(String, Swatch)>,
) -> DrawResult {
    if !findings.rejections.is_empty() {
        // Rejections sit on a band just above zero: their height means nothing, only
        // their time does.
        let marker = REJECTION_COLOR.stroke_width(2);
        chart.draw_series(
            findings
                .rejections
                .iter()
                .map(|r| Cross::new((r.at_ms / 1000.0, 0.2), 4, marker)),
        )?;
        legend.push(("write rejected (stale token)".into(), Swatch::Cross(marker)));
    }
    Ok(())
}

/// The legend: one row per item, swatch then label, in drawing order: the counts' rows,
/// then the lanes' under a heading.
fn draw_legend(
    area: &Area,
    items: &[(String, Swatch)],
    counts_rows: usize,
    lanes_rows: usize,
) -> DrawResult {
    let font = ("sans-serif", 13).into_font().color(&BLACK);
    let heading = ("sans-serif", 13).into_font().color(&BLACK.mix(0.6));
    let mut y = 24;
    for (i, (label, swatch)) in items.iter().enumerate() {
        if i == counts_rows && lanes_rows > 0 {
            y += 14;
            area.draw(&Text::new(
                "lanes (one per node)",
                (8, y),
                heading.pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
            y += 22;
        }
        let x = 8;
        match swatch {
            Swatch::Fill(style) => {
                area.draw(&Rectangle::new([(x, y - 6), (x + 24, y + 6)], *style))
            }
            Swatch::VerticalLine(style) => area.draw(&PathElement::new(
                vec![(x + 12, y - 8), (x + 12, y + 8)],
                *style,
            )),
            Swatch::Line(style) => area.draw(&PathElement::new(vec![(x, y), (x + 24, y)], *style)),
            Swatch::Cross(style) => area.draw(&Cross::new((x + 12, y), 4, *style)),
            Swatch::TriangleDown(style) => area.draw(&Polygon::new(
                vec![(x + 7, y - 5), (x + 17, y - 5), (x + 12, y + 4)],
                *style,
            )),
            Swatch::TriangleUp(style) => area.draw(&Polygon::new(
                vec![(x + 7, y + 4), (x + 17, y + 4), (x + 12, y - 5)],
                *style,
            )),
            Swatch::Dot(style) => area.draw(&Circle::new((x + 12, y), 4, *style)),
            Swatch::Diamond(style) => area.draw(&Polygon::new(
                vec![(x + 12, y - 6), (x + 17, y), (x + 12, y + 6), (x + 7, y)],
                *style,
            )),
        }?;
        area.draw(&Text::new(
            label.clone(),
            (x + 32, y),
            font.pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
        y += 22;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Methodology: render a hand-built run with every kind of mark (a healed partition,
    //! an unhealed pause, an instantaneous kill, rejections, belief overlap) and check
    //! the output is byte-identical across renders, holds the labels a reader needs,
    //! and changes when the input does (so the identity test can fail).
    use super::*;
    use crate::checker::testing::*;
    use crate::checker::{check, Findings};
    use crate::timeline::{Entry, Event};

    fn sample() -> (Vec<Entry>, i64) {
        let mut entries = vec![
            campaign(0, "n1"),
            campaign(0, "n2"),
            campaign(0, "n3"),
            leader(120, "n1", 1),
            tick(200, "n1", 1),
            tick(1200, "n1", 1),
            fault(2000, 0, "pause"),
            key_deleted(4500, 1),
            leader(4520, "n2", 2),
            tick(4600, "n2", 2),
            tick(5600, "n2", 2),
            healed(7000, 0, "pause"),
            rejected(7010, "n1", 1, 2),
            rejected(7020, "n1", 1, 2),
            stopped(7030, "n1", 1, "lease-expired"),
            follower(7030, "n1"),
            fault(9000, 1, "partition"),
            healed(12_000, 1, "partition"),
            fault(14_000, 2, "kill"),
            killed(14_000, "n2"),
            key_deleted(16_100, 2),
            leader(16_130, "n3", 3),
            fault(18_000, 3, "pause"),
        ];
        for s in 0..20 {
            entries.push(tick(16_200 + s * 100, "n3", 3));
        }
        entries.sort_by_key(|e| e.at_us);
        (entries, 20_000_000)
    }

    fn lanes(entries: &[Entry], end_us: i64) -> Lanes {
        let nodes = vec!["n1".into(), "n2".into(), "n3".into()];
        crate::render::lanes::build(
            crate::render::lanes::LaneBuilder::new(nodes, end_us, vec![]),
            entries,
            end_us,
        )
    }

    fn findings(entries: &[Entry], end_us: i64) -> Findings {
        let r = resolved();
        check(&crate::checker::CheckInput {
            resolved: &r,
            entries,
            end_us,
            client: Default::default(),
        })
    }

    #[test]
    fn identical_inputs_render_identical_bytes() {
        let (entries, end_us) = sample();
        let f = findings(&entries, end_us);
        let l = lanes(&entries, end_us);
        let a = leaders_acting_svg(&f, &l, end_us, "sample").unwrap();
        let b = leaders_acting_svg(&f, &l, end_us, "sample").unwrap();
        assert_eq!(a, b);
        for text in [
            "time (simulated s)",
            "leaders acting",
            "by belief (role)",
            "by effect (accepted writes)",
            "write rejected (stale token)",
            "fault window",
            "instant fault",
            " partition",
            " kill",
            // The lanes: names, the token of each leadership, the rejected write with
            // both tokens, and their legend.
            "lanes (one per node)",
            ">\nn1\n<",
            ">\nn3\n<",
            "token 1",
            "token 2",
            "rejected 1 &lt; 2",
            "believes it leads (token)",
            "accepted writes (merged where dense)",
            "write rejected: token &lt; max_token",
            "down (killed, until restart)",
        ] {
            assert!(a.contains(text), "missing `{text}`");
        }
        if let Ok(path) = std::env::var("BATON_SAMPLE_SVG") {
            std::fs::write(path, &a).unwrap();
        }
        // Without the last fault the picture must differ.
        let fewer: Vec<Entry> = entries
            .iter()
            .filter(|e| !matches!(e.event, Event::FaultApplied { index: 3, .. }))
            .cloned()
            .collect();
        let c = leaders_acting_svg(
            &findings(&fewer, end_us),
            &lanes(&fewer, end_us),
            end_us,
            "sample",
        )
        .unwrap();
        assert_ne!(a, c);
    }

    #[test]
    fn a_clock_fault_adds_the_clock_view_and_nothing_else_does() {
        let (entries, end_us) = sample();
        let f = findings(&entries, end_us);
        let plain = leaders_acting_svg(&f, &lanes(&entries, end_us), end_us, "s").unwrap();
        assert!(!plain.contains("clock offset from global time"));
        let mut skewed = entries.clone();
        skewed.push(crate::checker::testing::at(
            19_000,
            Event::FaultApplied {
                index: 4,
                kind: crate::fault::FaultKind::ClockStep,
                target: "n2".into(),
            },
        ));
        let nodes = vec!["n1".into(), "n2".into(), "n3".into()];
        let changes = vec![
            None,
            None,
            None,
            None,
            Some(crate::render::lanes::ClockChange::Step(-300)),
        ];
        let l = crate::render::lanes::build(
            crate::render::lanes::LaneBuilder::new(nodes, end_us, changes),
            &skewed,
            end_us,
        );
        let svg = leaders_acting_svg(&findings(&skewed, end_us), &l, end_us, "s").unwrap();
        for text in [
            "clock offset from global time",
            "offset (ms)",
            "step -300 ms",
            "clock fault (value)",
            "every other clock reads global time (offset 0)",
        ] {
            assert!(svg.contains(text), "missing `{text}`");
        }
    }

    #[test]
    fn the_etcd_leader_and_a_slow_disk_are_drawn_with_their_legend() {
        // An etcd member's lane: it leads the lease service until killed, and another
        // member's disk is slowed. Both were left undrawn before (issue 34).
        let entries = vec![
            at(
                0,
                Event::EtcdLeaderElected {
                    member: "etcd-1".into(),
                    term: 2,
                },
            ),
            fault(5_000, 0, "slow-disk"),
            at(
                8_000,
                Event::EtcdLeaderLost {
                    member: "etcd-1".into(),
                    term: 2,
                },
            ),
        ];
        let nodes = vec!["n1".into(), "etcd-1".into()];
        let l = crate::render::lanes::build(
            crate::render::lanes::LaneBuilder::new(nodes, 20_000_000, vec![]),
            &entries,
            20_000_000,
        );
        let svg =
            leaders_acting_svg(&findings(&entries, 20_000_000), &l, 20_000_000, "etcd").unwrap();
        for text in [
            "leads the etcd cluster (term)",
            "etcd leader, term 2",
            "slow disk (fsync)",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
    }

    #[test]
    fn empty_run_renders() {
        let f = findings(&[], 0);
        let svg = leaders_acting_svg(&f, &lanes(&[], 0), 0, "empty").unwrap();
        assert!(svg.starts_with("<svg"));
    }
}
