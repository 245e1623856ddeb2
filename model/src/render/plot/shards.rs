//! A sharded run's `leaders_acting.svg`: the partitions each node leads over simulated
//! time (one step line per node), with each membership change (a kill, a restart) as a
//! labelled vertical line. Drawn from the findings only, into an in-memory string, so
//! that identical runs give identical bytes (see [`crate::render::plot`]).

use crate::checker::shards::ShardsSummary;
use crate::render::plot::style::PALETTE;
use crate::render::plot::PlotError;
use crate::NodeId;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const SIZE_PX: (u32, u32) = (1200, 560);
const LEGEND_WIDTH_PX: u32 = 160;

/// The plot of `s` for a fleet of `nodes` over a run of `end_ms`, titled `title`.
pub fn partitions_svg(
    s: &ShardsSummary,
    nodes: &[NodeId],
    end_ms: f64,
    title: &str,
) -> Result<String, PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE_PX).into_drawing_area();
        root.fill(&WHITE)?;
        let (chart_area, legend) = root.split_horizontally(SIZE_PX.0 - LEGEND_WIDTH_PX);
        draw(&chart_area, s, nodes, end_ms, title)?;
        for (i, n) in nodes.iter().enumerate() {
            let y = 60 + i as i32 * 22;
            let color = PALETTE.get(i).copied().unwrap_or(PALETTE[7]);
            legend.draw(&PathElement::new(
                vec![(10, y), (40, y)],
                color.stroke_width(2),
            ))?;
            legend.draw(&Text::new(
                n.clone(),
                (48, y),
                TextStyle::from(("sans-serif", 13).into_font())
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
        }
        root.present()?;
    }
    Ok(svg)
}

type Drawn = Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn draw(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    s: &ShardsSummary,
    nodes: &[NodeId],
    end_ms: f64,
    title: &str,
) -> Drawn {
    let end_s = (end_ms / 1000.0).max(1.0);
    let most = s
        .led_over_time
        .iter()
        .map(|(_, _, n)| *n)
        .max()
        .unwrap_or(1);
    let y_max = (most + 2) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..end_s, 0.0..y_max)?;
    chart
        .configure_mesh()
        .x_desc("time (simulated s)")
        .y_desc("partitions led (by belief)")
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    for c in &s.changes {
        let x = c.at_ms / 1000.0;
        let grey = RGBColor(120, 120, 120);
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(x, 0.0), (x, y_max)],
            grey.stroke_width(1),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            format!("{} {}", c.kind, c.node),
            (x, y_max - 0.5),
            ("sans-serif", 12).into_font().color(&grey),
        )))?;
    }
    for (i, n) in nodes.iter().enumerate() {
        let color = PALETTE.get(i).copied().unwrap_or(PALETTE[7]);
        let mut points = vec![(0.0, 0.0)];
        let mut last = 0.0;
        for (at_ms, node, count) in &s.led_over_time {
            if node == n {
                let x = at_ms / 1000.0;
                points.push((x, last));
                last = *count as f64;
                points.push((x, last));
            }
        }
        points.push((end_s, last));
        chart.draw_series(LineSeries::new(points, color.stroke_width(2)))?;
    }
    Ok(())
}
