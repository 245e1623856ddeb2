//! What the handlers share: printing to stdout, the command line a report records, where
//! output goes and whether it may be written, and `--protocols`.

use crate::error::{input, Error};
use crate::world::protocol::ProtocolName;
use std::path::{Path, PathBuf};

/// Writes to stdout, ignoring a closed pipe (`sim run ... | head` must not panic).
pub fn say(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// [`say`] with a newline.
pub fn sayln(text: impl AsRef<str>) {
    say(&format!("{}\n", text.as_ref()));
}

/// The words of a command line as a report records it (`sim sweep scenarios/x.toml
/// --grid ...`), shell-quoted by [`Words::line`]. `--out`, `--force` and `--quiet`
/// are left out: they change where output goes and what is printed, not what it holds.
pub struct Words(Vec<String>);

impl Words {
    /// `sim <verb>`.
    pub fn new(verb: &str) -> Words {
        Words(vec!["sim".into(), verb.into()])
    }

    /// A scenario path, as reports write it (relative to the current directory when
    /// under it, else absolute).
    pub fn path(mut self, p: &Path) -> Words {
        self.0.push(baton_model::scenario::display_path(p));
        self
    }

    /// A word as it is.
    pub fn word(mut self, w: impl Into<String>) -> Words {
        self.0.push(w.into());
        self
    }

    /// `--flag value`.
    pub fn flag(mut self, flag: &str, value: impl Into<String>) -> Words {
        self.0.extend([flag.to_string(), value.into()]);
        self
    }

    /// `--seeds A..B`.
    pub fn seeds(self, flag: &str, r: &std::ops::Range<u64>) -> Words {
        self.flag(flag, format!("{}..{}", r.start, r.end))
    }

    /// Every `--set`.
    pub fn sets(mut self, set: &[String]) -> Words {
        for s in set {
            self.0.extend(["--set".to_string(), s.clone()]);
        }
        self
    }

    /// The line, quoted for the shell.
    pub fn line(&self) -> String {
        baton_model::render::shell::join(&self.0)
    }
}

/// When `sim` is not on PATH, how to run the reproduce command (which starts with
/// `sim`, so that reports do not depend on how the binary was started).
pub fn sim_hint() -> Option<&'static str> {
    let on_path = std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(d.join("sim"))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    });
    (!on_path).then_some(
        "(`sim` is not on your PATH: run `cargo install --locked --path sim` in the repository, or put `cargo run --release --bin sim --` in its place)",
    )
}

/// `--out`, or else `default`, checked before anything runs: bad input (exit 2) when it
/// cannot be written, holds files Baton did not write, or is a committed report, unless
/// `force`.
pub fn out_dir(out: &Option<PathBuf>, force: bool, default: PathBuf) -> Result<PathBuf, Error> {
    let dir = out.clone().unwrap_or(default);
    baton_model::render::output_dir::check_writable(&dir, force)?;
    Ok(dir)
}

/// Writes `files` (and the marker naming them) into `dir`; a failure now is Baton's.
pub fn write_files(dir: &Path, what: &str, files: &[(&str, &[u8])]) -> Result<(), Error> {
    baton_model::render::output_dir::write_all(dir, files).map_err(|e| {
        crate::error::internal(format!("cannot write the {what} to {}: {e}", dir.display()))
    })
}

/// Parses `--protocols`: `all`, or names separated by commas; `None` gives `default`.
pub fn protocols(
    arg: &Option<String>,
    default: Vec<ProtocolName>,
) -> Result<Vec<ProtocolName>, Error> {
    let Some(arg) = arg else {
        return Ok(default);
    };
    if arg == "all" {
        return Ok(ProtocolName::ALL.to_vec());
    }
    arg.split(',')
        .map(|p| {
            ProtocolName::parse(p.trim()).ok_or_else(|| {
                let names: Vec<&str> = ProtocolName::ALL.iter().map(|p| p.name()).collect();
                input(format!(
                    "--protocols: unknown protocol `{}`: expected all, or some of {}",
                    p.trim(),
                    names.join(", ")
                ))
            })
        })
        .collect()
}

/// Refuses `--set protocol=...` where the command chooses protocols from `--protocols`.
pub fn refuse_protocol_set(set: &[String], why: &str) -> Result<(), Error> {
    let found = set
        .iter()
        .find(|s| s.split('=').next().is_some_and(|k| k.trim() == "protocol"));
    match found {
        Some(s) => Err(input(format!(
            "--set {s}: {why}, e.g. --protocols {}",
            s.split_once('=').map_or("", |(_, v)| v.trim())
        ))),
        None => Ok(()),
    }
}

/// A progress bar for `total` runs, Ctrl-C armed: the runs that finish are written.
pub fn progress(total: u64, unit: &str, quiet: bool) -> crate::cmd::progress::Bar {
    crate::cmd::interrupt::install();
    crate::cmd::progress::Bar::new(total, unit, quiet)
}

/// A progress bar without an end (runs done, rate, failures, time), Ctrl-C armed.
pub fn progress_open_ended(unit: &str, quiet: bool) -> crate::cmd::progress::Bar {
    crate::cmd::interrupt::install();
    crate::cmd::progress::Bar::open_ended(unit, quiet)
}
