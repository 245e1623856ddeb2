//! The KV responses, with etcd-client 0.21's accessors.

use super::key_value::{KeyValue, ResponseHeader};
use baton_sim::world::service::etcd::v3_messages::{DeleteResp, PutResp, RangeResp};

/// Response for `Put` operation.
#[derive(Debug, Clone)]
pub struct PutResponse(ResponseHeader, Option<KeyValue>);

impl PutResponse {
    pub(crate) fn new(h: ResponseHeader, p: PutResp) -> Self {
        PutResponse(h, p.prev_kv.map(KeyValue))
    }

    /// Get response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.0)
    }

    /// Takes the header out of the response (the simulation's header is a copy).
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        Some(self.0)
    }

    /// If prev_kv is set in the request, the previous key-value pair will be returned.
    pub fn prev_key(&self) -> Option<&KeyValue> {
        self.1.as_ref()
    }

    /// Takes the prev_key out of the response, leaving a [`None`] in its place.
    pub fn take_prev_key(&mut self) -> Option<KeyValue> {
        self.1.take()
    }
}

/// Response for `Get` operation.
#[derive(Debug, Clone)]
pub struct GetResponse {
    header: ResponseHeader,
    kvs: Vec<KeyValue>,
    more: bool,
    count: i64,
}

impl GetResponse {
    pub(crate) fn new(header: ResponseHeader, r: RangeResp) -> Self {
        GetResponse {
            header,
            kvs: r.kvs.into_iter().map(KeyValue).collect(),
            more: r.more,
            count: r.count,
        }
    }

    /// Get response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// Takes the header out of the response (the simulation's header is a copy).
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        Some(self.header)
    }

    /// The list of key-value pairs matched by the `Get` request. kvs is empty when count
    /// is requested.
    pub fn kvs(&self) -> &[KeyValue] {
        &self.kvs
    }

    /// Takes the key-value pairs, leaving an empty vector in their place.
    pub fn take_kvs(&mut self) -> Vec<KeyValue> {
        std::mem::take(&mut self.kvs)
    }

    /// Indicates if there are more keys to return in the requested range.
    pub const fn more(&self) -> bool {
        self.more
    }

    /// The number of keys within the range when requested.
    pub const fn count(&self) -> i64 {
        self.count
    }
}

/// Response for `Delete` operation.
#[derive(Debug, Clone)]
pub struct DeleteResponse(ResponseHeader, i64, Vec<KeyValue>);

impl DeleteResponse {
    pub(crate) fn new(h: ResponseHeader, d: DeleteResp) -> Self {
        DeleteResponse(h, d.deleted, d.prev_kvs.into_iter().map(KeyValue).collect())
    }

    /// Delete response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.0)
    }

    /// Takes the header out of the response (the simulation's header is a copy).
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        Some(self.0)
    }

    /// The number of keys deleted by the delete request.
    pub const fn deleted(&self) -> i64 {
        self.1
    }

    /// If `prev_kv` is set in the request, the previous key-value pairs will be returned.
    pub fn prev_kvs(&self) -> &[KeyValue] {
        &self.2
    }

    /// Takes the previous key-value pairs, leaving an empty vector in their place.
    pub fn take_prev_kvs(&mut self) -> Vec<KeyValue> {
        std::mem::take(&mut self.2)
    }
}
