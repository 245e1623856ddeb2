//! A live etcd cluster on loopback, started for one run and gone after it.
//!
//! Three members (by default) of Debian's `etcd-server` (`/usr/bin/etcd`, 3.4.23 here),
//! each with its own client, peer and metrics port on 127.0.0.1 and its own data
//! directory under one temporary directory. [`EtcdCluster::start`] waits until every
//! member's `/health` says a leader exists; dropping the cluster kills the members (their
//! process groups) and removes the data. etcd runs at its default timing
//! (`--heartbeat-interval 100`, `--election-timeout 1000`), which sets its minimum lease
//! TTL to 2 s.

use crate::ports::{free_ports, port_is_free};
use crate::process::ManagedChild;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The prefix of etcd's temporary data directories (`baton-etcd-<pid>-...`).
pub const DATA_PREFIX: &str = "baton-etcd-";

/// Where Debian's package installs etcd.
pub const DEFAULT_ETCD_BINARY: &str = "/usr/bin/etcd";

/// How to start a cluster.
#[derive(Clone, Debug)]
pub struct EtcdClusterConfig {
    /// Members (3).
    pub members: usize,
    /// The etcd binary.
    pub binary: PathBuf,
    /// How long the cluster may take to become healthy.
    pub startup_timeout: Duration,
    /// Where members' logs go (`etcd-m1.log`, ...); the temporary directory when `None`.
    pub log_dir: Option<PathBuf>,
}

impl Default for EtcdClusterConfig {
    fn default() -> Self {
        EtcdClusterConfig {
            members: 3,
            binary: PathBuf::from(DEFAULT_ETCD_BINARY),
            startup_timeout: Duration::from_secs(30),
            log_dir: None,
        }
    }
}

/// Why a cluster did not start. Each message is one line, saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum EtcdStartError {
    /// No etcd binary where expected.
    #[error("{0} not found: install etcd with `apt-get install etcd-server` (Debian's etcd 3.4)")]
    MissingBinary(PathBuf),
    /// The members did not all report healthy in time.
    #[error("etcd cluster not healthy after {timeout_ms} ms (member logs: {logs})")]
    NotHealthy {
        /// The timeout.
        timeout_ms: u64,
        /// The members' log files.
        logs: String,
    },
    /// A member exited during start-up.
    #[error("etcd member {member} exited during start-up (log: {log})")]
    MemberExited {
        /// The member.
        member: String,
        /// Its log file.
        log: String,
    },
    /// Something else at the OS level.
    #[error("cannot start etcd: {0}")]
    Io(#[from] std::io::Error),
}

/// One running member.
#[derive(Debug)]
pub struct Member {
    /// `m1`, `m2`, ...
    pub name: String,
    /// Its client port (gRPC and HTTP).
    pub client_port: u16,
    /// Its peer (raft) port.
    pub peer_port: u16,
    /// Its metrics and health port.
    pub metrics_port: u16,
    /// Its log file (a restart appends to it).
    pub log: PathBuf,
    data_dir: PathBuf,
    /// Its process; `None` while killed.
    child: Option<ManagedChild>,
}

/// What every member's command line shares.
#[derive(Debug)]
struct Spec {
    binary: PathBuf,
    initial_cluster: String,
    token: String,
}

impl Member {
    /// The client URL, `http://127.0.0.1:<client_port>`.
    pub fn client_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// The member's process id (0 while killed).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, ManagedChild::pid)
    }

    /// Starts the member's process on its data directory (a restart finds its data
    /// there and rejoins; the `--initial-*` flags only matter to a new member).
    fn spawn(&mut self, spec: &Spec) -> std::io::Result<()> {
        let log_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let url = |port: u16| format!("http://127.0.0.1:{port}");
        let mut cmd = Command::new(&spec.binary);
        cmd.args(["--name", &self.name])
            .arg("--data-dir")
            .arg(&self.data_dir)
            .args(["--listen-client-urls", &url(self.client_port)])
            .args(["--advertise-client-urls", &url(self.client_port)])
            .args(["--listen-peer-urls", &url(self.peer_port)])
            .args(["--initial-advertise-peer-urls", &url(self.peer_port)])
            .args(["--listen-metrics-urls", &url(self.metrics_port)])
            .args(["--initial-cluster", &spec.initial_cluster])
            .args(["--initial-cluster-state", "new"])
            .args(["--initial-cluster-token", &spec.token])
            .args(["--logger", "zap", "--log-outputs", "stderr"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file);
        self.child = Some(ManagedChild::spawn(&format!("etcd {}", self.name), cmd)?);
        Ok(())
    }
}

