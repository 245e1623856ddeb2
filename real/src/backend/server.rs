//! A single-process backend server on loopback (Redis, ZooKeeper, PostgreSQL), started
//! for one run and gone after it.
//!
//! What differs between servers is a [`ServerKind`]: the binary and the apt package that
//! has it, what its data directory needs before the first start (a config file,
//! `initdb`), its command line, and how to tell it answers. What they share lives here:
//! a free port on 127.0.0.1, a temporary data directory named after this process (so a
//! later run removes it if this one is killed outright), the log file in the run
//! directory, the wait until it answers, and the fault verbs the supervisor applies to it
//! (kill, restart on the same port and data, SIGSTOP/SIGCONT). Dropping a [`Server`]
//! kills it and removes its data.

use crate::ports::free_ports;
use crate::process::ManagedChild;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The prefix of every server's temporary data directory (`baton-srv-<pid>-...`).
pub const DATA_PREFIX: &str = "baton-srv-";

/// What one kind of server needs (see the module doc). Each kind lives in its own file
/// (`redis_server`, `zk_server`, `pg_server`).
pub trait ServerKind: Send + Sync + std::fmt::Debug {
    /// Its name in messages and file names (`redis`).
    fn name(&self) -> &'static str;
    /// The binary it runs.
    fn binary(&self) -> PathBuf;
    /// The apt package that installs the binary (named when it is missing).
    fn package(&self) -> &'static str;
    /// Prepares `data` before the first start (config files, `initdb`); output of any
    /// tool it runs goes to `log`.
    fn prepare(&self, data: &Path, port: u16, log: &Path) -> std::io::Result<()>;
    /// The command that runs the server on `port` with its data in `data`.
    fn command(&self, data: &Path, port: u16) -> Command;
    /// True once the server answers on `port` (a short, bounded check).
    fn answers(&self, port: u16) -> bool;
    /// How long it may take to answer after a start.
    fn startup_timeout(&self) -> Duration {
        Duration::from_secs(30)
    }
}

/// Why a server did not start. Each message is one line, saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum ServerStartError {
    /// Its binary is not installed.
    #[error("{binary} not found: install {what} with `apt-get install {package}`")]
    MissingBinary {
        /// The server.
        what: &'static str,
        /// Where Baton looked.
        binary: PathBuf,
        /// The apt package.
        package: &'static str,
    },
    /// It did not answer in time.
    #[error("{what} did not answer on 127.0.0.1:{port} within {timeout_ms} ms (log: {log})")]
    NotAnswering {
        /// The server.
        what: &'static str,
        /// Its port.
        port: u16,
        /// The timeout.
        timeout_ms: u64,
        /// Its log file.
        log: String,
    },
    /// It exited during start-up.
    #[error("{what} exited during start-up (log: {log})")]
    Exited {
        /// The server.
        what: &'static str,
        /// Its log file.
        log: String,
    },
    /// Preparing its data directory failed.
    #[error("cannot prepare {what}'s data directory: {why} (log: {log})")]
    Prepare {
        /// The server.
        what: &'static str,
        /// Why.
        why: String,
        /// Its log file.
        log: String,
    },
    /// Something else at the OS level.
    #[error("cannot start a server: {0}")]
    Io(#[from] std::io::Error),
}

/// A running single-process server. See the module doc.
#[derive(Debug)]
pub struct Server {
    kind: Box<dyn ServerKind>,
    port: u16,
    log: PathBuf,
    /// Its process; `None` while killed.
    child: Option<ManagedChild>,
    // Dropped after the child (fields drop in order): the data goes once nothing
    // writes to it.
    data: tempfile::TempDir,
}

