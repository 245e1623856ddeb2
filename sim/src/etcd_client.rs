//! The simulated side of the [`EtcdApi`] seam: RPCs to the lease service node.

use crate::rpc::{
    call, EtcdGrant, EtcdKeepAlive, EtcdRange, EtcdRevoke, EtcdTxn, EtcdWatch, LEASE_SERVICE_ADDR,
};
use async_trait::async_trait;
use baton_protocols::etcd_api::{
    EtcdApi, EtcdError, LeaseGrant, RangeRequest, RangeResponse, Txn, TxnResponse, WatchEvent,
};
use madsim::net::Endpoint;
use std::sync::Arc;

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
                LEASE_SERVICE_ADDR,
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
                LEASE_SERVICE_ADDR,
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
                LEASE_SERVICE_ADDR,
                EtcdRevoke { id },
                self.rpc_timeout_ms,
            )
            .await,
        )
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse, EtcdError> {
        timeout(
            call(
                &self.ep,
                LEASE_SERVICE_ADDR,
                EtcdTxn(txn),
                self.rpc_timeout_ms,
            )
            .await,
        )?
        .map_err(EtcdError::Server)
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResponse, EtcdError> {
        timeout(
            call(
                &self.ep,
                LEASE_SERVICE_ADDR,
                EtcdRange(req),
                self.rpc_timeout_ms,
            )
            .await,
        )
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
        timeout(
            call(
                &self.ep,
                LEASE_SERVICE_ADDR,
                req,
                wait_ms + self.rpc_timeout_ms,
            )
            .await,
        )
    }
}
