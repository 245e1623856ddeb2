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
    match baton_sim::Cli::try_parse() {
        Ok(cli) => std::process::exit(baton_sim::run_cli(cli)),
        // --help and --version print as clap prints them, and exit 0.
        Err(e) if !e.use_stderr() => e.exit(),
        // Bad arguments: one line on stderr, exit 2 (clap's usage block and "For more
        // information" trailer dropped; a list clap puts on lines of its own is joined).
        Err(e) => {
            eprintln!("{}", one_line(&e.render().to_string()));
            std::process::exit(2)
        }
    }
}

/// Clap's rendered error as one line: its lines up to the usage block, joined.
#[cfg(madsim)]
fn one_line(rendered: &str) -> String {
    rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(not(madsim))]
fn main() {}
