//! `sim real`: the same scenario against its live backend (etcd, Redis, ZooKeeper,
//! PostgreSQL, or none for raft, whose node processes are the service), as real processes.
//!
//! The simulator is built with `--cfg madsim`, under which madsim-tokio *is* the
//! simulator: protocol code built that way cannot run on real tokio. Real mode is the
//! same source built without the flag, as its own binary (`baton-real`) in its own target
//! directory, so that neither build invalidates the other. This module builds it (cargo
//! rebuilds only what changed) with the environment that drops the workspace's
//! `--cfg madsim` (an empty `CARGO_ENCODED_RUSTFLAGS` set by the command overrides
//! `build.rustflags`), then runs it and passes its exit code on. The user never sets
//! `RUSTFLAGS`.

use crate::cmd::progress::Spinner;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Why the real binary could not be had (exit 2: nothing ran).
#[derive(Debug, thiserror::Error)]
pub enum RealBuildError {
    /// Something real mode needs is missing from the machine.
    #[error("{0}")]
    Missing(String),
    /// cargo failed to build it.
    #[error("building the real-mode binary failed (cargo exited {code}):\n{output}\nto build it yourself:\n  {command}")]
    Build {
        /// cargo's exit code.
        code: i32,
        /// cargo's last lines.
        output: String,
        /// The command that failed, to paste.
        command: String,
    },
}

/// Baton's source tree, where `sim` was built from (real mode builds from it).
pub fn source_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("sim/ has a parent")
        .to_path_buf()
}

/// The real build's target directory: `target/real` beside the simulation's (or under
/// `$CARGO_TARGET_DIR`).
pub fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("real")
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
}

/// What real mode's build needs from the machine and does not find, as one line naming
/// the apt package, or `None` when everything is there. (Each backend's server binary,
/// etcd's or Redis's, is checked when a run starts it: a run on Redis needs no etcd.)
///
/// Checked from what the build actually reads: the `protoc`
/// that etcd-client's build script runs (`$PROTOC`, else the one on `PATH`); and the
/// well-known `.proto` files that etcd's API imports (`google/protobuf/descriptor.proto`
/// and `struct.proto`), found by asking that protoc to compile a file importing them, with
/// `$PROTOC_INCLUDE` as prost-build passes it. Debian's `protobuf-compiler` only
/// recommends `libprotobuf-dev`, the package holding those files, so an install without
/// recommends has protoc and not its includes.
pub fn missing_prerequisite() -> Option<String> {
    let protoc = std::env::var_os("PROTOC")
        .map(PathBuf::from)
        .or_else(|| on_path("protoc").then(|| PathBuf::from("protoc")));
    let Some(protoc) = protoc else {
        return Some(
            "real mode's etcd client needs protoc to build: apt-get install protobuf-compiler libprotobuf-dev"
                .into(),
        );
    };
    let probe = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => return Some(format!("cannot create a temporary directory: {e}")),
    };
    let file = probe.path().join("baton_probe.proto");
    let text = "syntax = \"proto3\";\nimport \"google/protobuf/descriptor.proto\";\nimport \"google/protobuf/struct.proto\";\n";
    if let Err(e) = std::fs::write(&file, text) {
        return Some(format!("cannot write {}: {e}", file.display()));
    }
    let mut cmd = Command::new(&protoc);
    cmd.arg("-I").arg(probe.path());
    if let Some(inc) = std::env::var_os("PROTOC_INCLUDE") {
        cmd.arg("-I").arg(inc);
    }
    cmd.arg("--descriptor_set_out")
        .arg(probe.path().join("out.pb"))
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    match cmd.status() {
        Ok(s) if s.success() => None,
        Ok(_) => Some(format!(
            "real mode's etcd client needs protoc's google/protobuf/*.proto files, which {} cannot find: apt-get install libprotobuf-dev",
            protoc.display()
        )),
        Err(e) => Some(format!(
            "cannot run {} ({e}): apt-get install protobuf-compiler libprotobuf-dev",
            protoc.display()
        )),
    }
}

/// How long a build of `baton-real` takes, measured, for the line that says a build
/// starts: a person should know the wait before it begins.
const FIRST_BUILD: &str = "about 12 minutes on 2 cores, 11.5 measured on a fresh clone";

