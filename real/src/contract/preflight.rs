//! The checks a `--node-cmd` fleet passes after it started and before the first fault,
//! each a rule of the node contract ([`crate::contract::rules`]): a leader emerges, its
//! `leaders_acting` gauge says so, every other node turns `POST /next` away with `409`,
//! the leader answers it with numbers it first wrote to the resource under its token,
//! `POST /resign` (optional) is either served or plainly absent, on Redis, ZooKeeper
//! and PostgreSQL, the leader's token is the backend's own number for its grant, and on
//! no backend the leader has spoken to each peer through its proxy to it.
//!
//! A broken rule here is a [`Breach`]: the run stops before it began, with one line
//! naming the rule (the command's exit 2). Baton's own node is not put through this:
//! its path is unchanged.

use crate::contract::grant_check::GrantSource;
use crate::contract::rules::{
    check_next, check_not_leader, check_status, leaders_acting, shown, Breach, Handed,
};
use crate::events::{Entry, Event, Role, WriteOp};
use crate::node::StatusBody;
use crate::supervisor::Supervisor;
use baton_model::NodeId;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::time::Instant;

/// How long the fleet has to elect a leader (rule `leader-emerges`), beyond the first
/// election's own wait ([`Supervisor::first_election_ms`]: raft at a 30 s election
/// timeout, the TTL sweep's last point, cannot elect within 15 s).
const LEADER_WITHIN: Duration = Duration::from_secs(15);
/// How long a new leader has to answer `POST /next` with numbers (rule `next-leader`).
const NEXT_WITHIN: Duration = Duration::from_secs(5);
/// How long a gauge may lag its node's role (rule `metrics`).
const GAUGE_WITHIN: Duration = Duration::from_secs(2);
/// A request's timeout.
const REQUEST_MS: u64 = 1000;

/// What the preflight found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preflight {
    /// The leader it found.
    pub leader: NodeId,
    /// Whether the nodes serve the optional `POST /resign`.
    pub resign_served: bool,
}

/// One node's name and where its current process serves.
struct Node {
    name: NodeId,
    addr: SocketAddr,
}

impl Node {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// The answer to one request: status code and body; `None` if nothing answered.
async fn request(rb: reqwest::RequestBuilder) -> Option<(u16, String)> {
    let resp = rb
        .timeout(Duration::from_millis(REQUEST_MS))
        .send()
        .await
        .ok()?;
    let code = resp.status().as_u16();
    Some((code, resp.text().await.unwrap_or_default()))
}

struct Check<'a> {
    http: reqwest::Client,
    nodes: Vec<Node>,
    run_dir: &'a std::path::Path,
}

