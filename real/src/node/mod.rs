//! A fleet node as a process: its protocol's elector (see [`crate::node::elector`])
//! campaigning in a loop, the leader work while it leads, and the spec's HTTP interface
//! (section 8).
//!
//! The node's life is the simulated node's (`sim/src/world/node/mod.rs`): campaign -> lead (claim
//! the resource, then ticks and sequencer batches, every write fenced) -> stop writing ->
//! release -> campaign again. It stops its protected writes before it lets leadership go.
//!
//! HTTP, on 127.0.0.1 (the load client reaches it through a proxy, the supervisor
//! directly):
//! - `GET /status` -> `{"node_id", "role", "fence_token", "lease_ttl_remaining_ms"}`
//!   (`fence_token` is null unless leading);
//! - `POST /next?count=N` (N defaults to 1) -> `200 {"token", "seq", "last"}`: numbers
//!   `seq..=last` under `token`; on a follower `409 {"leader", "address"}` naming who it
//!   last saw leading (both null if nobody); `503` if the write timed out;
//! - `GET /metrics` -> Prometheus text (see [`crate::node::metrics`]);
//! - `POST /control/pause {"index"}` arms a `point = "before-write"` pause (fault
//!   `index`): the node stops itself just before its next protected write;
//! - `POST /control/clock {"offset_ms"?, "drift_ppm"?, "step_ms"?}` skews its clock and
//!   answers `{"offset_us", "drift_ppm"}`;
//! - `POST /control/resign` asks a leader to step down; `POST /resign` (the node
//!   contract's) does the same on a leader, answering `202`, and `409 {"leader",
//!   "address"}` elsewhere;
//! - `POST /raft` (raft only) takes a peer's Raft message and answers it (see
//!   [`crate::backend::raft`]).

pub mod clock;
pub mod config;
pub mod elector;
mod error;
pub mod metrics;
pub mod work;

use crate::backoff::{Backoff, Pacer};
use crate::events::{Event, EventLog, Role};
use crate::node::clock::RealClock;
use crate::node::metrics::NodeMetrics;
use crate::node::work::{lead, LeaderWork, NextReply, WorkCtx};
use crate::run_clock::RunClock;
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use baton_model::NodeId;
use baton_protocols::sleep_local;
use baton_protocols::{Clock, Elector, Leadership, LossReason};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

pub use crate::node::config::{NodeConfig, Peer};
pub use crate::node::error::NodeError;

/// `GET /status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusBody {
    /// The node's name.
    pub node_id: NodeId,
    /// Its role by its own belief.
    pub role: Role,
    /// The token it acts under, while it leads.
    pub fence_token: Option<u64>,
    /// Local time left on its lease, while it leads (this node answers 0 otherwise; the
    /// node contract also allows null, which other nodes answer).
    pub lease_ttl_remaining_ms: Option<u64>,
}

/// `POST /next` on the leader.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextBody {
    /// The leader's token.
    pub token: u64,
    /// The first number handed out.
    pub seq: u64,
    /// The last (equal to `seq` for one request).
    pub last: u64,
}

/// `POST /next` on a follower (status 409).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotLeaderBody {
    /// Who it last saw leading.
    pub leader: Option<NodeId>,
    /// That node's client-facing address.
    pub address: Option<String>,
}

/// `POST /control/clock`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockChange {
    /// Set the clock this far ahead of the run's clock.
    pub offset_ms: Option<i64>,
    /// Set its drift.
    pub drift_ppm: Option<i64>,
    /// Jump it.
    pub step_ms: Option<i64>,
}

/// The answer to `POST /control/clock`: the clock's state after the change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockState {
    /// Offset from the run's clock, µs.
    pub offset_us: i64,
    /// Drift.
    pub drift_ppm: i64,
}

/// `POST /control/pause`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArmPause {
    /// The fault's index in the scenario.
    pub index: usize,
}

struct Node {
    name: NodeId,
    clock: RealClock,
    drift_ppm: Mutex<i64>,
    log: EventLog,
    metrics: Arc<NodeMetrics>,
    work: LeaderWork,
    ctx: WorkCtx,
    status: Mutex<(Role, Option<Leadership>)>,
    hint: Mutex<Option<NodeId>>,
    peers: Vec<Peer>,
    /// The raft elector, once built (raft only): it answers `POST /raft`.
    raft: std::sync::OnceLock<Arc<baton_protocols::raft::RaftElector>>,
}

