//! The steps etcd's `client/v3/concurrency` package shares between its `Election` and
//! its `Mutex` (`session.go`, `key.go`), which etcd's v3election and v3lock servers run
//! on the member: here they run on the calling node, over the KV, lease and watch
//! clients, so each step is a round trip on the simulated network (see the chapter).

use super::connection::{deadline_passed, Connection};
use super::error::{Error, Result};
use super::key_value::{KeyValue, ResponseHeader};
use super::kv::KvClient;
use super::lease::LeaseClient;
use super::options::{DeleteOptions, GetOptions, SortOrder, SortTarget};
use super::responses::GetResponse;
use super::txn::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse, TxnResponse};
use super::watch::{open, WatchOptions};
use super::watch_response::EventType;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tonic::Status;

/// A session's lease when none is given: `concurrency.NewSession`'s default TTL (s).
const SESSION_TTL_S: i64 = 60;

/// A key a call has put and must take back if its deadline passes while it waits, as
/// the server does when the call's context ends: the key, and the create revision a
/// guarded delete checks (`None`: a plain delete, as `Mutex.Unlock`).
pub(crate) type Held = Arc<Mutex<Option<(Vec<u8>, Option<i64>)>>>;

/// A lease id as Go's `%x` prints it (a sign, then the magnitude in lowercase hex).
pub(crate) fn go_hex(id: i64) -> String {
    if id < 0 {
        format!("-{:x}", id.unsigned_abs())
    } else {
        format!("{id:x}")
    }
}

/// `name/`: the prefix of an election's or a lock's keys.
pub(crate) fn prefix_of(name: &[u8]) -> Vec<u8> {
    let mut p = name.to_vec();
    p.push(b'/');
    p
}

/// The session's lease: `lease`, or a new one of the default TTL when it is 0
/// (`concurrency.NewSession` with `WithLease(0)`).
pub(crate) async fn session_lease(conn: &Arc<Connection>, lease: i64) -> Result<i64> {
    if lease != 0 {
        return Ok(lease);
    }
    let granted = LeaseClient::new(conn.clone())
        .grant(SESSION_TTL_S, None)
        .await?;
    Ok(granted.id())
}

/// The oldest (`Ascend`) or newest key of a prefix by create revision, at most
/// `max_create_rev` when it is not 0 (`WithFirstCreate`, `WithLastCreate`).
pub(crate) async fn by_create(
    conn: &Arc<Connection>,
    prefix: &[u8],
    order: SortOrder,
    max_create_rev: i64,
) -> Result<GetResponse> {
    let opts = GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, order)
        .with_limit(1)
        .with_max_create_revision(max_create_rev);
    KvClient::new(conn.clone()).get(prefix, Some(opts)).await
}

/// `waitDelete`: waits for a delete of `key` from revision `rev` on.
async fn wait_delete(conn: &Arc<Connection>, key: &[u8], rev: i64) -> Result<()> {
    let create = WatchOptions::new()
        .with_key(key)
        .with_start_revision(rev)
        .into_create();
    let mut stream = open(conn, create).await?;
    while let Some(r) = stream.message().await? {
        let deleted = r
            .events()
            .iter()
            .any(|e| e.event_type() == EventType::Delete);
        if deleted {
            return Ok(());
        }
        if r.canceled() {
            break;
        }
    }
    Err(Error::WatchError("lost watcher waiting for delete".into()))
}

/// `waitDeletes`: waits until no key of `prefix` has a create revision at most
/// `max_create_rev`, one predecessor at a time (the newest first).
pub(crate) async fn wait_deletes(
    conn: &Arc<Connection>,
    prefix: &[u8],
    max_create_rev: i64,
) -> Result<ResponseHeader> {
    loop {
        let resp = by_create(conn, prefix, SortOrder::Descend, max_create_rev).await?;
        let header = *resp.header().expect("the simulation always sends one");
        match resp.kvs().first() {
            None => return Ok(header),
            Some(last) => wait_delete(conn, last.key(), header.revision()).await?,
        }
    }
}

/// A txn's first op's first key (the `else` branch's get of a key that exists).
pub(crate) fn first_kv(resp: &TxnResponse) -> Result<KeyValue> {
    match resp.op_responses().into_iter().next() {
        Some(TxnOpResponse::Get(g)) => g.kvs().first().cloned(),
        _ => None,
    }
    .ok_or_else(|| Error::Internal("the txn's get found no key".into()))
}

/// Takes a held key back: a delete guarded by its create revision, or a plain one.
pub(crate) async fn release(conn: &Arc<Connection>, key: Vec<u8>, rev: Option<i64>) -> Result<()> {
    let mut kv = KvClient::new(conn.clone());
    match rev {
        Some(rev) => {
            let txn = Txn::new()
                .when([Compare::create_revision(key.clone(), CompareOp::Equal, rev)])
                .and_then([TxnOp::delete(key, None)]);
            kv.txn(txn).await.map(drop)
        }
        None => kv.delete(key, Some(DeleteOptions::new())).await.map(drop),
    }
}

/// Runs a unary call's `steps` under the client's timeout, as tonic does: past it the
/// call fails with `Cancelled`, and the key the steps hold (if any) is taken back by a
/// task of its own, as the server does when the call's context ends.
pub(crate) async fn under_deadline<T>(
    conn: &Arc<Connection>,
    held: &Held,
    steps: impl Future<Output = Result<T>>,
) -> Result<T> {
    let Some(timeout) = conn.timeout() else {
        return steps.await;
    };
    tokio::select! {
        biased;
        r = steps => r,
        _ = madsim::time::sleep(timeout) => {
            if let Some((key, rev)) = held.lock().unwrap().take() {
                let conn = conn.clone();
                madsim::task::spawn(async move {
                    let _ = release(&conn, key, rev).await;
                });
            }
            Err(deadline_passed())
        }
    }
}

/// etcd's error for what the election and lock servers refuse (a plain Go error: gRPC's
/// `Unknown`).
pub(crate) fn refused(text: &str) -> Error {
    Status::unknown(text).into()
}
