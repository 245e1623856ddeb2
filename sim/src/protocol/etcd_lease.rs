//! `etcd-lease` in the simulator: the etcd-like service as the backend, and the
//! simulated side of the [`EtcdApi`] seam (RPCs to it) under the election recipe.

use crate::net::Endpoint;
use crate::rpc::{
    call, EtcdGrant, EtcdKeepAlive, EtcdRange, EtcdRevoke, EtcdTxn, EtcdWatch, BACKEND_ADDR,
};
use async_trait::async_trait;
use baton_protocols::etcd_api::{
    EtcdApi, EtcdError, LeaseGrant, RangeRequest, RangeResponse, Txn, TxnResponse, WatchEvent,
};
use std::sync::Arc;

use super::{require_positive, BackendCtx, Bound, ElectorCtx, Protocol, ProtocolName};
use crate::scenario::Scenario;
use crate::service::etcd;
use baton_protocols::etcd_lease::{EtcdLeaseConfig, EtcdLeaseElector};
use baton_protocols::Elector;
use madsim::task::NodeId;

/// An etcd client for one node; every call is bounded by `rpc_timeout_ms`.
pub struct SimEtcdClient {
    ep: Arc<Endpoint>,
    node: String,
    rpc_timeout_ms: u64,
}

impl SimEtcdClient {
    /// A client sending from `ep` on behalf of `node`.
    pub fn new(ep: Arc<Endpoint>, node: &str, rpc_timeout_ms: u64) -> Self {
        SimEtcdClient {
            ep,
            node: node.to_string(),
            rpc_timeout_ms,
        }
    }
}

fn timeout<T>(r: Result<T, crate::rpc::TimedOut>) -> Result<T, EtcdError> {
    r.map_err(|_| EtcdError::Timeout)
}

#[async_trait]
impl EtcdApi for SimEtcdClient {
    async fn lease_grant(&self, ttl_ms: u64) -> Result<LeaseGrant, EtcdError> {
        timeout(
            call(
                &self.ep,
                BACKEND_ADDR,
                EtcdGrant {
                    node: self.node.clone(),
                    ttl_ms,
                },
                self.rpc_timeout_ms,
            )
            .await,
        )
    }

    async fn lease_keep_alive(&self, id: i64) -> Result<Option<u64>, EtcdError> {
        timeout(
            call(
                &self.ep,
                BACKEND_ADDR,
                EtcdKeepAlive { id },
                self.rpc_timeout_ms,
            )
            .await,
        )
    }

    async fn lease_revoke(&self, id: i64) -> Result<(), EtcdError> {
        timeout(
            call(
                &self.ep,
                BACKEND_ADDR,
                EtcdRevoke { id },
                self.rpc_timeout_ms,
            )
            .await,
        )
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse, EtcdError> {
        timeout(call(&self.ep, BACKEND_ADDR, EtcdTxn(txn), self.rpc_timeout_ms).await)?
            .map_err(EtcdError::Server)
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResponse, EtcdError> {
        timeout(call(&self.ep, BACKEND_ADDR, EtcdRange(req), self.rpc_timeout_ms).await)
    }

    async fn watch(
        &self,
        key: &str,
        start_revision: i64,
        wait_ms: u64,
    ) -> Result<Vec<WatchEvent>, EtcdError> {
        let req = EtcdWatch {
            key: key.to_string(),
            start_revision,
            wait_ms,
        };
        timeout(call(&self.ep, BACKEND_ADDR, req, wait_ms + self.rpc_timeout_ms).await)
    }
}

/// The etcd-lease protocol with its scenario table.
#[derive(Clone, Debug)]
pub struct EtcdLease(pub EtcdLeaseConfig);

impl Protocol for EtcdLease {
    fn name(&self) -> ProtocolName {
        ProtocolName::EtcdLease
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let c = &self.0;
        require_positive(&[
            ("lease_ttl_ms", c.lease_ttl_ms),
            ("rpc_timeout_ms", c.rpc_timeout_ms),
            ("expiry_check_interval_ms", c.expiry_check_interval_ms),
        ])?;
        let bounded = [
            ("lease_ttl_ms", c.lease_ttl_ms),
            ("keepalive_interval_ms", c.keepalive_interval_ms),
            ("rpc_timeout_ms", c.rpc_timeout_ms),
            ("min_lease_ttl_ms", c.min_lease_ttl_ms),
            ("expiry_check_interval_ms", c.expiry_check_interval_ms),
        ];
        for (key, v) in bounded {
            if i128::from(v) > crate::fault::MAX_MS {
                return Err((
                    key.into(),
                    format!("{v} is out of range: 0 to 3600000 (one simulated hour)"),
                ));
            }
        }
        Ok(())
    }

    fn start_backend(&self, ctx: BackendCtx) -> Option<NodeId> {
        let (tl, clock, requests) = (ctx.timeline, ctx.clock, ctx.requests);
        let (min_ttl, interval) = (self.0.min_lease_ttl_ms, self.0.expiry_check_interval_ms);
        let node = ctx
            .handle
            .create_node()
            .name("backend")
            .ip(BACKEND_ADDR.ip())
            .init(move || {
                etcd::serve(
                    tl.clone(),
                    clock.clone(),
                    requests.clone(),
                    min_ttl,
                    interval,
                )
            })
            .build();
        Some(node.id())
    }

    fn elector(&self, ctx: ElectorCtx) -> Arc<dyn Elector> {
        let api = Arc::new(SimEtcdClient::new(ctx.ep, ctx.node, self.0.rpc_timeout_ms));
        Arc::new(EtcdLeaseElector::new(
            ctx.node,
            api,
            ctx.clock,
            self.0.clone(),
        ))
    }

    /// The old leader's lease runs out at most one TTL after its last write (it renewed
    /// no later than that write), the service notices within one expiry check, and the
    /// next candidate in the queue needs one campaign round: its watch fires, it confirms
    /// it has no predecessor, it claims the resource and writes: four round trips.
    fn failover_bound(&self, s: &Scenario) -> Bound {
        let ttl = self.0.granted_ttl_ms();
        let check = self.0.expiry_check_interval_ms;
        let round = 4 * 2 * s.network.latency_ms_max;
        Bound {
            ms: ttl + check + round,
            formula: format!(
                "TTL + election round = lease TTL {ttl} ms + lease expiry check {check} ms + one campaign round (4 round trips at <= {} ms one way = {round} ms)",
                s.network.latency_ms_max
            ),
        }
    }

    fn default_liveness_bound_ms(&self, _: &Scenario) -> u64 {
        2 * self.0.granted_ttl_ms() + self.0.expiry_check_interval_ms + 1000
    }
}
