//! The `sim` command: run a scenario, check determinism, measure speed.

// The simulator exists only under `--cfg madsim`. `.cargo/config.toml` sets it, but an
// environment RUSTFLAGS (or CARGO_ENCODED_RUSTFLAGS) replaces that setting instead of
// adding to it, and the build then failed deep inside madsim's API with nothing saying why.
#[cfg(not(madsim))]
compile_error!(
    "Baton's simulator must be built with `--cfg madsim`. `.cargo/config.toml` sets it, \
     but an environment RUSTFLAGS or CARGO_ENCODED_RUSTFLAGS replaces the config's flags \
     instead of adding to them. Fix: unset RUSTFLAGS, or keep the flag in it, e.g. \
     RUSTFLAGS=\"--cfg madsim -C target-cpu=native\" cargo build --release"
);

#[cfg(madsim)]
fn main() {
    use clap::Parser;
    std::process::exit(baton_sim::run_cli(baton_sim::Cli::parse()));
}

#[cfg(not(madsim))]
fn main() {}
