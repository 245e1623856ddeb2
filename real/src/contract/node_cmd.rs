//! `--node-cmd`: a node Baton did not write, started from a command template.
//!
//! The template is split into words as a POSIX shell would (quotes group, nothing is
//! expanded), then every placeholder of [`PLACEHOLDERS`] in a word is replaced by its
//! value for the node being started; the same values are in the node's environment as
//! `BATON_*` variables, so a node may read either. No shell runs the result: the first
//! word is the program itself, which Baton starts in a process group of its own (see
//! [`crate::process`]) and kills with its group. `{{` and `}}` stand for literal braces.
//!
//! A started node is ready when it answers `GET /status` with the contract's JSON
//! ([`wait_ready`]); until then Baton polls it every 20 ms, for at most the start
//! timeout. Its stdout and stderr are appended to `<run_dir>/<id>.stdout` and
//! `<id>.stderr`.

use crate::contract::rules::{check_status, Breach};
use crate::node::{NodeConfig, StatusBody};
use crate::process::ManagedChild;
use baton_model::NodeId;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// One placeholder: its name in the template, its environment variable, and what it
/// holds (for `docs/src/node-contract.md` and messages).
pub struct Placeholder {
    /// `id`, written `{id}` in a template.
    pub name: &'static str,
    /// `BATON_ID`.
    pub env: &'static str,
    /// What it holds.
    pub holds: &'static str,
}

/// Every placeholder, in the order the contract lists them.
pub const PLACEHOLDERS: &[Placeholder] = &[
    Placeholder { name: "id", env: "BATON_ID", holds: "the node's name: n1, n2, ... (its /status node_id)" },
    Placeholder { name: "http_port", env: "BATON_HTTP_PORT", holds: "the port to serve HTTP on, on 127.0.0.1 (a fresh one at every start)" },
    Placeholder { name: "etcd_endpoints", env: "BATON_ETCD_ENDPOINTS", holds: "every etcd member's client URL, comma-separated, each through this node's own proxy" },
    Placeholder { name: "election_prefix", env: "BATON_ELECTION_PREFIX", holds: "the etcd key prefix to campaign under (Baton watches it)" },
    Placeholder { name: "lease_ttl_ms", env: "BATON_LEASE_TTL_MS", holds: "the lease TTL to ask for, in ms" },
    Placeholder { name: "resource_url", env: "BATON_RESOURCE_URL", holds: "the fenced resource's write URL, through this node's own proxy" },
    Placeholder { name: "peers", env: "BATON_PEERS", holds: "every node as name=url, comma-separated: the address a client reaches it at (for 409 hints)" },
    Placeholder { name: "tick_ms", env: "BATON_TICK_MS", holds: "the interval of the leader's tick writes, in ms" },
    Placeholder { name: "write_timeout_ms", env: "BATON_WRITE_TIMEOUT_MS", holds: "the timeout of each write to the resource, in ms" },
    Placeholder { name: "dir", env: "BATON_NODE_DIR", holds: "a directory of the run the node may write into (kept with the run's files)" },
];

/// A parsed `--node-cmd` template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeCmd {
    /// As the user wrote it (for reports and reproduce commands).
    pub template: String,
    words: Vec<String>,
}

