//! `--node-cmd`: a node Baton did not write, started from a command template.
//!
//! The template is split into words as a POSIX shell would (quotes group, nothing is
//! expanded), then every placeholder of [`PLACEHOLDERS`] (see
//! [`crate::contract::placeholders`]) in a word is replaced by its
//! value for the node being started; the same values are in the node's environment as
//! `BATON_*` variables, so a node may read either. A template may name only the
//! placeholders of the run's backend ([`NodeCmd::check_backend`]). No shell runs the result: the first
//! word is the program itself, which Baton starts in a process group of its own (see
//! [`crate::process`]) and kills with its group. `{{` and `}}` stand for literal braces.
//!
//! A started node is ready when it answers `GET /status` with the contract's JSON
//! ([`wait_ready`]); until then Baton polls it every 20 ms, for at most the start
//! timeout. Its stdout and stderr are appended to `<run_dir>/<id>.stdout` and
//! `<id>.stderr`.

use crate::contract::backends::ContractBackend;
use crate::contract::placeholders::{NodeParams, PLACEHOLDERS};
use crate::contract::rules::{check_status, Breach};
use crate::node::StatusBody;
use crate::process::ManagedChild;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A parsed `--node-cmd` template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeCmd {
    /// As the user wrote it (for reports and reproduce commands).
    pub template: String,
    words: Vec<String>,
}

/// The names of every placeholder (of backend `b`, when given), for messages.
fn allowed(b: Option<ContractBackend>) -> String {
    PLACEHOLDERS
        .iter()
        .filter(|p| b.is_none_or(|b| p.applies(b)))
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
    #[error("unknown placeholder {{{0}}} (allowed: {})", allowed(None))]
    UnknownPlaceholder(String),
    /// A placeholder of another backend than the run's.
    #[error("{{{name}}} is a placeholder of {}, and this run is on {} (allowed on {}: {})", .of.name(), .run.name(), .run.name(), allowed(Some(*.run)))]
    OtherBackend {
        /// The placeholder, without braces.
        name: String,
        /// Its backend.
        of: ContractBackend,
        /// The run's backend.
        run: ContractBackend,
    },
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

    /// Refuses a template that names a placeholder of another backend than `run`'s:
    /// such a node would be started with a value that means nothing on this run (or
    /// none), so it is named before anything starts.
    pub fn check_backend(&self, run: ContractBackend) -> Result<(), NodeCmdError> {
        let other = std::cell::RefCell::new(None);
        let value = |n: &str| {
            let p = PLACEHOLDERS.iter().find(|p| p.name == n)?;
            if !p.applies(run) && other.borrow().is_none() {
                *other.borrow_mut() = Some((n.to_string(), p.backend.expect("of one backend")));
            }
            Some(String::new())
        };
        for w in &self.words {
            fill(w, &value)?;
        }
        match other.into_inner() {
            Some((name, of)) => Err(NodeCmdError::OtherBackend { name, of, run }),
            None => Ok(()),
        }
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
        for p in PLACEHOLDERS
            .iter()
            .filter(|p| p.applies(params.backend.kind()))
        {
            cmd.env(
                p.env,
                params.value(p.name).expect("every placeholder has a value"),
            );
        }
        Ok(cmd)
    }
}

/// What of scenario `r` a `--node-cmd` node cannot take, as `key ...: why` (one line,
/// after the file's name), or `None`: node contract v2 runs nodes on the backends of
/// [`ContractBackend`], the scenario's protocol picking the backend; a skewed clock needs
/// Baton's own node. (A pause armed before a write holds the node's next write at its
/// proxy to the resource and stops it there: see `Supervisor::arm_pause_before_write`.)
pub fn refusal(r: &baton_model::scenario::Resolved) -> Option<String> {
    use baton_model::fault::Fault;
    let protocol = r.scenario.protocol;
    if ContractBackend::of_protocol(protocol).is_none() {
        return Some(format!(
            "key `protocol`: {}: a --node-cmd node elects on etcd, Redis, ZooKeeper or PostgreSQL, or among its peers (raft, no backend), and the scenario's protocol picks which (allowed with --node-cmd: {}; each protocol's table gives the nodes their TTL and key, path, table or election timeout)",
            protocol.name(),
            ContractBackend::protocols()
        ));
    }
    r.faults.iter().enumerate().find_map(|(i, f)| match &f.fault {
        Fault::ClockOffset { .. } | Fault::ClockDrift { .. } | Fault::ClockStep { .. } => {
            Some(format!(
                "fault {i} (`faults.{i}.kind` when the file lists it as such): {}: a --node-cmd node reads the machine's clock, which Baton does not skew (allowed: kill, restart, pause, partition, slow-link, network, resign, and faults on the backend)",
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
            // A body that did not come in time is no answer yet (a cold JVM can send
            // the head first), not an empty one: poll again until the deadline.
            if let Ok(body) = resp.text().await {
                if code == 200 {
                    return check_status(id, &body).map_err(|e| Breach::new(id, "status", e));
                }
                last_code = Some((code, body));
            }
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
    use crate::contract::placeholders::samples::*;

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
    fn a_placeholder_of_another_backend_is_refused_naming_both_backends() {
        let c = NodeCmd::parse("node --id {id} --ttl {lease_ttl_ms} --key {redis_key}").unwrap();
        assert!(c.check_backend(ContractBackend::Redis).is_ok());
        let e = c
            .check_backend(ContractBackend::Etcd)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("{redis_key} is a placeholder of redis, and this run is on etcd (allowed on etcd: {id}, {http_port}, {etcd_endpoints}, {election_prefix}, {lease_ttl_ms},"),
            "{e}"
        );
        assert!(!e.contains("{zk_connect}") && !e.contains('\n'), "{e}");
        let v1 = NodeCmd::parse("node {etcd_endpoints} {election_prefix}").unwrap();
        assert!(v1.check_backend(ContractBackend::Etcd).is_ok());
        let e = v1
            .check_backend(ContractBackend::Postgres)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("{etcd_endpoints} is a placeholder of etcd, and this run is on postgres (allowed on postgres:") && e.contains("{pg_table}"),
            "{e}"
        );
    }

    #[test]
    fn a_node_is_given_the_variables_of_its_backend_only() {
        let dir = tempfile::tempdir().unwrap();
        let c = NodeCmd::parse("node {id}").unwrap();
        for b in every_backend() {
            let kind = b.kind();
            let cmd = c.command(&with(b), dir.path()).unwrap();
            let vars: Vec<String> = cmd
                .get_envs()
                .map(|(k, _)| k.to_string_lossy().into_owned())
                .collect();
            for ph in PLACEHOLDERS {
                assert_eq!(
                    vars.contains(&ph.env.to_string()),
                    ph.applies(kind),
                    "{} on {}",
                    ph.env,
                    kind.name()
                );
            }
        }
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