impl Node {
    fn set_role(&self, role: Role, leadership: Option<Leadership>) {
        let token = leadership.as_ref().map(|l| l.token);
        *self.status.lock().unwrap() = (role, leadership);
        self.metrics.set_role(role);
        self.metrics.fence_token.set(token.unwrap_or(0) as i64);
    }
}

async fn status(State(n): State<Arc<Node>>) -> Json<StatusBody> {
    let (role, leadership) = n.status.lock().unwrap().clone();
    Json(StatusBody {
        node_id: n.name.clone(),
        role,
        fence_token: leadership.as_ref().map(|l| l.token),
        lease_ttl_remaining_ms: Some(leadership.map_or(0, |l| l.lease_remaining_ms())),
    })
}

#[derive(Deserialize)]
struct NextQuery {
    count: Option<u64>,
}

fn not_leader(n: &Node) -> Response {
    let leader = n.hint.lock().unwrap().clone();
    let address = leader
        .as_ref()
        .and_then(|l| n.peers.iter().find(|p| &p.name == l))
        .map(|p| p.url.clone());
    (
        StatusCode::CONFLICT,
        Json(NotLeaderBody { leader, address }),
    )
        .into_response()
}

async fn next(State(n): State<Arc<Node>>, Query(q): Query<NextQuery>) -> Response {
    let count = q.count.unwrap_or(1).max(1);
    let Some(rx) = n.work.submit(count) else {
        return not_leader(&n);
    };
    match rx.await {
        Ok(NextReply::Ok { token, first, last }) => Json(NextBody {
            token,
            seq: first,
            last,
        })
        .into_response(),
        Ok(NextReply::Unavailable) => {
            (StatusCode::SERVICE_UNAVAILABLE, "write timed out").into_response()
        }
        Ok(NextReply::NotLeader) | Err(_) => not_leader(&n),
    }
}

async fn serve_metrics(State(n): State<Arc<Node>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        n.metrics.render(),
    )
        .into_response()
}

async fn arm_pause(State(n): State<Arc<Node>>, Json(a): Json<ArmPause>) -> StatusCode {
    *n.ctx.pause_armed.lock().unwrap() = Some(a.index);
    StatusCode::NO_CONTENT
}

async fn change_clock(State(n): State<Arc<Node>>, Json(c): Json<ClockChange>) -> Json<ClockState> {
    if let Some(o) = c.offset_ms {
        n.clock.set_offset_ms(o);
    }
    if let Some(d) = c.drift_ppm {
        n.clock.set_drift_ppm(d);
        *n.drift_ppm.lock().unwrap() = d;
    }
    if let Some(s) = c.step_ms {
        n.clock.step_ms(s);
    }
    Json(ClockState {
        offset_us: n.clock.offset_us(),
        drift_ppm: *n.drift_ppm.lock().unwrap(),
    })
}

async fn raft_message(
    State(n): State<Arc<Node>>,
    Json(msg): Json<baton_protocols::raft::RaftMsg>,
) -> Json<baton_protocols::raft::RaftReply> {
    Json(crate::backend::raft::handle(n.raft.get().map(|r| r.as_ref()), msg).await)
}

async fn resign(State(n): State<Arc<Node>>) -> StatusCode {
    n.ctx.resign_requested.store(true, Ordering::SeqCst);
    n.ctx.resign_notify.notify_waiters();
    StatusCode::NO_CONTENT
}

/// The node contract's `POST /resign`: a step-down asked of a leader (`202`: it stops
/// writing, then releases); elsewhere `409` with the hint, and nothing is kept for a
/// later leadership.
async fn contract_resign(State(n): State<Arc<Node>>) -> Response {
    if n.status.lock().unwrap().0 != Role::Leader {
        return not_leader(&n);
    }
    resign(State(n)).await;
    StatusCode::ACCEPTED.into_response()
}

/// How often a node asks etcd who leads, for its `409` hints.
const OBSERVE_INTERVAL_MS: u64 = 1000;

/// How long a node that resigned waits before campaigning again.
const REJOIN_AFTER_RESIGN_MS: u64 = 1000;

