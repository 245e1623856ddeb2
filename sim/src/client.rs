//! The sequencer load: a client sending `next` at a fixed rate to whoever it believes
//! leads, following `NotLeader` hints, and checking what it is handed; and, where the
//! protocol serves them, `read`s of the last number at their own rate (the stale-read
//! checker judges those from the timeline, where the leader records each answer).
//!
//! Requests are concurrent and replies cross a network with random latency, so the order
//! replies arrive in says nothing about the order numbers were handed out; the client
//! checks reuse only. Order is checked at the resource, batch by batch.

use crate::clock::global_now_us;
use crate::rpc::{call, node_addr, Next, NextReply, Read, ReadReply, CLIENT_ADDR};
use madsim::net::Endpoint;
use serde::Serialize;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the client saw over the run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ClientStats {
    /// Requests sent.
    pub sent: u64,
    /// Replies with a sequence number.
    pub ok: u64,
    /// Replies saying "not the leader".
    pub not_leader: u64,
    /// Requests that got no answer in time, or whose leader could not write in time.
    pub timeouts: u64,
    /// Replies whose seq had already been handed out before.
    pub reused: u64,
    /// Reads sent.
    pub reads_sent: u64,
    /// Reads answered with a value.
    pub reads_ok: u64,
}

#[derive(Default)]
struct Seen {
    stats: ClientStats,
    /// Membership only, never iterated: the order of a HashSet never reaches output.
    handed_out: HashSet<u64>,
}

/// The client's shared record, read by the run at the end.
#[derive(Clone, Default)]
pub struct ClientRecord(Arc<Mutex<Seen>>);

impl ClientRecord {
    /// The counts so far.
    pub fn stats(&self) -> ClientStats {
        self.0.lock().unwrap().stats.clone()
    }
}

/// Ports the client's endpoints cycle through.
const CLIENT_PORTS: std::ops::Range<u64> = 10_000..60_000;

/// How long one client endpoint takes new requests before the next one takes over.
const ENDPOINT_ROTATE_MS: u64 = 10;

/// Sends `rate_per_s` `next` requests and `read_rate_per_s` reads per second to `nodes`
/// nodes until the node is killed.
///
/// A madsim endpoint never forgets a timed-out call: its reply slot stays registered (and
/// a late reply is kept forever), and every delivery scans them. With one endpoint for the
/// whole run the simulation slows quadratically with the number of timeouts. So the
/// client opens a fresh endpoint every 10 ms of simulated time, as a real client opens
/// new connections; each old one is dropped, with its dead slots, once its last request
/// is done. Ports rotate through 50,000 values, far more than are ever in use at once.
pub async fn run(
    record: ClientRecord,
    nodes: usize,
    rate_per_s: u64,
    read_rate_per_s: u64,
    timeout_ms: u64,
) {
    if rate_per_s == 0 && read_rate_per_s == 0 {
        return futures::future::pending().await;
    }
    // Index (0-based) of the node the client believes leads, for writes and for reads:
    // each follows its own answers.
    let target = Arc::new(Mutex::new(0usize));
    let read_target = Arc::new(Mutex::new(0usize));
    let mut read_credit = 0u64;
    let mut opened = 0u64;
    let mut ep = Arc::new(open(opened).await);
    let mut ep_opened_us = global_now_us();
    // Requests owed, in units of 1/1,000,000 request: credit accrues with the simulated
    // time that actually passed (binding an endpoint takes some), so the rate holds.
    let mut credit = 0u64;
    let mut last_us = global_now_us();
    loop {
        madsim::time::sleep(Duration::from_millis(1)).await;
        let now_us = global_now_us();
        credit += rate_per_s * (now_us - last_us) as u64;
        read_credit += read_rate_per_s * (now_us - last_us) as u64;
        last_us = now_us;
        for _ in 0..credit / 1_000_000 {
            let (ep, target, record) = (ep.clone(), target.clone(), record.clone());
            madsim::task::spawn(async move { one(&ep, target, record, nodes, timeout_ms).await });
        }
        credit %= 1_000_000;
        for _ in 0..read_credit / 1_000_000 {
            let (ep, target, record) = (ep.clone(), read_target.clone(), record.clone());
            madsim::task::spawn(
                async move { one_read(&ep, target, record, nodes, timeout_ms).await },
            );
        }
        read_credit %= 1_000_000;
        if now_us - ep_opened_us >= ENDPOINT_ROTATE_MS as i64 * 1000 {
            opened += 1;
            ep = Arc::new(open(opened).await);
            ep_opened_us = now_us;
        }
    }
}

async fn open(n: u64) -> Endpoint {
    let port = (CLIENT_PORTS.start + n % (CLIENT_PORTS.end - CLIENT_PORTS.start)) as u16;
    match Endpoint::bind((CLIENT_ADDR.ip(), port)).await {
        Ok(ep) => ep,
        Err(_) => Endpoint::bind((CLIENT_ADDR.ip(), 0))
            .await
            .expect("a free client port"),
    }
}

/// Moves `target` on from node `t` (0-based), which did not answer as leader: to the
/// hinted node if there is a usable hint, else to the next node unless another request
/// already moved it.
fn follow(target: &Mutex<usize>, t: usize, hint: Option<String>, nodes: usize) {
    let hinted = hint.and_then(|h| h.strip_prefix('n').and_then(|i| i.parse::<usize>().ok()));
    let mut cur = target.lock().unwrap();
    match hinted {
        Some(i) if (1..=nodes).contains(&i) && i - 1 != t => *cur = i - 1,
        _ if *cur == t => *cur = (t + 1) % nodes,
        _ => {}
    }
}

/// One read: the answer itself is judged from the timeline, where the leader recorded it.
async fn one_read(
    ep: &Endpoint,
    target: Arc<Mutex<usize>>,
    record: ClientRecord,
    nodes: usize,
    timeout_ms: u64,
) {
    let t = *target.lock().unwrap();
    record.0.lock().unwrap().stats.reads_sent += 1;
    let req = Read {
        sent_at_us: global_now_us(),
    };
    match call(ep, node_addr(t + 1), req, timeout_ms).await {
        Ok(ReadReply::Value { .. }) => record.0.lock().unwrap().stats.reads_ok += 1,
        Ok(ReadReply::NotLeader { hint }) => follow(&target, t, hint, nodes),
        Err(_) => follow(&target, t, None, nodes),
    }
}

async fn one(
    ep: &Endpoint,
    target: Arc<Mutex<usize>>,
    record: ClientRecord,
    nodes: usize,
    timeout_ms: u64,
) {
    let t = *target.lock().unwrap();
    record.0.lock().unwrap().stats.sent += 1;
    let reply = call(ep, node_addr(t + 1), Next, timeout_ms).await;
    let mut seen = record.0.lock().unwrap();
    match reply {
        Ok(NextReply::Ok { seq, .. }) => {
            seen.stats.ok += 1;
            if !seen.handed_out.insert(seq) {
                seen.stats.reused += 1;
            }
        }
        Ok(NextReply::NotLeader { hint }) => {
            seen.stats.not_leader += 1;
            follow(&target, t, hint, nodes);
        }
        Ok(NextReply::Unavailable) => seen.stats.timeouts += 1,
        Err(_) => {
            seen.stats.timeouts += 1;
            follow(&target, t, None, nodes);
        }
    }
}
