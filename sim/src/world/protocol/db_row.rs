//! `db-row` in the simulator: a single-node database holding the `leader` row as the
//! backend, and the simulated side of the [`DbApi`] seam (RPCs to it).

use super::{BackendCtx, ElectorCtx, Protocol};
use crate::world::net::Endpoint;
use crate::world::rpc::{call, BACKEND_ADDR};
use crate::world::service::db::{self, DbAcquire, DbRelease, DbRenew, DbSelect};
use async_trait::async_trait;
pub use baton_model::protocol::db_row::DbRow;
use baton_protocols::db_row::{DbApi, DbError, DbRowElector, LeaderRow};
use baton_protocols::Elector;
use madsim::task::NodeId;
use std::sync::Arc;

/// A database client for one node; every statement is bounded by
/// `statement_timeout_ms`.
pub struct SimDbClient {
    ep: Arc<Endpoint>,
    timeout_ms: u64,
}

impl SimDbClient {
    /// A client sending from `ep`.
    pub fn new(ep: Arc<Endpoint>, timeout_ms: u64) -> Self {
        SimDbClient { ep, timeout_ms }
    }

    async fn call<R: crate::world::net::Request>(&self, req: R) -> Result<R::Response, DbError> {
        call(&self.ep, BACKEND_ADDR, req, self.timeout_ms)
            .await
            .map_err(|_| DbError::Timeout)
    }
}

#[async_trait]
impl DbApi for SimDbClient {
    async fn acquire(
        &self,
        node: &str,
        ttl_ms: u64,
        client_now_us: Option<i64>,
    ) -> Result<Option<u64>, DbError> {
        self.call(DbAcquire {
            node: node.into(),
            ttl_ms,
            client_now_us,
        })
        .await
    }

    async fn renew(
        &self,
        node: &str,
        generation: u64,
        ttl_ms: u64,
        client_now_us: Option<i64>,
    ) -> Result<bool, DbError> {
        self.call(DbRenew {
            node: node.into(),
            generation,
            ttl_ms,
            client_now_us,
        })
        .await
    }

    async fn release(&self, node: &str, generation: u64) -> Result<bool, DbError> {
        self.call(DbRelease {
            node: node.into(),
            generation,
        })
        .await
    }

    async fn select(&self) -> Result<Option<LeaderRow>, DbError> {
        self.call(DbSelect).await
    }
}

impl Protocol for DbRow {
    fn start_backend(&self, ctx: BackendCtx) -> Option<NodeId> {
        let (tl, clock, requests) = (ctx.timeline, ctx.clock, ctx.requests);
        // The row outlives the database's process, as its data directory does.
        let disk = Arc::new(db::DbDisk::default());
        let (fsync_ms, seed) = (self.0.fsync_ms, ctx.seed);
        let node = ctx
            .handle
            .create_node()
            .name("backend")
            .ip(BACKEND_ADDR.ip())
            .init(move || {
                let commit = db::Commit::new(fsync_ms, seed);
                db::serve(
                    tl.clone(),
                    clock.clone(),
                    requests.clone(),
                    disk.clone(),
                    commit,
                )
            })
            .build();
        Some(node.id())
    }

    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector> {
        let api = Arc::new(SimDbClient::new(ctx.ep, self.0.statement_timeout_ms));
        let rng = baton_model::seed::fork(
            ctx.seed,
            &format!("db-row/{}/{}", ctx.node, ctx.incarnation),
        );
        Arc::new(DbRowElector::new(
            ctx.node,
            api,
            ctx.clock,
            self.0.clone(),
            Box::new(rng),
        ))
    }
}
