//! What renders a run for a person and a script: the report (`report.json`,
//! `summary.txt`), the plots, the lanes they draw, `timeline.html`, and the directory the
//! artifacts go to.

pub mod artifacts;
pub mod lanes;
pub mod output_dir;
pub mod plot;
pub mod report;
pub mod shell;
pub mod timeline_html;
