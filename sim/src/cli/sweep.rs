//! `sim sweep`.

use super::common::{
    out_dir, progress, protocols, refuse_protocol_set, say, sayln, write_files, Words,
};
use super::SweepArgs;
use crate::cmd::sweep::output::Finished;
use crate::error::{Outcome, Result};

pub(super) fn sweep(args: SweepArgs) -> Result {
    let base = baton_model::scenario::load(&args.scenario, &args.set.set)?;
    let protocols = protocols(&args.protocols.protocols, vec![base.scenario.protocol])?;
    refuse_protocol_set(
        &args.set.set,
        "sweep protocols with --protocols (default: the scenario's own)",
    )?;
    let plan = crate::cmd::sweep::Plan {
        scenario: args.scenario.clone(),
        axes: args.grid.clone(),
        protocols,
        seeds: args.seeds.or(0..20),
        set: args.set.set.clone(),
        jobs: args.jobs.jobs as usize,
    };
    let targets = crate::cmd::sweep::resolve(&plan)?;
    let name = base.scenario.name.clone();
    let default = baton_model::render::output_dir::default_dir_for(&name, &plan.set, "sweep");
    let dir = out_dir(&args.out.out, args.out.force, default)?;
    let slo_given = base.scenario.slo.is_some();
    let slo = base.scenario.slo.clone().unwrap_or_default();
    let total = targets.len() as u64 * (plan.seeds.end - plan.seeds.start);
    let bar = progress(total, "runs", args.quiet.quiet);
    let ran = crate::cmd::sweep::run(&plan, &targets, &slo, &bar);
    bar.finish();
    let (cells, done) = ran?;
    let mut words = Words::new("sweep").path(&args.scenario);
    for a in &plan.axes {
        words = words.flag("--grid", format!("{}={}", a.key, a.values.join(",")));
    }
    if let Some(p) = &args.protocols.protocols {
        words = words.flag("--protocols", p.clone());
    }
    let command = words.seeds("--seeds", &plan.seeds).sets(&plan.set).line();
    let finished = Finished {
        plan: &plan,
        command: &command,
        name: &name,
        slo: &slo,
        slo_given,
        cells: &cells,
        done,
        total,
    };
    let (md, json) = (finished.markdown(), finished.json());
    let plots = finished.plots()?;
    let mut files: Vec<(&str, &[u8])> =
        vec![("sweep.md", md.as_bytes()), ("sweep.json", json.as_bytes())];
    files.extend(plots.iter().map(|(n, svg)| (*n, svg.as_bytes())));
    write_files(&dir, "sweep", &files)?;
    if !args.quiet.quiet {
        say(&md);
    }
    sayln(format!("sweep: {}", dir.display()));
    if finished.interrupted() {
        eprintln!(
            "interrupted after {done} of {total} runs: the sweep in {} holds the runs that finished",
            dir.display()
        );
        return Ok(Outcome::Interrupted);
    }
    Ok(Outcome::Pass)
}
