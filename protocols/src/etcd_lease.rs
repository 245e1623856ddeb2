//! `etcd-lease`: the election recipe of etcd's `clientv3/concurrency` package.
//!
//! Modelled on `concurrency.NewSession` + `NewElection` (etcd v3.4/v3.5):
//! - a session is a lease of `lease_ttl_ms` kept alive every `keepalive_interval_ms`
//!   (the Go client sends keepalives every TTL/3);
//! - `Campaign` puts `prefix/<lease-id in hex>` only if it does not exist
//!   (`txn(CreateRevision(k) == 0).Then(Put(k, v, lease)).Else(Get(k))`), then waits until
//!   every key under the prefix with a lower create revision is gone, watching only its
//!   immediate predecessor (`waitDeletes`), so waiters form a FIFO queue and no thundering
//!   herd hits the server when the leader goes;
//! - the campaign key's create revision is the fencing token: etcd revisions only grow,
//!   so a later leader always has a higher one;
//! - `Resign` deletes the key; `Leader` reads the key with the lowest create revision.
//!
//! Unlike a bare etcd client, the node keeps its own lease deadline on its own clock
//! (the time just before it sent the grant or keepalive, plus the TTL) and stops acting
//! when it passes, even if the server never answers again. Pauses and skew can still make
//! that belief wrong; the fenced resource is what makes it harmless.
//!
//! `local_deadline = "session-done"` models a node on etcd's Go client as the
//! `concurrency` package's users write it instead: it checks nothing before acting and
//! leads until `Session.Done()` (see [`LocalDeadline::SessionDone`]).

use crate::clock::Clock;
use crate::elector::{Elector, ElectorError, LeaderInfo, TransferReadiness};
use crate::etcd_api::{
    Compare, CompareOp, CompareTarget, EtcdApi, EtcdError, RangeRequest, Txn, TxnOp, WatchEventKind,
};
use crate::leadership::{Leadership, LeaseHandle, LossReason};
use crate::mailbox::Mailbox;
use crate::requeue::Waited;
use crate::safety::SafetyBounds;
use crate::NodeId;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A deliberately broken variant, to prove the checkers fire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Canary {
    /// The honest protocol.
    #[default]
    None,
    /// Every leadership carries token 1, so a stale leader's writes pass the fence.
    ConstantToken,
    /// The leader ignores its own lease deadline and acts until told otherwise.
    IgnoreDeadline,
    /// Fails only under a combination of faults: once one of its renewals has failed, a
    /// leader answers a fencing rejection by writing once more under the resource's
    /// `max_token` (see [`crate::Leadership::retry_token_after_rejection`]). A partition
    /// alone never brings a rejection (the leader stops by its own deadline first) and a
    /// pause before a write alone never fails a renewal; a pause that overlaps a
    /// partition, or a slow clock during one, does both.
    FenceRetryWhenCutOff,
    /// The leader counts its lease from when each answer arrived instead of from before
    /// its request left: right while answers are quick, late by their delay when they
    /// are slow (not lost). It then acts past its grant with no pause and a true clock,
    /// which the fence hides and the `protocol_safety` checker must catch.
    LateDeadline,
    /// A transferring leader hands over at once, without asking the nodes queued ahead
    /// of its successor to requeue: the queue's head takes the seat, whoever the
    /// successor was, which the `transfer_missed` checker must catch.
    TransferWithoutRequeue,
    /// A leader asked to step down releases its key at once, while a protected write
    /// it sent is still in flight: the write may land after the next leader's claim,
    /// which only the fence stops and the `protocol_safety` checker must catch.
    ReleaseInFlight,
}

