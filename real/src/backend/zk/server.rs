//! A live ZooKeeper for `zk-sequential`: Debian's `zookeeper` (3.8 here), one standalone
//! server on loopback, as a [`crate::backend::server::Server`].
//!
//! Its `zoo.cfg` sets what the scenario's `[zk-sequential]` table says of the server:
//! `tickTime` and the session timeout bounds (`minSessionTimeout`, `maxSessionTimeout`,
//! 2 and 20 ticks by default), so a session is negotiated as the simulated server
//! negotiates it; the admin server is off and only `ruok` and `srvr` of the four-letter
//! words are allowed (`ruok` is the readiness probe). It runs as
//! `java -cp /usr/share/java/zookeeper.jar org.apache.zookeeper.server.quorum.QuorumPeerMain zoo.cfg`
//! (the jar's manifest names its dependencies); Java comes with the package. A restart
//! (a scenario's `kill` or `restart` of `backend`) reloads the snapshot and log from
//! the data directory: sessions outlive it if their clients reconnect within their
//! timeout, as ZooKeeper promises.

use crate::backend::server::{ask_plain, ServerKind};
use baton_protocols::zk_sequential::ZkSequentialConfig;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The server's jar, as Debian's `libzookeeper-java` installs it.
pub const ZK_JAR: &str = "/usr/share/java/zookeeper.jar";

/// Where Debian's `java` is.
pub const JAVA: &str = "/usr/bin/java";

/// ZooKeeper as a [`ServerKind`], with the server side of a `[zk-sequential]` table.
#[derive(Debug)]
pub struct ZkServer {
    /// `tickTime`, ms.
    pub tick_time_ms: u64,
    /// `minSessionTimeout`, ms.
    pub min_session_timeout_ms: u64,
    /// `maxSessionTimeout`, ms.
    pub max_session_timeout_ms: u64,
}

impl ZkServer {
    /// The server a scenario's table asks for.
    pub fn for_config(c: &ZkSequentialConfig) -> ZkServer {
        ZkServer {
            tick_time_ms: c.tick_time_ms,
            min_session_timeout_ms: c.effective_min_session_timeout_ms(),
            max_session_timeout_ms: c.effective_max_session_timeout_ms(),
        }
    }
}

impl ServerKind for ZkServer {
    fn name(&self) -> &'static str {
        "zookeeper"
    }

    fn binary(&self) -> PathBuf {
        // The jar is what the package brings; java is its dependency.
        if Path::new(JAVA).is_file() {
            PathBuf::from(ZK_JAR)
        } else {
            PathBuf::from(JAVA)
        }
    }

    fn package(&self) -> &'static str {
        "zookeeper"
    }

    fn prepare(&self, data: &Path, port: u16, _log: &Path) -> std::io::Result<()> {
        let dir = data.join("data");
        std::fs::create_dir_all(&dir)?;
        let cfg = format!(
            "tickTime={}\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\nminSessionTimeout={}\nmaxSessionTimeout={}\nadmin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n",
            self.tick_time_ms,
            dir.display(),
            self.min_session_timeout_ms,
            self.max_session_timeout_ms
        );
        std::fs::write(data.join("zoo.cfg"), cfg)
    }

    fn command(&self, data: &Path, _port: u16) -> Command {
        let mut cmd = Command::new(JAVA);
        cmd.args(["-Xmx256m", "-cp", ZK_JAR])
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(data.join("zoo.cfg"));
        cmd
    }

    fn answers(&self, port: u16) -> bool {
        ask_plain(port, "ruok").is_some_and(|r| r.starts_with("imok"))
    }

    fn startup_timeout(&self) -> Duration {
        Duration::from_secs(60)
    }
}