/// A running cluster. Dropping it kills the members and removes their data.
#[derive(Debug)]
pub struct EtcdCluster {
    members: Vec<Member>,
    spec: Spec,
    // Dropped after the members (fields drop in order): the data goes once nothing
    // writes to it.
    data: tempfile::TempDir,
}

impl EtcdCluster {
    /// Starts a cluster and waits until it is healthy. A port taken by someone else
    /// between choosing and binding it is retried with fresh ports (three attempts).
    pub async fn start(cfg: &EtcdClusterConfig) -> Result<EtcdCluster, EtcdStartError> {
        if !cfg.binary.is_file() {
            return Err(EtcdStartError::MissingBinary(cfg.binary.clone()));
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            match Self::start_once(cfg).await {
                Err(EtcdStartError::MemberExited { log, .. })
                    if attempt < 3 && log_says_port_taken(Path::new(&log)) =>
                {
                    continue
                }
                r => return r,
            }
        }
    }

    async fn start_once(cfg: &EtcdClusterConfig) -> Result<EtcdCluster, EtcdStartError> {
        // Named after this process, so that a later run can remove it if this one is
        // killed outright (see `process::sweep_stale_dirs`).
        crate::process::sweep_stale_dirs(DATA_PREFIX);
        let data = tempfile::Builder::new()
            .prefix(&crate::process::owned_prefix(DATA_PREFIX))
            .tempdir()?;
        let log_dir = cfg
            .log_dir
            .clone()
            .unwrap_or_else(|| data.path().to_path_buf());
        std::fs::create_dir_all(&log_dir)?;
        let n = cfg.members;
        let ports = free_ports(3 * n)?;
        let names: Vec<String> = (1..=n).map(|i| format!("m{i}")).collect();
        let initial_cluster = names
            .iter()
            .enumerate()
            .map(|(i, m)| format!("{m}=http://127.0.0.1:{}", ports[n + i]))
            .collect::<Vec<_>>()
            .join(",");
        // A token unique to this cluster, so members of two runs can never join up.
        let token = format!(
            "baton-{}-{}",
            std::process::id(),
            data.path().file_name().unwrap().to_string_lossy()
        );
        let spec = Spec {
            binary: cfg.binary.clone(),
            initial_cluster,
            token,
        };
        let mut members = vec![];
        for (i, name) in names.iter().enumerate() {
            let (client, peer, metrics) = (ports[i], ports[n + i], ports[2 * n + i]);
            let mut m = Member {
                name: name.clone(),
                client_port: client,
                peer_port: peer,
                metrics_port: metrics,
                log: log_dir.join(format!("etcd-{name}.log")),
                data_dir: data.path().join(name),
                child: None,
            };
            m.spawn(&spec)?;
            members.push(m);
        }
        let cluster = EtcdCluster {
            members,
            spec,
            data,
        };
        cluster.wait_healthy(cfg.startup_timeout).await?;
        Ok(cluster)
    }

