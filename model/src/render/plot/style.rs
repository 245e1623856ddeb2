//! What the charts of `leaders_acting.svg` share, so that they line up and read as one
//! picture: the room at the left for y labels (the same for every chart, so that their
//! time axes align), the colours of belief, effect and rejection, the legend's swatches,
//! and the width plotters gives a label. The counts chart ([`crate::render::plot`]) and the lanes
//! ([`crate::render::plot::lanes`]) both draw with them; neither needs the other for it.

use plotters::coord::Shift;
use plotters::prelude::*;

/// A part of the SVG document to draw in.
pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
/// What drawing into it gives: plotters' error, turned into text by the caller.
pub(crate) type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Room at the left of every chart for its y labels (and the lanes' names), the same for
/// all so that their time axes line up.
pub(crate) const Y_LABEL_PX: u32 = 70;
pub(crate) const BELIEF_COLOR: RGBColor = RGBColor(31, 119, 180);
pub(crate) const EFFECT_COLOR: RGBColor = RGBColor(255, 127, 14);
pub(crate) const REJECTION_COLOR: RGBColor = RGBColor(214, 39, 40);
/// Tableau 10: distinct, and readable by most colour-blind readers (one colour a series:
/// the sweep's protocols, a sharded run's nodes).
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// What a legend row shows beside its label.
pub(crate) enum Swatch {
    Fill(ShapeStyle),
    VerticalLine(ShapeStyle),
    Line(ShapeStyle),
    Cross(ShapeStyle),
    TriangleDown(ShapeStyle),
    TriangleUp(ShapeStyle),
    Dot(ShapeStyle),
    Diamond(ShapeStyle),
}

/// A label's width as plotters' estimator sees it (no font files), in pixels.
pub(crate) fn text_px(s: &str, size: i32) -> i32 {
    s.chars().count() as i32 * size * 6 / 10
}