/// The names of every placeholder, for messages.
fn allowed() -> String {
    PLACEHOLDERS
        .iter()
        .map(|p| format!("{{{}}}", p.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A `--node-cmd` template that cannot start a node: one line, after `--node-cmd: `.
#[derive(Debug, thiserror::Error)]
pub enum NodeCmdError {
    /// A `}` that closes nothing.
    #[error("a lone `}}` in {0:?} (write `}}}}` for a literal brace)")]
    LoneBrace(String),
    /// A `{` that nothing closes.
    #[error("an unclosed `{{` in {0:?} (write `{{{{` for a literal brace)")]
    UnclosedBrace(String),
    /// A placeholder that is not one of [`PLACEHOLDERS`].
    #[error("unknown placeholder {{{0}}} (allowed: {})", allowed())]
    UnknownPlaceholder(String),
    /// A quote that nothing closes.
    #[error("{0:?} has an unclosed quote")]
    UnclosedQuote(String),
    /// No words.
    #[error("the template is empty: give the command that starts your node")]
    Empty,
    /// The program is a file that cannot be run.
    #[error("{0} is not an executable file")]
    NotExecutable(String),
    /// The program's path names nothing.
    #[error("{program} does not exist (relative to {cwd}); build your node first")]
    Missing {
        /// The program as written.
        program: String,
        /// The directory it is relative to.
        cwd: String,
    },
    /// The program's name is on no directory of `PATH`.
    #[error("{0} is not on PATH")]
    NotOnPath(String),
}

/// Replaces the placeholders of `word` with `value(name)`; `Err` names an unknown one.
fn fill(word: &str, value: &dyn Fn(&str) -> Option<String>) -> Result<String, NodeCmdError> {
    let mut out = String::new();
    let mut rest = word;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(t) = tail.strip_prefix("{{").or_else(|| tail.strip_prefix("}}")) {
            out.push_str(&tail[..1]);
            rest = t;
            continue;
        }
        if tail.starts_with('}') {
            return Err(NodeCmdError::LoneBrace(word.to_string()));
        }
        let Some(end) = tail.find('}') else {
            return Err(NodeCmdError::UnclosedBrace(word.to_string()));
        };
        let name = &tail[1..end];
        match value(name) {
            Some(v) => out.push_str(&v),
            None => return Err(NodeCmdError::UnknownPlaceholder(name.to_string())),
        }
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl NodeCmd {
    /// Parses `template`; `Err` is one line for `--node-cmd: ...`.
    pub fn parse(template: &str) -> Result<NodeCmd, NodeCmdError> {
        let words = shlex::split(template)
            .ok_or_else(|| NodeCmdError::UnclosedQuote(template.to_string()))?;
        if words.is_empty() {
            return Err(NodeCmdError::Empty);
        }
        let known = |n: &str| PLACEHOLDERS.iter().any(|p| p.name == n).then(String::new);
        for w in &words {
            fill(w, &known)?;
        }
        Ok(NodeCmd {
            template: template.to_string(),
            words,
        })
    }

    /// The program the template starts, checked to exist and be executable (a name
    /// without a `/` is looked up on `PATH`); `Err` is one line.
    pub fn check_program(&self) -> Result<PathBuf, NodeCmdError> {
        let program = &self.words[0];
        let executable = |p: &Path| {
            use std::os::unix::fs::PermissionsExt;
            p.is_file() && std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
        };
        if program.contains('/') {
            let p = PathBuf::from(program);
            return if executable(&p) {
                Ok(p)
            } else if p.exists() {
                Err(NodeCmdError::NotExecutable(program.clone()))
            } else {
                Err(NodeCmdError::Missing {
                    program: program.clone(),
                    cwd: std::env::current_dir()
                        .map(|d| d.display().to_string())
                        .unwrap_or_else(|_| "the current directory".into()),
                })
            };
        }
        std::env::var_os("PATH")
            .and_then(|path| {
                std::env::split_paths(&path)
                    .map(|d| d.join(program))
                    .find(|p| executable(p))
            })
            .ok_or_else(|| NodeCmdError::NotOnPath(program.clone()))
    }

    /// The command that starts a node with `params`: words filled in, `BATON_*` set,
    /// stdout and stderr appended to `<run_dir>/<id>.stdout` and `.stderr`.
    pub fn command(&self, params: &NodeParams, run_dir: &Path) -> std::io::Result<Command> {
        let value = |n: &str| params.value(n);
        let words: Vec<String> = self
            .words
            .iter()
            .map(|w| fill(w, &value).expect("checked when parsed"))
            .collect();
        let append = |ext: &str| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(run_dir.join(format!("{}.{ext}", params.id)))
        };
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..])
            .stdin(Stdio::null())
            .stdout(append("stdout")?)
            .stderr(append("stderr")?);
        for p in PLACEHOLDERS {
            cmd.env(
                p.env,
                params.value(p.name).expect("every placeholder has a value"),
            );
        }
        Ok(cmd)
    }
}

/// What one start of one node is given: the placeholders' values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeParams {
    /// `{id}`.
    pub id: NodeId,
    /// `{http_port}`.
    pub http_port: u16,
    /// `{etcd_endpoints}`, one per member.
    pub etcd_endpoints: Vec<String>,
    /// `{election_prefix}`.
    pub election_prefix: String,
    /// `{lease_ttl_ms}`.
    pub lease_ttl_ms: u64,
    /// `{resource_url}`.
    pub resource_url: String,
    /// `{peers}`, as `name=url`.
    pub peers: Vec<String>,
    /// `{tick_ms}`.
    pub tick_ms: u64,
    /// `{write_timeout_ms}`.
    pub write_timeout_ms: u64,
    /// `{dir}`.
    pub dir: PathBuf,
}

