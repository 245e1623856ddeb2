//! `sim real`: the same scenario against a live etcd, as real processes.
//!
//! The simulator is built with `--cfg madsim`, under which madsim-tokio *is* the
//! simulator: protocol code built that way cannot run on real tokio. Real mode is the
//! same source built without the flag, as its own binary (`baton-real`) in its own target
//! directory, so that neither build invalidates the other. This module builds it (cargo
//! rebuilds only what changed) with the environment that drops the workspace's
//! `--cfg madsim` (an empty `CARGO_ENCODED_RUSTFLAGS` set by the command overrides
//! `build.rustflags`), then runs it and passes its exit code on. The user never sets
//! `RUSTFLAGS`.

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

/// Builds `baton-real` (a no-op when up to date) and returns its path.
///
/// `say` gets one line when cargo starts compiling, for a person waiting (nothing when
/// the binary is up to date). On failure the error carries cargo's own last lines.
pub fn build(mut say: impl FnMut(&str)) -> Result<PathBuf, RealBuildError> {
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
    let mut child = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "--release", "--locked", "-p", "baton-real"])
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
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| RealBuildError::Missing(format!("cannot run cargo: {e}")))?;
    // cargo says "Compiling" before each crate it builds, and nothing of the kind when
    // the binary is up to date: the first such line is when a person starts waiting.
    let mut said = false;
    let mut tail: std::collections::VecDeque<String> = Default::default();
    if let Some(err) = child.stderr.take() {
        use std::io::BufRead;
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            if !said && line.trim_start().starts_with("Compiling") {
                said = true;
                say(&format!(
                    "building the real-mode binary (without --cfg madsim) into {}",
                    target.display()
                ));
            }
            tail.push_back(line);
            if tail.len() > 40 {
                tail.pop_front();
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| RealBuildError::Missing(format!("cannot run cargo: {e}")))?;
    if !status.success() {
        return Err(RealBuildError::Build {
            code: status.code().unwrap_or(-1),
            output: Vec::from(tail).join("\n"),
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
