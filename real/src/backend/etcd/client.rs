//! [`EtcdApi`] over a live etcd, with the `etcd-client` crate.
//!
//! The election recipe (`baton_protocols::etcd_lease`) runs unchanged on top of this, as
//! it runs on the simulator's RPCs. Three things matter for faithfulness:
//!
//! - **Every call has a timeout** (`rpc_timeout_ms`, a watch `wait_ms` more). A client cut
//!   off by a partition does not get an error: its calls just hang, as the proxy holds
//!   its bytes. The recipe's own lease deadline then runs out on its own clock.
//! - **HTTP/2 keepalive pings stay off.** etcd drops a connection that pings more often
//!   than every 5 s (`--grpc-keepalive-min-time`), and no ping is needed: every call is
//!   bounded here.
//! - **One keepalive stream per lease**, as etcd's Go client keeps one: each renewal is one
//!   request on it and its answer. A renewal that timed out closes the stream, so a late
//!   answer is never read as the next renewal's.
//! - **A failed call is paced** (`backoff.rs`'s `Pacer`): it returns its error only once
//!   a backoff pause has passed since it began, the pauses doubling from
//!   [`FIRST_PAUSE_MS`] up to `rpc_timeout_ms` over failures in a row, jittered from the
//!   node's seeded generator. The recipe retries some calls at once (`waitDeletes`), as
//!   it may in the simulation, where every failure is a timeout; an etcd that refuses
//!   connections fails them at once, and without the pause the node would spin a core
//!   until its lease ran out. A timed-out call is not delayed further (it already took
//!   longer than any pause), so a refused call costs the recipe what a timed-out one
//!   does, and what it costs in the simulation. The first refusal in a row is reported
//!   to the observer ([`LeaseObserver::unreachable`]) with the endpoints and why.
//!
//! etcd counts TTLs in whole seconds: a TTL in ms is rounded up to seconds, and the TTL
//! etcd grants (raised to its minimum, 2 s at default settings) is reported back in ms.

use crate::backoff::{Backoff, Pacer};
use async_trait::async_trait;
use baton_protocols::{
    CompareOp, CompareTarget, EtcdApi, EtcdError, KeyValue, LeaseGrant, RangeRequest,
    RangeResponse, Txn, TxnOp, TxnResponse, WatchEvent, WatchEventKind,
};
use etcd_client as ec;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The longest first pause after a failed call (see the module doc): short enough that
/// one lost connection costs little, long enough that a refusing etcd sees a handful of
/// calls a second at most once a few have failed.
pub const FIRST_PAUSE_MS: u64 = 25;

/// What a node wants to know about its client's traffic (events, metrics, stderr).
pub trait LeaseObserver: Send + Sync {
    /// etcd granted lease `id`: `requested_ms` asked for, `granted_ms` given.
    fn granted(&self, id: i64, requested_ms: u64, granted_ms: u64);
    /// A keepalive of `id` came back: `true` renewed, `false` the lease was gone.
    fn renewed(&self, id: i64, renewed: bool);
    /// A keepalive of `id` failed (timed out or errored): the lease was not renewed.
    fn renewal_failed(&self, id: i64);
    /// This client revoked lease `id`.
    fn revoked(&self, id: i64);
    /// A call failed without reaching etcd at `endpoints` (`why`: the connection's
    /// error, one line): the first of a run of such failures, which the client paces
    /// until a call succeeds again.
    fn unreachable(&self, endpoints: &[String], why: &str);
    /// A call succeeded after [`LeaseObserver::unreachable`], ending `failures` failed
    /// calls in a row.
    fn reachable_again(&self, failures: u32);
}

/// A lease observer that ignores everything.
pub struct NoObserver;

impl LeaseObserver for NoObserver {
    fn granted(&self, _: i64, _: u64, _: u64) {}
    fn renewed(&self, _: i64, _: bool) {}
    fn renewal_failed(&self, _: i64) {}
    fn revoked(&self, _: i64) {}
    fn unreachable(&self, _: &[String], _: &str) {}
    fn reachable_again(&self, _: u32) {}
}

