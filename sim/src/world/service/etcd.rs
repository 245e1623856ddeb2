//! An etcd-v3-like lease and key-value service, as one simulated node.
//!
//! Modelled on etcd's semantics, not its implementation:
//! - one global `revision`, bumped once per mutating request (a txn, a delete, a lease
//!   revocation with all its keys); keys carry `create_revision`, `mod_revision`, `version`;
//! - leases are judged on the service's own clock: a lease expires when that clock passes
//!   its last grant or keepalive plus TTL, and the lessor only looks every
//!   `expiry_check_interval_ms` (etcd checks every 500 ms), deleting the lease's keys;
//! - TTLs below `min_lease_ttl_ms` are raised to it (etcd's minimum TTL, 2 s at defaults);
//! - watches are long polls on one key from a start revision; the etcd v3 watch of the
//!   client crate is served from a bounded history (`etcd/watch.rs`).
//!
//! Not modelled: a multi-member etcd cluster (its Raft, leader changes that extend leases;
//! `etcd_cluster` models them) and compaction; the election recipe needs neither.

mod v3;
pub mod v3_messages;
mod watch;
pub mod watch_messages;

use crate::world::clock::NodeClock;
use crate::world::net::Endpoint;
use crate::world::rpc::{
    EtcdGrant, EtcdKeepAlive, EtcdRange, EtcdRevoke, EtcdServerError, EtcdTxn, EtcdWatch,
    BACKEND_ADDR,
};
use crate::world::timeline::{Event, Timeline};
use baton_model::NodeId;
use baton_protocols::{sleep_local, Clock};
use baton_protocols::{
    CompareOp, CompareTarget, KeyValue, LeaseGrant, RangeResponse, Txn, TxnOp, TxnResponse,
    WatchEvent, WatchEventKind,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

struct Lease {
    ttl_ms: u64,
    expires_at_us: i64,
    keys: BTreeSet<String>,
}

/// etcd's request-id generator (`pkg/idutil`), which also names leases: the member's
/// 16-bit id in the top bits, then the member's start time in milliseconds (40 bits)
/// shifted left by 8, plus a counter that every request drawing an id bumps. Lease ids
/// are therefore large, not consecutive (other requests draw ids in between), and only
/// ordered by grant time within one member: nothing may rely on their order.
#[derive(Default)]
pub(crate) struct IdGen {
    prefix: u64,
    suffix: u64,
}

impl IdGen {
    /// The generator of member `member_id` started at `start_unix_ms`.
    pub(crate) fn new(member_id: u16, start_unix_ms: u64) -> Self {
        const TS_BITS: u32 = 40;
        const COUNT_BITS: u32 = 8;
        IdGen {
            prefix: u64::from(member_id) << 48,
            suffix: (start_unix_ms & ((1 << TS_BITS) - 1)) << COUNT_BITS,
        }
    }

    /// The next id (etcd's `Generator.Next`).
    pub(crate) fn next(&mut self) -> u64 {
        self.suffix += 1;
        self.prefix | (self.suffix & ((1 << 48) - 1))
    }
}

/// The wall-clock epoch the simulated member's id generator starts from (2026-01-01 UTC,
/// in Unix milliseconds), plus the service clock's reading at start.
pub(crate) const START_EPOCH_UNIX_MS: u64 = 1_767_225_600_000;

#[derive(Default)]
struct Store {
    revision: i64,
    ids: IdGen,
    kv: BTreeMap<String, KeyValue>,
    leases: BTreeMap<i64, Lease>,
    /// Every change, for Baton's own protocols' watches. Election traffic is small, so it
    /// is never compacted.
    events: Vec<WatchEvent>,
    /// The etcd v3 watches' bounded history, off (`None`) until the first v3 request
    /// (`watch.rs`): until then a write pays one check for it.
    history: Option<Box<watch::History>>,
}

/// The service state shared by its handlers (and, for a cluster, the replicated state
/// machine every member applies: see `etcd_cluster.rs`).
pub(crate) struct Service {
    store: Mutex<Store>,
    clock: NodeClock,
    timeline: Timeline,
    min_lease_ttl_ms: u64,
    expiry_check_interval_ms: u64,
    requests: Arc<crate::world::requests::RequestCounter>,
    changed: Notify,
}

/// Runs the lease service on the current node until the node is killed.
///
/// `requests` counts every request served (the backend load a protocol puts on it).
pub async fn serve(
    timeline: Timeline,
    clock: NodeClock,
    requests: Arc<crate::world::requests::RequestCounter>,
    min_lease_ttl_ms: u64,
    expiry_check_interval_ms: u64,
    member_id: u16,
    lessor_phase_us: u64,
) {
    let ep = Endpoint::bind(BACKEND_ADDR).expect("backend address is free");
    let svc = Arc::new(Service::new(
        timeline,
        clock,
        requests,
        (min_lease_ttl_ms, expiry_check_interval_ms),
        member_id,
    ));
    let s = svc.clone();
    ep.add_rpc_handler(move |r: EtcdGrant| {
        s.requests.fetch_add(1, Ordering::Relaxed);
        let g = s.grant(&r.node, r.ttl_ms);
        async move { g }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: EtcdKeepAlive| {
        s.requests.fetch_add(1, Ordering::Relaxed);
        let k = s.keep_alive(r.id);
        async move { k }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: EtcdRevoke| {
        s.requests.fetch_add(1, Ordering::Relaxed);
        s.revoke(r.id, "revoked");
        async move {}
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: EtcdTxn| {
        s.requests.fetch_add(1, Ordering::Relaxed);
        let t = s.txn(r.0);
        async move { t }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: EtcdRange| {
        s.requests.fetch_add(1, Ordering::Relaxed);
        let out = s.range(&r.0);
        async move { out }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: EtcdWatch| {
        s.requests.fetch_add(1, Ordering::Relaxed);
        let s = s.clone();
        async move { s.watch(r).await }
    });
    // The lessor: expire leases on the service's own clock. etcd's lessor loop checks
    // every 500 ms from whenever the member started, which has nothing to do with when
    // a scenario's faults strike: its phase is a seeded draw, so that a fault at a fixed
    // time meets the check at any point of its cycle, as a real kill does.
    sleep_local(&svc.clock, Duration::from_micros(lessor_phase_us)).await;
    let interval = Duration::from_millis(svc.expiry_check_interval_ms);
    loop {
        sleep_local(&svc.clock, interval).await;
        svc.expire();
    }
}

impl Service {
    /// The service of member `member_id`, started now on `clock`, with etcd's minimum
    /// TTL and expiry check interval (`lessor`, ms).
    pub(crate) fn new(
        timeline: Timeline,
        clock: NodeClock,
        requests: Arc<crate::world::requests::RequestCounter>,
        lessor: (u64, u64),
        member_id: u16,
    ) -> Service {
        let start_unix_ms = START_EPOCH_UNIX_MS + (clock.now_us().max(0) / 1000) as u64;
        Service {
            store: Mutex::new(Store {
                revision: 1,
                ids: IdGen::new(member_id, start_unix_ms),
                ..Default::default()
            }),
            clock,
            timeline,
            min_lease_ttl_ms: lessor.0,
            expiry_check_interval_ms: lessor.1,
            requests,
            changed: Notify::new(),
        }
    }

    /// Counts a request served.
    pub(crate) fn count_request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// A cluster's grant, applied once it committed: lease `id` (drawn by the leader's
    /// id generator) expires at `now_us` on the leader's clock plus its TTL.
    pub(crate) fn grant_as(
        &self,
        node: &NodeId,
        requested_ms: u64,
        id: i64,
        now_us: i64,
    ) -> LeaseGrant {
        let ttl_ms = requested_ms.max(self.min_lease_ttl_ms);
        let mut st = self.store.lock().unwrap();
        st.leases.insert(
            id,
            Lease {
                ttl_ms,
                expires_at_us: now_us + ttl_ms as i64 * 1000,
                keys: BTreeSet::new(),
            },
        );
        self.timeline.record(Event::LeaseGranted {
            node: node.clone(),
            lease_id: id,
            ttl_requested_ms: requested_ms,
            ttl_granted_ms: ttl_ms,
        });
        LeaseGrant { id, ttl_ms }
    }

    /// A cluster leader's lessor renews a lease at `now_us` on its clock; `None` when the
    /// lease is gone or already past its expiry (the expiry loop revokes it).
    pub(crate) fn renew(&self, id: i64, now_us: i64) -> Option<u64> {
        let mut st = self.store.lock().unwrap();
        let lease = st.leases.get_mut(&id)?;
        if lease.expires_at_us <= now_us {
            return None;
        }
        lease.expires_at_us = now_us + lease.ttl_ms as i64 * 1000;
        let ttl = lease.ttl_ms;
        drop(st);
        self.timeline.record(Event::LeaseRenewed { lease_id: id });
        Some(ttl)
    }

    /// The leases past their expiry at `now_us` on the leader's clock, by id.
    pub(crate) fn expired_at(&self, now_us: i64) -> Vec<i64> {
        let st = self.store.lock().unwrap();
        st.leases
            .iter()
            .filter(|(_, l)| l.expires_at_us <= now_us)
            .map(|(id, _)| *id)
            .collect()
    }

    /// etcd's `lessor.Promote(extend)`: every lease expires `extend_ms` plus its full TTL
    /// after `now_us` (the new leader's clock). Returns how many leases it extended.
    pub(crate) fn promote(&self, now_us: i64, extend_ms: u64) -> usize {
        let mut st = self.store.lock().unwrap();
        for l in st.leases.values_mut() {
            l.expires_at_us = now_us + (extend_ms + l.ttl_ms) as i64 * 1000;
        }
        st.leases.len()
    }

    fn grant(&self, node: &NodeId, requested_ms: u64) -> LeaseGrant {
        let ttl_ms = requested_ms.max(self.min_lease_ttl_ms);
        let mut st = self.store.lock().unwrap();
        // etcd's LeaseGrant handler draws the lease id, then the raft request its own id.
        let id = (st.ids.next() & ((1 << 63) - 1)) as i64;
        st.ids.next();
        let expires_at_us = self.clock.now_us() + ttl_ms as i64 * 1000;
        st.leases.insert(
            id,
            Lease {
                ttl_ms,
                expires_at_us,
                keys: BTreeSet::new(),
            },
        );
        self.timeline.record(Event::LeaseGranted {
            node: node.clone(),
            lease_id: id,
            ttl_requested_ms: requested_ms,
            ttl_granted_ms: ttl_ms,
        });
        LeaseGrant { id, ttl_ms }
    }

    fn keep_alive(&self, id: i64) -> Option<u64> {
        let now = self.clock.now_us();
        let mut st = self.store.lock().unwrap();
        let lease = st.leases.get_mut(&id)?;
        if lease.expires_at_us <= now {
            // etcd's lessor refuses to renew a lease past its expiry even if the revoke
            // has not run yet: an expired lease never comes back to life.
            drop(st);
            self.revoke(id, "expired");
            return None;
        }
        lease.expires_at_us = now + lease.ttl_ms as i64 * 1000;
        Some(lease.ttl_ms)
    }

    fn expire(&self) {
        let now = self.clock.now_us();
        let expired: Vec<i64> = {
            let st = self.store.lock().unwrap();
            st.leases
                .iter()
                .filter(|(_, l)| l.expires_at_us <= now)
                .map(|(id, _)| *id)
                .collect()
        };
        for id in expired {
            self.revoke(id, "expired");
        }
    }

    /// Ends a lease and deletes its keys in one revision.
    pub(crate) fn revoke(&self, id: i64, cause: &str) {
        let mut st = self.store.lock().unwrap();
        // A revocation (asked for, or the lessor's on expiry) is a raft request.
        st.ids.next();
        let Some(lease) = st.leases.remove(&id) else {
            return;
        };
        self.timeline.record(if cause == "expired" {
            Event::LeaseExpired { lease_id: id }
        } else {
            Event::LeaseRevoked { lease_id: id }
        });
        if !lease.keys.is_empty() {
            st.revision += 1;
            let rev = st.revision;
            for key in lease.keys {
                Self::delete_key(&mut st, &self.timeline, &key, rev, cause);
            }
        }
        drop(st);
        self.changed.notify_waiters();
    }

    fn delete_key(st: &mut Store, timeline: &Timeline, key: &str, rev: i64, cause: &str) -> bool {
        let Some(kv) = st.kv.remove(key) else {
            return false;
        };
        if kv.lease != 0 {
            if let Some(l) = st.leases.get_mut(&kv.lease) {
                l.keys.remove(key);
            }
        }
        if let Some(h) = st.history.as_mut() {
            h.delete(&kv, rev);
        }
        st.events.push(WatchEvent {
            kind: WatchEventKind::Delete,
            key: key.to_string(),
            revision: rev,
        });
        timeline.record(Event::KeyDeleted {
            key: key.to_string(),
            create_revision: kv.create_revision,
            cause: cause.to_string(),
        });
        true
    }

    pub(crate) fn txn(&self, txn: Txn) -> Result<TxnResponse, EtcdServerError> {
        let mut st = self.store.lock().unwrap();
        st.ids.next();
        let holds = txn.compare.iter().all(|c| {
            let kv = st.kv.get(&c.key);
            let ord = match &c.target {
                CompareTarget::CreateRevision(v) => kv.map_or(0, |k| k.create_revision).cmp(v),
                CompareTarget::ModRevision(v) => kv.map_or(0, |k| k.mod_revision).cmp(v),
                CompareTarget::Version(v) => kv.map_or(0, |k| k.version).cmp(v),
                // etcd fails every value compare on a missing key.
                CompareTarget::Value(v) => match kv {
                    Some(k) => k.value.cmp(v),
                    None => return false,
                },
            };
            match c.op {
                CompareOp::Equal => ord.is_eq(),
                CompareOp::NotEqual => ord.is_ne(),
                CompareOp::Less => ord.is_lt(),
                CompareOp::Greater => ord.is_gt(),
            }
        });
        let ops = if holds { txn.success } else { txn.failure };
        // etcd checks every lease a put names before applying anything.
        for op in &ops {
            if let TxnOp::Put { lease, .. } = op {
                if *lease != 0 && !st.leases.contains_key(lease) {
                    return Err(EtcdServerError::LeaseNotFound);
                }
            }
        }
        // As etcd, the revision moves only if something changes: a put, or a delete of a
        // key that exists.
        let writes = ops.iter().any(|op| match op {
            TxnOp::Get { .. } => false,
            TxnOp::Put { .. } => true,
            TxnOp::Delete { key } => st.kv.contains_key(key),
        });
        if writes {
            st.revision += 1;
        }
        let rev = st.revision;
        let mut gets = vec![];
        for op in ops {
            match op {
                TxnOp::Get { key } => gets.push(st.kv.get(&key).cloned()),
                TxnOp::Put { key, value, lease } => {
                    let old = st.kv.get(&key).cloned();
                    if let Some(old) = &old {
                        if old.lease != 0 && old.lease != lease {
                            if let Some(l) = st.leases.get_mut(&old.lease) {
                                l.keys.remove(&key);
                            }
                        }
                    }
                    let kv = KeyValue {
                        key: key.clone(),
                        value,
                        create_revision: old.as_ref().map_or(rev, |o| o.create_revision),
                        mod_revision: rev,
                        version: old.as_ref().map_or(1, |o| o.version + 1),
                        lease,
                    };
                    if lease != 0 {
                        st.leases
                            .get_mut(&lease)
                            .expect("checked above")
                            .keys
                            .insert(key.clone());
                    }
                    if let Some(h) = st.history.as_mut() {
                        h.put(&kv, old.as_ref());
                    }
                    st.kv.insert(key.clone(), kv);
                    st.events.push(WatchEvent {
                        kind: WatchEventKind::Put,
                        key,
                        revision: rev,
                    });
                }
                TxnOp::Delete { key } => {
                    Self::delete_key(&mut st, &self.timeline, &key, rev, "deleted");
                }
            }
        }
        drop(st);
        if writes {
            self.changed.notify_waiters();
        }
        Ok(TxnResponse {
            succeeded: holds,
            revision: rev,
            gets,
        })
    }

    pub(crate) fn range(&self, r: &baton_protocols::RangeRequest) -> RangeResponse {
        let mut st = self.store.lock().unwrap();
        // A linearizable read asks the leader for a read index, with an id of its own.
        st.ids.next();
        let mut kvs: Vec<KeyValue> = if r.prefix {
            st.kv
                .range(r.key.clone()..)
                .take_while(|(k, _)| k.starts_with(&r.key))
                .map(|(_, v)| v.clone())
                .collect()
        } else {
            st.kv.get(&r.key).cloned().into_iter().collect()
        };
        if let Some(max) = r.max_create_revision {
            kvs.retain(|kv| kv.create_revision <= max);
        }
        kvs.sort_by_key(|kv| kv.create_revision);
        if r.newest_first {
            kvs.reverse();
        }
        if r.limit > 0 {
            kvs.truncate(r.limit);
        }
        RangeResponse {
            kvs,
            revision: st.revision,
        }
    }

    async fn watch(&self, w: EtcdWatch) -> Vec<WatchEvent> {
        self.watch_on(&self.clock, w).await
    }

    /// A watch served by a member whose clock is `clock`.
    pub(crate) async fn watch_on(&self, clock: &NodeClock, w: EtcdWatch) -> Vec<WatchEvent> {
        let deadline = clock.now_us() + w.wait_ms as i64 * 1000;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let found: Vec<WatchEvent> = {
                let st = self.store.lock().unwrap();
                st.events
                    .iter()
                    .filter(|e| e.key == w.key && e.revision >= w.start_revision)
                    .cloned()
                    .collect()
            };
            let now = clock.now_us();
            if !found.is_empty() || now >= deadline {
                return found;
            }
            let left = Duration::from_micros((deadline - now) as u64);
            tokio::select! {
                // Biased: tokio would otherwise pick among ready branches with its own RNG, which
                // madsim does not seed; polling in written order keeps runs deterministic.
                biased;
                _ = notified => {}
                _ = sleep_local(clock, left) => {}
            }
        }
    }
}

#[cfg(test)]
mod id_tests {
    use super::IdGen;

    /// Methodology: etcd's `idutil` layout, checked on a member id and start time whose
    /// bits are easy to read; an id drawn by another request in between leaves a gap.
    #[test]
    fn ids_follow_etcds_generator_layout() {
        let mut g = IdGen::new(0xabcd, 0x12_3456_789a);
        let first = g.next();
        assert_eq!(first >> 48, 0xabcd);
        assert_eq!(first & ((1 << 48) - 1), (0x12_3456_789a << 8) + 1);
        g.next(); // another request's id
        assert_eq!(g.next(), first + 2);
    }
}
