//! The four plots of a sweep (SVG, plotters), drawn from its cells:
//!
//! - `failover_vs_ttl.svg`: per protocol, the median failover with a p5-p95 band, and
//!   the protocol's named failover bound as a dashed line of the same colour;
//! - `false_failovers_vs_ttl.svg`: false failovers per hour under the scenario's noise;
//! - `election_latency_cdf.svg`: the CDF of election latency per protocol, every grid
//!   point and seed pooled;
//! - `unavailability_vs_ttl.svg`: dark seconds per hour (failovers under the SLO's death
//!   rate plus false failovers), the SLO's error budget as a dashed line, and each
//!   protocol's knee (least dark time) ringed.
//!
//! The x axis is the first grid axis, on a log scale when its values span a factor of 10
//! or more (TTLs do), with a tick at each swept value. A series is a protocol, and the
//! values of any further axes. As with the run plot, text needs no font files and the
//! bytes depend only on the cells.

use crate::cmd::sweep::Cell;
use baton_model::render::plot::style::PALETTE;
use baton_model::render::plot::PlotError;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const SIZE_PX: (u32, u32) = (1000, 560);
const LEGEND_WIDTH_PX: u32 = 250;

/// One line of a plot: a protocol (and the values of the further axes), its cells in
/// x order.
struct Series<'a> {
    label: String,
    color: RGBColor,
    cells: Vec<(f64, &'a Cell)>,
}

/// A sweep plot that could not be drawn. Every input was checked before the runs, so
/// each of these is Baton's fault.
#[derive(Debug, thiserror::Error)]
pub enum SweepPlotError {
    /// The sweep has no cells.
    #[error("no cells to plot")]
    NoCells,
    /// The cells have no grid axis.
    #[error("no grid axis")]
    NoAxis,
    /// The first axis holds a value that is not a number.
    #[error("grid axis {key}: `{raw}` is not a number, so it cannot be an x axis")]
    NotANumber {
        /// The axis.
        key: String,
        /// The value.
        raw: String,
    },
    /// plotters failed.
    #[error(transparent)]
    Draw(#[from] baton_model::render::plot::PlotError),
}

/// The x axis: the first grid axis's values, numeric.
struct XAxis {
    desc: String,
    values: Vec<f64>,
    log: bool,
    /// Shown in seconds (a TTL axis given in ms).
    seconds: bool,
}

impl XAxis {
    fn of(cells: &[Cell]) -> Result<XAxis, SweepPlotError> {
        let first = cells.first().ok_or(SweepPlotError::NoCells)?;
        let key = first
            .point
            .first()
            .ok_or(SweepPlotError::NoAxis)?
            .key
            .clone();
        let seconds = first.ttl_ms.is_some() && baton_model::protocol::ttl::is_ttl_key(&key);
        let mut values = vec![];
        for c in cells {
            let raw = &c.point[0].value;
            let v: f64 = raw.parse().map_err(|_| SweepPlotError::NotANumber {
                key: key.clone(),
                raw: raw.clone(),
            })?;
            let v = if seconds { v / 1000.0 } else { v };
            if !values.contains(&v) {
                values.push(v);
            }
        }
        values.sort_by(f64::total_cmp);
        let (lo, hi) = (values[0], values[values.len() - 1]);
        let log = lo > 0.0 && hi / lo >= 10.0;
        let desc = if seconds {
            "lease TTL (s; each protocol's own TTL key, see model/src/protocol/ttl.rs; protocols drawn side by side)".to_string()
        } else {
            key
        };
        Ok(XAxis {
            desc,
            values,
            log,
            seconds,
        })
    }

    fn x(&self, c: &Cell) -> f64 {
        let v: f64 = c.point[0].value.parse().unwrap_or(0.0);
        let v = if self.seconds { v / 1000.0 } else { v };
        self.map(v)
    }

    fn map(&self, v: f64) -> f64 {
        if self.log {
            v.log10()
        } else {
            v
        }
    }