    async fn wait_healthy(&self, timeout: Duration) -> Result<(), EtcdStartError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(500))
            .build()
            .expect("a plain HTTP client builds");
        let start = Instant::now();
        loop {
            let mut healthy = 0;
            for m in &self.members {
                if !process_running(m) {
                    return Err(EtcdStartError::MemberExited {
                        member: m.name.clone(),
                        log: m.log.display().to_string(),
                    });
                }
                let url = format!("http://127.0.0.1:{}/health", m.metrics_port);
                if let Ok(r) = http.get(&url).send().await {
                    if let Ok(body) = r.text().await {
                        if body.contains("\"health\":\"true\"") {
                            healthy += 1;
                        }
                    }
                }
            }
            if healthy == self.members.len() {
                return Ok(());
            }
            if start.elapsed() > timeout {
                return Err(EtcdStartError::NotHealthy {
                    timeout_ms: timeout.as_millis() as u64,
                    logs: self.log_paths().join(", "),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The members.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The members' client URLs.
    pub fn client_urls(&self) -> Vec<String> {
        self.members.iter().map(Member::client_url).collect()
    }

    /// Every port the cluster listens on.
    pub fn ports(&self) -> Vec<u16> {
        self.members
            .iter()
            .flat_map(|m| [m.client_port, m.peer_port, m.metrics_port])
            .collect()
    }

    /// The members' process ids.
    pub fn pids(&self) -> Vec<u32> {
        self.members.iter().map(Member::pid).collect()
    }

    /// The members' log files.
    pub fn log_paths(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| m.log.display().to_string())
            .collect()
    }

    /// Where the members keep their data (removed on drop).
    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }

    /// The member a fault names (`etcd-1` is the first), if there is one.
    fn member(&mut self, name: &str) -> Option<&mut Member> {
        let i = self.index_of(name)?;
        self.members.get_mut(i)
    }

    /// The position in `members` of the member a fault names.
    fn index_of(&self, name: &str) -> Option<usize> {
        let i = baton_model::scenario::etcd_cluster::member_index(name)? as usize;
        (i <= self.members.len()).then_some(i - 1)
    }

    /// Kills member `name` (`etcd-<i>`) with SIGKILL; its data stays for a restart.
    /// False if there is no such member or it is not running.
    pub fn kill(&mut self, name: &str) -> bool {
        let Some(m) = self.member(name) else {
            return false;
        };
        match m.child.take() {
            Some(mut c) => {
                c.kill();
                true
            }
            None => false,
        }
    }

    /// Starts member `name` again on its data (killing it first if it runs); returns
    /// its new process id, or `None` if there is no such member.
    pub fn restart(&mut self, name: &str) -> Option<std::io::Result<u32>> {
        self.kill(name);
        let i = self.index_of(name)?;
        let m = &mut self.members[i];
        Some(m.spawn(&self.spec).map(|()| m.pid()))
    }

    /// Sends `sig` (SIGSTOP, SIGCONT) to member `name`. False if it is not running.
    pub fn signal(&mut self, name: &str, sig: libc::c_int) -> bool {
        self.member(name)
            .and_then(|m| m.child.as_ref())
            .is_some_and(|c| c.signal(sig).is_ok())
    }

    /// Kills every member and removes the data now.
    pub fn stop(self) {
        drop(self)
    }
}

fn process_running(m: &Member) -> bool {
    m.child
        .as_ref()
        .is_some_and(|c| crate::process::process_alive(c.pid()))
}

fn log_says_port_taken(log: &Path) -> bool {
    std::fs::read_to_string(log).is_ok_and(|s| s.contains("address already in use"))
}

/// True if none of `ports` is bound any more (for checks after a run).
pub fn all_free(ports: &[u16]) -> bool {
    ports.iter().all(|p| port_is_free(*p))
}

/// A member's answer to `/v3/maintenance/status`: its id, the leader it knows (0: none)
/// and its raft term.
struct Status {
    member_id: u64,
    leader: u64,
    term: u64,
}

/// Who leads etcd now, as `(etcd-<i>, raft term)`, `urls` being the members' client URLs
/// in order: each member is asked for its status (the HTTP gateway's
/// `/v3/maintenance/status`, 200 ms each), and of those that say they lead, the one with
/// the highest term is the leader (an old leader cut from its peers still says so until
/// check-quorum demotes it). `None` while nobody leads (an election is under way, or a
/// majority is gone).
pub async fn leader_among(http: &reqwest::Client, urls: &[String]) -> Option<(String, u64)> {
    let mut best: Option<(String, u64)> = None;
    for (i, url) in urls.iter().enumerate() {
        let Some(st) = status(http, url).await else {
            continue;
        };
        if st.leader != 0
            && st.leader == st.member_id
            && best.as_ref().is_none_or(|b| st.term > b.1)
        {
            best = Some((
                baton_model::scenario::etcd_cluster::member_name(i as u32 + 1),
                st.term,
            ));
        }
    }
    best
}

async fn status(http: &reqwest::Client, client_url: &str) -> Option<Status> {
    let url = format!("{client_url}/v3/maintenance/status");
    let r = http
        .post(&url)
        .timeout(Duration::from_millis(200))
        .body("{}")
        .send()
        .await
        .ok()?;
    let v: serde_json::Value = r.json().await.ok()?;
    // The gateway writes 64-bit integers as strings.
    let num = |v: &serde_json::Value| v.as_str().and_then(|s| s.parse::<u64>().ok());
    Some(Status {
        member_id: num(&v["header"]["member_id"])?,
        leader: v.get("leader").and_then(num).unwrap_or(0),
        term: v.get("raftTerm").and_then(num).unwrap_or(0),
    })
}
