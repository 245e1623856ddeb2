//! `k8s-lease`: client-go's leader election (`tools/leaderelection`) over one
//! `coordination.k8s.io/v1` Lease object.
//!
//! Modelled on client-go `tools/leaderelection/leaderelection.go` and the Lease API
//! (Kubernetes API reference "Lease v1 coordination.k8s.io"):
//! - the Lease's spec holds `holderIdentity`, `leaseDurationSeconds`, `acquireTime`,
//!   `renewTime` and `leaseTransitions`; every write is a compare-and-swap on the
//!   object's `resourceVersion` (an update naming a stale one gets 409 Conflict);
//! - `tryAcquireOrRenew` reads the Lease (creating it when absent). A candidate may take
//!   it only when it is held by nobody, or when it has not seen the record change for
//!   `leaseDuration` by its OWN clock: it remembers when it last observed a change
//!   (`observedTime`) and never trusts the holder's timestamps, which come from another
//!   clock. It compares Go `time.Time`s, which carry a monotonic reading that
//!   `After` uses, so a step of its wall clock does not cut its wait (a clock that runs
//!   fast does). Taking it bumps `leaseTransitions`;
//! - candidates retry every `RetryPeriod`, jittered by `wait.Jitter(RetryPeriod,
//!   JitterFactor)`: a wait drawn uniformly from [RetryPeriod, RetryPeriod x (1 +
//!   JitterFactor)), JitterFactor = 1.2;
//! - the holder renews every `RetryPeriod` (first optimistically with its cached
//!   `resourceVersion`, falling back to a read on conflict) and stops leading when it
//!   could not renew within `RenewDeadline`;
//! - with `ReleaseOnCancel`, stepping down writes the record with an empty
//!   `holderIdentity` (and `leaseDurationSeconds: 1`), so candidates need not wait;
//! - core components default LeaseDuration 15 s, RenewDeadline 10 s, RetryPeriod 2 s,
//!   and `NewLeaderElector` requires LeaseDuration > RenewDeadline > JitterFactor x
//!   RetryPeriod.
//!
//! client-go's own documentation says it "does not guarantee that only one client is
//! acting as a leader (a.k.a. fencing)": a holder paused past LeaseDuration acts on after
//! another node took the Lease. `leaseTransitions`, which grows by one at each change of
//! holder under compare-and-swap, is the fencing token that makes such acts harmless.
//!
//! Deviations, each deliberate:
//! - the holder's deadline is the local send time of its last successful renewal +
//!   `RenewDeadline` (client-go times each renew round from its start, one RetryPeriod
//!   after the last success, so it stops a little later);
//! - a holder that reads the Lease and finds another holder stops at once (client-go's
//!   `IsLeader()` turns false at once, but `OnStoppedLeading` waits for RenewDeadline);
//! - a node that takes back a record still naming itself, in a new campaign, counts a
//!   transition (client-go keeps the count when the same identity re-takes its own
//!   record), so tokens strictly increase across leaderships. A restarted node has a
//!   new identity (`<node>_<instance>`, as components use `<hostname>_<uuid>`), so it
//!   waits out its predecessor's Lease like any other candidate;
//! - the simulated record carries the lease duration in milliseconds, not whole
//!   seconds, so scaled-down scenarios may use sub-second durations.

use crate::clock::{sleep_local, Clock};
use crate::elector::{Elector, ElectorError, LeaderInfo};
use crate::leadership::{Leadership, LeaseHandle, LossReason};
use crate::safety::SafetyBounds;
use crate::NodeId;
use async_trait::async_trait;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use crate::jitter::JITTER_FACTOR;

/// Parameters of the k8s-lease protocol (a scenario's `[k8s-lease]` table).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct K8sLeaseConfig {
    /// How long a candidate waits without seeing the record change before it may take
    /// the Lease (core components: 15 s).
    pub lease_duration_ms: u64,
    /// How long the holder keeps trying to renew before it stops leading (10 s).
    pub renew_deadline_ms: u64,
    /// The pause between tries, of candidates (jittered) and of the holder (2 s).
    pub retry_period_ms: u64,
    /// Step down by clearing `holderIdentity` (`ReleaseOnCancel`).
    pub release_on_cancel: bool,
    /// Timeout of every call to the API server.
    pub rpc_timeout_ms: u64,
    /// The Lease object's name.
    pub lease_name: String,
    /// Whose clock a candidate judges another holder's Lease by: `observed-time` (the
    /// fix: when this node last saw the record change, on its own clock) or
    /// `renew-time` (the holder's `renewTime` plus `leaseDuration` compared with this
    /// node's clock: two clocks in one comparison, so a candidate whose clock runs
    /// ahead takes a Lease the holder is still renewing: fabric8 kubernetes-client's
    /// `LeaderElector`, fabric8 kubernetes-client#7160).
    pub expiry_judged_by: ExpiryJudgedBy,
    /// Whether every API call carries the `rpc_timeout_ms` timeout (the fix,
    /// kubernetes#65094). `false` is client-go before it: an HTTP client with no
    /// timeout, and a renew loop that checks RenewDeadline only when a try returns, so
    /// a renewal whose request or answer is lost hangs and the holder leads on
    /// (kubernetes#65090).
    pub renew_call_timeout: bool,
}

