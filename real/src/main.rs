//! `baton-real`: Baton's real-network mode (see the crate docs and docs/src/real-mode.md).
//!
//! Subcommands `node`, `resource` and `load` are the processes a run starts (the
//! supervisor runs them with a config file); `smoke` runs clean-kill trials end to end.

#[cfg(madsim)]
fn main() {
    eprintln!(
        "baton-real was built with --cfg madsim (the simulation build); build it with \
         `CARGO_ENCODED_RUSTFLAGS= cargo build --release -p baton-real --target-dir target/real`"
    );
    std::process::exit(2);
}

#[cfg(not(madsim))]
mod cli;

#[cfg(not(madsim))]
fn main() {
    std::process::exit(cli::main());
}
