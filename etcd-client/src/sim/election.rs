//! Elections: `ElectionClient`, as etcd-client 0.21 has it, with the semantics of
//! etcd's v3election server, which runs `client/v3/concurrency`'s `Election` on the
//! member (`election.go`). Here the same steps run on the calling node over the KV,
//! lease and watch clients (`concurrency.rs`):
//!
//! - `campaign`: the key `name/<lease in hex>`, put with the lease if its create revision
//!   is 0 (else kept, its value proclaimed if it differs); then a wait until every key of
//!   the prefix with a lower create revision is deleted. The leader key's `rev` is the
//!   key's create revision.
//! - `proclaim` and `resign`: a txn guarded by the leader key's create revision.
//! - `leader`: the prefix's key with the lowest create revision.
//! - `observe`: the leader now (or the first put on the prefix), then each put on its
//!   key until it is deleted, then the next leader.

use super::concurrency::{
    by_create, first_kv, go_hex, prefix_of, refused, release, session_lease, under_deadline,
    wait_deletes, Held,
};
use super::connection::Connection;
use super::election_types::{
    CampaignResponse, LeaderKey, LeaderResponse, ObserveStream, ProclaimOptions, ProclaimResponse,
    ResignOptions, ResignResponse,
};
use super::error::{Error, Result};
use super::kv::KvClient;
use super::options::{PutOptions, SortOrder};
use super::txn::{Compare, CompareOp, Txn, TxnOp};
use super::watch::{open, WatchOptions};
use super::watch_response::EventType;
use std::sync::Arc;
use tokio::sync::mpsc;

/// etcd's words (`concurrency.ErrElectionNoLeader`, `ErrElectionNotLeader`, the
/// server's `ErrMissingLeaderKey`).
const NO_LEADER: &str = "election: no leader";
const NOT_LEADER: &str = "election: not leader";
const MISSING_LEADER: &str = "\"leader\" field must be provided";

/// Client for Election operations.
#[derive(Clone)]
pub struct ElectionClient {
    conn: Arc<Connection>,
}

impl ElectionClient {
    pub(crate) fn new(conn: Arc<Connection>) -> Self {
        ElectionClient { conn }
    }

    /// Puts a value as eligible for the election on the prefix key. Multiple sessions
    /// can participate in the election for the same prefix, but only one can be the
    /// leader at a time. Returns once this campaigner leads (lease 0: a new lease of
    /// 60 s, kept alive by no one, as etcd's server grants).
    pub async fn campaign(
        &mut self,
        name: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        lease: i64,
    ) -> Result<CampaignResponse> {
        let held = Held::default();
        let steps = campaign_steps(&self.conn, name.into(), value.into(), lease, &held);
        under_deadline(&self.conn, &held, steps).await
    }

    /// Lets the leader announce a new value without another election.
    pub async fn proclaim(
        &mut self,
        value: impl Into<Vec<u8>>,
        options: Option<ProclaimOptions>,
    ) -> Result<ProclaimResponse> {
        let leader = options
            .and_then(|o| o.leader)
            .ok_or_else(|| refused(MISSING_LEADER))?;
        let steps = proclaim_steps(&self.conn, &leader, value.into());
        under_deadline(&self.conn, &Held::default(), steps).await
    }

    /// Returns the leader value for the current election.
    pub async fn leader(&mut self, name: impl Into<Vec<u8>>) -> Result<LeaderResponse> {
        let prefix = prefix_of(&name.into());
        let steps = async {
            let mut resp = by_create(&self.conn, &prefix, SortOrder::Ascend, 0).await?;
            match resp.take_kvs().into_iter().next() {
                Some(kv) => Ok(LeaderResponse {
                    header: resp.take_header(),
                    kv: Some(kv),
                }),
                None => Err(refused(NO_LEADER)),
            }
        };
        under_deadline(&self.conn, &Held::default(), steps).await
    }

    /// Returns a channel that reliably observes ordered leader proposals as
    /// `LeaderResponse` values on every current elected leader key.
    pub async fn observe(&mut self, name: impl Into<Vec<u8>>) -> Result<ObserveStream> {
        self.conn.check_open().await?;
        let (tx, rx) = mpsc::unbounded_channel();
        let (conn, prefix) = (self.conn.clone(), prefix_of(&name.into()));
        madsim::task::spawn(async move {
            if let Err(e) = observe(&conn, &prefix, &tx).await {
                let _ = tx.send(Err(e));
            }
        });
        Ok(ObserveStream { receiver: rx })
    }

    /// Releases election leadership so that another campaigner may acquire leadership
    /// on the election.
    pub async fn resign(&mut self, option: Option<ResignOptions>) -> Result<ResignResponse> {
        let leader = option
            .and_then(|o| o.leader)
            .ok_or_else(|| refused(MISSING_LEADER))?;
        let steps = async {
            let txn = Txn::new()
                .when([guard(&leader)])
                .and_then([TxnOp::delete(leader.key.clone(), None)]);
            let mut resp = KvClient::new(self.conn.clone()).txn(txn).await?;
            Ok(ResignResponse {
                header: resp.take_header(),
            })
        };
        under_deadline(&self.conn, &Held::default(), steps).await
    }
}

/// The leader key still holds: its create revision is the leader's.
fn guard(leader: &LeaderKey) -> Compare {
    Compare::create_revision(leader.key.clone(), CompareOp::Equal, leader.rev)
}

