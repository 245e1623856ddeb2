//! The election module as a live node under Baton's node contract (docs/src/node-contract.md):
//! its settings from the `BATON_*` environment, the contract's HTTP API on 127.0.0.1, and
//! the leader's protected writes (claim, ticks, sequence batches) to the fenced resource
//! under the leader key's create revision.
//!
//! ```sh
//! cargo build --release --features live
//! sim conform --node-cmd examples/rust-elector/target/release/rust-elector
//! ```

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use rust_elector::{Config, Host, StepDown, Term};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// The node's settings, from the contract's environment.
struct Env {
    id: String,
    http_port: u16,
    resource_url: String,
    peers: BTreeMap<String, String>,
    tick: Duration,
    write_timeout: Duration,
    config: Config,
}

fn var(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| {
        format!("rust-elector: {name} is not set (run it under sim conform --node-cmd)")
    })
}

fn ms(name: &str) -> Result<Duration, String> {
    let v = var(name)?;
    v.parse()
        .map(Duration::from_millis)
        .map_err(|_| format!("rust-elector: {name}={v} is not a whole number of ms"))
}

impl Env {
    fn read() -> Result<Env, String> {
        let peers = var("BATON_PEERS")?
            .split(',')
            .filter_map(|p| p.split_once('='))
            .map(|(n, u)| (n.to_string(), u.to_string()))
            .collect();
        let id = var("BATON_ID")?;
        Ok(Env {
            http_port: var("BATON_HTTP_PORT")?
                .parse()
                .map_err(|_| "rust-elector: BATON_HTTP_PORT is not a port")?,
            resource_url: var("BATON_RESOURCE_URL")?,
            peers,
            tick: ms("BATON_TICK_MS")?,
            write_timeout: ms("BATON_WRITE_TIMEOUT_MS")?,
            config: Config {
                endpoints: var("BATON_ETCD_ENDPOINTS")?
                    .split(',')
                    .map(String::from)
                    .collect(),
                prefix: var("BATON_ELECTION_PREFIX")?,
                name: id.clone(),
                lease_ttl: ms("BATON_LEASE_TTL_MS")?,
                call_timeout: Duration::from_millis(1000),
                retry: Duration::from_millis(200),
            },
            id,
        })
    }
}

/// The node's state, shared by the elector's host side and the HTTP handlers.
struct Node {
    id: String,
    resource_url: String,
    peers: BTreeMap<String, String>,
    tick: Duration,
    http: reqwest::Client,
    /// The term it leads, if any.
    leading: Mutex<Option<Leading>>,
    /// Whom it last saw leading.
    seen: Mutex<Option<String>>,
    /// One protected write at a time: where the sequence stands after the last one.
    writer: tokio::sync::Mutex<u64>,
}

#[derive(Clone)]
struct Leading {
    token: u64,
    ended: watch::Sender<bool>,
}

/// What the resource answered.
enum Outcome {
    Accepted(u64),
    Rejected,
    Failed,
}

impl Node {
    /// One protected write under `token`.
    async fn write(&self, token: u64, op: Value) -> Outcome {
        let body = json!({"node": self.id, "token": token, "op": op});
        let answer = async {
            let r = self
                .http
                .post(&self.resource_url)
                .json(&body)
                .send()
                .await
                .ok()?;
            r.json::<Value>().await.ok()
        };
        let Some(v) = answer.await else {
            return Outcome::Failed;
        };
        match v["outcome"].as_str() {
            Some("accepted") => Outcome::Accepted(v["last_seq"].as_u64().unwrap_or(0)),
            Some("rejected") => Outcome::Rejected,
            // `behind`: a late batch of its own; the row stands at `last_seq`.
            _ => {
                if let Some(s) = v["last_seq"].as_u64() {
                    let mut last = self.writer.lock().await;
                    *last = (*last).max(s);
                }
                Outcome::Failed
            }
        }
    }

    /// The current term's token, if it leads.
    fn token(&self) -> Option<u64> {
        self.leading.lock().unwrap().as_ref().map(|l| l.token)
    }

    /// Ends the term `token` from the node's side (fenced off, or asked to resign).
    fn end(&self, token: u64) {
        let mut l = self.leading.lock().unwrap();
        if l.as_ref().is_some_and(|l| l.token == token) {
            let _ = l.take().unwrap().ended.send(true);
        }
    }

    /// The leader's work: claim, then a tick every `tick`, until the term ends.
    async fn work(self: Arc<Self>, token: u64) {
        let claimed = {
            let mut last = self.writer.lock().await;
            match self.write(token, json!({"kind": "claim"})).await {
                Outcome::Accepted(s) => {
                    *last = s;
                    true
                }
                Outcome::Rejected => false,
                Outcome::Failed => false,
            }
        };
        if !claimed {
            return self.end(token);
        }
        let mut n = 0;
        while self.token() == Some(token) {
            tokio::time::sleep(self.tick).await;
            n += 1;
            let _guard = self.writer.lock().await;
            if self.token() != Some(token) {
                break;
            }
            if let Outcome::Rejected = self.write(token, json!({"kind": "tick", "n": n})).await {
                return self.end(token);
            }
        }
    }