impl NodeParams {
    /// The values for the node whose Baton config is `cfg` (a run on etcd: checked
    /// before the run), serving on `http_port`, writing into `dir`.
    pub fn of(cfg: &NodeConfig, http_port: u16, dir: PathBuf) -> NodeParams {
        let etcd = cfg
            .protocol
            .etcd_lease()
            .expect("--node-cmd runs on etcd (checked before the run)");
        NodeParams {
            id: cfg.name.clone(),
            http_port,
            etcd_endpoints: cfg.backend_endpoints.clone(),
            election_prefix: etcd.prefix.clone(),
            lease_ttl_ms: etcd.lease_ttl_ms,
            resource_url: cfg.resource_url.clone(),
            peers: cfg
                .peers
                .iter()
                .map(|p| format!("{}={}", p.name, p.url))
                .collect(),
            tick_ms: cfg.tick_interval_ms,
            write_timeout_ms: cfg.resource_timeout_ms,
            dir,
        }
    }

    /// The value of placeholder `name`, `None` for an unknown one.
    pub fn value(&self, name: &str) -> Option<String> {
        Some(match name {
            "id" => self.id.to_string(),
            "http_port" => self.http_port.to_string(),
            "etcd_endpoints" => self.etcd_endpoints.join(","),
            "election_prefix" => self.election_prefix.clone(),
            "lease_ttl_ms" => self.lease_ttl_ms.to_string(),
            "resource_url" => self.resource_url.clone(),
            "peers" => self.peers.join(","),
            "tick_ms" => self.tick_ms.to_string(),
            "write_timeout_ms" => self.write_timeout_ms.to_string(),
            "dir" => self.dir.display().to_string(),
            _ => return None,
        })
    }
}

/// What of scenario `r` a `--node-cmd` node cannot take, as `key ...: why` (one line,
/// after the file's name), or `None`: node contract v1 is on etcd; Baton's own
/// instrumentation (a pause armed before a write, a skewed clock) needs Baton's own node.
pub fn refusal(r: &baton_model::scenario::Resolved) -> Option<String> {
    use baton_model::fault::{Fault, PausePoint};
    use baton_model::protocol::ProtocolName;
    let protocol = r.scenario.protocol;
    if protocol != ProtocolName::EtcdLease {
        return Some(format!(
            "key `protocol`: {}: node contract v1 covers nodes that elect on etcd (allowed with --node-cmd: etcd-lease, whose table gives the nodes their lease TTL and election prefix)",
            protocol.name()
        ));
    }
    r.faults.iter().enumerate().find_map(|(i, f)| match &f.fault {
        Fault::Pause {
            point: PausePoint::BeforeWrite,
            ..
        } => Some(format!(
            "fault {i} (`faults.{i}.point` when the file lists it as such): point = \"before-write\" needs Baton's own node, which stops itself just before a write (allowed with --node-cmd: \"anywhere\", a SIGSTOP at the fault's time)"
        )),
        Fault::ClockOffset { .. } | Fault::ClockDrift { .. } | Fault::ClockStep { .. } => {
            Some(format!(
                "fault {i} (`faults.{i}.kind` when the file lists it as such): {}: a --node-cmd node reads the machine's clock, which Baton does not skew (allowed: kill, restart, pause, partition, slow-link, network, resign, and faults on etcd members)",
                f.fault.kind().name()
            ))
        }
        _ => None,
    })
}

/// How often a starting node is asked for its `/status`.
const READY_POLL_MS: u64 = 20;

