//! A live Redis for `redis-naive` and `redis-fenced`: Debian's `redis-server` (7.0 here),
//! one instance on loopback, as a [`crate::backend::server::Server`].
//!
//! Started as `redis-server --port P --bind 127.0.0.1 --save '' --appendonly no`: no
//! persistence, as the single-instance lock of the Redis docs assumes, so a restart
//! (a scenario's `kill` or `restart` of `backend`) comes back empty: the lock and the
//! fenced variant's token counter are gone, exactly what the docs warn of. Keyspace
//! notifications are on for the generic, string and expired events
//! (`notify-keyspace-events Kg$x`), so the supervisor sees the lock key set, deleted and
//! expired, and the token counter incremented, as they happen (see
//! [`crate::backend::redis::watch`]). Everything else is Redis's default: `hz 10`, so a key nobody
//! touches is expired by the active cycle up to 100 ms after its time, and one a command
//! touches is expired then (the simulated Redis models both).

use crate::backend::server::{ask_plain, ServerKind};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where Debian's package installs the server.
pub const REDIS_BINARY: &str = "/usr/bin/redis-server";

/// The keyspace events the supervisor's watcher reads.
pub const KEYSPACE_EVENTS: &str = "Kg$x";

/// Redis as a [`ServerKind`].
#[derive(Debug, Default)]
pub struct RedisServer;

impl ServerKind for RedisServer {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn binary(&self) -> PathBuf {
        PathBuf::from(REDIS_BINARY)
    }

    fn package(&self) -> &'static str {
        "redis-server"
    }

    fn prepare(&self, _data: &Path, _port: u16, _log: &Path) -> std::io::Result<()> {
        Ok(())
    }

    fn command(&self, data: &Path, port: u16) -> Command {
        let mut cmd = Command::new(self.binary());
        cmd.args(["--port", &port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .args(["--save", ""])
            .args(["--appendonly", "no"])
            .args(["--notify-keyspace-events", KEYSPACE_EVENTS])
            .arg("--dir")
            .arg(data)
            .args(["--daemonize", "no"]);
        cmd
    }

    fn answers(&self, port: u16) -> bool {
        ask_plain(port, "PING\r\n").is_some_and(|r| r.starts_with("+PONG"))
    }
}
