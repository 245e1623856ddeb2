//! The slice of the etcd v3 API that the election recipe needs.
//!
//! Protocol code talks to etcd only through [`EtcdApi`]. The simulator implements it with
//! RPCs to a simulated lease service; a real-network mode can implement it with a real
//! etcd client without touching the protocol. Semantics follow etcd v3: every mutation
//! bumps one global revision; a key records the revision that created it
//! (`create_revision`) and last modified it (`mod_revision`); keys attached to a lease are
//! deleted when the lease expires or is revoked.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// A stored key and its metadata.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyValue {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
    /// Revision of the put that created the key.
    pub create_revision: i64,
    /// Revision of the last put to the key.
    pub mod_revision: i64,
    /// Number of puts since creation.
    pub version: i64,
    /// The lease the key is attached to, 0 for none.
    pub lease: i64,
}

/// Which field of a key a [`Compare`] looks at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CompareTarget {
    /// The create revision (0 when the key does not exist).
    CreateRevision(i64),
    /// The mod revision (0 when the key does not exist).
    ModRevision(i64),
    /// The version (0 when the key does not exist).
    Version(i64),
    /// The value (a missing key never equals).
    Value(String),
}

/// How a [`Compare`] relates the key's field to the given one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CompareOp {
    /// Equal.
    Equal,
    /// Not equal.
    NotEqual,
    /// The key's field is less than the given one.
    Less,
    /// The key's field is greater than the given one.
    Greater,
}

/// One guard of a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compare {
    /// The key compared.
    pub key: String,
    /// The relation.
    pub op: CompareOp,
    /// The field and the value it is compared with.
    pub target: CompareTarget,
}

/// One operation inside a transaction branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TxnOp {
    /// Put `value` at `key`, attached to `lease` (0 for none).
    Put {
        /// The key.
        key: String,
        /// The value.
        value: String,
        /// The lease, 0 for none.
        lease: i64,
    },
    /// Read one key.
    Get {
        /// The key.
        key: String,
    },
    /// Delete one key.
    Delete {
        /// The key.
        key: String,
    },
}

/// A transaction: if every compare holds, run `success`, else run `failure`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Txn {
    /// Guards, all of which must hold.
    pub compare: Vec<Compare>,
    /// Run when every guard holds.
    pub success: Vec<TxnOp>,
    /// Run otherwise.
    pub failure: Vec<TxnOp>,
}

/// The outcome of a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnResponse {
    /// Whether the success branch ran.
    pub succeeded: bool,
    /// The store's revision after the transaction.
    pub revision: i64,
    /// For each `Get` in the branch that ran, the key if it exists.
    pub gets: Vec<Option<KeyValue>>,
}

/// A range read over one key or a prefix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeRequest {
    /// The key, or the prefix when `prefix` is set.
    pub key: String,
    /// Read every key starting with `key`.
    pub prefix: bool,
    /// Only keys whose create revision is at most this (etcd's `WithMaxCreateRev`).
    pub max_create_revision: Option<i64>,
    /// Sort by create revision, newest first (else oldest first).
    pub newest_first: bool,
    /// At most this many keys, 0 for all.
    pub limit: usize,
}

/// The result of a range read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeResponse {
    /// The keys, in the requested order.
    pub kvs: Vec<KeyValue>,
    /// The store's revision when read.
    pub revision: i64,
}

/// What a watch saw happen to a key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WatchEventKind {
    /// The key was written.
    Put,
    /// The key was deleted (explicitly, or by its lease ending).
    Delete,
}

/// One event delivered by a watch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchEvent {
    /// Put or delete.
    pub kind: WatchEventKind,
    /// The key.
    pub key: String,
    /// The revision of the change.
    pub revision: i64,
}

/// A granted lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseGrant {
    /// The lease id.
    pub id: i64,
    /// The TTL granted, which may be above the one asked for (etcd's minimum TTL).
    pub ttl_ms: u64,
}

/// Why an etcd call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EtcdError {
    /// No answer within the call's timeout (lost packets, partition, a paused server).
    Timeout,
    /// The server answered with an error.
    Server(String),
}

impl std::fmt::Display for EtcdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EtcdError::Timeout => write!(f, "timed out"),
            EtcdError::Server(m) => write!(f, "server error: {m}"),
        }
    }
}

/// The etcd v3 calls the election recipe uses. Every call is bounded by a timeout inside
/// the implementation: a partitioned client must never wait forever.
///
/// A failed call must also not come back at once, again and again: the recipe retries
/// some calls without pausing (`waitDeletes`, as etcd's watch does), which is sound when
/// each failure costs time, as every failure in the simulation is a timeout. An
/// implementation whose calls can fail at once (a real etcd refusing connections) paces
/// its failures with a bounded backoff, or the recipe spins a core until its lease runs
/// out (real mode's client does: `baton_real::backend::etcd::client`).
#[async_trait]
pub trait EtcdApi: Send + Sync {
    /// Grants a lease of `ttl_ms`.
    async fn lease_grant(&self, ttl_ms: u64) -> Result<LeaseGrant, EtcdError>;
    /// Renews a lease; `None` when the server no longer knows it.
    async fn lease_keep_alive(&self, id: i64) -> Result<Option<u64>, EtcdError>;
    /// Revokes a lease, deleting its keys.
    async fn lease_revoke(&self, id: i64) -> Result<(), EtcdError>;
    /// Runs a transaction.
    async fn txn(&self, txn: Txn) -> Result<TxnResponse, EtcdError>;
    /// Reads a key or a prefix.
    async fn range(&self, req: RangeRequest) -> Result<RangeResponse, EtcdError>;
    /// Waits up to `wait_ms` for changes to `key` at or after `start_revision`; returns
    /// them, or nothing if none came in time.
    async fn watch(
        &self,
        key: &str,
        start_revision: i64,
        wait_ms: u64,
    ) -> Result<Vec<WatchEvent>, EtcdError>;
}
