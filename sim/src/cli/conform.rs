//! `sim conform`: builds the real-mode binary when its sources changed, and runs
//! `baton-real conform` with the same arguments.

use crate::error::{Outcome, Result};
use baton_model::flags::ConformArgs;

pub(super) fn conform(args: ConformArgs) -> Result {
    let binary = super::real::binary(args.quiet.quiet)?;
    // Ctrl-C reaches baton-real too (one process group): wait for it to clean up.
    crate::cmd::interrupt::install();
    let code = crate::cmd::real::run_command(&binary, "conform", &args.to_words())?;
    Ok(Outcome::PassedOn(code))
}