/// Waits until node `id`, started as `child`, answers `GET http://<addr>/status` with
/// the contract's JSON, for at most `timeout`; returns what it answered. A node that
/// exits first, or stays silent, broke rule `listen`; one that answers `200` with a
/// wrong body broke rule `status` (at once); one that answers another status until the
/// deadline broke `status` too. `stderr` is named in the message.
pub async fn wait_ready(
    http: &reqwest::Client,
    child: &mut ManagedChild,
    (id, addr): (&str, SocketAddr),
    timeout: Duration,
    stderr: &Path,
) -> Result<StatusBody, Breach> {
    let deadline = tokio::time::Instant::now() + timeout;
    let url = format!("http://{addr}/status");
    let mut last_code = None;
    loop {
        if !child.is_running() {
            return Err(Breach::new(
                id,
                "listen",
                format!(
                    "it exited before it answered GET {url} (its stderr: {})",
                    stderr.display()
                ),
            ));
        }
        let answer = http
            .get(&url)
            .timeout(Duration::from_millis(500))
            .send()
            .await;
        if let Ok(resp) = answer {
            let code = resp.status().as_u16();
            let body = resp.text().await.unwrap_or_default();
            if code == 200 {
                return check_status(id, &body).map_err(|e| Breach::new(id, "status", e));
            }
            last_code = Some((code, body));
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(match last_code {
                Some((code, body)) => Breach::new(
                    id,
                    "status",
                    format!(
                        "GET {url} answered {code} {} until the start timeout ({} s) ran out",
                        crate::contract::rules::shown(&body),
                        timeout.as_secs()
                    ),
                ),
                None => Breach::new(
                    id,
                    "listen",
                    format!(
                        "nothing answered GET {url} within {} s (its stderr: {})",
                        timeout.as_secs(),
                        stderr.display()
                    ),
                ),
            });
        }
        tokio::time::sleep(Duration::from_millis(READY_POLL_MS)).await;
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: templates as a user writes them; each mistake must be refused with
    //! the placeholder or quote named, and a good one filled in word by word, values
    //! never split or expanded by a shell.
    use super::*;

    fn params() -> NodeParams {
        NodeParams {
            id: "n2".into(),
            http_port: 4100,
            etcd_endpoints: vec!["http://127.0.0.1:1".into(), "http://127.0.0.1:2".into()],
            election_prefix: "/election/leader".into(),
            lease_ttl_ms: 2000,
            resource_url: "http://127.0.0.1:9/write".into(),
            peers: vec!["n1=http://127.0.0.1:7".into()],
            tick_ms: 1000,
            write_timeout_ms: 500,
            dir: PathBuf::from("/tmp/run/n2"),
        }
    }

    #[test]
    fn a_template_is_filled_word_by_word() {
        let c = NodeCmd::parse(
            "my-node --id {id} --listen 127.0.0.1:{http_port} --etcd {etcd_endpoints} 'a b' --json '{{\"x\":1}}'",
        )
        .unwrap();
        let p = params();
        let words: Vec<String> = c
            .words
            .iter()
            .map(|w| fill(w, &|n| p.value(n)).unwrap())
            .collect();
        assert_eq!(
            words,
            [
                "my-node",
                "--id",
                "n2",
                "--listen",
                "127.0.0.1:4100",
                "--etcd",
                "http://127.0.0.1:1,http://127.0.0.1:2",
                "a b",
                "--json",
                "{\"x\":1}"
            ]
        );
    }

    #[test]
    fn every_placeholder_has_a_value_and_a_variable() {
        let p = params();
        for ph in PLACEHOLDERS {
            assert!(p.value(ph.name).is_some(), "{}", ph.name);
            assert!(ph.env.starts_with("BATON_"), "{}", ph.env);
        }
        assert_eq!(p.value("nope"), None);
    }

    #[test]
    fn mistakes_are_refused_with_what_is_wrong() {
        for (t, says) in [
            ("", "empty"),
            ("node --id '{id}", "unclosed quote"),
            (
                "node --port {port}",
                "unknown placeholder {port} (allowed: {id}, {http_port}",
            ),
            ("node --id {id", "unclosed `{`"),
            ("node --x }", "lone `}`"),
        ] {
            let e = NodeCmd::parse(t).unwrap_err().to_string();
            assert!(e.contains(says), "{t}: {e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn the_program_must_exist() {
        let missing = NodeCmd::parse("./no/such/node --id {id}").unwrap();
        assert!(missing
            .check_program()
            .unwrap_err()
            .to_string()
            .contains("does not exist"));
        assert!(NodeCmd::parse("sh -c true")
            .unwrap()
            .check_program()
            .is_ok());
        assert!(NodeCmd::parse("no-such-program-anywhere")
            .unwrap()
            .check_program()
            .unwrap_err()
            .to_string()
            .contains("not on PATH"));
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "").unwrap();
        let c = NodeCmd::parse(&plain.display().to_string()).unwrap();
        assert!(c
            .check_program()
            .unwrap_err()
            .to_string()
            .contains("not an executable"));
    }
}