/// An open keepalive stream of one lease.
struct Keeper {
    keeper: ec::LeaseKeeper,
    stream: ec::LeaseKeepAliveStream,
}

/// A real etcd client behind the [`EtcdApi`] seam.
pub struct RealEtcdClient {
    client: ec::Client,
    rpc_timeout: Duration,
    observer: Box<dyn LeaseObserver>,
    /// The keepalive stream of each lease this client renews.
    keepers: tokio::sync::Mutex<HashMap<i64, Keeper>>,
    /// The TTL granted to each lease (etcd's first keepalive answer is not returned by
    /// the crate's `keep_alive`, which opens the stream).
    granted_ms: Mutex<HashMap<i64, u64>>,
    /// The endpoints, for what the observer is told.
    endpoints: Vec<String>,
    /// Paces failed calls (see the module doc).
    pacer: Pacer,
    /// Whether the observer was told etcd cannot be reached, since the last success.
    told_unreachable: AtomicBool,
}

impl RealEtcdClient {
    /// A client of the etcd members at `endpoints` (`http://host:port`). It connects
    /// lazily: this returns at once, and the first call connects. The pauses after
    /// failed calls are jittered by draws from `jitter` (the node's, forked from the
    /// run's seed).
    pub async fn connect(
        endpoints: &[String],
        rpc_timeout_ms: u64,
        observer: Box<dyn LeaseObserver>,
        jitter: rand_chacha::ChaCha8Rng,
    ) -> Result<Self, EtcdError> {
        // No `with_keep_alive`: HTTP/2 pings stay off (see the module doc). The connect
        // timeout bounds each attempt to reach a member through a proxy that holds bytes.
        let opts = ec::ConnectOptions::new()
            .with_connect_timeout(Duration::from_millis(rpc_timeout_ms.max(1)));
        let client = ec::Client::connect(endpoints, Some(opts))
            .await
            .map_err(|e| EtcdError::Server(e.to_string()))?;
        Ok(RealEtcdClient {
            client,
            rpc_timeout: Duration::from_millis(rpc_timeout_ms),
            observer,
            keepers: tokio::sync::Mutex::new(HashMap::new()),
            granted_ms: Mutex::new(HashMap::new()),
            endpoints: endpoints.to_vec(),
            pacer: Pacer::new(Backoff::new(FIRST_PAUSE_MS, rpc_timeout_ms, jitter)),
            told_unreachable: AtomicBool::new(false),
        })
    }

