//! A Kubernetes-API-like server holding `coordination.k8s.io/v1` Lease objects, as one
//! simulated node.
//!
//! Modelled on the API server's semantics for Leases, not its implementation:
//! - every object carries a `resourceVersion` from one counter that grows with each
//!   write (etcd's revision behind the API server);
//! - `GET` returns the object or 404; `POST` creates it or answers 409 AlreadyExists;
//!   `PUT` replaces it only if it names the current `resourceVersion`, else 409
//!   Conflict (optimistic concurrency);
//! - the server gives the Lease's fields no meaning: it never expires a Lease. Expiry is
//!   judged by each candidate on its own clock.
//!
//! For the report only, the server notes in the timeline when a Lease's holder left it:
//! when an update clears `holderIdentity`, or when no update came for the Lease's
//! duration on the server's clock (a `SeatVacated` event, from which election latency is
//! timed). That note changes nothing the server answers.
//!
//! Not modelled: watches (client-go's elector only polls), admission, and a
//! multi-member etcd behind the server.

use crate::world::clock::NodeClock;
use crate::world::net::Endpoint;
use crate::world::rpc::{request, BACKEND_ADDR};
use crate::world::timeline::{Event, Timeline};
use baton_protocols::k8s_lease::Lease;
use baton_protocols::{sleep_until_local, Clock};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

// The requests this service answers: it declares them, and its client
// (`crate::world::protocol::k8s_lease`) sends them.

/// Why the API server refused a call (the HTTP status behind
/// [`baton_protocols::k8s_lease::K8sError`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ApiStatus {
    /// 404.
    NotFound,
    /// 409 on create.
    AlreadyExists,
    /// 409 on update: stale resourceVersion.
    Conflict,
}

/// `GET .../leases/<name>`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct K8sLeaseGet {
    /// The Lease's name.
    pub name: String,
}
request!(K8sLeaseGet => Result<Lease, ApiStatus>);

/// `POST .../leases`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct K8sLeaseCreate(pub Lease);
request!(K8sLeaseCreate => Result<Lease, ApiStatus>);

/// `PUT .../leases/<name>`, guarded by the resourceVersion it carries.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct K8sLeaseUpdate(pub Lease);
request!(K8sLeaseUpdate => Result<Lease, ApiStatus>);

/// How often, at most, the server looks for Leases left unrenewed past their duration
/// (for the timeline note only); it also looks exactly when the earliest one falls due,
/// so the note is never later than the vacancy (a candidate, which waits the duration on
/// its own clock after seeing the last renewal, cannot win before it on a true clock).
const VACANCY_CHECK_INTERVAL_MS: u64 = 100;

struct Stored {
    lease: Lease,
    /// Server clock at the last write.
    written_at_us: i64,
    /// The vacancy of this version was noted already.
    vacancy_noted: bool,
}

#[derive(Default)]
struct Store {
    resource_version: u64,
    leases: BTreeMap<String, Stored>,
}

struct Service {
    store: Mutex<Store>,
    clock: NodeClock,
    timeline: Timeline,
    requests: Arc<crate::world::requests::RequestCounter>,
}

/// Runs the API server on the current node until the node is killed.
///
/// `requests` counts every request served.
pub async fn serve(
    timeline: Timeline,
    clock: NodeClock,
    requests: Arc<crate::world::requests::RequestCounter>,
) {
    let ep = Endpoint::bind(BACKEND_ADDR).expect("backend address is free");
    let svc = Arc::new(Service {
        store: Mutex::new(Store {
            resource_version: 1,
            ..Default::default()
        }),
        clock,
        timeline,
        requests,
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: K8sLeaseGet| {
        s.requests.fetch_add(1, Ordering::Relaxed);
        let out = s.get(&r.name);
        async move { out }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: K8sLeaseCreate| {
        s.requests.fetch_add(1, Ordering::Relaxed);
        let out = s.create(r.0);
        async move { out }
    });
    let s = svc.clone();
    ep.add_rpc_handler(move |r: K8sLeaseUpdate| {
        s.requests.fetch_add(1, Ordering::Relaxed);
        let out = s.update(r.0);
        async move { out }
    });
    let interval_us = VACANCY_CHECK_INTERVAL_MS as i64 * 1000;
    loop {
        let next_due_us = svc.note_vacancies();
        let now_us = svc.clock.now_us();
        let until_us = next_due_us.map_or(now_us + interval_us, |d| d.min(now_us + interval_us));
        sleep_until_local(&svc.clock, until_us).await;
    }
}

impl Service {
    fn get(&self, name: &str) -> Result<Lease, ApiStatus> {
        let st = self.store.lock().unwrap();
        st.leases
            .get(name)
            .map(|s| s.lease.clone())
            .ok_or(ApiStatus::NotFound)
    }

    fn create(&self, lease: Lease) -> Result<Lease, ApiStatus> {
        let mut st = self.store.lock().unwrap();
        if st.leases.contains_key(&lease.name) {
            return Err(ApiStatus::AlreadyExists);
        }
        Ok(self.write(&mut st, lease))
    }

    fn update(&self, lease: Lease) -> Result<Lease, ApiStatus> {
        let mut st = self.store.lock().unwrap();
        let Some(cur) = st.leases.get(&lease.name) else {
            return Err(ApiStatus::NotFound);
        };
        if cur.lease.resource_version != lease.resource_version {
            return Err(ApiStatus::Conflict);
        }
        let old = cur.lease.spec.clone();
        let vacancy_noted = cur.vacancy_noted;
        if !old.holder_identity.is_empty()
            && lease.spec.holder_identity.is_empty()
            && !vacancy_noted
        {
            self.timeline.record(Event::SeatVacated {
                key: lease.name.clone(),
                token: old.lease_transitions,
                cause: "released".into(),
            });
        }
        Ok(self.write(&mut st, lease))
    }

    /// Stores `lease` under a new resourceVersion and returns it as stored.
    fn write(&self, st: &mut Store, mut lease: Lease) -> Lease {
        st.resource_version += 1;
        lease.resource_version = st.resource_version.to_string();
        let vacant = lease.spec.holder_identity.is_empty();
        st.leases.insert(
            lease.name.clone(),
            Stored {
                lease: lease.clone(),
                written_at_us: self.clock.now_us(),
                vacancy_noted: vacant,
            },
        );
        lease
    }

    /// Notes each held Lease that went unrenewed for its duration on this clock; returns
    /// when the earliest other held Lease falls due.
    fn note_vacancies(&self) -> Option<i64> {
        let now = self.clock.now_us();
        let mut st = self.store.lock().unwrap();
        let mut next_due = None;
        for (name, s) in st.leases.iter_mut() {
            let due = s.written_at_us + s.lease.spec.lease_duration_ms as i64 * 1000;
            if !s.vacancy_noted && now < due {
                next_due = Some(next_due.map_or(due, |d: i64| d.min(due)));
            }
            if !s.vacancy_noted && now >= due {
                s.vacancy_noted = true;
                self.timeline.record(Event::SeatVacated {
                    key: name.clone(),
                    token: s.lease.spec.lease_transitions,
                    cause: "expired".into(),
                });
            }
        }
        next_due
    }
}
