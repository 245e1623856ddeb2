//! `ttl-sweep.svg` of `sim conform`: a live TTL sweep's trade-off in three charts over
//! one TTL axis (log scale, the TTL the backend granted): the failover after the
//! leader's kill, the false failovers per hour under GC noise, and the dark seconds per
//! hour they add up to ([`crate::scenario::Slo::dark_s_per_hour`]) against the
//! objective's budget, with the knee ringed.

use crate::render::plot::style::PALETTE;
use plotters::coord::combinators::IntoLogRange;
use plotters::prelude::*;

/// One TTL of the sweep, as the plot draws it.
#[derive(Clone, Debug, PartialEq)]
pub struct TtlPoint {
    /// The TTL the backend granted, in seconds (the x axis).
    pub ttl_s: f64,
    /// The median failover after the kill, in seconds (none measured: not drawn).
    pub failover_s: Option<f64>,
    /// False failovers per hour of run.
    pub false_per_hour: f64,
    /// When none was seen: the rate a run this short could still hide (95%, drawn as a
    /// triangle).
    pub false_upper_per_hour: Option<f64>,
    /// Dark seconds per hour (none when the failover was not measured).
    pub dark_s_per_hour: Option<f64>,
}

const SIZE_PX: (u32, u32) = (760, 720);

/// The SVG; `budget` is the objective's dark seconds per hour, `knee` the index of the
/// point the report names. Plotters' error comes back as text.
pub fn ttl_sweep_svg(
    points: &[TtlPoint],
    budget_s_per_hour: f64,
    knee: Option<usize>,
    title: &str,
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE_PX).into_drawing_area();
        draw(&root, points, budget_s_per_hour, knee, title).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// A point of a chart: (TTL s, value).
type Xy = (f64, f64);
type Root<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type Err = DrawingAreaErrorKind<std::io::Error>;

fn draw(
    root: &Root,
    points: &[TtlPoint],
    budget: f64,
    knee: Option<usize>,
    title: &str,
) -> Result<(), Err> {
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 18))?;
    let panels = root.split_evenly((3, 1));
    let lo = points.iter().map(|p| p.ttl_s).fold(f64::INFINITY, f64::min);
    let hi = points.iter().map(|p| p.ttl_s).fold(0.0, f64::max);
    let x = (lo.min(1.0) * 0.8)..(hi.max(2.0) * 1.25);
    let fail: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|p| Some((p.ttl_s, p.failover_s?)))
        .collect();
    let false_h: Vec<(f64, f64)> = points.iter().map(|p| (p.ttl_s, p.false_per_hour)).collect();
    let dark: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|p| Some((p.ttl_s, p.dark_s_per_hour?)))
        .collect();
    let upper: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|p| Some((p.ttl_s, p.false_upper_per_hour?)))
        .collect();
    let y = "failover after a kill (s)";
    panel(&panels[0], &x, (&fail, &[]), y, PALETTE[0], None)?;
    let y = "false failovers / h (triangle: 95% bound if 0 seen)";
    panel(&panels[1], &x, (&false_h, &upper), y, PALETTE[1], None)?;
    let ring = knee.and_then(|i| Some((points.get(i)?.ttl_s, points[i].dark_s_per_hour?)));
    panel(
        &panels[2],
        &x,
        (&dark, &[]),
        "dark s per hour (budget dashed)",
        PALETTE[3],
        Some((budget, ring)),
    )?;
    Ok(())
}

/// One chart: `data` as a line with dots, `bounds` as triangles; `budget` adds the
/// dashed budget line and rings the knee.
fn panel(
    area: &Root,
    x: &std::ops::Range<f64>,
    (data, bounds): (&[Xy], &[Xy]),
    y_desc: &str,
    color: RGBColor,
    budget: Option<(f64, Option<(f64, f64)>)>,
) -> Result<(), Err> {
    let top = data
        .iter()
        .chain(bounds)
        .map(|p| p.1)
        .chain(budget.map(|b| b.0))
        .fold(0.0f64, f64::max);
    let y_max = if top > 0.0 { top * 1.2 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .margin(8)
        .x_label_area_size(34)
        .y_label_area_size(64)
        .build_cartesian_2d(x.clone().log_scale(), 0.0..y_max)?;
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .x_desc("TTL granted (s, log scale)")
        .y_desc(y_desc)
        .x_label_formatter(&|v| format!("{v}"))
        .y_label_formatter(&|v| format!("{v:.2}"))
        .draw()?;
    chart.draw_series(LineSeries::new(data.iter().copied(), color.stroke_width(2)))?;
    chart.draw_series(
        bounds
            .iter()
            .map(|&p| TriangleMarker::new(p, 6, color.stroke_width(2))),
    )?;
    chart.draw_series(
        data.iter()
            .map(|&(a, b)| Circle::new((a, b), 4, color.filled())),
    )?;
    if let Some((b, ring)) = budget {
        let (x0, x1) = (x.start, x.end);
        chart.draw_series(DashedLineSeries::new(
            [(x0, b), (x1, b)],
            6,
            4,
            BLACK.stroke_width(1),
        ))?;
        if let Some(k) = ring {
            chart.draw_series([Circle::new(k, 9, BLACK.stroke_width(2))])?;
            chart.draw_series([Text::new(
                "knee",
                (k.0 * 1.06, k.1 + y_max * 0.16),
                ("sans-serif", 14),
            )])?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Methodology: a hand-made sweep renders, deterministically, with its labels.
    use super::*;

    #[test]
    fn the_sweep_plot_renders_with_its_labels() {
        let p = |ttl_s: f64, f: f64, h: f64| TtlPoint {
            ttl_s,
            failover_s: Some(f),
            false_per_hour: h,
            false_upper_per_hour: (h == 0.0).then_some(60.0),
            dark_s_per_hour: Some(f / 24.0 + h * f),
        };
        let pts = [p(2.0, 2.5, 12.0), p(3.0, 3.4, 0.0), p(10.0, 10.6, 0.0)];
        let svg = ttl_sweep_svg(&pts, 1.8, Some(1), "TTL sweep").unwrap();
        assert_eq!(svg, ttl_sweep_svg(&pts, 1.8, Some(1), "TTL sweep").unwrap());
        for needle in [
            "TTL sweep",
            "false failovers / h",
            "95% bound",
            "knee",
            "TTL granted",
        ] {
            assert!(svg.contains(needle), "{needle}");
        }
    }
}