    fn label(&self, x: f64) -> String {
        let v = if self.log { 10f64.powf(x) } else { x };
        let r = (v * 1000.0).round() / 1000.0;
        format!("{r}")
    }

    /// The plotted range, with a margin either side.
    fn range(&self) -> std::ops::Range<f64> {
        let lo = self.map(self.values[0]);
        let hi = self.map(self.values[self.values.len() - 1]);
        let pad = if hi > lo { (hi - lo) * 0.06 } else { 0.5 };
        (lo - pad)..(hi + pad)
    }

    fn key_points(&self) -> Vec<f64> {
        self.values.iter().map(|v| self.map(*v)).collect()
    }
}

fn series<'a>(cells: &'a [Cell], x: &XAxis) -> Vec<Series<'a>> {
    let mut out: Vec<Series> = vec![];
    for c in cells {
        let mut label = c.protocol.to_string();
        for a in c.point.iter().skip(1) {
            label.push_str(&format!(" {}={}", a.key, a.value));
        }
        match out.iter_mut().find(|s| s.label == label) {
            Some(s) => s.cells.push((x.x(c), c)),
            None => {
                let color = PALETTE[out.len() % PALETTE.len()];
                out.push(Series {
                    label,
                    color,
                    cells: vec![(x.x(c), c)],
                });
            }
        }
    }
    // Dodge: each series sits a little to the side of the grid point, in legend order,
    // so that protocols with near-equal values (two lines on top of each other) stay
    // visible as two lines and two rings. The grid is a handful of TTLs far apart, so a
    // step of 1.2% of the axis cannot be read as another grid value.
    let r = x.range();
    let step = (r.end - r.start) * 0.012;
    let mid = (out.len() as f64 - 1.0) / 2.0;
    for (i, s) in out.iter_mut().enumerate() {
        let shift = (i as f64 - mid) * step;
        for (x, _) in &mut s.cells {
            *x += shift;
        }
        s.cells.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

type Err = DrawingAreaErrorKind<std::io::Error>;

fn render(
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), Err>,
) -> Result<String, SweepPlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE_PX).into_drawing_area();
        draw(&root).map_err(PlotError::from)?;
        root.present().map_err(PlotError::from)?;
    }
    Ok(svg)
}

/// A legend row: a swatch and a label.
enum Swatch {
    Line(ShapeStyle),
    Dashed(ShapeStyle),
    Band(ShapeStyle),
    Ring(ShapeStyle),
}