/// How the leader bounds its own leadership on its own clock (`local_deadline`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LocalDeadline {
    /// Baton's node: the deadline is the send of the last answered grant or keepalive
    /// plus the TTL granted, checked before every act, so a leader cut off from etcd
    /// stops before etcd's grant ends while its clock is true and it is not paused.
    #[default]
    BeforeEachAct,
    /// etcd's Go client, as `concurrency.Session` uses it (etcd 3.4 `clientv3/lease.go`,
    /// `concurrency/session.go`): nothing is checked before acting; the leader acts until
    /// `Session.Done()`, which closes when etcd answers a keepalive with the lease gone
    /// (`recvKeepAlive`, TTL <= 0), or when the lessor's `deadlineLoop`, waking every
    /// second, finds no keepalive answered within the TTL of the last answer's arrival
    /// (`ka.deadline = time.Now() + TTL` on each answer). A leader cut off from etcd so
    /// acts up to about a second past its grant, unless a write is turned away first.
    SessionDone,
}

/// How often etcd's Go lessor looks for keepalives gone unanswered past their deadline
/// (`deadlineLoop`: `time.After(time.Second)`, not configurable).
pub const SESSION_DONE_CHECK_MS: u64 = 1000;

/// Parameters of the etcd-lease protocol (a scenario's `[etcd-lease]` table).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EtcdLeaseConfig {
    /// Lease TTL asked for. The service may raise it to its minimum.
    pub lease_ttl_ms: u64,
    /// How often the session renews its lease (the Go client: TTL / 3).
    /// 0 means TTL / 3.
    pub keepalive_interval_ms: u64,
    /// Timeout of every call to the service.
    pub rpc_timeout_ms: u64,
    /// The election prefix.
    pub prefix: String,
    /// A deliberately broken variant (`none` for the real protocol).
    pub canary: Canary,
    /// Service side: TTLs below this are raised to it (etcd: 2 s at default settings,
    /// derived from its election timeout and heartbeat).
    pub min_lease_ttl_ms: u64,
    /// Service side: how often the lessor looks for expired leases (etcd: 500 ms).
    pub expiry_check_interval_ms: u64,
    /// How the leader bounds its leadership on its own clock: `before-each-act`
    /// (Baton's node) or `session-done` (a node on etcd's Go `concurrency` package).
    pub local_deadline: LocalDeadline,
}

impl Default for EtcdLeaseConfig {
    fn default() -> Self {
        EtcdLeaseConfig {
            lease_ttl_ms: 3000,
            keepalive_interval_ms: 0,
            rpc_timeout_ms: 500,
            prefix: "/election/leader".to_string(),
            canary: Canary::None,
            min_lease_ttl_ms: 2000,
            expiry_check_interval_ms: 500,
            local_deadline: LocalDeadline::BeforeEachAct,
        }
    }
}

impl EtcdLeaseConfig {
    /// What this protocol promises without the fence: its leader's deadline counts from before its
    /// request left, so it stops before the backend's grant ends while its clock is true
    /// and it is not paused; it keeps no margin beyond that (see
    /// [`SafetyBounds::LEASE_WITHOUT_MARGIN`]). `local_deadline = "session-done"` is
    /// judged by the same promise and breaks it when cut off (`acted_past_grant`), as the
    /// live Go node on etcd's `concurrency` package does.
    pub fn safety_bounds(&self) -> SafetyBounds {
        SafetyBounds::LEASE_WITHOUT_MARGIN
    }

    /// The TTL the service will grant: the asked TTL raised to its minimum.
    pub fn granted_ttl_ms(&self) -> u64 {
        self.lease_ttl_ms.max(self.min_lease_ttl_ms)
    }

    /// The keepalive interval in force (TTL / 3 when not set).
    pub fn effective_keepalive_interval_ms(&self) -> u64 {
        if self.keepalive_interval_ms == 0 {
            (self.lease_ttl_ms / 3).max(1)
        } else {
            self.keepalive_interval_ms
        }
    }
}

/// An etcd-lease elector for one node.
pub struct EtcdLeaseElector {
    api: Arc<dyn EtcdApi>,
    clock: Arc<dyn Clock>,
    cfg: EtcdLeaseConfig,
    node: NodeId,
    /// The session of the current campaign or leadership: lease id, key, lease handle.
    session: Mutex<Option<Session>>,
    /// A transferring leader's request that this waiter queue again at the back.
    requeue: Mailbox,
}

#[derive(Clone)]
struct Session {
    lease_id: i64,
    key: String,
    lease: LeaseHandle,
}