    /// Runs `f` within the call timeout.
    async fn bounded<T>(
        &self,
        f: impl Future<Output = Result<T, ec::Error>>,
    ) -> Result<T, EtcdError> {
        match tokio::time::timeout(self.rpc_timeout, f).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.failure(e)),
            Err(_) => Err(EtcdError::Timeout),
        }
    }

    /// The error a failed call returns; the first of a run of failures that did not
    /// reach etcd is reported to the observer.
    fn failure(&self, e: ec::Error) -> EtcdError {
        if let Some(why) = unreachable_why(&e) {
            if !self.told_unreachable.swap(true, Ordering::SeqCst) {
                self.observer.unreachable(&self.endpoints, &why);
            }
        }
        EtcdError::Server(e.to_string())
    }

    /// Runs one call of the [`EtcdApi`], pacing its failure (see the module doc).
    async fn paced<T>(
        &self,
        call: impl Future<Output = Result<T, EtcdError>>,
    ) -> Result<T, EtcdError> {
        let started = tokio::time::Instant::now();
        let r = call.await;
        if r.is_ok() {
            let failures = self.pacer.succeeded();
            if self.told_unreachable.swap(false, Ordering::SeqCst) {
                self.observer.reachable_again(failures);
            }
        } else {
            self.pacer.failed(started).await;
        }
        r
    }

    /// One keepalive of `id`: on its open stream, or by opening one (which renews once).
    async fn keep_alive_once(&self, id: i64) -> Result<Option<u64>, EtcdError> {
        let mut keepers = self.keepers.lock().await;
        if let Some(k) = keepers.get_mut(&id) {
            let round = async {
                k.keeper.keep_alive().await?;
                k.stream.message().await
            };
            return match tokio::time::timeout(self.rpc_timeout, round).await {
                Ok(Ok(Some(resp))) if resp.ttl() > 0 => Ok(Some(resp.ttl() as u64 * 1000)),
                Ok(Ok(Some(_))) => {
                    keepers.remove(&id);
                    Ok(None)
                }
                Ok(Ok(None)) => {
                    keepers.remove(&id);
                    Err(EtcdError::Server("keepalive stream closed".into()))
                }
                Ok(Err(e)) => {
                    keepers.remove(&id);
                    Err(self.failure(e))
                }
                Err(_) => {
                    keepers.remove(&id);
                    Err(EtcdError::Timeout)
                }
            };
        }
        let mut c = self.client.clone();
        match tokio::time::timeout(self.rpc_timeout, c.lease_keep_alive(id)).await {
            Ok(Ok((keeper, stream))) => {
                keepers.insert(id, Keeper { keeper, stream });
                // Opening the stream renewed the lease once, at the TTL etcd granted.
                match self.granted_ms.lock().unwrap().get(&id) {
                    Some(ttl_ms) => Ok(Some(*ttl_ms)),
                    None => Err(EtcdError::Server(format!(
                        "lease {id:x} was not granted through this client"
                    ))),
                }
            }
            // The crate reports a lease etcd no longer knows as this error.
            Ok(Err(ec::Error::LeaseKeepAliveError(m))) if m.contains("not found") => Ok(None),
            Ok(Err(e)) => Err(self.failure(e)),
            Err(_) => Err(EtcdError::Timeout),
        }
    }
}

/// Why a call failed without reaching etcd, in a few words (`tcp connect error:
/// connection refused`); `None` when etcd answered it, with an error.
fn unreachable_why(e: &ec::Error) -> Option<String> {
    let status = match e {
        ec::Error::TransportError(t) => return Some(t.to_string()),
        ec::Error::IoError(io) => return Some(io.to_string()),
        ec::Error::GRpcStatus(s) => s,
        _ => return None,
    };
    // gRPC's code for a connection that could not be made or kept (tonic's `Code` is
    // not re-exported by etcd-client, hence its name).
    if format!("{:?}", status.code()) != "Unavailable" {
        return None;
    }
    let detail = format!("{status:?}");
    let cause = ["ConnectionRefused", "ConnectionReset", "ConnectionAborted"]
        .into_iter()
        .find(|k| detail.contains(k));
    Some(match cause {
        Some("ConnectionRefused") => format!("{}: connection refused", status.message()),
        Some("ConnectionReset") => format!("{}: connection reset", status.message()),
        Some(_) => format!("{}: connection aborted", status.message()),
        None => status.message().to_string(),
    })
}

fn kv_of(kv: &ec::KeyValue) -> KeyValue {
    KeyValue {
        key: String::from_utf8_lossy(kv.key()).into_owned(),
        value: String::from_utf8_lossy(kv.value()).into_owned(),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
        version: kv.version(),
        lease: kv.lease(),
    }
}

fn compare_of(c: &baton_protocols::Compare) -> ec::Compare {
    let op = match c.op {
        CompareOp::Equal => ec::CompareOp::Equal,
        CompareOp::NotEqual => ec::CompareOp::NotEqual,
        CompareOp::Less => ec::CompareOp::Less,
        CompareOp::Greater => ec::CompareOp::Greater,
    };
    let key = c.key.as_bytes().to_vec();
    match &c.target {
        CompareTarget::CreateRevision(v) => ec::Compare::create_revision(key, op, *v),
        CompareTarget::ModRevision(v) => ec::Compare::mod_revision(key, op, *v),
        CompareTarget::Version(v) => ec::Compare::version(key, op, *v),
        CompareTarget::Value(v) => ec::Compare::value(key, op, v.as_bytes().to_vec()),
    }
}