fn legend(area: &DrawingArea<SVGBackend, Shift>, items: &[(String, Swatch)]) -> Result<(), Err> {
    let font = ("sans-serif", 13).into_font().color(&BLACK);
    for (i, (label, swatch)) in items.iter().enumerate() {
        let (x, y) = (6, 30 + 21 * i as i32);
        match swatch {
            Swatch::Line(s) => area.draw(&PathElement::new(vec![(x, y), (x + 24, y)], *s))?,
            Swatch::Dashed(s) => {
                area.draw(&PathElement::new(vec![(x, y), (x + 9, y)], *s))?;
                area.draw(&PathElement::new(vec![(x + 15, y), (x + 24, y)], *s))?;
            }
            Swatch::Band(s) => area.draw(&Rectangle::new([(x, y - 6), (x + 24, y + 6)], *s))?,
            Swatch::Ring(s) => area.draw(&Circle::new((x + 12, y), 7, *s))?,
        }
        area.draw(&Text::new(
            label.clone(),
            (x + 32, y),
            font.pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    Ok(())
}

/// A chart drawing on an SVG over two float axes.
type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// A chart over the x axis and `0..y_max`, with titles and a legend column.
fn chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    x: &XAxis,
    y_desc: &str,
    y: std::ops::Range<f64>,
    y_log: bool,
) -> Result<(Chart<'a, 'b>, DrawingArea<SVGBackend<'b>, Shift>), Err> {
    root.fill(&WHITE)?;
    let body = root.titled(title, ("sans-serif", 19))?;
    let (plot, legend_area) = body.split_horizontally(SIZE_PX.0 - LEGEND_WIDTH_PX);
    let mut c = ChartBuilder::on(&plot)
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x.range(), y.clone())?;
    let mut mesh = c.configure_mesh();
    mesh.x_desc(x.desc.clone())
        .y_desc(y_desc)
        .x_labels(0)
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .light_line_style(WHITE)
        .bold_line_style(BLACK.mix(0.08));
    if y_log {
        mesh.y_labels(0);
    }
    mesh.draw()?;
    let ticks: Vec<(f64, String)> = x
        .key_points()
        .into_iter()
        .map(|k| (k, x.label(k)))
        .collect();
    x_ticks(root, &c, y.start, y.end, &ticks)?;
    if y_log {
        y_log_ticks(root, &c, x.range(), y.clone())?;
    }
    Ok((c, legend_area))
}

/// Draws a tick, a faint grid line and a label at each of `ticks` on the x axis (plotters
/// places its own ticks at round numbers; a sweep's ticks belong at its grid values).
fn x_ticks(
    root: &DrawingArea<SVGBackend, Shift>,
    c: &ChartContext<
        SVGBackend,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    y_min: f64,
    y_max: f64,
    ticks: &[(f64, String)],
) -> Result<(), Err> {
    let area = c.plotting_area();
    let font = ("sans-serif", 13).into_font().color(&BLACK);
    for (x, label) in ticks {
        let (px, py) = area.map_coordinate(&(*x, y_min));
        let (_, top) = area.map_coordinate(&(*x, y_max));
        root.draw(&PathElement::new(
            vec![(px, top), (px, py)],
            BLACK.mix(0.08),
        ))?;
        root.draw(&PathElement::new(vec![(px, py), (px, py + 5)], BLACK))?;
        root.draw(&Text::new(
            label.clone(),
            (px, py + 8),
            font.pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    Ok(())
}

/// Ticks at 1, 2 and 5 times each power of ten inside `y` (log10 units), with faint
/// grid lines and labels in the axis's own units.
fn y_log_ticks(
    root: &DrawingArea<SVGBackend, Shift>,
    c: &ChartContext<
        SVGBackend,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
) -> Result<(), Err> {
    let area = c.plotting_area();
    let font = ("sans-serif", 13).into_font().color(&BLACK);
    for e in (y.start.floor() as i32)..=(y.end.ceil() as i32) {
        for m in [1.0, 2.0, 5.0] {
            let v = m * 10f64.powi(e);
            let ly = v.log10();
            if ly < y.start || ly > y.end {
                continue;
            }
            let (left, py) = area.map_coordinate(&(x.start, ly));
            let (right, _) = area.map_coordinate(&(x.end, ly));
            root.draw(&PathElement::new(
                vec![(left, py), (right, py)],
                BLACK.mix(0.08),
            ))?;
            root.draw(&PathElement::new(vec![(left - 5, py), (left, py)], BLACK))?;
            let r = (v * 1000.0).round() / 1000.0;
            root.draw(&Text::new(
                format!("{r}"),
                (left - 8, py),
                font.pos(Pos::new(HPos::Right, VPos::Center)),
            ))?;
        }
    }
    Ok(())
}

fn nice_max(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    v * 1.12
}

/// (a) Failover vs TTL: median, p5-p95 band, the named bound dashed; log y, since
/// failovers span from under a second to a minute.
pub fn failover_svg(cells: &[Cell], title: &str) -> Result<String, SweepPlotError> {
    let x = XAxis::of(cells)?;
    let ss = series(cells, &x);
    let s_of = |ms: f64| (ms / 1000.0).max(0.05);
    let hi = cells
        .iter()
        .map(|c| s_of(c.failover_ms.p95.max(c.failover_bound_ms as f64)))
        .fold(0.1, f64::max);
    let lo = cells
        .iter()
        .filter(|c| c.failover_ms.count > 0)
        .map(|c| s_of(c.failover_ms.p5))
        .fold(hi, f64::min);
    let y = (lo * 0.8).log10()..(hi * 1.25).log10();
    let ly = |ms: f64| s_of(ms).log10();
    render(|root| {
        let (mut c, legend_area) = chart(
            root,
            title,
            &x,
            "failover (s, log scale): last old-leader write to first new-leader write",
            y,
            true,
        )?;
        let mut items = vec![];
        for s in &ss {
            let with: Vec<&(f64, &Cell)> = s
                .cells
                .iter()
                .filter(|(_, c)| c.failover_ms.count > 0)
                .collect();
            if with.len() > 1 {
                let mut band: Vec<(f64, f64)> = with
                    .iter()
                    .map(|(x, c)| (*x, ly(c.failover_ms.p95)))
                    .collect();
                band.extend(with.iter().rev().map(|(x, c)| (*x, ly(c.failover_ms.p5))));
                c.draw_series(std::iter::once(Polygon::new(
                    band,
                    s.color.mix(0.12).filled(),
                )))?;
            }
            let line = s.color.stroke_width(2);
            let median: Vec<(f64, f64)> = with
                .iter()
                .map(|(x, c)| (*x, ly(c.failover_ms.p50)))
                .collect();
            c.draw_series(LineSeries::new(median.clone(), line))?;
            c.draw_series(median.iter().map(|p| Circle::new(*p, 3, s.color.filled())))?;
            let bound: Vec<(f64, f64)> = s
                .cells
                .iter()
                .map(|(x, c)| (*x, ly(c.failover_bound_ms as f64)))
                .collect();
            c.draw_series(DashedLineSeries::new(
                bound,
                6,
                4,
                s.color.mix(0.9).stroke_width(1),
            ))?;
            items.push((s.label.clone(), Swatch::Line(line)));
        }
        items.push(("line: median".into(), Swatch::Line(BLACK.stroke_width(2))));
        items.push((
            "band: p5 to p95".into(),
            Swatch::Band(BLACK.mix(0.12).filled()),
        ));
        items.push((
            "dashed: the protocol's bound".into(),
            Swatch::Dashed(BLACK.stroke_width(1)),
        ));
        legend(&legend_area, &items)
    })
}

/// (b) False failovers per hour vs TTL.
pub fn false_failovers_svg(cells: &[Cell], title: &str) -> Result<String, SweepPlotError> {
    let x = XAxis::of(cells)?;
    let ss = series(cells, &x);
    let y_max = nice_max(
        cells
            .iter()
            .map(|c| c.false_failovers_per_hour)
            .fold(0.0, f64::max),
    );
    render(|root| {
        let (mut c, legend_area) = chart(
            root,
            title,
            &x,
            "false failovers per hour",
            0.0..y_max,
            false,
        )?;
        let mut items = vec![];
        for s in &ss {
            let line = s.color.stroke_width(2);
            let pts: Vec<(f64, f64)> = s
                .cells
                .iter()
                .map(|(x, c)| (*x, c.false_failovers_per_hour))
                .collect();
            c.draw_series(LineSeries::new(pts.clone(), line))?;
            c.draw_series(pts.iter().map(|p| Circle::new(*p, 3, s.color.filled())))?;
            items.push((s.label.clone(), Swatch::Line(line)));
        }
        legend(&legend_area, &items)
    })
}

/// (c) Election latency CDF per protocol, every point and seed pooled.
pub fn election_cdf_svg(cells: &[Cell], title: &str) -> Result<String, SweepPlotError> {
    let mut protocols: Vec<(&str, Vec<f64>)> = vec![];
    for c in cells {
        match protocols.iter_mut().find(|(p, _)| *p == c.protocol) {
            Some((_, v)) => v.extend(c.election_latencies_ms.iter().copied()),
            None => protocols.push((c.protocol, c.election_latencies_ms.clone())),
        }
    }
    for (_, v) in &mut protocols {
        v.sort_by(f64::total_cmp);
    }
    // Latencies span milliseconds to tens of seconds: a log axis, from 1 ms.
    let max_ms = protocols
        .iter()
        .filter_map(|(_, v)| v.last().copied())
        .fold(1.0, f64::max);
    let (lo, hi) = (0.0f64, (max_ms.max(10.0) * 1.3).log10());
    let ticks: Vec<f64> = (0..=(hi.ceil() as i32))
        .map(f64::from)
        .filter(|t| *t <= hi)
        .collect();
    render(|root| {
        root.fill(&WHITE)?;
        let body = root.titled(title, ("sans-serif", 19))?;
        let (plot, legend_area) = body.split_horizontally(SIZE_PX.0 - LEGEND_WIDTH_PX);
        let mut c = ChartBuilder::on(&plot)
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(lo..hi, 0f64..1.0)?;
        c.configure_mesh()
            .x_desc("election latency (ms, log scale): seat vacant or campaign start to win")
            .y_desc("share of elections at or below")
            .x_labels(0)
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 15))
            .light_line_style(WHITE)
            .bold_line_style(BLACK.mix(0.08))
            .draw()?;
        let labelled: Vec<(f64, String)> = ticks
            .iter()
            .map(|t| (*t, format!("{}", 10f64.powf(*t).round())))
            .collect();
        x_ticks(root, &c, 0.0, 1.0, &labelled)?;
        let mut items = vec![];
        for (i, (p, v)) in protocols.iter().enumerate() {
            if v.is_empty() {
                continue;
            }
            let color = PALETTE[i % PALETTE.len()];
            let n = v.len() as f64;
            let mut pts = vec![];
            for (k, ms) in v.iter().enumerate() {
                let xv = ms.max(1.0).log10();
                pts.push((xv, k as f64 / n));
                pts.push((xv, (k + 1) as f64 / n));
            }
            let line = color.stroke_width(2);
            c.draw_series(LineSeries::new(pts, line))?;
            items.push((format!("{p} ({} elections)", v.len()), Swatch::Line(line)));
        }
        legend(&legend_area, &items)
    })
}

/// (d) Unavailability vs TTL, with the SLO budget and each protocol's knee; log y, since
/// dark time spans from a fraction of a second to a minute an hour.
pub fn unavailability_svg(
    cells: &[Cell],
    budget_s_per_hour: f64,
    title: &str,
) -> Result<String, SweepPlotError> {
    let x = XAxis::of(cells)?;
    let ss = series(cells, &x);
    // Zero dark time (no failover at all) sits on the floor of the axis.
    let floor = 0.01f64;
    let v = |c: &Cell| c.unavailability_s_per_hour.max(floor);
    let hi = cells.iter().map(v).fold(budget_s_per_hour, f64::max);
    let lo = cells.iter().map(v).fold(budget_s_per_hour, f64::min);
    let y = (lo * 0.7).log10()..(hi * 1.4).log10();
    render(|root| {
        let (mut c, legend_area) = chart(
            root,
            title,
            &x,
            "dark seconds per hour (log scale)",
            y,
            true,
        )?;
        let mut items = vec![];
        let r = x.range();
        let budget = BLACK.mix(0.7).stroke_width(2);
        let by = budget_s_per_hour.log10();
        c.draw_series(DashedLineSeries::new(
            vec![(r.start, by), (r.end, by)],
            8,
            5,
            budget,
        ))?;
        items.push((
            format!("SLO budget {budget_s_per_hour:.2} s/h"),
            Swatch::Dashed(budget),
        ));
        for s in &ss {
            let line = s.color.stroke_width(2);
            let pts: Vec<(f64, f64)> = s.cells.iter().map(|(x, c)| (*x, v(c).log10())).collect();
            c.draw_series(LineSeries::new(pts.clone(), line))?;
            c.draw_series(pts.iter().map(|p| Circle::new(*p, 3, s.color.filled())))?;
            if let Some(knee) = pts.iter().min_by(|a, b| a.1.total_cmp(&b.1)) {
                c.draw_series(std::iter::once(Circle::new(
                    *knee,
                    9,
                    s.color.stroke_width(2),
                )))?;
            }
            items.push((s.label.clone(), Swatch::Line(line)));
        }
        items.push((
            "knee (least dark time)".into(),
            Swatch::Ring(BLACK.stroke_width(2)),
        ));
        legend(&legend_area, &items)
    })
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built cells; each plot renders, carries its titles, axis names
    //! and legend, is byte-identical across renders and changes with its input.
    use super::*;
    use crate::cmd::sweep::{AxisValue, Spread};

    fn cell(protocol: &'static str, ttl_ms: u64, failover_ms: f64, false_per_h: f64) -> Cell {
        Cell {
            point: vec![AxisValue {
                key: "ttl_ms".into(),
                value: ttl_ms.to_string(),
            }],
            ttl_ms: Some(ttl_ms),
            protocol,
            seeds: [0, 3],
            passed: 3,
            failed: 0,
            failed_properties: vec![],
            failover_ms: Spread::of(&[failover_ms * 0.8, failover_ms, failover_ms * 1.1]),
            failover_bound_ms: ttl_ms + 600,
            false_failovers: false_per_h as u64,
            false_failovers_per_hour: false_per_h,
            false_failover_ms: Spread::of(&[ttl_ms as f64]),
            simulated_hours: 1.0,
            election_latency_ms: Spread::of(&[10.0, 20.0]),
            election_latencies_ms: vec![10.0, 20.0, 400.0],
            incidents: 0,
            seeds_with_incidents: 0,
            unavailability_s_per_hour: false_per_h * ttl_ms as f64 / 1000.0
                + failover_ms / 24_000.0,
            meets_slo: true,
            note: None,
            ttl_run_ms: None,
        }
    }

    fn cells() -> Vec<Cell> {
        let mut v = vec![];
        for p in ["etcd-lease", "raft"] {
            for (t, ff) in [(1_000, 20.0), (3_000, 4.0), (10_000, 0.5), (30_000, 0.0)] {
                v.push(cell(p, t, t as f64 * 0.9, ff));
            }
        }
        v
    }

    #[test]
    fn every_plot_renders_labelled_and_deterministic() {
        let c = cells();
        let plots = [
            failover_svg(&c, "failover").unwrap(),
            false_failovers_svg(&c, "false").unwrap(),
            election_cdf_svg(&c, "cdf").unwrap(),
            unavailability_svg(&c, 1.8, "dark").unwrap(),
        ];
        assert_eq!(plots[0], failover_svg(&c, "failover").unwrap());
        if let Ok(dir) = std::env::var("BATON_SAMPLE_SVG_DIR") {
            for (name, svg) in ["a", "b", "c", "d"].iter().zip(&plots) {
                std::fs::write(format!("{dir}/{name}.svg"), svg).unwrap();
            }
        }
        for (svg, needles) in plots.iter().zip([
            &[
                "failover (s, log scale)",
                "lease TTL (s",
                "etcd-lease",
                "dashed: the protocol",
                "band: p5 to p95",
            ][..],
            &["false failovers per hour", "etcd-lease"][..],
            &[
                "election latency (ms",
                "share of elections",
                "raft (12 elections)",
            ][..],
            &["dark seconds per hour", "SLO budget 1.80 s/h", "knee"][..],
        ]) {
            assert!(svg.starts_with("<svg"));
            for n in needles {
                assert!(svg.contains(n), "missing `{n}`");
            }
            // A tick at every swept TTL, in seconds.
            if !svg.contains("election latency (ms") {
                for t in [
                    "\n1\n</text>",
                    "\n3\n</text>",
                    "\n10\n</text>",
                    "\n30\n</text>",
                ] {
                    assert!(svg.contains(t), "no tick {t}");
                }
            }
        }
        let mut d = cells();
        d[0].failover_ms.p50 += 500.0;
        assert_ne!(plots[0], failover_svg(&d, "failover").unwrap());
    }

    #[test]
    fn a_non_numeric_first_axis_is_refused() {
        let mut c = cells();
        for x in &mut c {
            x.point[0].value = "fast".into();
        }
        assert!(failover_svg(&c, "t")
            .unwrap_err()
            .to_string()
            .contains("not a number"));
    }
}