impl Server {
    /// Starts a server of `kind` on a free loopback port, its log in `log_dir`, and
    /// waits until it answers.
    pub async fn start(
        kind: Box<dyn ServerKind>,
        log_dir: &Path,
    ) -> Result<Server, ServerStartError> {
        let binary = kind.binary();
        if !binary.is_file() {
            return Err(ServerStartError::MissingBinary {
                what: kind.name(),
                binary,
                package: kind.package(),
            });
        }
        crate::process::sweep_stale_dirs(DATA_PREFIX);
        let data = tempfile::Builder::new()
            .prefix(&crate::process::owned_prefix(DATA_PREFIX))
            .tempdir()?;
        std::fs::create_dir_all(log_dir)?;
        let log = log_dir.join(format!("{}.log", kind.name()));
        let port = free_ports(1)?[0];
        kind.prepare(data.path(), port, &log)
            .map_err(|e| ServerStartError::Prepare {
                what: kind.name(),
                why: e.to_string(),
                log: log.display().to_string(),
            })?;
        let mut server = Server {
            kind,
            port,
            log,
            child: None,
            data,
        };
        server.spawn()?;
        server.wait_answering().await?;
        Ok(server)
    }

    fn spawn(&mut self) -> std::io::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let mut cmd = self.kind.command(self.data.path(), self.port);
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        self.child = Some(ManagedChild::spawn(self.kind.name(), cmd)?);
        Ok(())
    }

    /// Waits until the server answers, or fails if it exits or takes too long.
    pub async fn wait_answering(&mut self) -> Result<(), ServerStartError> {
        let timeout = self.kind.startup_timeout();
        let start = Instant::now();
        loop {
            let alive = self.child.as_mut().is_some_and(ManagedChild::is_running);
            if !alive {
                return Err(ServerStartError::Exited {
                    what: self.kind.name(),
                    log: self.log.display().to_string(),
                });
            }
            let (kind_port, kind) = (self.port, &self.kind);
            if tokio::task::block_in_place(|| kind.answers(kind_port)) {
                return Ok(());
            }
            if start.elapsed() > timeout {
                return Err(ServerStartError::NotAnswering {
                    what: self.kind.name(),
                    port: self.port,
                    timeout_ms: timeout.as_millis() as u64,
                    log: self.log.display().to_string(),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The server's name (`redis`).
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((crate::ports::LOOPBACK, self.port))
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its process id (0 while killed).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, ManagedChild::pid)
    }

    /// Its log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// Where it keeps its data (removed on drop).
    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }

    /// Kills it with SIGKILL; its data directory stays for a restart. False if it was
    /// not running.
    pub fn kill(&mut self) -> bool {
        match self.child.take() {
            Some(mut c) => {
                c.kill();
                true
            }
            None => false,
        }
    }

    /// Starts it again on the same port and data (killing it first if it runs), and
    /// waits until it answers. What it keeps across the restart is its own business:
    /// Redis without persistence keeps nothing, PostgreSQL and ZooKeeper keep what they
    /// wrote to disk.
    pub async fn restart(&mut self) -> Result<u32, ServerStartError> {
        self.kill();
        self.spawn()?;
        self.wait_answering().await?;
        Ok(self.pid())
    }

    /// Sends `sig` (SIGSTOP, SIGCONT). False if it is not running.
    pub fn signal(&self, sig: libc::c_int) -> bool {
        self.child.as_ref().is_some_and(|c| c.signal(sig).is_ok())
    }
}

/// Sends `line` to 127.0.0.1:`port` and reads what comes back until the server closes
/// the connection or 300 ms pass: the probe of servers that answer a plain-text command
/// (Redis's `PING`, ZooKeeper's `ruok`).
pub fn ask_plain(port: u16, line: &str) -> Option<String> {
    use std::io::{Read, Write};
    let addr = SocketAddr::from((crate::ports::LOOPBACK, port));
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    s.set_read_timeout(Some(Duration::from_millis(300))).ok()?;
    s.write_all(line.as_bytes()).ok()?;
    let mut buf = [0u8; 256];
    let mut out = Vec::new();
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if out.ends_with(b"\r\n") || out.len() >= 4 {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}