/// The first pause after a failed write to the resource, doubling up to the write's
/// timeout (see [`crate::node::work::WorkCtx::pacer`]).
const RESOURCE_FIRST_PAUSE_MS: u64 = 25;

/// Runs a node process until it is killed: listens on a free loopback port, announces
/// it, and campaigns for ever.
pub async fn run(cfg: NodeConfig) -> Result<(), NodeError> {
    run_on(cfg, 0).await
}

/// [`run`], listening on loopback port `http_port` (0: a free one).
pub async fn run_on(cfg: NodeConfig, http_port: u16) -> Result<(), NodeError> {
    let run_clock = RunClock::from_epoch(cfg.epoch_us);
    let log = EventLog::open(&cfg.log_path, run_clock).map_err(|source| NodeError::Log {
        path: cfg.log_path.clone(),
        source,
    })?;
    let clock = RealClock::new(run_clock);
    clock.set_offset_ms(cfg.clock_offset_us / 1000);
    clock.set_drift_ppm(cfg.clock_drift_ppm);
    let node = new_node(&cfg, clock, log)?;
    serve_http(node.clone(), http_port).await?;
    // Booting: the simulator's node neither listens nor campaigns for this long, and
    // builds its elector only then; this one listens (its HTTP answers that it follows,
    // and a raft peer's message that it is not ready) and builds its elector after it
    // too, so that a raft node's election timers, like a lease client's connection,
    // start when it has booted, not during the delay.
    let delay_ms = cfg.start_delay_ms();
    if delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    }
    let dyn_clock = node.ctx.clock.clone();
    let side = crate::node::elector::NodeSide {
        clock: dyn_clock.clone(),
        log: node.log.clone(),
        metrics: node.metrics.clone(),
        run: run_clock,
    };
    let built = crate::node::elector::build(&cfg, &side).await?;
    if let Some(r) = built.raft {
        let _ = node.raft.set(r);
    }
    let elector = built.elector;
    spawn_hint_keeper(elector.clone(), node.clone());
    campaign_loop(&node, elector.as_ref(), dyn_clock.as_ref(), cfg.rng("node")).await;
    Ok(())
}

/// The node's shared state: a follower with no leader work yet, on `clock`, logging to
/// `log`.
fn new_node(cfg: &NodeConfig, clock: RealClock, log: EventLog) -> Result<Arc<Node>, NodeError> {
    let metrics = Arc::new(NodeMetrics::new(&cfg.name));
    let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let http = reqwest::Client::builder()
        .build()
        .map_err(NodeError::Http)?;
    Ok(Arc::new(Node {
        name: cfg.name.clone(),
        clock,
        drift_ppm: Mutex::new(cfg.clock_drift_ppm),
        log: log.clone(),
        metrics: metrics.clone(),
        work: LeaderWork::default(),
        ctx: WorkCtx {
            node: cfg.name.clone(),
            clock: dyn_clock,
            log,
            metrics,
            resource_url: cfg.resource_url.clone(),
            http,
            resource_timeout_ms: cfg.resource_timeout_ms,
            write_margin_ms: cfg.write_margin_ms,
            tick_interval_ms: cfg.tick_interval_ms,
            resign_requested: AtomicBool::new(false),
            resign_notify: Notify::new(),
            pause_armed: Mutex::new(None),
            pacer: Pacer::new(Backoff::new(
                RESOURCE_FIRST_PAUSE_MS,
                cfg.resource_timeout_ms,
                cfg.rng("backoff/resource"),
            )),
        },
        status: Mutex::new((Role::Follower, None)),
        hint: Mutex::new(None),
        peers: cfg.peers.clone(),
        raft: std::sync::OnceLock::new(),
    }))
}

/// Serves the node's HTTP interface on loopback port `port` (0: a free one), in the
/// background, and announces the port on stdout (see [`crate::process`]).
async fn serve_http(node: Arc<Node>, port: u16) -> Result<(), NodeError> {
    let app = Router::new()
        .route("/status", get(status))
        .route("/next", post(next))
        .route("/metrics", get(serve_metrics))
        .route("/control/pause", post(arm_pause))
        .route("/control/clock", post(change_clock))
        .route("/control/resign", post(resign))
        .route("/raft", post(raft_message))
        .route("/resign", post(contract_resign))
        .with_state(node);
    let listener = tokio::net::TcpListener::bind((crate::ports::LOOPBACK, port))
        .await
        .map_err(|source| NodeError::Bind { port, source })?;
    let addr = listener.local_addr().map_err(NodeError::Address)?;
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            eprintln!("baton-real node: HTTP server failed: {e}");
            std::process::exit(3);
        }
    });
    crate::process::announce_listening(addr);
    Ok(())
}

