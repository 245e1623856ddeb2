//! `zk-sequential` in the simulator: the ZooKeeper-like service as the backend, and the
//! simulated side of the [`ZkApi`] seam (RPCs to it) under the election recipe.

use super::{BackendCtx, ElectorCtx, Protocol};
use crate::world::net::Endpoint;
use crate::world::rpc::{call, BACKEND_ADDR};
use crate::world::service::zk::{
    self, ZkClose, ZkConnect, ZkCreate, ZkDelete, ZkExists, ZkGetChildren, ZkGetData, ZkPing,
    ZkSettings,
};
use async_trait::async_trait;
pub use baton_model::protocol::zk_sequential::ZkSequential;
use baton_protocols::zk_sequential::{
    CreateMode, SessionGrant, Stat, ZkApi, ZkError, ZkSequentialElector,
};
use baton_protocols::Elector;
use baton_protocols::{sleep_local, Clock};
use madsim::task::NodeId;
use rand::Rng;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A ZooKeeper client for one node; every call is bounded by `rpc_timeout_ms`.
///
/// Besides the recipe's own calls it sends what the client library sends by itself:
/// a ping right after a session is granted, whose answer the connect waits for, and,
/// as real mode's library, the `zookeeper-client` crate, checks its connection every
/// twentieth of the negotiated session timeout and pings the server when nothing was
/// sent on the session for three of those (`reset_timeout`, `ping_timeout = 3 x tick`),
/// so a session is touched about every 450 ms at a 3 s timeout, not only at the recipe's
/// pings every third of it. Those touches decide when the server expires a session whose
/// node was killed, paused or cut off.
pub struct SimZkClient {
    ep: Arc<Endpoint>,
    node: baton_model::NodeId,
    rpc_timeout_ms: u64,
    clock: Arc<dyn Clock>,
    /// Each open session's last send, on the node's clock.
    last_send: Arc<Mutex<BTreeMap<i64, i64>>>,
}

/// The library checks its connection this many times per session timeout
/// (`session_timeout / 20`), and pings after three checks' worth of silence.
const LIBRARY_TICKS_PER_TIMEOUT: u64 = 20;
const LIBRARY_PING_AFTER_TICKS: u64 = 3;

impl SimZkClient {
    /// A client sending from `ep` on behalf of `node`, whose library reads `clock`.
    pub fn new(
        ep: Arc<Endpoint>,
        node: &baton_model::NodeId,
        rpc_timeout_ms: u64,
        clock: Arc<dyn Clock>,
    ) -> Self {
        SimZkClient {
            ep,
            node: node.clone(),
            rpc_timeout_ms,
            clock,
            last_send: Arc::new(Mutex::new(BTreeMap::new())),
        }
    }

    /// Notes a send on `session` (0: none of the recipe's sessions).
    fn sent(&self, session: i64) {
        if let Some(t) = self.last_send.lock().unwrap().get_mut(&session) {
            *t = self.clock.now_us();
        }
    }

    async fn call<R: crate::world::net::Request>(
        &self,
        req: R,
        extra_ms: u64,
    ) -> Result<R::Response, ZkError> {
        call(&self.ep, BACKEND_ADDR, req, self.rpc_timeout_ms + extra_ms)
            .await
            .map_err(|_| ZkError::ConnectionLoss)
    }

    /// The library's own pings on `grant`'s session (see the type's doc), until the
    /// session is closed or the server says it is gone.
    fn spawn_library_pings(&self, grant: SessionGrant) {
        self.last_send
            .lock()
            .unwrap()
            .insert(grant.id, self.clock.now_us());
        let tick = Duration::from_millis((grant.timeout_ms / LIBRARY_TICKS_PER_TIMEOUT).max(1));
        let idle_us = (tick * LIBRARY_PING_AFTER_TICKS as u32).as_micros() as i64;
        let (ep, clock, last_send) = (self.ep.clone(), self.clock.clone(), self.last_send.clone());
        let timeout_ms = self.rpc_timeout_ms;
        madsim::task::spawn(async move {
            loop {
                sleep_local(clock.as_ref(), tick).await;
                let now = clock.now_us();
                let due = match last_send.lock().unwrap().get_mut(&grant.id) {
                    None => return,
                    Some(t) if now >= *t + idle_us => {
                        *t = now;
                        true
                    }
                    Some(_) => false,
                };
                if due {
                    let r = call(&ep, BACKEND_ADDR, ZkPing { session: grant.id }, timeout_ms).await;
                    if matches!(r, Ok(Err(ZkError::SessionExpired))) {
                        return;
                    }
                }
            }
        });
    }
}