/// `Election.Campaign` (see the module's docs).
async fn campaign_steps(
    conn: &Arc<Connection>,
    name: Vec<u8>,
    value: Vec<u8>,
    lease: i64,
    held: &Held,
) -> Result<CampaignResponse> {
    let lease = session_lease(conn, lease).await?;
    let prefix = prefix_of(&name);
    let key = [prefix.as_slice(), go_hex(lease).as_bytes()].concat();
    let put = PutOptions::new().with_lease(lease);
    let txn = Txn::new()
        .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
        .and_then([TxnOp::put(key.clone(), value.clone(), Some(put))])
        .or_else([TxnOp::get(key.clone(), None)]);
    let mut resp = KvClient::new(conn.clone()).txn(txn).await?;
    let header = resp.take_header();
    let mut leader = LeaderKey::new()
        .with_name(name)
        .with_key(key.clone())
        .with_rev(header.map_or(0, |h| h.revision()))
        .with_lease(lease);
    if !resp.succeeded() {
        // This lease campaigns already: keep its place, with the value asked for.
        let kv = first_kv(&resp)?;
        leader.rev = kv.create_revision();
        if kv.value() != value.as_slice() {
            if let Err(e) = proclaim_steps(conn, &leader, value).await {
                let _ = release(conn, key, Some(leader.rev)).await;
                return Err(e);
            }
        }
    }
    *held.lock().unwrap() = Some((key, Some(leader.rev)));
    wait_deletes(conn, &prefix, leader.rev - 1).await?;
    held.lock().unwrap().take();
    Ok(CampaignResponse {
        header,
        leader: Some(leader),
    })
}

/// `Election.Proclaim`: the new value, if the leader key still holds.
async fn proclaim_steps(
    conn: &Arc<Connection>,
    leader: &LeaderKey,
    value: Vec<u8>,
) -> Result<ProclaimResponse> {
    let put = PutOptions::new().with_lease(leader.lease);
    let txn = Txn::new().when([guard(leader)]).and_then([TxnOp::put(
        leader.key.clone(),
        value,
        Some(put),
    )]);
    let mut resp = KvClient::new(conn.clone()).txn(txn).await?;
    if !resp.succeeded() {
        return Err(refused(NOT_LEADER));
    }
    Ok(ProclaimResponse {
        header: resp.take_header(),
    })
}

type Out = mpsc::UnboundedSender<Result<LeaderResponse>>;

/// `Election.observe`: the leader (waiting for one if there is none), each put on its
/// key until the key is deleted, and again; until the stream's user drops it.
async fn observe(conn: &Arc<Connection>, prefix: &[u8], out: &Out) -> Result<()> {
    loop {
        let mut resp = by_create(conn, prefix, SortOrder::Ascend, 0).await?;
        let first = match resp.take_kvs().into_iter().next() {
            Some(kv) => LeaderResponse {
                header: resp.take_header(),
                kv: Some(kv),
            },
            None => {
                let from = resp.header().map_or(0, |h| h.revision());
                match first_put(conn, prefix, from).await? {
                    Some(r) => r,
                    None => return Ok(()),
                }
            }
        };
        let (key, rev) = match (&first.kv, &first.header) {
            (Some(kv), Some(h)) => (kv.key().to_vec(), h.revision()),
            _ => return Err(Error::Internal("observe: a leader without a key".into())),
        };
        if out.send(Ok(first)).is_err() {
            return Ok(());
        }
        if !follow(conn, &key, rev + 1, out).await? {
            return Ok(());
        }
    }
}

/// The first put on `prefix` from revision `from`, its header's revision set to the
/// put's (as Go's `observe` does); `None` if the watch was canceled.
async fn first_put(
    conn: &Arc<Connection>,
    prefix: &[u8],
    from: i64,
) -> Result<Option<LeaderResponse>> {
    let opts = WatchOptions::new()
        .with_key(prefix)
        .with_prefix()
        .with_start_revision(from);
    let mut stream = open(conn, opts.into_create()).await?;
    while let Some(r) = stream.message().await? {
        if r.canceled() {
            return Ok(None);
        }
        // Only a put makes a leader; a delete would make observe spin.
        if let Some(e) = r.events().iter().find(|e| e.event_type() == EventType::Put) {
            let mut header = r.header;
            header.0.revision = e.kv().map_or(0, |kv| kv.mod_revision());
            return Ok(Some(LeaderResponse {
                header: Some(header),
                kv: e.kv().cloned(),
            }));
        }
    }
    Ok(None)
}

/// Sends each put on the leader's `key` from revision `from` until it is deleted (true)
/// or the stream's user is gone (false).
async fn follow(conn: &Arc<Connection>, key: &[u8], from: i64, out: &Out) -> Result<bool> {
    let opts = WatchOptions::new().with_key(key).with_start_revision(from);
    let mut stream = open(conn, opts.into_create()).await?;
    while let Some(r) = stream.message().await? {
        if r.canceled() {
            return Ok(false);
        }
        for e in r.events() {
            if e.event_type() == EventType::Delete {
                return Ok(true);
            }
            let update = LeaderResponse {
                header: Some(r.header),
                kv: e.kv().cloned(),
            };
            if out.send(Ok(update)).is_err() {
                return Ok(false);
            }
        }
    }
    Ok(false)
}
