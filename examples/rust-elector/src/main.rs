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
use rust_elector::{Batch, Config, Host, Op, StepDown, Written};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{oneshot, watch, Notify};

/// The node's settings, from the contract's environment.
struct Env {
    id: String,
    http_port: u16,
    resource_url: String,
    peers: BTreeMap<String, String>,
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
                tick: ms("BATON_TICK_MS")?,
            },
            id,
        })
    }
}

/// The node's state, shared by the module (through [`Host`]) and the HTTP handlers.
struct Node {
    id: String,
    resource_url: String,
    peers: BTreeMap<String, String>,
    http: reqwest::Client,
    /// The token it leads under, if any.
    leading: Mutex<Option<u64>>,
    /// Whom it last saw leading.
    seen: Mutex<Option<String>>,
    /// `POST /next` requests waiting for the leader's next sequence write.
    queue: Mutex<Vec<Waiting>>,
    queued: Notify,
    /// Set by `POST /resign`, for the term it names.
    resign: watch::Sender<Option<u64>>,
}

/// One `POST /next` waiting for its numbers.
struct Waiting {
    count: u64,
    reply: oneshot::Sender<Response>,
}

/// The requests one sequence write covers.
struct Requests(Vec<Waiting>);

impl Batch for Requests {
    fn count(&self) -> u64 {
        self.0.iter().map(|w| w.count).sum()
    }

    fn grant(self, token: u64, first: u64) {
        let mut next = first;
        for w in self.0 {
            let (seq, last) = (next, next + w.count - 1);
            next += w.count;
            let body = json!({"token": token, "seq": seq, "last": last});
            let _ = w.reply.send(Json(body).into_response());
        }
    }

    fn unavailable(self) {
        for w in self.0 {
            let _ = w
                .reply
                .send(StatusCode::SERVICE_UNAVAILABLE.into_response());
        }
    }
}

impl Node {
    /// `409`: who it believes leads, and where.
    fn not_leader(&self) -> Response {
        let leader = self.seen.lock().unwrap().clone();
        let address = leader.as_ref().and_then(|l| self.peers.get(l)).cloned();
        let body = json!({"leader": leader, "address": address});
        (StatusCode::CONFLICT, Json(body)).into_response()
    }

    fn token(&self) -> Option<u64> {
        *self.leading.lock().unwrap()
    }
}

/// The module's host: the node's HTTP side and its HTTP client of the resource.
struct LiveHost(Arc<Node>);

impl Host for LiveHost {
    type Batch = Requests;

    fn lead(&self, token: u64) {
        *self.0.leading.lock().unwrap() = Some(token);
    }

    fn step_down(&self, token: u64, why: StepDown) {
        eprintln!("rust-elector: term {token} over: {why:?}");
        *self.0.leading.lock().unwrap() = None;
        // Whoever still waits is answered as a follower.
        for w in std::mem::take(&mut *self.0.queue.lock().unwrap()) {
            let _ = w.reply.send(self.0.not_leader());
        }
    }

    fn sees_leader(&self, leader: Option<(String, u64)>) {
        *self.0.seen.lock().unwrap() = leader.map(|(name, _)| name);
    }

    async fn write(&self, token: u64, op: Op) -> Written {
        let op = match op {
            Op::Claim => json!({"kind": "claim"}),
            Op::Tick(n) => json!({"kind": "tick", "n": n}),
            Op::Seq { first, last } => json!({"kind": "seq", "first": first, "last": last}),
        };
        let body = json!({"node": self.0.id, "token": token, "op": op});
        let answer = async {
            let r = self
                .0
                .http
                .post(&self.0.resource_url)
                .json(&body)
                .send()
                .await
                .ok()?;
            r.json::<Value>().await.ok()
        };
        let Some(v) = answer.await else {
            return Written::Failed;
        };
        match v["outcome"].as_str() {
            Some("accepted") => Written::Accepted {
                last_seq: v["last_seq"].as_u64().unwrap_or(0),
            },
            Some("rejected") => Written::Rejected,
            // `behind`: a late batch of its own.
            _ => Written::Failed,
        }
    }

    async fn requests(&self, token: u64) -> Option<Requests> {
        loop {
            let queued = self.0.queued.notified();
            if self.0.token() != Some(token) {
                return None;
            }
            let waiting = std::mem::take(&mut *self.0.queue.lock().unwrap());
            if !waiting.is_empty() {
                return Some(Requests(waiting));
            }
            queued.await;
        }
    }

    async fn resign_asked(&self, token: u64) {
        let mut rx = self.0.resign.subscribe();
        let _ = rx.wait_for(|t| *t == Some(token)).await;
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

/// `POST /next`: queued for the leader's next sequence write; answered once it is done.
async fn next(State(node): State<Arc<Node>>, Query(q): Query<Count>) -> Response {
    let (tx, rx) = oneshot::channel();
    {
        // Queued only while it leads, under the queue's lock: a step-down empties it.
        let mut queue = node.queue.lock().unwrap();
        if node.token().is_none() {
            drop(queue);
            return node.not_leader();
        }
        queue.push(Waiting {
            count: q.count.unwrap_or(1).max(1),
            reply: tx,
        });
    }
    node.queued.notify_waiters();
    rx.await
        .unwrap_or_else(|_| StatusCode::SERVICE_UNAVAILABLE.into_response())
}

async fn metrics(State(node): State<Arc<Node>>) -> String {
    let acting = u8::from(node.token().is_some());
    format!("# TYPE leaders_acting gauge\nleaders_acting {acting}\n")
}

async fn resign(State(node): State<Arc<Node>>) -> Response {
    match node.token() {
        Some(token) => {
            node.resign.send_replace(Some(token));
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
        http,
        leading: Mutex::new(None),
        seen: Mutex::new(None),
        queue: Mutex::new(vec![]),
        queued: Notify::new(),
        resign: watch::Sender::new(None),
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
