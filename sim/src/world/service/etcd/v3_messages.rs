//! The etcd v3 requests in full, as `etcd-client` sends them (byte keys, ranges, sorts,
//! `prev_kv`, compares on every target, lease time-to-live), which Baton's own protocols
//! do not need: the `baton-etcd-client` crate builds them, a member applies them to the
//! same store (`v3.rs`). Fields follow etcd's protobuf (`rpc.proto`); a `range_end` is
//! etcd's: empty for one key, `[0]` for every key from `key`, else the end, exclusive.

use serde::{Deserialize, Serialize};

/// One request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum V3Request {
    /// `Range`.
    Range(RangeReq),
    /// `Put`.
    Put(PutReq),
    /// `DeleteRange`.
    Delete(DeleteReq),
    /// `Txn`.
    Txn(TxnReq),
    /// `LeaseRevoke` (an error when the lease is gone, unlike Baton's own revoke).
    LeaseRevoke(i64),
    /// `LeaseTimeToLive`, with the lease's keys when `keys`.
    LeaseTimeToLive {
        /// The lease.
        id: i64,
        /// List its keys.
        keys: bool,
    },
}

impl V3Request {
    /// Whether it changes nothing: a member serves it as a linearizable read (through the
    /// leader's read index) rather than a proposal.
    pub fn is_read_only(&self) -> bool {
        match self {
            V3Request::Range(_) | V3Request::LeaseTimeToLive { .. } => true,
            V3Request::Put(_) | V3Request::Delete(_) | V3Request::LeaseRevoke(_) => false,
            V3Request::Txn(t) => t
                .success
                .iter()
                .chain(&t.failure)
                .all(|op| matches!(op, TxnOpReq::Range(_))),
        }
    }
}

/// How a range's keys are sorted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SortBy {
    /// By key, ascending (etcd's default).
    #[default]
    Key,
    /// By version.
    Version,
    /// By create revision.
    Create,
    /// By mod revision.
    Mod,
    /// By value.
    Value,
}

/// `RangeRequest`, without `revision` (reads of the past are not modelled).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeReq {
    /// The key, or the range's start.
    pub key: Vec<u8>,
    /// The range's end (see the module's docs).
    pub range_end: Vec<u8>,
    /// At most this many keys, 0 for all.
    pub limit: i64,
    /// The sort key.
    pub sort_by: SortBy,
    /// Sort descending (else ascending).
    pub descend: bool,
    /// Keys only, no values.
    pub keys_only: bool,
    /// The count only, no keys.
    pub count_only: bool,
    /// Filters, 0 for none: `[min_mod, max_mod, min_create, max_create]`.
    pub revision_bounds: [i64; 4],
}

/// `PutRequest`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutReq {
    /// The key.
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
    /// The lease, 0 for none.
    pub lease: i64,
    /// Return the key's previous state.
    pub prev_kv: bool,
    /// Keep the key's value (the key must exist).
    pub ignore_value: bool,
    /// Keep the key's lease (the key must exist).
    pub ignore_lease: bool,
}

/// `DeleteRangeRequest`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteReq {
    /// The key, or the range's start.
    pub key: Vec<u8>,
    /// The range's end.
    pub range_end: Vec<u8>,
    /// Return the deleted keys.
    pub prev_kv: bool,
}

/// What a compare reads from each key, and the value it is compared with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CompareTarget {
    /// The version (0 for a missing key).
    Version(i64),
    /// The create revision (0 for a missing key).
    Create(i64),
    /// The mod revision (0 for a missing key).
    Mod(i64),
    /// The value (a missing key fails every value compare).
    Value(Vec<u8>),
    /// The lease (0 for none, or a missing key).
    Lease(i64),
}

/// The relation a compare checks: the key's field `op` the given one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CompareResult {
    /// Equal.
    Equal,
    /// Greater.
    Greater,
    /// Less.
    Less,
    /// Not equal.
    NotEqual,
}

