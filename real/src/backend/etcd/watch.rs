//! The etcd cluster's observers, run by the supervisor directly on the members (no
//! proxy: an observer is not part of the system under test): every key deletion under
//! the election prefix ([`watch_keys`]), and who leads etcd ([`watch_leader`]: its
//! members' own status, polled every [`LEADER_POLL_MS`]; `etcd_leader_elected` is logged
//! when the leader or its term changes, stamped when the poll saw it, up to one poll
//! late).

use crate::backend::etcd::cluster::leader_among;
use crate::backoff::Backoff;
use crate::events::{Event, EventLog};
use std::time::Duration;

/// How often the leader watcher asks the members who leads.
pub const LEADER_POLL_MS: u64 = 100;

/// Logs every deletion under the election prefix, as etcd reports it to a watch opened
/// directly on the cluster (no proxy: the observer is not part of the system under
/// test). A deleted key whose lease no longer exists was deleted by its lease ending:
/// `lease_expired` then `key_deleted` with cause `expired`. A key deleted while its
/// lease lives was deleted on purpose (a resign deletes the key, then revokes the
/// lease): cause `deleted`. (A lease revoked with its key still attached also reads as
/// `expired`; the recipe deletes before it revokes, so that happens only when the delete
/// itself failed. A resign's revoke follows its delete within a round trip and may beat
/// this watcher's lease lookup: a resign can then read as `expired` too.) Each is
/// stamped when the watch delivered it.
///
/// A watch that cannot be opened (etcd gone, at the end of a run) is tried again after
/// a pause from `backoff`, which a watch opened resets.
pub async fn watch_keys(
    endpoints: Vec<String>,
    prefix: String,
    log: EventLog,
    mut backoff: Backoff,
) {
    use etcd_client as ec;
    loop {
        let Ok(mut client) = ec::Client::connect(&endpoints, None).await else {
            tokio::time::sleep(backoff.failed()).await;
            continue;
        };
        let opts = ec::WatchOptions::new().with_prefix().with_prev_key();
        let Ok(mut stream) = client.watch(prefix.as_bytes(), Some(opts)).await else {
            tokio::time::sleep(backoff.failed()).await;
            continue;
        };
        backoff.succeeded();
        while let Ok(Some(resp)) = stream.message().await {
            let at_us = log.clock().now_us();
            for ev in resp.events() {
                if ev.event_type() != ec::EventType::Delete {
                    continue;
                }
                let Some(prev) = ev.prev_kv() else { continue };
                let key = String::from_utf8_lossy(prev.key()).into_owned();
                let lease = prev.lease();
                let gone = match client.lease_time_to_live(lease, None).await {
                    Ok(r) => r.ttl() < 0,
                    Err(_) => true,
                };
                if gone && lease != 0 {
                    log.record_at(at_us, Event::LeaseExpired { lease_id: lease });
                }
                log.record_at(
                    at_us,
                    Event::KeyDeleted {
                        key,
                        create_revision: prev.create_revision(),
                        cause: if gone { "expired" } else { "deleted" }.into(),
                    },
                );
            }
        }
    }
}

/// Logs `etcd_leader_elected` each time the leader or its term changes ; runs until aborted.
pub async fn watch_leader(urls: Vec<String>, log: EventLog) {
    let http = reqwest::Client::builder()
        .build()
        .expect("a plain HTTP client builds");
    let mut last: Option<(String, u64)> = None;
    loop {
        let at_us = log.clock().now_us();
        if let Some(now) = leader_among(&http, &urls).await {
            if last.as_ref() != Some(&now) {
                log.record_at(
                    at_us,
                    Event::EtcdLeaderElected {
                        member: now.0.clone(),
                        term: now.1,
                    },
                );
                last = Some(now);
            }
        }
        tokio::time::sleep(Duration::from_millis(LEADER_POLL_MS)).await;
    }
}