/// Whose clock judges another holder's Lease expired (`expiry_judged_by`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExpiryJudgedBy {
    /// client-go: the local time this node last saw the record change.
    #[default]
    ObservedTime,
    /// The holder's `renewTime` against the local clock (the bug).
    RenewTime,
}

/// A call with no timeout: a day, longer than any run (at most an hour), so it waits
/// for its answer for as long as the run lasts.
pub const NO_TIMEOUT_MS: u64 = 86_400_000;

impl Default for K8sLeaseConfig {
    fn default() -> Self {
        K8sLeaseConfig {
            lease_duration_ms: 15_000,
            renew_deadline_ms: 10_000,
            retry_period_ms: 2_000,
            release_on_cancel: true,
            rpc_timeout_ms: 500,
            lease_name: "baton-leader".to_string(),
            expiry_judged_by: ExpiryJudgedBy::ObservedTime,
            renew_call_timeout: true,
        }
    }
}

impl K8sLeaseConfig {
    /// What this protocol promises without the fence: client-go's leader stops
    /// `renew_deadline` after the start of its last successful renewal, while the Lease
    /// it wrote stays held for `lease_duration` after the server stored it (no earlier
    /// than that start). The difference is a margin: a pause or a clock jump up to it,
    /// and a slow clock up to `1 - renew_deadline / lease_duration`, still stop the
    /// leader in time.
    pub fn safety_bounds(&self) -> SafetyBounds {
        SafetyBounds::with_margin(
            self.lease_duration_ms
                .saturating_sub(self.renew_deadline_ms),
            self.lease_duration_ms,
        )
    }

    /// The timeout every API call carries: `rpc_timeout_ms`, or none at all (the
    /// `renew_call_timeout = false` bug).
    pub fn call_timeout_ms(&self) -> u64 {
        if self.renew_call_timeout {
            self.rpc_timeout_ms
        } else {
            NO_TIMEOUT_MS
        }
    }

    /// The longest jittered wait between a candidate's tries.
    pub fn max_retry_wait_ms(&self) -> u64 {
        crate::jitter::max_wait_ms(self.retry_period_ms)
    }
}

/// The Lease's spec (the leader election record).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseSpec {
    /// Who holds it; empty when nobody does.
    pub holder_identity: String,
    /// How long candidates wait without seeing a change (`leaseDurationSeconds`; here
    /// in milliseconds).
    pub lease_duration_ms: u64,
    /// When the holder acquired it, on the holder's clock (microseconds).
    pub acquire_time_us: i64,
    /// When the holder last renewed it, on the holder's clock (microseconds).
    pub renew_time_us: i64,
    /// How many times the holder changed.
    pub lease_transitions: u64,
    /// The node a holder released the Lease to (`spec.preferredHolder`, Kubernetes
    /// 1.31+): other candidates leave a vacant Lease naming another node to it for
    /// `leaseDuration`. Empty when none.
    #[serde(default)]
    pub preferred_holder: String,
}

/// A Lease object: its spec and the version every update must name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.resourceVersion`: opaque; an update must carry the current one.
    pub resource_version: String,
    /// The spec.
    pub spec: LeaseSpec,
}

/// Why an API call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum K8sError {
    /// No answer within the call's timeout.
    Timeout,
    /// 404: no such object.
    NotFound,
    /// 409 on create: the object exists.
    AlreadyExists,
    /// 409 on update: the given resourceVersion is not the current one.
    Conflict,
}

impl std::fmt::Display for K8sError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            K8sError::Timeout => write!(f, "timed out"),
            K8sError::NotFound => write!(f, "404 not found"),
            K8sError::AlreadyExists => write!(f, "409 already exists"),
            K8sError::Conflict => write!(f, "409 conflict"),
        }
    }
}