#[async_trait]
impl ZkApi for SimZkClient {
    async fn create_session(&self, timeout_ms: u64) -> Result<SessionGrant, ZkError> {
        let node = self.node.clone();
        let grant = self.call(ZkConnect { node, timeout_ms }, 0).await?;
        // The library's connect returns only once the server answered a ping sent right
        // after the session was granted (zookeeper-client's `serve_connecting`, to learn
        // of an auth failure): a new session costs two round trips.
        self.call(ZkPing { session: grant.id }, 0).await??;
        self.spawn_library_pings(grant);
        Ok(grant)
    }

    async fn ping(&self, session: i64) -> Result<(), ZkError> {
        self.sent(session);
        self.call(ZkPing { session }, 0).await?
    }

    async fn close_session(&self, session: i64) -> Result<(), ZkError> {
        self.last_send.lock().unwrap().remove(&session);
        self.call(ZkClose { session }, 0).await
    }

    async fn create(
        &self,
        session: i64,
        path: &str,
        data: &str,
        mode: CreateMode,
    ) -> Result<(String, Stat), ZkError> {
        self.sent(session);
        let req = ZkCreate {
            session,
            path: path.to_string(),
            data: data.to_string(),
            mode,
        };
        self.call(req, 0).await?
    }

    async fn get_children(&self, session: i64, path: &str) -> Result<Vec<String>, ZkError> {
        self.sent(session);
        let path = path.to_string();
        self.call(ZkGetChildren { session, path }, 0).await?
    }

    async fn get_data(&self, session: i64, path: &str) -> Result<(String, Stat), ZkError> {
        self.sent(session);
        let path = path.to_string();
        self.call(ZkGetData { session, path }, 0).await?
    }

    async fn exists_watch(
        &self,
        session: i64,
        path: &str,
        wait_ms: u64,
    ) -> Result<Option<Stat>, ZkError> {
        self.sent(session);
        let req = ZkExists {
            session,
            path: path.to_string(),
            wait_ms,
        };
        // The long poll may legitimately take `wait_ms`; the timeout covers the rest.
        self.call(req, wait_ms).await?
    }

    async fn delete(&self, session: i64, path: &str) -> Result<(), ZkError> {
        self.sent(session);
        let path = path.to_string();
        self.call(ZkDelete { session, path }, 0).await?
    }
}

impl Protocol for ZkSequential {
    fn start_backend(&self, ctx: BackendCtx) -> Option<NodeId> {
        let (tl, clock, requests) = (ctx.timeline, ctx.clock, ctx.requests);
        let tick = self.0.tick_time_ms.max(1);
        let settings = ZkSettings {
            tick_time_ms: self.0.tick_time_ms,
            min_session_timeout_ms: self.0.effective_min_session_timeout_ms(),
            max_session_timeout_ms: self.0.effective_max_session_timeout_ms(),
            tick_phase_ms: baton_model::seed::fork(ctx.seed, "zk/tick-phase").gen_range(0..tick),
            fsync_ms: self.0.fsync_ms,
            session_setup_ms: self.0.session_setup_ms,
            seed: ctx.seed,
        };
        let node = ctx
            .handle
            .create_node()
            .name("backend")
            .ip(BACKEND_ADDR.ip())
            .init(move || zk::serve(tl.clone(), clock.clone(), requests.clone(), settings))
            .build();
        Some(node.id())
    }

    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector> {
        let api = Arc::new(SimZkClient::new(
            ctx.ep,
            ctx.node,
            self.0.rpc_timeout_ms,
            ctx.clock.clone(),
        ));
        Arc::new(ZkSequentialElector::new(
            ctx.node,
            api,
            ctx.clock,
            self.0.clone(),
        ))
    }
}
