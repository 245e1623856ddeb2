//! The KV API's client, `KvClient`, as etcd-client 0.21 has it.

use super::connection::{unexpected_v3, Connection};
use super::error::Result;
use super::options::{DeleteOptions, GetOptions, PutOptions};
use super::responses::{DeleteResponse, GetResponse, PutResponse};
use super::txn::{Txn, TxnResponse};
use baton_sim::world::service::etcd::v3_messages::{V3Reply, V3Request};
use std::sync::Arc;

/// Client for KV operations.
#[derive(Clone)]
pub struct KvClient {
    conn: Arc<Connection>,
}

impl KvClient {
    pub(crate) fn new(conn: Arc<Connection>) -> Self {
        KvClient { conn }
    }

    /// Puts the given key into the key-value store. A put request increments the
    /// revision of the key-value store and generates one event in the event history.
    pub async fn put(
        &mut self,
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        options: Option<PutOptions>,
    ) -> Result<PutResponse> {
        let req = options.unwrap_or_default().with_kv(key, value).0;
        match self.conn.v3(V3Request::Put(req)).await? {
            (h, V3Reply::Put(p)) => Ok(PutResponse::new(h, p)),
            (_, other) => Err(unexpected_v3(&other)),
        }
    }

    /// Gets the key or a range of keys from the store.
    pub async fn get(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<GetOptions>,
    ) -> Result<GetResponse> {
        let req = options.unwrap_or_default().with_key(key).build();
        match self.conn.v3(V3Request::Range(req)).await? {
            (h, V3Reply::Range(r)) => Ok(GetResponse::new(h, r)),
            (_, other) => Err(unexpected_v3(&other)),
        }
    }

    /// Deletes the given key or a range of keys from the key-value store.
    pub async fn delete(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<DeleteOptions>,
    ) -> Result<DeleteResponse> {
        let req = options.unwrap_or_default().with_key(key).build();
        match self.conn.v3(V3Request::Delete(req)).await? {
            (h, V3Reply::Delete(d)) => Ok(DeleteResponse::new(h, d)),
            (_, other) => Err(unexpected_v3(&other)),
        }
    }

    /// Processes multiple operations in a single transaction. A txn request increments
    /// the revision of the key-value store and generates events with the same revision
    /// for every completed operation. It is not allowed to modify the same key several
    /// times within one txn.
    pub async fn txn(&mut self, txn: Txn) -> Result<TxnResponse> {
        match self.conn.v3(V3Request::Txn(txn.into_req())).await? {
            (
                h,
                V3Reply::Txn {
                    succeeded,
                    responses,
                },
            ) => Ok(TxnResponse::new(h, succeeded, responses)),
            (_, other) => Err(unexpected_v3(&other)),
        }
    }
}