/// The Lease calls of the API server the elector uses (client-go's `LeaseLock`). Every
/// call is bounded by a timeout inside the implementation.
#[async_trait]
pub trait LeaseApi: Send + Sync {
    /// `GET` the Lease.
    async fn get(&self, name: &str) -> Result<Lease, K8sError>;
    /// `POST` a new Lease (its resourceVersion is ignored).
    async fn create(&self, lease: Lease) -> Result<Lease, K8sError>;
    /// `PUT` the Lease; succeeds only if `lease.resource_version` is the current one.
    async fn update(&self, lease: Lease) -> Result<Lease, K8sError>;
}

/// What this elector last saw of the record, and when (on its own clock).
#[derive(Default)]
struct Observed {
    /// The last Lease object read or written (for its resourceVersion).
    lease: Option<Lease>,
    /// When the spec last changed as this node saw it, on its own monotonic clock.
    time_us: i64,
}

/// A k8s-lease elector for one node.
pub struct K8sLeaseElector {
    /// Shared with the holder's renew loop.
    inner: Arc<Inner>,
}

struct Inner {
    api: Arc<dyn LeaseApi>,
    clock: Arc<dyn Clock>,
    cfg: K8sLeaseConfig,
    /// `holderIdentity`: `<node>_<instance>`.
    identity: String,
    /// The node (what a `preferredHolder` names).
    node: NodeId,
    /// A transferring leader's word that this node is its successor: try now.
    nudge: crate::mailbox::Mailbox,
    /// The jitter source (seeded by the caller).
    rng: Mutex<Box<dyn RngCore + Send>>,
    observed: Mutex<Observed>,
}

/// What one `tryAcquireOrRenew` achieved.
enum Try {
    /// The record now names us; with the token and the local time the try started.
    Held { token: u64, started_us: i64 },
    /// Another identity holds an unexpired Lease (as we judge it).
    HeldByOther,
    /// The call failed or lost a race; try again later.
    Failed,
}

impl K8sLeaseElector {
    /// An elector for `node` over `api`, reading time on `clock`, drawing retry jitter
    /// from `rng`. Its `holderIdentity` is `<node>_<instance>`, as Kubernetes components
    /// use `<hostname>_<uuid>`: a restarted process (a new `instance`) is a new candidate,
    /// not the holder of its predecessor's Lease.
    pub fn new(
        node: &NodeId,
        instance: &str,
        api: Arc<dyn LeaseApi>,
        clock: Arc<dyn Clock>,
        cfg: K8sLeaseConfig,
        rng: Box<dyn RngCore + Send>,
    ) -> Self {
        K8sLeaseElector {
            inner: Arc::new(Inner {
                api,
                clock,
                cfg,
                identity: format!("{node}_{instance}"),
                node: node.clone(),
                nudge: crate::mailbox::Mailbox::default(),
                rng: Mutex::new(rng),
                observed: Mutex::new(Observed::default()),
            }),
        }
    }
}

impl Inner {
    /// `wait.Jitter(RetryPeriod, JitterFactor)`.
    fn jittered_retry(&self) -> Duration {
        crate::jitter::jittered(self.cfg.retry_period_ms, &mut **self.rng.lock().unwrap())
    }

    fn observe_now(&self, lease: Lease) {
        let mut o = self.observed.lock().unwrap();
        o.lease = Some(lease);
        o.time_us = self.clock.monotonic_us();
    }