fn op_of(op: &TxnOp) -> ec::TxnOp {
    match op {
        TxnOp::Put { key, value, lease } => {
            let opts = (*lease != 0).then(|| ec::PutOptions::new().with_lease(*lease));
            ec::TxnOp::put(key.as_bytes(), value.as_bytes(), opts)
        }
        TxnOp::Get { key } => ec::TxnOp::get(key.as_bytes(), None),
        TxnOp::Delete { key } => ec::TxnOp::delete(key.as_bytes(), None),
    }
}

fn watch_event_of(e: &ec::Event) -> Option<WatchEvent> {
    let kv = e.kv()?;
    Some(WatchEvent {
        kind: match e.event_type() {
            ec::EventType::Put => WatchEventKind::Put,
            ec::EventType::Delete => WatchEventKind::Delete,
        },
        key: String::from_utf8_lossy(kv.key()).into_owned(),
        // A delete event's kv carries the deletion's revision as its mod revision.
        revision: kv.mod_revision(),
    })
}

/// The calls of [`EtcdApi`], unpaced: [`RealEtcdClient::paced`] wraps each.
impl RealEtcdClient {
    async fn grant_call(&self, ttl_ms: u64) -> Result<LeaseGrant, EtcdError> {
        let ttl_s = ttl_ms.div_ceil(1000).max(1) as i64;
        let mut c = self.client.clone();
        let resp = self.bounded(c.lease_grant(ttl_s, None)).await?;
        if !resp.error().is_empty() {
            return Err(EtcdError::Server(resp.error().to_string()));
        }
        let granted_ms = resp.ttl().max(0) as u64 * 1000;
        self.granted_ms
            .lock()
            .unwrap()
            .insert(resp.id(), granted_ms);
        self.observer.granted(resp.id(), ttl_ms, granted_ms);
        Ok(LeaseGrant {
            id: resp.id(),
            ttl_ms: granted_ms,
        })
    }

    async fn keep_alive_call(&self, id: i64) -> Result<Option<u64>, EtcdError> {
        let r = self.keep_alive_once(id).await;
        match &r {
            Ok(Some(_)) => self.observer.renewed(id, true),
            Ok(None) => {
                self.observer.renewed(id, false);
                self.granted_ms.lock().unwrap().remove(&id);
            }
            Err(_) => self.observer.renewal_failed(id),
        }
        r
    }

