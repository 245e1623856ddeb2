//! Starting a child process of a run: its config file, its stderr file, and the wait
//! until it listens.

use super::config::RealConfig;
use super::error::RealError;
use crate::process::ManagedChild;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Runs `baton-real <sub> --config <config_path>` as `what`, its stderr appended to
/// `<run_dir>/<what>.stderr`, and returns once it announced where it listens.
pub(super) fn spawn_child(
    cfg: &RealConfig,
    what: &str,
    sub: &str,
    config_path: &Path,
) -> Result<(ManagedChild, SocketAddr), RealError> {
    let stderr_path = cfg.run_dir.join(format!("{what}.stderr"));
    let err_of = |why: String| RealError::Child {
        what: what.to_string(),
        why,
        stderr: stderr_path.display().to_string(),
    };
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&stderr_path)?;
    let mut cmd = Command::new(&cfg.binary);
    cmd.arg(sub)
        .arg("--config")
        .arg(config_path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr);
    let mut child = ManagedChild::spawn(what, cmd)
        .map_err(|e| err_of(format!("{}: {e}", cfg.binary.display())))?;
    let addr = child
        .wait_listening(Duration::from_millis(cfg.process_start_timeout_ms))
        .map_err(|e| err_of(e.to_string()))?;
    Ok((child, addr))
}

/// Runs `baton-real load --config <config_path>`, its stderr in `<run_dir>/load.stderr`:
/// the load client listens nowhere, so nothing is waited for.
pub(super) fn spawn_load(cfg: &RealConfig, config_path: &Path) -> Result<ManagedChild, RealError> {
    let stderr = std::fs::File::create(cfg.run_dir.join("load.stderr"))?;
    let mut cmd = Command::new(&cfg.binary);
    cmd.arg("load")
        .arg("--config")
        .arg(config_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    Ok(ManagedChild::spawn("load", cmd)?)
}

/// Writes a child's config as pretty JSON.
pub(super) fn write_json<T: serde::Serialize>(path: &Path, v: &T) -> Result<(), RealError> {
    std::fs::write(
        path,
        serde_json::to_vec_pretty(v).expect("configs serialize"),
    )?;
    Ok(())
}