/// `Compare`, over one key or a range (every key of it must hold).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompareReq {
    /// The key, or the range's start.
    pub key: Vec<u8>,
    /// The range's end.
    pub range_end: Vec<u8>,
    /// The relation.
    pub result: CompareResult,
    /// The field and its value.
    pub target: CompareTarget,
}

/// One operation of a txn branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TxnOpReq {
    /// A range read.
    Range(RangeReq),
    /// A put.
    Put(PutReq),
    /// A delete.
    Delete(DeleteReq),
}

/// `TxnRequest` (no nested txns).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnReq {
    /// The guards.
    pub compare: Vec<CompareReq>,
    /// Run when every guard holds.
    pub success: Vec<TxnOpReq>,
    /// Run otherwise.
    pub failure: Vec<TxnOpReq>,
}

/// A stored key, as `mvccpb.KeyValue`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kv {
    /// The key.
    pub key: Vec<u8>,
    /// The value (empty for a keys-only read).
    pub value: Vec<u8>,
    /// Revision of the put that created it.
    pub create_revision: i64,
    /// Revision of its last put.
    pub mod_revision: i64,
    /// Puts since creation.
    pub version: i64,
    /// Its lease, 0 for none.
    pub lease: i64,
}

/// `RangeResponse`'s body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeResp {
    /// The keys, sorted and limited.
    pub kvs: Vec<Kv>,
    /// More keys matched than `limit` let through.
    pub more: bool,
    /// How many keys the range holds (before limits and filters).
    pub count: i64,
}

/// `PutResponse`'s body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutResp {
    /// The key before the put, when asked for and it existed.
    pub prev_kv: Option<Kv>,
}

/// `DeleteRangeResponse`'s body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteResp {
    /// How many keys it deleted.
    pub deleted: i64,
    /// The deleted keys, when asked for.
    pub prev_kvs: Vec<Kv>,
}

/// One op's answer inside a txn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TxnOpResp {
    /// To a range.
    Range(RangeResp),
    /// To a put.
    Put(PutResp),
    /// To a delete.
    Delete(DeleteResp),
}

/// A reply's body, by request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum V3Reply {
    /// To a range.
    Range(RangeResp),
    /// To a put.
    Put(PutResp),
    /// To a delete.
    Delete(DeleteResp),
    /// To a txn.
    Txn {
        /// Whether the success branch ran.
        succeeded: bool,
        /// Each op's answer, in order.
        responses: Vec<TxnOpResp>,
    },
    /// To a revoke.
    Revoked,
    /// To a time-to-live: -1 s left for a lease that is gone.
    TimeToLive {
        /// Whole seconds left, rounded down; -1 when the lease is gone.
        ttl_s: i64,
        /// The TTL granted, seconds.
        granted_ttl_s: i64,
        /// Its keys, in key order, when asked for.
        keys: Vec<Vec<u8>>,
    },
}

/// etcd's error answers to these requests, worded as etcd words them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum V3Error {
    /// A put (or revoke) names a lease that does not exist.
    #[error("etcdserver: requested lease not found")]
    LeaseNotFound,
    /// `ignore_value`/`ignore_lease` on a key that does not exist.
    #[error("etcdserver: key not found")]
    KeyNotFound,
    /// Two puts of one key in one txn branch.
    #[error("etcdserver: duplicate key given in txn request")]
    DuplicateKey,
    /// `ignore_value` with a value.
    #[error("etcdserver: value is provided")]
    ValueProvided,
    /// `ignore_lease` with a lease.
    #[error("etcdserver: lease is provided")]
    LeaseProvided,
    /// An empty key.
    #[error("etcdserver: key is not provided")]
    EmptyKey,
}

/// The header every answer carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct V3Header {
    /// The store's revision after the request.
    pub revision: i64,
    /// The leader's Raft term.
    pub raft_term: u64,
    /// The member that served it (its number, 1-based).
    pub member_id: u64,
}

/// A member's answer: the header, and the body or etcd's error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct V3Answer {
    /// The header.
    pub header: V3Header,
    /// The body, or the error etcd answers.
    pub result: Result<V3Reply, V3Error>,
}