/// Builds `baton-real` (a no-op when up to date) and returns its path.
///
/// `say` gets one line when cargo starts compiling, for a person waiting, saying how long
/// the wait is (nothing when the binary is up to date). While cargo compiles, `spinner`
/// (when it is drawn: a terminal, no `--quiet`) shows cargo's own progress, crates built
/// of crates to build, with the time elapsed. On failure the error carries cargo's own
/// last lines.
pub fn build(spinner: &Spinner, mut say: impl FnMut(&str)) -> Result<PathBuf, RealBuildError> {
    let root = source_root();
    if !root.join("real").join("Cargo.toml").is_file() {
        return Err(RealBuildError::Missing(format!(
            "real mode builds baton-real from Baton's source tree, and {} is not one: run sim from a checkout",
            root.display()
        )));
    }
    if let Some(missing) = missing_prerequisite() {
        return Err(RealBuildError::Missing(missing));
    }
    let target = target_dir(&root);
    let binary = target.join("release").join("baton-real");
    let first = !binary.is_file();
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args(["build", "--release", "--locked", "-p", "baton-real"])
        .arg("--target-dir")
        .arg(&target)
        .current_dir(&root)
        // An empty value set here overrides the workspace's `build.rustflags`
        // (`--cfg madsim`); RUSTFLAGS would too, so it is cleared to keep one source.
        .env("CARGO_ENCODED_RUSTFLAGS", "")
        .env_remove("RUSTFLAGS")
        .env("CARGO_TERM_COLOR", "never")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if spinner.shown() {
        // cargo draws its progress bar only on a terminal; asked to, it writes it down
        // the pipe too (lines ended by `\r`), and the spinner shows what it counts.
        cmd.env("CARGO_TERM_PROGRESS_WHEN", "always")
            .env("CARGO_TERM_PROGRESS_WIDTH", "200");
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| RealBuildError::Missing(format!("cannot run cargo: {e}")))?;
    let mut watch = BuildWatch {
        spinner,
        said: false,
        counted: false,
        tail: Default::default(),
    };
    let mut tell = || {
        say(&if first {
            format!(
                "building the real-mode binary (without --cfg madsim) into {}: a first build, {FIRST_BUILD}; later ones take seconds to minutes, by how much changed",
                target.display()
            )
        } else {
            format!(
                "rebuilding the real-mode binary (without --cfg madsim) into {}, whose sources changed: seconds to minutes, by how much changed (a first build: {FIRST_BUILD})",
                target.display()
            )
        })
    };
    if let Some(err) = child.stderr.take() {
        for_each_line(err, |line| watch.line(line, &mut tell));
    }
    spinner.finish();
    let status = child
        .wait()
        .map_err(|e| RealBuildError::Missing(format!("cannot run cargo: {e}")))?;
    if !status.success() {
        return Err(RealBuildError::Build {
            code: status.code().unwrap_or(-1),
            output: Vec::from(watch.tail).join("\n"),
            command: format!(
                "cd {} && CARGO_ENCODED_RUSTFLAGS= cargo build --release --locked -p baton-real --target-dir {}",
                root.display(),
                target.display()
            ),
        });
    }
    Ok(binary)
}

/// The real-mode binary could not be started.
#[derive(Debug, thiserror::Error)]
#[error("cannot run {}: {source}", .binary.display())]
pub struct RealRunError {
    /// The binary.
    pub binary: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

/// What the build has said so far: whether the person waiting was told, whether cargo's
/// progress bar has counted crates yet, and cargo's last lines (for an error).
struct BuildWatch<'a> {
    spinner: &'a Spinner,
    said: bool,
    counted: bool,
    tail: std::collections::VecDeque<String>,
}

