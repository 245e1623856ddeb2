//! Locks: `LockClient`, as etcd-client 0.21 has it, with the semantics of etcd's v3lock
//! server, which runs `client/v3/concurrency`'s `Mutex` on the member (`mutex.go`,
//! etcd 3.5). Here the same steps run on the calling node (`concurrency.rs`):
//!
//! - `lock`: the key `name/<lease in hex>`, put with the lease if its create revision is
//!   0 (else this lease waits or holds already, at the key's create revision); held at
//!   once if it is the prefix's oldest key, else after a wait until every older key is
//!   deleted, and then only if the key still exists ("mutex: session is expired"
//!   otherwise: etcd-io/etcd#9921's fix).
//! - `unlock`: a delete of the key.

use super::concurrency::{
    first_kv, go_hex, prefix_of, refused, release, session_lease, under_deadline, wait_deletes,
    Held,
};
use super::connection::Connection;
use super::error::Result;
use super::key_value::ResponseHeader;
use super::kv::KvClient;
use super::options::{GetOptions, PutOptions, SortOrder, SortTarget};
use super::txn::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse};
use std::sync::Arc;

/// `concurrency.ErrSessionExpired`'s words.
const SESSION_EXPIRED: &str = "mutex: session is expired";

/// Client for lock operations.
#[derive(Clone)]
pub struct LockClient {
    conn: Arc<Connection>,
}

impl LockClient {
    pub(crate) fn new(conn: Arc<Connection>) -> Self {
        LockClient { conn }
    }

    /// Acquires a distributed shared lock on a given named lock. On success, it will
    /// return a unique key that exists so long as the lock is held by the caller. The
    /// lock is held until Unlock is called on the key or the lease associated with the
    /// owner expires (lease 0: a new lease of 60 s, kept alive by no one, as etcd's server
    /// grants).
    pub async fn lock(
        &mut self,
        name: impl Into<Vec<u8>>,
        options: Option<LockOptions>,
    ) -> Result<LockResponse> {
        let lease = options.map_or(0, |o| o.lease);
        let held = Held::default();
        let steps = lock_steps(&self.conn, name.into(), lease, &held);
        under_deadline(&self.conn, &held, steps).await
    }

    /// Takes a key returned by Lock and releases the hold on lock. The next Lock caller
    /// waiting for the lock will then be woken up and given ownership of the lock.
    pub async fn unlock(&mut self, key: impl Into<Vec<u8>>) -> Result<UnlockResponse> {
        let key = key.into();
        let steps = async {
            let mut resp = KvClient::new(self.conn.clone()).delete(key, None).await?;
            Ok(UnlockResponse {
                header: resp.take_header(),
            })
        };
        under_deadline(&self.conn, &Held::default(), steps).await
    }
}

/// `Mutex.Lock` (see the module's docs).
async fn lock_steps(
    conn: &Arc<Connection>,
    name: Vec<u8>,
    lease: i64,
    held: &Held,
) -> Result<LockResponse> {
    let lease = session_lease(conn, lease).await?;
    let prefix = prefix_of(&name);
    let key = [prefix.as_slice(), go_hex(lease).as_bytes()].concat();
    let owner = GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, SortOrder::Ascend)
        .with_limit(1);
    let put = PutOptions::new().with_lease(lease);
    let txn = Txn::new()
        .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
        .and_then([
            TxnOp::put(key.clone(), "", Some(put)),
            TxnOp::get(prefix.clone(), Some(owner.clone())),
        ])
        .or_else([
            TxnOp::get(key.clone(), None),
            TxnOp::get(prefix.clone(), Some(owner)),
        ]);
    let mut kv = KvClient::new(conn.clone());
    let mut resp = kv.txn(txn).await?;
    let header = resp.take_header();
    let my_rev = if resp.succeeded() {
        header.map_or(0, |h| h.revision())
    } else {
        first_kv(&resp)?.create_revision()
    };
    let owner_rev = match resp.op_responses().get(1) {
        Some(TxnOpResponse::Get(g)) => g.kvs().first().map(|k| k.create_revision()),
        _ => None,
    };
    if owner_rev.is_none_or(|r| r == my_rev) {
        return Ok(LockResponse { header, key });
    }
    *held.lock().unwrap() = Some((key.clone(), None));
    if let Err(e) = wait_deletes(conn, &prefix, my_rev - 1).await {
        let _ = release(conn, key, None).await;
        return Err(e);
    }
    // The session must not have expired meanwhile: the key must still be there.
    let mut mine = match kv.get(key.clone(), None).await {
        Ok(g) => g,
        Err(e) => {
            let _ = release(conn, key, None).await;
            return Err(e);
        }
    };
    held.lock().unwrap().take();
    if mine.kvs().is_empty() {
        return Err(refused(SESSION_EXPIRED));
    }
    Ok(LockResponse {
        header: mine.take_header(),
        key,
    })
}

/// Options for `Lock` operation.
#[derive(Debug, Default, Clone)]
pub struct LockOptions {
    lease: i64,
}

impl LockOptions {
    /// Creates a `LockOptions`.
    pub const fn new() -> Self {
        LockOptions { lease: 0 }
    }

    /// The ID of the lease that will be attached to ownership of the lock. If the lease
    /// expires or is revoked and currently holds the lock, the lock is automatically
    /// released. Calls to Lock with the same lease will be treated as a single acquisition;
    /// locking twice with the same lease is a no-op.
    pub const fn with_lease(mut self, lease: i64) -> Self {
        self.lease = lease;
        self
    }
}

/// Response for `Lock` operation.
#[derive(Debug, Default, Clone)]
pub struct LockResponse {
    header: Option<ResponseHeader>,
    key: Vec<u8>,
}

impl LockResponse {
    /// Get response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }

    /// Takes the header out of the response, leaving a [`None`] in its place.
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        self.header.take()
    }

    /// A key that will exist on etcd for the duration that the Lock caller owns the
    /// lock. Users should not modify this key or the lock may exhibit undefined
    /// semantics.
    pub fn key(&self) -> &[u8] {
        &self.key
    }
}

/// Response for `Unlock` operation.
#[derive(Debug, Default, Clone)]
pub struct UnlockResponse {
    header: Option<ResponseHeader>,
}

impl UnlockResponse {
    /// Get response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }

    /// Takes the header out of the response, leaving a [`None`] in its place.
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        self.header.take()
    }
}
