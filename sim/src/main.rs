//! The `sim` command: run a scenario, check determinism, measure speed.

use baton_sim::cli;
use clap::Parser;

fn main() {
    let args = cli::Cli::parse();
    std::process::exit(cli::main(args));
}