fn unavailable(e: EtcdError) -> ElectorError {
    ElectorError::Unavailable(e.to_string())
}

impl EtcdLeaseElector {
    /// An elector for `node` talking to the service through `api`, reading time on `clock`.
    pub fn new(
        node: &NodeId,
        api: Arc<dyn EtcdApi>,
        clock: Arc<dyn Clock>,
        cfg: EtcdLeaseConfig,
    ) -> Self {
        EtcdLeaseElector {
            api,
            clock,
            cfg,
            node: node.clone(),
            session: Mutex::new(None),
            requeue: Mailbox::default(),
        }
    }

    /// `txn(CreateRevision(k) == 0).Then(Put(k, v, lease)).Else(Get(k))`: puts the
    /// campaign key and returns its create revision (the queue position).
    async fn put_key(&self, s: &Session) -> Result<i64, ElectorError> {
        let create = Txn {
            compare: vec![Compare {
                key: s.key.clone(),
                op: CompareOp::Equal,
                target: CompareTarget::CreateRevision(0),
            }],
            success: vec![TxnOp::Put {
                key: s.key.clone(),
                value: self.node.to_string(),
                lease: s.lease_id,
            }],
            failure: vec![TxnOp::Get { key: s.key.clone() }],
        };
        let resp = self.api.txn(create).await.map_err(unavailable)?;
        if resp.succeeded {
            return Ok(resp.revision);
        }
        resp.gets
            .first()
            .cloned()
            .flatten()
            .map(|kv| kv.create_revision)
            .ok_or(ElectorError::LeaseLost)
    }

    /// The election keys, oldest create revision first: the first `limit` (0: all).
    async fn queue(&self, limit: usize) -> Result<crate::etcd_api::RangeResponse, ElectorError> {
        self.api
            .range(RangeRequest {
                key: format!("{}/", self.cfg.prefix),
                prefix: true,
                max_create_revision: None,
                newest_first: false,
                limit,
            })
            .await
            .map_err(unavailable)
    }

    /// Deletes the campaign key and puts it again: a new create revision, at the back of
    /// the queue (a transferring leader asked, see [`Elector::requeue`]).
    async fn requeue_key(&self, s: &Session) -> Result<i64, ElectorError> {
        let delete = Txn {
            compare: vec![],
            success: vec![TxnOp::Delete { key: s.key.clone() }],
            failure: vec![],
        };
        self.api.txn(delete).await.map_err(unavailable)?;
        self.put_key(s).await
    }

    /// Grants a lease and starts keeping it alive; the handle ends when the lease is lost.
    async fn open_session(&self) -> Result<Session, ElectorError> {
        // The deadline counts from before the request left: the server's TTL started no
        // earlier than that, so this bound is conservative.
        let sent_us = self.clock.now_us();
        let grant = self
            .api
            .lease_grant(self.cfg.lease_ttl_ms)
            .await
            .map_err(unavailable)?;
        // `session-done` checks no deadline before acting, and counts the one its
        // lessor keeps from each answer's arrival.
        let session_done = self.cfg.local_deadline == LocalDeadline::SessionDone;
        let honour = self.cfg.canary != Canary::IgnoreDeadline && !session_done;
        let late = self.cfg.canary == Canary::LateDeadline || session_done;
        let from_us = if late { self.clock.now_us() } else { sent_us };
        let lease = LeaseHandle::new(
            self.clock.clone(),
            from_us + grant.ttl_ms as i64 * 1000,
            honour,
        );
        if self.cfg.canary == Canary::FenceRetryWhenCutOff {
            lease.arm_fence_retry_canary();
        }
        if self.cfg.canary == Canary::ReleaseInFlight {
            lease.arm_release_in_flight_canary();
        }
        if session_done {
            spawn_deadline_loop(self.clock.clone(), lease.clone());
        }
        let key = format!("{}/{:x}", self.cfg.prefix, grant.id);
        spawn_keepalive(
            self.api.clone(),
            self.clock.clone(),
            lease.clone(),
            grant.id,
            self.cfg.effective_keepalive_interval_ms(),
            late,
        );
        Ok(Session {
            lease_id: grant.id,
            key,
            lease,
        })
    }

