//! The election's observer on ZooKeeper: every candidate's znode that goes, with the
//! zxid that created it (the token of a leader that held it), as the live server reports
//! it.
//!
//! The supervisor makes the election's parent znode before the fleet starts
//! ([`create_parent`]), then watches its children with a session of its own, directly
//! (no proxy: the observer is not part of the system under test). Each change of the
//! children is read again with a new watch; a child that is gone is logged as
//! `key_deleted` (cause `deleted`: the server removed it with its session, expired or
//! closed, or its owner deleted it; ZooKeeper does not say which), with the `czxid`
//! read when the child first appeared. Each is stamped when the notification arrived.
//!
//! A session that ends (the server killed or restarted past the observer's timeout) is
//! made again after a pause from `backoff`.

use crate::backoff::Backoff;
use crate::events::{Event, EventLog};
use std::collections::BTreeMap;
use zookeeper_client as zk;

/// Makes the election's parent znode `path` (and its ancestors), directly on the server.
pub async fn create_parent(connect: &str, path: &str) -> Result<(), super::ZkSetupError> {
    let c = zk::Client::connect(connect)
        .await
        .map_err(|source| super::ZkSetupError::Connect {
            connect: connect.to_string(),
            source,
        })?;
    let options = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    match c.mkdir(path, &options).await {
        Ok(()) | Err(zk::Error::NodeExists) => Ok(()),
        Err(source) => Err(super::ZkSetupError::Parent {
            path: path.to_string(),
            source,
        }),
    }
}

/// Logs the deletions of `path`'s children (see the module doc) until the task is
/// aborted.
pub async fn watch_children(connect: String, path: String, log: EventLog, mut backoff: Backoff) {
    // Each child seen, with its czxid: kept across sessions of the observer.
    let mut known: BTreeMap<String, i64> = BTreeMap::new();
    loop {
        let Ok(c) = zk::Client::connect(&connect).await else {
            tokio::time::sleep(backoff.failed()).await;
            continue;
        };
        backoff.succeeded();
        // When the last notification arrived: what the next listing finds gone, went then.
        let mut fired_us = log.clock().now_us();
        loop {
            let Ok((children, watcher)) = c.list_and_watch_children(&path).await else {
                break;
            };
            let at_us = fired_us;
            let gone: Vec<String> = known
                .keys()
                .filter(|k| !children.contains(k))
                .cloned()
                .collect();
            for child in gone {
                let czxid = known.remove(&child).unwrap_or(0);
                log.record_at(
                    at_us,
                    Event::KeyDeleted {
                        key: format!("{path}/{child}"),
                        create_revision: czxid,
                        cause: "deleted".to_string(),
                    },
                );
            }
            for child in children {
                if known.contains_key(&child) {
                    continue;
                }
                if let Ok(Some(s)) = c.check_stat(&format!("{path}/{child}")).await {
                    known.insert(child, s.czxid);
                }
            }
            let ev = watcher.changed().await;
            fired_us = log.clock().now_us();
            if ev.event_type == zk::EventType::Session {
                break;
            }
        }
        tokio::time::sleep(backoff.failed()).await;
    }
}
