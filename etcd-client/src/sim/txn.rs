//! Transactions: `Txn`, `Compare`, `TxnOp` and their responses, as etcd-client 0.21 has
//! them. Nested transactions (`TxnOp::txn`) are not supported yet.

use super::key_value::ResponseHeader;
use super::options::{get_prefix, DeleteOptions, GetOptions, PutOptions};
use super::responses::{DeleteResponse, GetResponse, PutResponse};
use baton_sim::world::service::etcd::v3_messages::{
    CompareReq, CompareResult, CompareTarget, TxnOpReq, TxnOpResp, TxnReq,
};

/// Logical comparison operation for comparison: etcd's `CompareResult`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
pub enum CompareOp {
    /// The key's field equals the given one.
    Equal = 0,
    /// The key's field is greater.
    Greater = 1,
    /// The key's field is less.
    Less = 2,
    /// The key's field differs.
    NotEqual = 3,
}

/// Transaction comparison.
#[derive(Debug, Clone)]
pub struct Compare(CompareReq);

impl Compare {
    fn new(key: impl Into<Vec<u8>>, cmp: CompareOp, target: CompareTarget) -> Self {
        let result = match cmp {
            CompareOp::Equal => CompareResult::Equal,
            CompareOp::Greater => CompareResult::Greater,
            CompareOp::Less => CompareResult::Less,
            CompareOp::NotEqual => CompareResult::NotEqual,
        };
        Compare(CompareReq {
            key: key.into(),
            range_end: vec![],
            result,
            target,
        })
    }

    /// Compares the version of the given key.
    pub fn version(key: impl Into<Vec<u8>>, cmp: CompareOp, version: i64) -> Self {
        Compare::new(key, cmp, CompareTarget::Version(version))
    }

    /// Compares the creation revision of the given key.
    pub fn create_revision(key: impl Into<Vec<u8>>, cmp: CompareOp, revision: i64) -> Self {
        Compare::new(key, cmp, CompareTarget::Create(revision))
    }

    /// Compares the last modified revision of the given key.
    pub fn mod_revision(key: impl Into<Vec<u8>>, cmp: CompareOp, revision: i64) -> Self {
        Compare::new(key, cmp, CompareTarget::Mod(revision))
    }

    /// Compares the value of the given key.
    pub fn value(key: impl Into<Vec<u8>>, cmp: CompareOp, value: impl Into<Vec<u8>>) -> Self {
        Compare::new(key, cmp, CompareTarget::Value(value.into()))
    }

    /// Compares the lease id of the given key.
    pub fn lease(key: impl Into<Vec<u8>>, cmp: CompareOp, lease: i64) -> Self {
        Compare::new(key, cmp, CompareTarget::Lease(lease))
    }

    /// Sets the comparison to scan the range [key, end).
    pub fn with_range(mut self, end: impl Into<Vec<u8>>) -> Self {
        self.0.range_end = end.into();
        self
    }

    /// Sets the comparison to scan all keys prefixed by the key.
    pub fn with_prefix(mut self) -> Self {
        self.0.range_end = get_prefix(&self.0.key);
        self
    }
}

/// Transaction operation.
#[derive(Debug, Clone)]
pub struct TxnOp(TxnOpReq);

impl TxnOp {
    /// `Put` operation.
    pub fn put(
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        options: Option<PutOptions>,
    ) -> Self {
        TxnOp(TxnOpReq::Put(
            options.unwrap_or_default().with_kv(key, value).0,
        ))
    }

    /// `Get` operation.
    pub fn get(key: impl Into<Vec<u8>>, options: Option<GetOptions>) -> Self {
        let opts = options.unwrap_or_default();
        TxnOp(TxnOpReq::Range(opts.with_key(key).build()))
    }

    /// `Delete` operation.
    pub fn delete(key: impl Into<Vec<u8>>, options: Option<DeleteOptions>) -> Self {
        let opts = options.unwrap_or_default();
        TxnOp(TxnOpReq::Delete(opts.with_key(key).build()))
    }
}

/// Transaction of multiple operations.
#[derive(Debug, Default, Clone)]
pub struct Txn {
    req: TxnReq,
    c_when: bool,
    c_then: bool,
    c_else: bool,
}

impl Txn {
    /// Creates a new transaction.
    pub fn new() -> Self {
        Txn::default()
    }

    /// Takes a list of comparison. If all comparisons passed in succeed, the operations
    /// passed into `and_then()` will be executed. Or the operations passed into
    /// `or_else()` will be executed.
    ///
    /// Panics, as etcd-client's, when called twice or after `and_then`/`or_else`.
    pub fn when(mut self, compares: impl Into<Vec<Compare>>) -> Self {
        assert!(!self.c_when, "cannot call when twice");
        assert!(!self.c_then, "cannot call when after and_then");
        assert!(!self.c_else, "cannot call when after or_else");
        self.c_when = true;
        self.req.compare = compares.into().into_iter().map(|c| c.0).collect();
        self
    }

    /// Takes a list of operations, run if the comparisons passed in `when()` succeed.
    ///
    /// Panics, as etcd-client's, when called twice or after `or_else`.
    pub fn and_then(mut self, operations: impl Into<Vec<TxnOp>>) -> Self {
        assert!(!self.c_then, "cannot call and_then twice");
        assert!(!self.c_else, "cannot call and_then after or_else");
        self.c_then = true;
        self.req.success = operations.into().into_iter().map(|o| o.0).collect();
        self
    }

    /// Takes a list of operations, run if the comparisons passed in `when()` fail.
    ///
    /// Panics, as etcd-client's, when called twice.
    pub fn or_else(mut self, operations: impl Into<Vec<TxnOp>>) -> Self {
        assert!(!self.c_else, "cannot call or_else twice");
        self.c_else = true;
        self.req.failure = operations.into().into_iter().map(|o| o.0).collect();
        self
    }

    pub(crate) fn into_req(self) -> TxnReq {
        self.req
    }
}

/// Transaction operation response.
#[derive(Debug, Clone)]
pub enum TxnOpResponse {
    /// To a put.
    Put(PutResponse),
    /// To a get.
    Get(GetResponse),
    /// To a delete.
    Delete(DeleteResponse),
    /// To a nested txn (never answered yet: the simulation has no nested txns).
    Txn(TxnResponse),
}

/// Response for `Txn` operation.
#[derive(Debug, Clone)]
pub struct TxnResponse {
    header: ResponseHeader,
    succeeded: bool,
    responses: Vec<TxnOpResponse>,
}

impl TxnResponse {
    pub(crate) fn new(header: ResponseHeader, succeeded: bool, ops: Vec<TxnOpResp>) -> Self {
        let responses = ops
            .into_iter()
            .map(|r| match r {
                TxnOpResp::Put(p) => TxnOpResponse::Put(PutResponse::new(header, p)),
                TxnOpResp::Range(g) => TxnOpResponse::Get(GetResponse::new(header, g)),
                TxnOpResp::Delete(d) => TxnOpResponse::Delete(DeleteResponse::new(header, d)),
            })
            .collect();
        TxnResponse {
            header,
            succeeded,
            responses,
        }
    }

    /// Transaction response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// Takes the header out of the response (the simulation's header is a copy).
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        Some(self.header)
    }

    /// Returns `true` if the compare evaluated to true or `false` otherwise.
    pub const fn succeeded(&self) -> bool {
        self.succeeded
    }

    /// Returns responses of transaction operations.
    pub fn op_responses(&self) -> Vec<TxnOpResponse> {
        self.responses.clone()
    }
}