impl Check<'_> {
    /// Node `n`'s status, checked (rule `status`); `None` if it did not answer.
    async fn status(&self, n: &Node) -> Result<Option<StatusBody>, Breach> {
        match request(self.http.get(n.url("/status"))).await {
            None => Ok(None),
            Some((200, body)) => check_status(&n.name, &body)
                .map(Some)
                .map_err(|e| Breach::new(&n.name, "status", e)),
            Some((code, body)) => Err(Breach::new(
                &n.name,
                "status",
                format!("GET /status answered {code} {}", shown(&body)),
            )),
        }
    }

    /// Waits for a node to say it leads; returns it and its token.
    async fn leader(&self, within: Duration) -> Result<Option<(usize, u64)>, Breach> {
        let deadline = Instant::now() + within;
        loop {
            for (i, n) in self.nodes.iter().enumerate() {
                if let Some(s) = self.status(n).await? {
                    if let (Role::Leader, Some(t)) = (s.role, s.fence_token) {
                        return Ok(Some((i, t)));
                    }
                }
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Rule `metrics`: every node's gauge agrees with its role, within
    /// [`GAUGE_WITHIN`].
    async fn gauges(&self, leader: usize) -> Result<(), Breach> {
        for (i, n) in self.nodes.iter().enumerate() {
            let want = if i == leader { 1.0 } else { 0.0 };
            let deadline = Instant::now() + GAUGE_WITHIN;
            loop {
                let got = match request(self.http.get(n.url("/metrics"))).await {
                    Some((200, text)) => {
                        leaders_acting(&text).map_err(|e| Breach::new(&n.name, "metrics", e))?
                    }
                    Some((code, body)) => {
                        return Err(Breach::new(
                            &n.name,
                            "metrics",
                            format!("GET /metrics answered {code} {}", shown(&body)),
                        ))
                    }
                    None => f64::NAN,
                };
                if got == want {
                    break;
                }
                if Instant::now() >= deadline {
                    return Err(Breach::new(
                        &n.name,
                        "metrics",
                        format!(
                            "its leaders_acting gauge read {got} for {} s while its /status said it {}",
                            GAUGE_WITHIN.as_secs(),
                            if i == leader { "led" } else { "did not lead" }
                        ),
                    ));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(())
    }

    /// Rule `next-follower`: each node that does not lead answers `POST /next` with a
    /// `409` (a node that became leader meanwhile is passed over).
    async fn followers_refuse(&self, leader: usize) -> Result<(), Breach> {
        for (i, n) in self.nodes.iter().enumerate() {
            if i == leader {
                continue;
            }
            let Some((code, body)) = request(self.http.post(n.url("/next?count=1"))).await else {
                return Err(Breach::new(
                    &n.name,
                    "next-follower",
                    "POST /next got no answer",
                ));
            };
            let now = self.status(n).await?;
            if now.as_ref().is_some_and(|s| s.role == Role::Leader) {
                continue;
            }
            match code {
                409 => {
                    check_not_leader(&body).map_err(|e| Breach::new(&n.name, "next-follower", e))?
                }
                _ => {
                    return Err(Breach::new(
                        &n.name,
                        "next-follower",
                        format!(
                            "POST /next answered {code} {} while its /status said it did not lead",
                            shown(&body)
                        ),
                    ))
                }
            }
        }
        Ok(())
    }

    /// Rule `next-leader`: the leader answers `POST /next` with numbers under its token
    /// within [`NEXT_WITHIN`] (`409` and `503` are allowed while it claims).
    async fn leader_hands_out(&self, leader: usize, token: u64) -> Result<Handed, Breach> {
        let n = &self.nodes[leader];
        let deadline = Instant::now() + NEXT_WITHIN;
        let mut last = String::from("no answer");
        while Instant::now() < deadline {
            match request(self.http.post(n.url("/next?count=1"))).await {
                Some((200, body)) => {
                    return check_next(&body, token)
                        .map_err(|e| Breach::new(&n.name, "next-leader", e))
                }
                Some((code @ (409 | 503), body)) => last = format!("{code} {}", shown(&body)),
                Some((code, body)) => {
                    return Err(Breach::new(
                        &n.name,
                        "next-leader",
                        format!("POST /next answered {code} {}", shown(&body)),
                    ))
                }
                None => last = "no answer".into(),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(Breach::new(
            &n.name,
            "next-leader",
            format!(
                "POST /next never answered 200 in {} s while its /status said leader (last: {last})",
                NEXT_WITHIN.as_secs()
            ),
        ))
    }

    /// Rule `fenced-writes`: the resource accepted, from `node` under the token, a seq
    /// write covering the numbers handed out.
    async fn written_first(&self, node: &str, h: Handed) -> Result<(), Breach> {
        let path = self.run_dir.join("resource.jsonl");
        let covers = |e: &Entry| match &e.event {
            Event::WriteAccepted {
                node: w,
                token,
                op: WriteOp::Seq { first, last },
                ..
            } => w == node && *token == h.token && *first <= h.seq && h.last <= *last,
            _ => false,
        };
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let found = text
                .lines()
                .filter_map(|l| serde_json::from_str::<Entry>(l).ok())
                .any(|e| covers(&e));
            if found {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Breach::new(
                    node,
                    "fenced-writes",
                    format!(
                        "POST /next handed out {}..={} under token {}, but the resource accepted no seq write of {node} covering them",
                        h.seq, h.last, h.token
                    ),
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Rule `resign`: asked of a node that does not lead, `409` if served, `404` or `405`
    /// if not.
    async fn resign_served(&self, leader: usize) -> Result<bool, Breach> {
        let Some((i, n)) = self.nodes.iter().enumerate().find(|(i, _)| *i != leader) else {
            return Ok(false);
        };
        match request(self.http.post(n.url("/resign"))).await {
            Some((409, _)) => Ok(true),
            Some((404 | 405, _)) => Ok(false),
            Some((code, body)) => {
                let now = self.status(&self.nodes[i]).await?;
                if now.is_some_and(|s| s.role == Role::Leader) {
                    return Ok(true);
                }
                Err(Breach::new(
                    &n.name,
                    "resign",
                    format!(
                        "POST /resign answered {code} {} while its /status said it did not lead",
                        shown(&body)
                    ),
                ))
            }
            None => Err(Breach::new(&n.name, "resign", "POST /resign got no answer")),
        }
    }

    /// Rules `redis-lock`, `zk-znode`, `pg-row` (node contract version 2): the leader's
    /// token is the backend's number for its grant, as Baton reads it there (see
    /// [`crate::contract::grant_check`]). A leader that stepped down or moved to another
    /// token meanwhile is passed over: the backend was read for a grant it no longer had.
    async fn grant_is_the_backend_s(
        &self,
        leader: usize,
        token: u64,
        source: &GrantSource,
    ) -> Result<(), Breach> {
        let n = &self.nodes[leader];
        let Err(breach) = source.check(&n.name, token).await else {
            return Ok(());
        };
        match self.status(n).await? {
            Some(s) if s.role == Role::Leader && s.fence_token == Some(token) => Err(breach),
            _ => Ok(()),
        }
    }
}

/// Rule `raft-peers` (no backend): the leader reached each of its peers through its
/// own proxy to it (`{raft_peers}`), as a leader elected among them must have, so that
/// Baton can cut it off them. `peers` holds, for each, the connections that proxy
/// accepted.
fn elected_among_peers(leader: &str, peers: &[(String, u64)]) -> Result<(), Breach> {
    let silent: Vec<&str> = peers
        .iter()
        .filter(|(_, n)| *n == 0)
        .map(|(p, _)| p.as_str())
        .collect();
    if silent.is_empty() {
        return Ok(());
    }
    Err(Breach::new(
        leader,
        "raft-peers",
        format!(
            "it leads, but never connected to {} through its {{raft_peers}} address (its proxy to each accepted no connection): a leader elected among its peers has spoken to them",
            silent.join(", ")
        ),
    ))
}

/// Runs the checks of the module doc on `sup`'s fleet.
pub async fn run(sup: &Supervisor) -> Result<Preflight, Breach> {
    let mut nodes = vec![];
    for name in sup.node_names() {
        let addr = sup
            .node_addr(&name)
            .map_err(|e| Breach::new(&name, "keeps-running", e.to_string()))?;
        nodes.push(Node { name, addr });
    }
    let c = Check {
        http: reqwest::Client::builder()
            .build()
            .expect("a plain HTTP client builds"),
        nodes,
        run_dir: sup.run_dir(),
    };
    let within = LEADER_WITHIN + Duration::from_millis(sup.first_election_ms());
    let Some((leader, token)) = c.leader(within).await? else {
        let all: Vec<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
        return Err(Breach::new(
            &all.join(", "),
            "leader-emerges",
            format!(
                "no node reported role \"leader\" within {} s of the fleet's start",
                within.as_secs()
            ),
        ));
    };
    c.gauges(leader).await?;
    c.followers_refuse(leader).await?;
    let handed = c.leader_hands_out(leader, token).await?;
    let name = c.nodes[leader].name.clone();
    c.written_first(&name, handed).await?;
    let resign_served = c.resign_served(leader).await?;
    if let Some(source) = sup.grant_source() {
        c.grant_is_the_backend_s(leader, token, &source).await?;
    }
    if let Some(peers) = sup.peer_connections(&name) {
        elected_among_peers(&name, &peers)?;
    }
    Ok(Preflight {
        leader: name,
        resign_served,
    })
}