    /// Best effort: delete the key and revoke the lease, so waiters need not wait for TTL.
    async fn close_session(&self, s: &Session) {
        let _ = self
            .api
            .txn(Txn {
                compare: vec![],
                success: vec![TxnOp::Delete { key: s.key.clone() }],
                failure: vec![],
            })
            .await;
        let _ = self.api.lease_revoke(s.lease_id).await;
    }

    /// etcd's `waitDeletes`: wait until no key under the prefix has a create revision
    /// below `my_rev`, watching only the newest such key each round; or until a
    /// transferring leader asks this waiter to requeue.
    async fn wait_predecessors(&self, s: &Session, my_rev: i64) -> Result<Waited, ElectorError> {
        // A timed-out call does not cost the candidate its place in the queue: like
        // etcd's watch, which stays open across transient failures, it retries for as
        // long as its own lease (and so its key) is alive. It retries without a pause of
        // its own: a failed call has already cost its time (see `EtcdApi`: in the
        // simulation every failure is a timeout, and the real client paces a failure
        // that came back at once). A pause here would change every simulated run.
        loop {
            if !s.lease.valid() {
                return Err(ElectorError::LeaseLost);
            }
            let resp = match self
                .api
                .range(RangeRequest {
                    key: format!("{}/", self.cfg.prefix),
                    prefix: true,
                    max_create_revision: Some(my_rev - 1),
                    newest_first: true,
                    limit: 1,
                })
                .await
            {
                Ok(resp) => resp,
                Err(_) => continue,
            };
            let Some(pred) = resp.kvs.first() else {
                return Ok(Waited::Done);
            };
            // Watch the predecessor until it is deleted, re-checking our own lease between
            // long polls (a lost lease means our own key is gone too).
            let mut from = resp.revision + 1;
            loop {
                if !s.lease.valid() {
                    return Err(ElectorError::LeaseLost);
                }
                let wait_ms = self.cfg.effective_keepalive_interval_ms();
                let watch = self.api.watch(&pred.key, from, wait_ms);
                let Some(watched) = self.requeue.unless_asked(watch).await else {
                    return Ok(Waited::Requeued);
                };
                let Ok(events) = watched else {
                    continue;
                };
                if let Some(last) = events.last() {
                    from = last.revision + 1;
                }
                if events.iter().any(|e| e.kind == WatchEventKind::Delete) {
                    break;
                }
            }
        }
    }
}

/// Renews the lease every `interval_ms` until it is lost. A renewal extends the local
/// deadline to (time the renewal was sent + TTL granted); a timed-out renewal extends
/// nothing, so a partitioned node's deadline runs out on its own clock. (`late`: the
/// `late-deadline` canary counts from the answer's arrival instead.)
fn spawn_keepalive(
    api: Arc<dyn EtcdApi>,
    clock: Arc<dyn Clock>,
    lease: LeaseHandle,
    id: i64,
    interval_ms: u64,
    late: bool,
) {
    madsim::task::spawn(async move {
        loop {
            if !lease
                .sleep_while_valid(clock.as_ref(), Duration::from_millis(interval_ms))
                .await
            {
                return;
            }
            let sent_us = clock.now_us();
            match api.lease_keep_alive(id).await {
                Ok(Some(ttl_ms)) => {
                    let from_us = if late { clock.now_us() } else { sent_us };
                    lease.extend_to(from_us + ttl_ms as i64 * 1000)
                }
                Ok(None) => {
                    lease.end(LossReason::Revoked);
                    return;
                }
                Err(_) => lease.note_renewal_failed(),
            }
        }
    });
}