    /// client-go's `tryAcquireOrRenew`. `leading` is true while this elector holds a
    /// live leadership (a renewal); false in a campaign.
    async fn try_acquire_or_renew(&self, leading: bool) -> Try {
        let now = self.clock.now_us();
        let mut record = LeaseSpec {
            holder_identity: self.identity.clone(),
            lease_duration_ms: self.cfg.lease_duration_ms,
            acquire_time_us: now,
            renew_time_us: now,
            lease_transitions: 0,
            preferred_holder: String::new(),
        };
        // 1. The holder's fast path: update optimistically with the cached version.
        if leading {
            let cached = self.observed.lock().unwrap().lease.clone();
            if let Some(mut lease) = cached.filter(|l| l.spec.holder_identity == self.identity) {
                record.acquire_time_us = lease.spec.acquire_time_us;
                record.lease_transitions = lease.spec.lease_transitions;
                lease.spec = record.clone();
                if let Ok(written) = self.api.update(lease).await {
                    return self.held(written, now);
                }
                // Conflict or timeout: fall back to reading the record.
            }
        }
        // 2. Read the record, creating it when absent.
        let old = match self.api.get(&self.cfg.lease_name).await {
            Ok(l) => l,
            Err(K8sError::NotFound) => {
                let lease = Lease {
                    name: self.cfg.lease_name.clone(),
                    resource_version: String::new(),
                    spec: record,
                };
                return match self.api.create(lease).await {
                    Ok(written) => self.held(written, now),
                    Err(_) => Try::Failed,
                };
            }
            Err(_) => return Try::Failed,
        };
        // 3. Note when the record last changed, as this node sees it, and judge it.
        let ours = old.spec.holder_identity == self.identity;
        if self.held_by_other(&old, now) {
            return Try::HeldByOther;
        }
        if leading && !ours {
            // Someone took it (it looked expired to them): we are no longer the holder.
            return Try::HeldByOther;
        }
        // 4. Take or renew it. A renewal keeps the acquire time and the count; a new
        // leadership (even over a record still naming us) counts a transition.
        if leading {
            record.acquire_time_us = old.spec.acquire_time_us;
            record.lease_transitions = old.spec.lease_transitions;
        } else {
            record.lease_transitions = old.spec.lease_transitions + 1;
        }
        let lease = Lease {
            spec: record,
            ..old
        };
        match self.api.update(lease).await {
            Ok(written) => self.held(written, now),
            Err(_) => Try::Failed,
        }
    }

    /// A try that wrote the record (`written`), started at local time `now`: held,
    /// under the record's transition count.
    fn held(&self, written: Lease, now: i64) -> Try {
        let token = written.spec.lease_transitions;
        self.observe_now(written);
        Try::Held {
            token,
            started_us: now,
        }
    }

    /// Writes the record with no holder, with the cached resourceVersion, so a record
    /// someone else took since is left alone: `ReleaseOnCancel` (a lease duration of one
    /// second) or, with a `successor`, a release to it as `preferredHolder` for a whole
    /// lease duration (retried once on a conflict, over a fresh read, if the Lease still
    /// names this node).
    async fn release(&self, successor: Option<&NodeId>) -> Result<(), ElectorError> {
        let cached = self.observed.lock().unwrap().lease.clone();
        let Some(mut lease) = cached.filter(|l| l.spec.holder_identity == self.identity) else {
            return Ok(());
        };
        let now = self.clock.now_us();
        let spec = LeaseSpec {
            holder_identity: String::new(),
            lease_duration_ms: successor.map_or(1000, |_| self.cfg.lease_duration_ms),
            acquire_time_us: now,
            renew_time_us: now,
            lease_transitions: lease.spec.lease_transitions,
            preferred_holder: successor.map(NodeId::to_string).unwrap_or_default(),
        };
        lease.spec = spec.clone();
        let mut written = self.api.update(lease).await;
        // A transfer must not fail on a renewal of ours that landed after the cache
        // was read (the renew loop has stopped, but its last try may still arrive):
        // read the Lease, and release it again if it still names us.
        if successor.is_some() && written == Err(K8sError::Conflict) {
            if let Ok(fresh) = self.api.get(&self.cfg.lease_name).await {
                if fresh.spec.holder_identity == self.identity {
                    written = self.api.update(Lease { spec, ..fresh }).await;
                }
            }
        }
        match written {
            Ok(written) => {
                self.observe_now(written);
                Ok(())
            }
            Err(e) => Err(ElectorError::Unavailable(e.to_string())),
        }
    }

    /// Notes when `old`, the record just read, last changed as this node sees it, and
    /// whether another holder's Lease is unexpired by this node's judgement (or released
    /// to another node by a transfer, for as long).
    fn held_by_other(&self, old: &Lease, now: i64) -> bool {
        let changed = {
            let o = self.observed.lock().unwrap();
            o.lease.as_ref().map(|l| &l.spec) != Some(&old.spec)
        };
        if changed {
            self.observe_now(old.clone());
        } else {
            // Same spec: keep the observation time, refresh the resourceVersion.
            self.observed.lock().unwrap().lease = Some(old.clone());
        }
        let observed_us = self.observed.lock().unwrap().time_us;
        let ours = old.spec.holder_identity == self.identity;
        // client-go compares monotonic readings (Go's `time.Time` carries one, and
        // `After` uses it): a step of the candidate's wall clock does not cut its wait.
        // The bug compares the holder's wall-clock renewTime with its own wall clock.
        let (judged_from_us, judged_now_us) = match self.cfg.expiry_judged_by {
            ExpiryJudgedBy::ObservedTime => (observed_us, self.clock.monotonic_us()),
            ExpiryJudgedBy::RenewTime => (old.spec.renew_time_us, now),
        };
        let unexpired = judged_from_us + old.spec.lease_duration_ms as i64 * 1000 > judged_now_us;
        // Released to another node (a transfer): leave it to that node for its duration.
        let preferred = &old.spec.preferred_holder;
        let released_to_other = !preferred.is_empty() && *preferred != self.node.as_str();
        let vacant = old.spec.holder_identity.is_empty();
        unexpired && ((!vacant && !ours) || (vacant && released_to_other))
    }

