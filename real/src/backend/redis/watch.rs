//! The Redis lock's observer: when the lock key goes, and under which token, as the live
//! Redis reports it through keyspace notifications.
//!
//! The supervisor subscribes, directly (no proxy: the observer is not part of the system
//! under test), to the keyspace channels of the lock key and of its token counter
//! (`__keyspace@0__:<key>` and `__keyspace@0__:<key>:token`; the server runs with
//! `notify-keyspace-events Kg$x`, see [`crate::backend::redis::server`]). Redis publishes an event
//! as it executes the command (or expires the key), in order, so:
//! - `expired` on the lock key: the lock's TTL ran out and Redis removed it (lazily, when
//!   a candidate's `SET NX` touched it, or by its active cycle): `key_deleted` with cause
//!   `expired`;
//! - `del` on the lock key: a holder released it (the compare-and-delete script, or the
//!   plain `DEL` of the bug): cause `deleted`;
//! - `incrby` on the counter: a holder drew a fencing token (`INCR`), so the lock's
//!   token is one more.
//!
//! `key_deleted`'s `create_revision` is the token of the lock that went, as the
//! simulated Redis records it: the counter's value (0 for `redis-naive`, which never
//! increments it). Each event is stamped when the notification arrived.
//!
//! A subscription that breaks (Redis killed or restarted) is made again after a pause
//! from `backoff`; the counter is read again then (a restarted Redis without
//! persistence starts it from nothing, and so does the next holder's token).

use crate::backoff::Backoff;
use crate::events::{Event, EventLog};
use futures::StreamExt;
use std::net::SocketAddr;

/// Logs the lock key's deletions (see the module doc) until the task is aborted.
pub async fn watch_lock(addr: SocketAddr, key: String, log: EventLog, mut backoff: Backoff) {
    let token_key = format!("{key}:token");
    let lock_channel = format!("__keyspace@0__:{key}");
    let token_channel = format!("__keyspace@0__:{token_key}");
    let url = format!("redis://{addr}/");
    loop {
        let Ok(client) = redis::Client::open(url.as_str()) else {
            return;
        };
        let Ok(mut pubsub) = client.get_async_pubsub().await else {
            tokio::time::sleep(backoff.failed()).await;
            continue;
        };
        if pubsub.subscribe(&lock_channel).await.is_err()
            || pubsub.subscribe(&token_channel).await.is_err()
        {
            tokio::time::sleep(backoff.failed()).await;
            continue;
        }
        // Read after subscribing: no increment is missed between the two.
        let Some(mut token) = read_token(&client, &token_key).await else {
            tokio::time::sleep(backoff.failed()).await;
            continue;
        };
        backoff.succeeded();
        let mut messages = pubsub.into_on_message();
        while let Some(msg) = messages.next().await {
            let Ok(event) = msg.get_payload::<String>() else {
                continue;
            };
            let channel = msg.get_channel_name();
            if channel == token_channel {
                if event == "incrby" {
                    token += 1;
                }
                continue;
            }
            let cause = match event.as_str() {
                "expired" => "expired",
                "del" => "deleted",
                _ => continue,
            };
            log.record(Event::KeyDeleted {
                key: key.clone(),
                create_revision: token,
                cause: cause.to_string(),
            });
        }
        tokio::time::sleep(backoff.failed()).await;
    }
}

/// The token counter's value now (0 when it does not exist), or `None` if Redis does not
/// answer.
async fn read_token(client: &redis::Client, token_key: &str) -> Option<i64> {
    use redis::AsyncCommands;
    let mut c = client.get_multiplexed_async_connection().await.ok()?;
    let v: Option<i64> = c.get(token_key).await.ok()?;
    Some(v.unwrap_or(0))
}
