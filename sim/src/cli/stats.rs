//! `sim stats`.

use super::common::say;
use super::StatsArgs;
use crate::error::{Outcome, Result};

pub(super) fn stats(args: StatsArgs) -> Result {
    let out = crate::cmd::stats::run(&args.reports, &args.get, &args.empty)?;
    say(&out);
    Ok(Outcome::Pass)
}
