//! `sim bench` and the hidden `sim bench-workload` it starts.

use super::common::{say, sayln};
use super::{BenchArgs, BenchWorkloadArgs};
use crate::cmd::bench::{self, WORKLOADS};
use crate::error::{input, internal, Error, Outcome, Result};

pub(super) fn bench(args: BenchArgs) -> Result {
    if args.list {
        for w in WORKLOADS {
            sayln(format!("{:<18} {}", w.name, w.what));
        }
        return Ok(Outcome::Pass);
    }
    let chosen: Vec<&'static bench::Workload> = match &args.only {
        None => WORKLOADS.iter().collect(),
        Some(names) => names
            .split(',')
            .map(|n| {
                bench::workload(n.trim()).ok_or_else(|| {
                    let all: Vec<&str> = WORKLOADS.iter().map(|w| w.name).collect();
                    input(format!(
                        "--only: unknown workload `{}`: expected some of {}",
                        n.trim(),
                        all.join(", ")
                    ))
                })
            })
            .collect::<Result<_>>()?,
    };
    let exe = std::env::current_exe()
        .map_err(|e| internal(format!("cannot find the sim executable: {e}")))?;
    // Every name was checked before the first workload ran: a workload that fails now
    // is an internal error, whatever its own status.
    let rows = bench::measure_all(&exe, &chosen, args.repeat, |line| eprintln!("{line}"))?;
    say(&crate::cmd::bench::report::table(&rows));
    say("\n");
    say(&crate::cmd::bench::report::targets(&rows));
    Ok(Outcome::Pass)
}

pub(super) fn bench_workload(args: BenchWorkloadArgs) -> Result {
    let w = bench::workload(&args.name).ok_or_else(|| {
        input(format!(
            "unknown workload `{}` (see sim bench --list)",
            args.name
        ))
    })?;
    let m = bench::measure(w, args.messages_per_s).map_err(|error| Error::Workload {
        name: w.name,
        error,
    })?;
    sayln(serde_json::to_string(&m).expect("numbers serialize"));
    Ok(Outcome::Pass)
}