    /// The holder's loop (`renew`): every RetryPeriod, renew; a successful renewal moves
    /// the local deadline to (its start + RenewDeadline), so without one for
    /// RenewDeadline the node stops acting by its own clock. (With the
    /// `renew_call_timeout = false` bug the deadline is checked only here, when a try
    /// returns: a try that never returns never stops the leader.)
    fn spawn_renew(self: &Arc<Self>, lease: LeaseHandle) {
        let me = self.clone();
        madsim::task::spawn(async move {
            let period = Duration::from_millis(me.cfg.retry_period_ms);
            loop {
                if !lease.sleep_while_valid(me.clock.as_ref(), period).await {
                    return;
                }
                match me.try_acquire_or_renew(true).await {
                    Try::Held { started_us, .. } => {
                        lease.extend_to(started_us + me.cfg.renew_deadline_ms as i64 * 1000)
                    }
                    Try::HeldByOther => {
                        lease.end(LossReason::Revoked);
                        return;
                    }
                    Try::Failed => {}
                }
                if !me.cfg.renew_call_timeout && me.clock.now_us() >= lease.deadline_us() {
                    lease.end(LossReason::DeadlinePassed);
                    return;
                }
            }
        });
    }
}

#[async_trait]
impl Elector for K8sLeaseElector {
    /// `acquire`: try, and retry after a jittered RetryPeriod until the Lease is ours.
    /// Unreachable API servers are retried, as client-go does, so this never errs.
    async fn campaign(&self) -> Result<Leadership, ElectorError> {
        let me = &self.inner;
        loop {
            if let Try::Held { token, started_us } = me.try_acquire_or_renew(false).await {
                let deadline = started_us + me.cfg.renew_deadline_ms as i64 * 1000;
                // Without call timeouts (the bug) only the renew loop judges the deadline.
                let honour = me.cfg.renew_call_timeout;
                let lease = LeaseHandle::new(me.clock.clone(), deadline, honour);
                me.spawn_renew(lease.clone());
                return Ok(lease.leadership(token));
            }
            let wait = me.jittered_retry();
            // A transferring leader's successor tries at once when told.
            let _ = me
                .nudge
                .unless_asked(sleep_local(me.clock.as_ref(), wait))
                .await;
        }
    }

    /// `release` (ReleaseOnCancel): write the record with no holder, with the cached
    /// resourceVersion, so a record someone else took since is left alone.
    async fn resign(&self, leadership: &Leadership) -> Result<(), ElectorError> {
        leadership.end(LossReason::Resigned);
        if !self.inner.cfg.release_on_cancel {
            return Ok(());
        }
        self.inner.release(None).await
    }

    /// A release naming `successor` as the Lease's `preferredHolder`: the successor
    /// takes the vacant Lease when told (see [`Elector::take_over_now`]); the others
    /// leave it to it for a whole `leaseDuration`, then take it as any lapsed Lease.
    async fn transfer(
        &self,
        leadership: &Leadership,
        successor: &NodeId,
    ) -> Result<(), ElectorError> {
        leadership.end(LossReason::Transferred);
        self.inner.release(Some(successor)).await
    }

    fn take_over_now(&self) {
        self.inner.nudge.ask();
    }

    async fn observe(&self) -> Result<Option<LeaderInfo>, ElectorError> {
        match self.inner.api.get(&self.inner.cfg.lease_name).await {
            Ok(l) if !l.spec.holder_identity.is_empty() => {
                let id = &l.spec.holder_identity;
                // Host names hold no `_`: the node is what precedes the last one.
                let node = id.rsplit_once('_').map_or(id.as_str(), |(n, _)| n);
                Ok(Some(LeaderInfo {
                    node: NodeId::from(node),
                    token: l.spec.lease_transitions,
                }))
            }
            Ok(_) | Err(K8sError::NotFound) => Ok(None),
            Err(e) => Err(ElectorError::Unavailable(e.to_string())),
        }
    }
}
