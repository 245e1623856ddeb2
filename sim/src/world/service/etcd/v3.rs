//! The etcd v3 requests in full (`v3_messages.rs`), applied by the same state machine
//! to the same store as Baton's own protocols' election slice (`etcd.rs`), whose requests
//! and hot paths this leaves alone.
//!
//! **Bytes.** The store keeps keys and values as strings. A byte string is stored as the
//! string whose characters are its bytes (U+0000..=U+00FF): lossless, and it orders as
//! the bytes do, so prefixes and ranges mean what they mean on etcd. A character above
//! U+00FF (only Baton's own protocols write one) reads back as its UTF-8 bytes.

use super::v3_messages::{
    CompareReq, CompareResult, CompareTarget, DeleteReq, DeleteResp, Kv, PutReq, PutResp, RangeReq,
    RangeResp, SortBy, TxnOpReq, TxnOpResp, TxnReq, V3Error, V3Reply, V3Request,
};
use super::{Service, Store};
use crate::world::timeline::Timeline;
use baton_protocols::{KeyValue, WatchEvent, WatchEventKind};
use std::collections::BTreeSet;

/// A byte string as the store keeps it.
pub fn to_store(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// A stored string as the bytes a client put.
pub fn from_store(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for c in s.chars() {
        match u8::try_from(u32::from(c)) {
            Ok(b) => out.push(b),
            Err(_) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out
}

pub(super) fn kv_of(kv: &KeyValue, with_value: bool) -> Kv {
    Kv {
        key: from_store(&kv.key),
        value: if with_value {
            from_store(&kv.value)
        } else {
            vec![]
        },
        create_revision: kv.create_revision,
        mod_revision: kv.mod_revision,
        version: kv.version,
        lease: kv.lease,
    }
}

/// The keys of `[key, range_end)` as etcd reads a range: one key when `range_end` is
/// empty, every key from `key` on when it is `[0]`. An end at or before the start holds
/// nothing (etcd's answer too), never a panic.
fn keys_in<'a>(st: &'a Store, key: &[u8], range_end: &[u8]) -> Vec<&'a KeyValue> {
    let start = to_store(key);
    match range_end {
        [] => st.kv.get(&start).into_iter().collect(),
        [0] => st.kv.range(start..).map(|(_, v)| v).collect(),
        end => {
            let end = to_store(end);
            if end <= start {
                return vec![];
            }
            st.kv.range(start..end).map(|(_, v)| v).collect()
        }
    }
}

fn compare_kv(c: &CompareReq, kv: Option<&KeyValue>) -> bool {
    let ord = match &c.target {
        CompareTarget::Version(v) => kv.map_or(0, |k| k.version).cmp(v),
        CompareTarget::Create(v) => kv.map_or(0, |k| k.create_revision).cmp(v),
        CompareTarget::Mod(v) => kv.map_or(0, |k| k.mod_revision).cmp(v),
        CompareTarget::Lease(v) => kv.map_or(0, |k| k.lease).cmp(v),
        // etcd fails every value compare on a missing key.
        CompareTarget::Value(v) => match kv {
            Some(k) => from_store(&k.value).cmp(v),
            None => return false,
        },
    };
    match c.result {
        CompareResult::Equal => ord.is_eq(),
        CompareResult::NotEqual => ord.is_ne(),
        CompareResult::Less => ord.is_lt(),
        CompareResult::Greater => ord.is_gt(),
    }
}

/// etcd's `applyCompare`: every key of the range must hold; an empty range compares a
/// missing key.
fn holds(st: &Store, c: &CompareReq) -> bool {
    let kvs = keys_in(st, &c.key, &c.range_end);
    if kvs.is_empty() {
        return compare_kv(c, None);
    }
    kvs.into_iter().all(|kv| compare_kv(c, Some(kv)))
}

fn range(st: &Store, r: &RangeReq) -> RangeResp {
    let mut kvs = keys_in(st, &r.key, &r.range_end);
    let count = kvs.len() as i64;
    let [min_mod, max_mod, min_create, max_create] = r.revision_bounds;
    kvs.retain(|k| {
        (min_mod == 0 || k.mod_revision >= min_mod)
            && (max_mod == 0 || k.mod_revision <= max_mod)
            && (min_create == 0 || k.create_revision >= min_create)
            && (max_create == 0 || k.create_revision <= max_create)
    });
    // Keys come in key order; a sort on another field is stable over it.
    match r.sort_by {
        SortBy::Key => {}
        SortBy::Version => kvs.sort_by_key(|k| k.version),
        SortBy::Create => kvs.sort_by_key(|k| k.create_revision),
        SortBy::Mod => kvs.sort_by_key(|k| k.mod_revision),
        SortBy::Value => kvs.sort_by_key(|k| from_store(&k.value)),
    }
    if r.descend {
        kvs.reverse();
    }
    let limit = usize::try_from(r.limit).unwrap_or(0);
    let more = limit > 0 && kvs.len() > limit;
    if more {
        kvs.truncate(limit);
    }
    if r.count_only {
        kvs.clear();
    }
    RangeResp {
        kvs: kvs.into_iter().map(|k| kv_of(k, !r.keys_only)).collect(),
        more,
        count,
    }
}

/// etcd's checks of a put before anything applies.
fn check_put(st: &Store, p: &PutReq) -> Result<(), V3Error> {
    if p.key.is_empty() {
        return Err(V3Error::EmptyKey);
    }
    if p.ignore_value && !p.value.is_empty() {
        return Err(V3Error::ValueProvided);
    }
    if p.ignore_lease && p.lease != 0 {
        return Err(V3Error::LeaseProvided);
    }
    if (p.ignore_value || p.ignore_lease) && !st.kv.contains_key(&to_store(&p.key)) {
        return Err(V3Error::KeyNotFound);
    }
    if !p.ignore_lease && p.lease != 0 && !st.leases.contains_key(&p.lease) {
        return Err(V3Error::LeaseNotFound);
    }
    Ok(())
}

/// Applies a checked put at revision `rev`.
fn put(st: &mut Store, p: &PutReq, rev: i64) -> PutResp {
    let key = to_store(&p.key);
    let old = st.kv.get(&key).cloned();
    let value = match (&old, p.ignore_value) {
        (Some(o), true) => o.value.clone(),
        _ => to_store(&p.value),
    };
    let lease = match (&old, p.ignore_lease) {
        (Some(o), true) => o.lease,
        _ => p.lease,
    };
    if let Some(o) = &old {
        if o.lease != 0 && o.lease != lease {
            if let Some(l) = st.leases.get_mut(&o.lease) {
                l.keys.remove(&key);
            }
        }
    }
    if let Some(l) = st.leases.get_mut(&lease) {
        l.keys.insert(key.clone());
    }
    let kv = KeyValue {
        key: key.clone(),
        value,
        create_revision: old.as_ref().map_or(rev, |o| o.create_revision),
        mod_revision: rev,
        version: old.as_ref().map_or(1, |o| o.version + 1),
        lease,
    };
    if let Some(h) = st.history.as_mut() {
        h.put(&kv, old.as_ref());
    }
    st.kv.insert(key.clone(), kv);
    st.events.push(WatchEvent {
        kind: WatchEventKind::Put,
        key,
        revision: rev,
    });
    PutResp {
        prev_kv: old.filter(|_| p.prev_kv).map(|o| kv_of(&o, true)),
    }
}

fn delete(st: &mut Store, timeline: &Timeline, d: &DeleteReq, rev: i64) -> DeleteResp {
    let gone: Vec<Kv> = keys_in(st, &d.key, &d.range_end)
        .into_iter()
        .map(|k| kv_of(k, true))
        .collect();
    for kv in &gone {
        Service::delete_key(st, timeline, &to_store(&kv.key), rev, "deleted");
    }
    DeleteResp {
        deleted: gone.len() as i64,
        prev_kvs: if d.prev_kv { gone } else { vec![] },
    }
}

/// A branch's checks: every put's, and no key put twice (etcd refuses both).
fn check_branch(st: &Store, ops: &[TxnOpReq]) -> Result<(), V3Error> {
    let mut put_keys = BTreeSet::new();
    for op in ops {
        if let TxnOpReq::Put(p) = op {
            check_put(st, p)?;
            if !put_keys.insert(&p.key) {
                return Err(V3Error::DuplicateKey);
            }
        }
    }
    Ok(())
}

impl Service {
    /// Applies one full etcd v3 request at `now_us` on the serving member's clock;
    /// returns the store's revision after it, and the reply or etcd's error.
    pub(crate) fn v3(&self, req: V3Request, now_us: i64) -> (i64, Result<V3Reply, V3Error>) {
        self.watch_history_on();
        if let V3Request::LeaseRevoke(id) = req {
            let known = self.store.lock().unwrap().leases.contains_key(&id);
            if known {
                self.revoke(id, "revoked");
            }
            let rev = self.store.lock().unwrap().revision;
            return (
                rev,
                known
                    .then_some(V3Reply::Revoked)
                    .ok_or(V3Error::LeaseNotFound),
            );
        }
        let mut st = self.store.lock().unwrap();
        let before = st.revision;
        let out = match req {
            V3Request::Range(r) => Ok(V3Reply::Range(range(&st, &r))),
            V3Request::Put(p) => check_put(&st, &p).map(|()| {
                st.revision += 1;
                let rev = st.revision;
                V3Reply::Put(put(&mut st, &p, rev))
            }),
            V3Request::Delete(d) => {
                let rev = st.revision + 1;
                let resp = delete(&mut st, &self.timeline, &d, rev);
                if resp.deleted > 0 {
                    st.revision = rev;
                }
                Ok(V3Reply::Delete(resp))
            }
            V3Request::Txn(t) => self.txn_v3(&mut st, t),
            V3Request::LeaseTimeToLive { id, keys } => Ok(time_to_live(&st, id, keys, now_us)),
            V3Request::LeaseRevoke(_) => unreachable!("answered above"),
        };
        let rev = st.revision;
        drop(st);
        if rev != before {
            self.changed.notify_waiters();
        }
        (rev, out)
    }

    fn txn_v3(&self, st: &mut Store, t: TxnReq) -> Result<V3Reply, V3Error> {
        let succeeded = t.compare.iter().all(|c| holds(st, c));
        let ops = if succeeded { t.success } else { t.failure };
        check_branch(st, &ops)?;
        // As etcd, the revision moves only if something changes.
        let writes = ops.iter().any(|op| match op {
            TxnOpReq::Range(_) => false,
            TxnOpReq::Put(_) => true,
            TxnOpReq::Delete(d) => !keys_in(st, &d.key, &d.range_end).is_empty(),
        });
        let rev = st.revision + i64::from(writes);
        st.revision = rev;
        let responses = ops
            .iter()
            .map(|op| match op {
                TxnOpReq::Range(r) => TxnOpResp::Range(range(st, r)),
                TxnOpReq::Put(p) => TxnOpResp::Put(put(st, p, rev)),
                TxnOpReq::Delete(d) => TxnOpResp::Delete(delete(st, &self.timeline, d, rev)),
            })
            .collect();
        Ok(V3Reply::Txn {
            succeeded,
            responses,
        })
    }
}

/// etcd's `LeaseTimeToLive`: whole seconds left on the serving member's clock (rounded
/// down), -1 for a lease that is gone.
fn time_to_live(st: &Store, id: i64, keys: bool, now_us: i64) -> V3Reply {
    let Some(l) = st.leases.get(&id) else {
        return V3Reply::TimeToLive {
            ttl_s: -1,
            granted_ttl_s: 0,
            keys: vec![],
        };
    };
    V3Reply::TimeToLive {
        ttl_s: ((l.expires_at_us - now_us).max(0)) / 1_000_000,
        granted_ttl_s: (l.ttl_ms / 1000) as i64,
        keys: if keys {
            l.keys.iter().map(|k| from_store(k)).collect()
        } else {
            vec![]
        },
    }
}

#[cfg(test)]
mod tests {
    use super::{from_store, to_store};

    /// Methodology: every byte value round-trips, and byte order is string order, so a
    /// prefix range over bytes is a range over the stored strings.
    #[test]
    fn bytes_round_trip_in_order() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(from_store(&to_store(&all)), all);
        let (a, b) = (vec![0x7f, 0x01], vec![0x80]);
        assert!(a < b && to_store(&a) < to_store(&b));
        assert_eq!(from_store("é"), vec![0xe9]);
        assert_eq!(from_store("✓"), "✓".as_bytes());
    }
}
