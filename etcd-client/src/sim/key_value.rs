//! `KeyValue` and `ResponseHeader`, with etcd-client's accessors.

use super::error::Result;
use baton_sim::world::service::etcd::v3_messages::{Kv, V3Header};

/// Key-value pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue(pub(crate) Kv);

impl KeyValue {
    /// The key in bytes. An empty key is not allowed.
    pub fn key(&self) -> &[u8] {
        &self.0.key
    }

    /// The key in string. An empty key is not allowed.
    pub fn key_str(&self) -> Result<&str> {
        std::str::from_utf8(self.key()).map_err(From::from)
    }

    /// The value held by the key, in bytes.
    pub fn value(&self) -> &[u8] {
        &self.0.value
    }

    /// The value held by the key, in string.
    pub fn value_str(&self) -> Result<&str> {
        std::str::from_utf8(self.value()).map_err(From::from)
    }

    /// Convert to key-value pair.
    pub fn into_key_value(self) -> (Vec<u8>, Vec<u8>) {
        (self.0.key, self.0.value)
    }

    /// The revision of last creation on this key.
    pub const fn create_revision(&self) -> i64 {
        self.0.create_revision
    }

    /// The revision of last modification on this key.
    pub const fn mod_revision(&self) -> i64 {
        self.0.mod_revision
    }

    /// The version of the key. A deletion resets the version to zero and any modification
    /// of the key increases its version.
    pub const fn version(&self) -> i64 {
        self.0.version
    }

    /// The ID of the lease that attached to key. When the attached lease expires, the key
    /// will be deleted. If lease is 0, then no lease is attached to the key.
    pub const fn lease(&self) -> i64 {
        self.0.lease
    }
}

/// General `etcd` response header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHeader(pub(crate) V3Header);

impl ResponseHeader {
    /// The ID of the cluster which sent the response (0 in the simulation).
    pub const fn cluster_id(&self) -> u64 {
        0
    }

    /// The ID of the member which sent the response (the simulation gives its number).
    pub const fn member_id(&self) -> u64 {
        self.0.member_id
    }

    /// The key-value store revision when the request was applied.
    pub const fn revision(&self) -> i64 {
        self.0.revision
    }

    /// The raft term when the request was applied.
    pub const fn raft_term(&self) -> u64 {
        self.0.raft_term
    }
}