/// Keeps the node's `409` hint fresh in the background.
fn spawn_hint_keeper(elector: Arc<dyn Elector>, node: Arc<Node>) {
    // Followers answer `next` with a hint; keep it fresh the way a client library would,
    // by observing the election now and then rather than on every request.
    let clock = node.ctx.clock.clone();
    tokio::spawn(async move {
        loop {
            if let Ok(info) = elector.observe().await {
                *node.hint.lock().unwrap() = info.map(|i| i.node);
            }
            sleep_local(clock.as_ref(), Duration::from_millis(OBSERVE_INTERVAL_MS)).await;
        }
    });
}

/// Campaigns for ever: after a failed campaign it backs off, after a leadership it
/// stops acting, releases and campaigns again.
async fn campaign_loop(
    node: &Arc<Node>,
    elector: &dyn Elector,
    clock: &dyn Clock,
    mut rng: rand_chacha::ChaCha8Rng,
) {
    let name = node.name.clone();
    let log = &node.log;
    loop {
        node.set_role(Role::Candidate, None);
        log.record(Event::CampaignStarted { node: name.clone() });
        let started = std::time::Instant::now();
        let leadership = match elector.campaign().await {
            Ok(l) => l,
            Err(e) => {
                log.record(Event::CampaignFailed {
                    node: name.clone(),
                    error: e.to_string(),
                });
                node.set_role(Role::Follower, None);
                // Randomised backoff so failed candidates do not retry in lockstep: the
                // simulator's draw, from the simulator's generator for this node and
                // start, so a seed's candidates back off as in `sim run`. A campaign
                // that failed at once (etcd refusing) was paced further by the etcd
                // client, exponentially (see `crate::backend::etcd::client`).
                let backoff_ms = rng.gen_range(100..300);
                sleep_local(clock, Duration::from_millis(backoff_ms)).await;
                continue;
            }
        };
        node.metrics
            .campaign_latency
            .observe(started.elapsed().as_secs_f64());
        serve_leadership(node, elector, clock, leadership).await;
    }
}

/// Leads until the leadership is lost or resigned, stops acting, and only then
/// releases it.
async fn serve_leadership(
    node: &Arc<Node>,
    elector: &dyn Elector,
    clock: &dyn Clock,
    leadership: Leadership,
) {
    let (name, log) = (node.name.clone(), &node.log);
    let token = leadership.token;
    node.set_role(Role::Leader, Some(leadership.clone()));
    node.metrics.transitions.inc();
    node.metrics.leaders_acting.set(1);
    log.record(Event::RoleChanged {
        node: name.clone(),
        role: Role::Leader,
        token: Some(token),
    });
    let reason = lead(&node.ctx, &leadership, &node.work).await;
    // When its belief really ended: before lead() let an in-flight write finish.
    let lost_at_us = leadership.lost_at_us(log.clock().now_us());
    leadership.end(reason);
    // Every protected write has completed or timed out by now: lead() is the only
    // writer and it has returned. Only then is leadership released.
    node.work.stop_leading();
    node.metrics.leaders_acting.set(0);
    log.record(Event::StoppedActing {
        node: name.clone(),
        token,
        reason: reason.as_str().to_string(),
        lost_at_us,
    });
    node.set_role(Role::Follower, None);
    node.metrics.transitions.inc();
    log.record(Event::RoleChanged {
        node: name.clone(),
        role: Role::Follower,
        token: None,
    });
    if reason == LossReason::Resigned {
        log.record(Event::Released {
            node: name.clone(),
            token,
        });
        let _ = elector.resign(&leadership).await;
        sleep_local(clock, Duration::from_millis(REJOIN_AFTER_RESIGN_MS)).await;
    } else {
        // Abandon the lost lease's key if etcd still has it.
        let _ = elector.resign(&leadership).await;
    }
}