    /// `409`: who it believes leads, and where.
    fn not_leader(&self) -> Response {
        let leader = self.seen.lock().unwrap().clone();
        let address = leader.as_ref().and_then(|l| self.peers.get(l)).cloned();
        (
            StatusCode::CONFLICT,
            Json(json!({"leader": leader, "address": address})),
        )
            .into_response()
    }
}

/// The module's host: a term is the node's `leading` slot and its work task.
struct LiveHost(Arc<Node>);

struct LiveTerm {
    node: Arc<Node>,
    token: u64,
    ended: watch::Receiver<bool>,
}

impl Host for LiveHost {
    type Term = LiveTerm;

    fn lead(&self, token: u64) -> LiveTerm {
        let (tx, rx) = watch::channel(false);
        *self.0.leading.lock().unwrap() = Some(Leading { token, ended: tx });
        tokio::spawn(self.0.clone().work(token));
        LiveTerm {
            node: self.0.clone(),
            token,
            ended: rx,
        }
    }

    fn sees_leader(&self, leader: Option<(String, u64)>) {
        *self.0.seen.lock().unwrap() = leader.map(|(name, _)| name);
    }
}

impl Term for LiveTerm {
    fn step_down(&self, why: StepDown) {
        eprintln!("rust-elector: term {} over: {why:?}", self.token);
        self.node.end(self.token);
    }

    async fn ended(&self) {
        let mut rx = self.ended.clone();
        let _ = rx.wait_for(|ended| *ended).await;
    }
}

async fn status(State(node): State<Arc<Node>>) -> Json<Value> {
    let token = node.token();
    let role = if token.is_some() {
        "leader"
    } else {
        "follower"
    };
    Json(
        json!({"node_id": node.id, "role": role, "fence_token": token, "lease_ttl_remaining_ms": null}),
    )
}

#[derive(serde::Deserialize)]
struct Count {
    count: Option<u64>,
}

/// `POST /next`: one sequence batch, written before its numbers are handed out.
async fn next(State(node): State<Arc<Node>>, Query(q): Query<Count>) -> Response {
    let Some(token) = node.token() else {
        return node.not_leader();
    };
    let count = q.count.unwrap_or(1).max(1);
    let mut last = node.writer.lock().await;
    if node.token() != Some(token) {
        return node.not_leader();
    }
    let (first, end) = (*last + 1, *last + count);
    match node
        .write(token, json!({"kind": "seq", "first": first, "last": end}))
        .await
    {
        Outcome::Accepted(s) => {
            *last = s.max(end);
            Json(json!({"token": token, "seq": first, "last": end})).into_response()
        }
        Outcome::Rejected => {
            drop(last);
            node.end(token);
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
        Outcome::Failed => {
            // Its numbers may exist: never hand them out again.
            *last = (*last).max(end);
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
    }
}

async fn metrics(State(node): State<Arc<Node>>) -> String {
    let acting = u8::from(node.token().is_some());
    format!("# TYPE leaders_acting gauge\nleaders_acting {acting}\n")
}

async fn resign(State(node): State<Arc<Node>>) -> Response {
    match node.token() {
        Some(token) => {
            node.end(token);
            StatusCode::ACCEPTED.into_response()
        }
        None => node.not_leader(),
    }
}

#[tokio::main]
async fn main() {
    let env = match Env::read() {
        Ok(env) => env,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let http = reqwest::Client::builder()
        .timeout(env.write_timeout)
        .build()
        .expect("an HTTP client");
    let node = Arc::new(Node {
        id: env.id,
        resource_url: env.resource_url,
        peers: env.peers,
        tick: env.tick,
        http,
        leading: Mutex::new(None),
        seen: Mutex::new(None),
        writer: tokio::sync::Mutex::new(0),
    });
    let app = Router::new()
        .route("/status", get(status))
        .route("/next", post(next))
        .route("/metrics", get(metrics))
        .route("/resign", post(resign))
        .with_state(node.clone());
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", env.http_port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!(
                "rust-elector: cannot listen on 127.0.0.1:{}: {e}",
                env.http_port
            );
            std::process::exit(1);
        }
    };
    tokio::spawn(rust_elector::run(env.config, LiveHost(node)));
    if let Err(e) = axum::serve(listener, app).await {
        eprintln!("rust-elector: HTTP server: {e}");
        std::process::exit(1);
    }
}