    async fn revoke_call(&self, id: i64) -> Result<(), EtcdError> {
        self.keepers.lock().await.remove(&id);
        self.granted_ms.lock().unwrap().remove(&id);
        let mut c = self.client.clone();
        match self.bounded(c.lease_revoke(id)).await {
            Ok(_) => {
                self.observer.revoked(id);
                Ok(())
            }
            // Already gone (expired, or revoked before): what the caller wanted.
            Err(EtcdError::Server(m)) if m.contains("not found") => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn txn_call(&self, txn: Txn) -> Result<TxnResponse, EtcdError> {
        let t = ec::Txn::new()
            .when(txn.compare.iter().map(compare_of).collect::<Vec<_>>())
            .and_then(txn.success.iter().map(op_of).collect::<Vec<_>>())
            .or_else(txn.failure.iter().map(op_of).collect::<Vec<_>>());
        let mut c = self.client.clone();
        let resp = self.bounded(c.txn(t)).await?;
        let revision = resp.header().map_or(0, |h| h.revision());
        let gets = resp
            .op_responses()
            .iter()
            .filter_map(|r| match r {
                ec::TxnOpResponse::Get(g) => Some(g.kvs().first().map(kv_of)),
                _ => None,
            })
            .collect();
        Ok(TxnResponse {
            succeeded: resp.succeeded(),
            revision,
            gets,
        })
    }

    async fn range_call(&self, req: RangeRequest) -> Result<RangeResponse, EtcdError> {
        let mut opts = ec::GetOptions::new();
        if req.prefix {
            opts = opts.with_prefix();
        }
        if let Some(max) = req.max_create_revision {
            opts = opts.with_max_create_revision(max);
        }
        if req.prefix {
            let order = if req.newest_first {
                ec::SortOrder::Descend
            } else {
                ec::SortOrder::Ascend
            };
            opts = opts.with_sort(ec::SortTarget::Create, order);
        }
        if req.limit > 0 {
            opts = opts.with_limit(req.limit as i64);
        }
        let mut c = self.client.clone();
        let resp = self.bounded(c.get(req.key.as_bytes(), Some(opts))).await?;
        Ok(RangeResponse {
            kvs: resp.kvs().iter().map(kv_of).collect(),
            revision: resp.header().map_or(0, |h| h.revision()),
        })
    }

    async fn watch_call(
        &self,
        key: &str,
        start_revision: i64,
        wait_ms: u64,
    ) -> Result<Vec<WatchEvent>, EtcdError> {
        let wait = Duration::from_millis(wait_ms);
        let overall = wait + self.rpc_timeout;
        let started = tokio::time::Instant::now();
        let mut c = self.client.clone();
        let opts = ec::WatchOptions::new().with_start_revision(start_revision);
        let mut stream =
            match tokio::time::timeout(overall, c.watch(key.as_bytes(), Some(opts))).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => return Err(self.failure(e)),
                Err(_) => return Err(EtcdError::Timeout),
            };
        let mut created = false;
        loop {
            let limit = if created { wait } else { overall };
            let left = limit.saturating_sub(started.elapsed());
            match tokio::time::timeout(left, stream.message()).await {
                Ok(Ok(Some(resp))) => {
                    created |= resp.created();
                    let events: Vec<WatchEvent> =
                        resp.events().iter().filter_map(watch_event_of).collect();
                    if !events.is_empty() {
                        return Ok(events);
                    }
                    if resp.canceled() {
                        return Err(EtcdError::Server(format!(
                            "watch canceled: {}",
                            resp.cancel_reason()
                        )));
                    }
                }
                Ok(Ok(None)) => return Err(EtcdError::Server("watch stream closed".into())),
                Ok(Err(e)) => return Err(self.failure(e)),
                Err(_) if created => return Ok(vec![]),
                Err(_) => return Err(EtcdError::Timeout),
            }
        }
    }
}

#[async_trait]
impl EtcdApi for RealEtcdClient {
    async fn lease_grant(&self, ttl_ms: u64) -> Result<LeaseGrant, EtcdError> {
        self.paced(self.grant_call(ttl_ms)).await
    }

    async fn lease_keep_alive(&self, id: i64) -> Result<Option<u64>, EtcdError> {
        self.paced(self.keep_alive_call(id)).await
    }

    async fn lease_revoke(&self, id: i64) -> Result<(), EtcdError> {
        self.paced(self.revoke_call(id)).await
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse, EtcdError> {
        self.paced(self.txn_call(txn)).await
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResponse, EtcdError> {
        self.paced(self.range_call(req)).await
    }

    /// Opens a watch from `start_revision` and returns the first events it delivers, or
    /// nothing after `wait_ms` once the watch is established. A watch etcd never
    /// confirmed within `wait_ms + rpc_timeout_ms` is a timeout, as in the simulator.
    async fn watch(
        &self,
        key: &str,
        start_revision: i64,
        wait_ms: u64,
    ) -> Result<Vec<WatchEvent>, EtcdError> {
        self.paced(self.watch_call(key, start_revision, wait_ms))
            .await
    }
}