impl BuildWatch<'_> {
    /// One line (or one redraw of the progress bar) from cargo. cargo says "Compiling"
    /// before each crate it builds, and nothing of the kind when the binary is up to
    /// date: the first such line is when a person starts waiting, and `tell` says so.
    fn line(&mut self, line: &str, tell: &mut dyn FnMut()) {
        if let Some((done, total, names)) = cargo_progress(line) {
            self.counted = true;
            self.spinner.set(format!(
                "building the real-mode binary: cargo has built {done} of {total} crates ({names})"
            ));
            return;
        }
        let text = line.trim();
        if text.is_empty() {
            return;
        }
        if let Some(krate) = text.strip_prefix("Compiling ") {
            if !self.said {
                self.said = true;
                tell();
                self.spinner.start("building the real-mode binary");
            }
            if !self.counted {
                self.spinner
                    .set(format!("building the real-mode binary: compiling {krate}"));
            }
        }
        self.tail.push_back(line.to_string());
        if self.tail.len() > 40 {
            self.tail.pop_front();
        }
    }
}

/// Calls `f` with each line `r` gives, a line ending at `\n` or `\r` (cargo redraws its
/// progress bar after a `\r`).
fn for_each_line(mut r: impl std::io::Read, mut f: impl FnMut(&str)) {
    let mut buf: Vec<u8> = vec![];
    let mut chunk = [0u8; 4096];
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        while let Some(i) = buf.iter().position(|&b| b == b'\n' || b == b'\r') {
            let line: Vec<u8> = buf.drain(..=i).collect();
            f(String::from_utf8_lossy(&line[..i]).trim_end());
        }
    }
    if !buf.is_empty() {
        f(String::from_utf8_lossy(&buf).trim_end());
    }
}

/// What cargo's progress bar says: `Building [=====>   ] 120/312: tokio, hyper` gives
/// (120, 312, "tokio, hyper"). `None` for any other line.
fn cargo_progress(line: &str) -> Option<(u64, u64, &str)> {
    let rest = line.trim().strip_prefix("Building")?;
    let (_, after) = rest.split_once(']')?;
    let (count, names) = after.split_once(':').unwrap_or((after, ""));
    let (done, total) = count.trim().split_once('/')?;
    Some((done.parse().ok()?, total.parse().ok()?, names.trim()))
}

/// Runs `baton-real real ARGS...` and returns its exit code (130 if a signal ended it).
pub fn run(binary: &Path, args: &[String]) -> Result<i32, RealRunError> {
    run_command(binary, "real", args)
}

/// Runs `baton-real SUB ARGS...` and returns its exit code (130 if a signal ended it).
pub fn run_command(binary: &Path, sub: &str, args: &[String]) -> Result<i32, RealRunError> {
    let status = Command::new(binary)
        .arg(sub)
        .args(args)
        .status()
        .map_err(|source| RealRunError {
            binary: binary.to_path_buf(),
            source,
        })?;
    Ok(status.code().unwrap_or(130))
}

#[cfg(test)]
mod tests {
    //! Methodology: cargo's stderr as it arrives down a pipe with its progress bar forced
    //! on (bytes copied from cargo 1.9x: `Compiling` lines, then bar redraws ended by
    //! `\r`), cut at awkward places; what the build reads from it.
    use super::*;

    #[test]
    fn cargos_progress_bar_reads_as_counts_and_names() {
        assert_eq!(
            cargo_progress("    Building [=======>      ] 120/312: tokio, hyper(build)     "),
            Some((120, 312, "tokio, hyper(build)"))
        );
        assert_eq!(
            cargo_progress("    Building [   ] 0/3: p(build.rs)"),
            Some((0, 3, "p(build.rs)"))
        );
        assert_eq!(cargo_progress("   Compiling p v0.1.0 (/tmp/p)"), None);
        assert_eq!(cargo_progress("    Building [==>  ] 12/"), None);
    }

    #[test]
    fn lines_end_at_a_newline_or_a_carriage_return_however_the_bytes_arrive() {
        let text = b"   Compiling p v0.1.0\n    Building [ ] 0/3: p   \r    Building [=> ] 1/3: p   \r    Finished `dev`";
        // A reader that hands over three bytes at a time.
        struct Slow<'a>(&'a [u8]);
        impl std::io::Read for Slow<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.len().min(3).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut lines = vec![];
        for_each_line(Slow(text), |l| lines.push(l.to_string()));
        assert_eq!(
            lines,
            [
                "   Compiling p v0.1.0",
                "    Building [ ] 0/3: p",
                "    Building [=> ] 1/3: p",
                "    Finished `dev`"
            ]
        );
    }
}