/// etcd's Go lessor's `deadlineLoop` (`local_deadline = "session-done"`): every
/// [`SESSION_DONE_CHECK_MS`] on the node's clock, ends the lease once its deadline (the
/// last keepalive answer's arrival plus the TTL) has passed: `Session.Done()` closing.
fn spawn_deadline_loop(clock: Arc<dyn Clock>, lease: LeaseHandle) {
    madsim::task::spawn(async move {
        let every = Duration::from_millis(SESSION_DONE_CHECK_MS);
        while lease.sleep_while_valid(clock.as_ref(), every).await {
            if clock.now_us() >= lease.deadline_us() {
                lease.end(LossReason::DeadlinePassed);
                return;
            }
        }
    });
}

#[async_trait]
impl Elector for EtcdLeaseElector {
    async fn campaign(&self) -> Result<Leadership, ElectorError> {
        self.requeue.clear();
        let s = self.open_session().await?;
        *self.session.lock().unwrap() = Some(s.clone());
        let result = async {
            let mut my_rev = self.put_key(&s).await?;
            while self.wait_predecessors(&s, my_rev).await? == Waited::Requeued {
                my_rev = self.requeue_key(&s).await?;
            }
            if !s.lease.valid() {
                return Err(ElectorError::LeaseLost);
            }
            let token = if self.cfg.canary == Canary::ConstantToken {
                1
            } else {
                my_rev as u64
            };
            Ok(s.lease.leadership(token))
        }
        .await;
        if result.is_err() {
            s.lease.end(LossReason::Revoked);
            self.close_session(&s).await;
            *self.session.lock().unwrap() = None;
        }
        result
    }

    async fn resign(&self, leadership: &Leadership) -> Result<(), ElectorError> {
        leadership.end(LossReason::Resigned);
        let s = self.session.lock().unwrap().take();
        if let Some(s) = s {
            self.close_session(&s).await;
        }
        Ok(())
    }

    /// Ready once the successor's key is the next after the leader's in the queue (by
    /// create revision); the keys of other nodes ahead of it are asked to requeue. A
    /// stale key of the successor's (a session from before a restart) cannot be: the
    /// transfer waits for it to expire.
    async fn transfer_readiness(
        &self,
        _leadership: &Leadership,
        successor: &NodeId,
    ) -> Result<TransferReadiness, ElectorError> {
        if self.cfg.canary == Canary::TransferWithoutRequeue {
            return Ok(TransferReadiness::Ready);
        }
        let mine = self.session.lock().unwrap().as_ref().map(|s| s.key.clone());
        let mine = mine.ok_or(ElectorError::NotLeader)?;
        let resp = self.queue(0).await?;
        if resp.kvs.first().map(|kv| &kv.key) != Some(&mine) {
            return Err(ElectorError::NotLeader);
        }
        let queue: Vec<&str> = resp.kvs[1..].iter().map(|kv| kv.value.as_str()).collect();
        Ok(crate::requeue::readiness(&queue, successor))
    }

    fn requeue(&self) {
        self.requeue.ask();
    }

    async fn withdraw(&self) {
        let s = self.session.lock().unwrap().take();
        if let Some(s) = s {
            s.lease.end(LossReason::Resigned);
            self.close_session(&s).await;
        }
    }

    /// Revokes the lease of the key at the head of the queue if `node` put it: etcd's
    /// `LeaseRevoke` takes any lease id, and the revocation deletes the key, which wakes
    /// the next waiter's watch.
    async fn evict(&self, node: &NodeId) -> Result<bool, ElectorError> {
        let resp = self.queue(1).await?;
        let Some(kv) = resp.kvs.first().filter(|kv| kv.value == node.as_str()) else {
            return Ok(false);
        };
        // The key is `<prefix>/<lease id in hex>` (see `open_session`).
        let hex = kv.key.rsplit('/').next().unwrap_or_default();
        let Ok(lease) = u64::from_str_radix(hex, 16) else {
            return Ok(false);
        };
        self.api
            .lease_revoke(lease as i64)
            .await
            .map_err(unavailable)?;
        Ok(true)
    }

    async fn observe(&self) -> Result<Option<LeaderInfo>, ElectorError> {
        let resp = self.queue(1).await?;
        Ok(resp.kvs.first().map(|kv| LeaderInfo {
            node: NodeId::from(&kv.value),
            token: kv.create_revision as u64,
        }))
    }
}
