//! A live PostgreSQL for `db-row`: Debian's `postgresql` (15 here), one cluster on
//! loopback, as a [`crate::backend::server::Server`].
//!
//! The data directory is made with `initdb` (trust authentication for the user `baton`,
//! UTF-8) and the server runs `postgres -D <data> -p P -c listen_addresses=127.0.0.1`
//! with no Unix socket, at PostgreSQL's defaults otherwise (`fsync` on, statement
//! timeouts off). PostgreSQL refuses to run as root: when Baton runs as root (CI, a
//! container), `initdb` and the server run as the `postgres` user the package creates,
//! and own the data directory. A restart (a scenario's `kill` or `restart` of
//! `backend`) is crash recovery on the same data: committed rows survive.
//!
//! The table, `leader(node, expires_at, generation)` with its one row, is made by the
//! supervisor before the fleet starts ([`crate::backend::pg::client::create_table`]).

use crate::backend::server::ServerKind;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The database user Baton connects as.
pub const DB_USER: &str = "baton";

/// The database Baton uses (the one `initdb` makes).
pub const DB_NAME: &str = "postgres";

/// PostgreSQL as a [`ServerKind`].
#[derive(Debug, Default)]
pub struct PgServer;

/// The newest installed server's binary directory (`/usr/lib/postgresql/<v>/bin`).
fn bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, b)| b)
}

/// The `postgres` account's uid and gid, when Baton runs as root (PostgreSQL will not).
fn run_as() -> Option<(u32, u32)> {
    // SAFETY: plain syscalls; getpwnam's result is read before any other call.
    unsafe {
        if libc::geteuid() != 0 {
            return None;
        }
        let name = std::ffi::CString::new("postgres").expect("no NUL");
        let pw = libc::getpwnam(name.as_ptr());
        if pw.is_null() {
            return None;
        }
        Some(((*pw).pw_uid, (*pw).pw_gid))
    }
}

impl PgServer {
    fn tool(&self, name: &str) -> Command {
        let dir = bin_dir().unwrap_or_else(|| PathBuf::from("/usr/lib/postgresql/15/bin"));
        let mut cmd = Command::new(dir.join(name));
        if let Some((uid, gid)) = run_as() {
            cmd.uid(uid).gid(gid);
        }
        cmd
    }
}

impl ServerKind for PgServer {
    fn name(&self) -> &'static str {
        "postgresql"
    }

    fn binary(&self) -> PathBuf {
        bin_dir()
            .map(|b| b.join("postgres"))
            .unwrap_or_else(|| PathBuf::from("/usr/lib/postgresql/<version>/bin/postgres"))
    }

    fn package(&self) -> &'static str {
        "postgresql"
    }

    fn prepare(&self, data: &Path, _port: u16, log: &Path) -> std::io::Result<()> {
        let pgdata = data.join("pgdata");
        std::fs::create_dir_all(&pgdata)?;
        if let Some((uid, gid)) = run_as() {
            for d in [data, pgdata.as_path()] {
                std::os::unix::fs::chown(d, Some(uid), Some(gid))?;
            }
        }
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        let status = self
            .tool("initdb")
            .arg("-D")
            .arg(&pgdata)
            .args(["-U", DB_USER, "--auth=trust", "-E", "UTF8", "--no-sync"])
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .status()?;
        if !status.success() {
            return Err(std::io::Error::other(format!(
                "initdb exited with {status}"
            )));
        }
        Ok(())
    }

    fn command(&self, data: &Path, port: u16) -> Command {
        let mut cmd = self.tool("postgres");
        cmd.arg("-D")
            .arg(data.join("pgdata"))
            .args(["-p", &port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(["-c", "unix_socket_directories="]);
        cmd
    }

    fn answers(&self, port: u16) -> bool {
        self.tool("pg_isready")
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", DB_USER])
            .args(["-t", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}
