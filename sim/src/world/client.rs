//! The sequencer load: a client sending `next` at a fixed rate to whoever it believes
//! leads, following `NotLeader` hints, and checking what it is handed; and, where the
//! protocol serves them, `read`s of the last number at their own rate (the stale-read
//! checker judges those from the timeline, where the leader records each answer).
//!
//! **Load per quantum.** Requests arrive at the client at the scenario's rate. Every
//! `client_quantum_ms` (1 ms by default) the client sends the requests that arrived in
//! that quantum as one message, a [`NextBatch`] of `count` requests, and the node answers
//! the batch as a whole. Each request keeps its own accounting: it is sent, and then
//! answered with its own number, told "not the leader", or timed out, one by one in the
//! counts below. Why this is faithful: a node treats the requests of one batch exactly as
//! it treated the same requests arriving one by one within a millisecond (a leader puts
//! every request waiting when its write starts into that write), so the numbers handed
//! out, the writes at the resource and every timeline event are what they would be. What
//! it gives up: requests of one quantum travel with one latency draw instead of one each,
//! wait up to one quantum at the client before they leave, and share their fate (lost,
//! timed out, or sent to the wrong node together). Timeouts are judged per batch against
//! its send time. The cost of the load is then per quantum, not per request: 50,000
//! requests a second cost what 1,000 do.
//!
//! Requests are concurrent and replies cross a network with random latency, so the order
//! replies arrive in says nothing about the order numbers were handed out; the client
//! checks reuse only. Order is checked at the resource, batch by batch.

use crate::world::clock::global_now_us;
use crate::world::net::Endpoint;
use crate::world::rpc::{
    node_addr, NextAnswers, NextBatch, NextReply, ReadAnswer, ReadBatch, ReadReply, CLIENT_ADDR,
};
use baton_model::NodeId;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use baton_model::checker::client_stats::{ClientStats, SentOk, SLICE_US};

/// The sequence numbers handed out so far, as disjoint ranges: numbers come in long runs,
/// so this stays a handful of ranges however long the run.
#[derive(Default)]
struct Ranges(BTreeMap<u64, u64>);

impl Ranges {
    /// Adds `first..=last`; returns how many of those numbers were already in.
    fn insert(&mut self, first: u64, last: u64) -> u64 {
        let (mut lo, mut hi, mut overlap) = (first, last, 0);
        // Every range that overlaps or touches first..=last starts at or before last + 1
        // and ends at or after first - 1.
        let touching: Vec<(u64, u64)> = self
            .0
            .range(..=last.saturating_add(1))
            .rev()
            .take_while(|(_, &e)| e.saturating_add(1) >= first)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in touching {
            let (a, b) = (s.max(first), e.min(last));
            if a <= b {
                overlap += b - a + 1;
            }
            lo = lo.min(s);
            hi = hi.max(e);
            self.0.remove(&s);
        }
        self.0.insert(lo, hi);
        overlap
    }
}

/// A batch awaiting its answer.
struct Outstanding {
    count: u64,
    /// The slice of [`ClientStats::by_send_time`] it was sent in.
    slice: usize,
    /// The node (0-based) it went to.
    target: usize,
    /// When the client gives up on it (global µs).
    deadline_us: i64,
}

/// The requests of one kind (`next` or reads) in flight, and where they go.
struct Stream {
    /// Batches awaiting an answer, oldest first, with their ids (which rise with send
    /// time; every batch has the same timeout, so the first ones expire first). A batch
    /// answered out of order leaves a `None` until the ones before it are gone.
    outstanding: VecDeque<(u64, Option<Outstanding>)>,
    /// The node (0-based) the client believes leads, following this stream's answers.
    target: usize,
    /// Requests owed, in units of 1/1,000,000 request.
    credit: u64,
}

impl Stream {
    fn new() -> Self {
        Stream {
            outstanding: VecDeque::new(),
            target: 0,
            credit: 0,
        }
    }

    /// Moves the target on from node `t` (0-based), which did not answer as leader: to
    /// the hinted node if there is a usable hint, else to the next node unless an answer
    /// already moved it.
    fn follow(&mut self, t: usize, hint: Option<&NodeId>, nodes: usize) {
        let hinted = hint.and_then(NodeId::number);
        match hinted {
            Some(i) if (1..=nodes).contains(&i) && i - 1 != t => self.target = i - 1,
            _ if self.target == t => self.target = (t + 1) % nodes,
            _ => {}
        }
    }

    /// Starts awaiting batch `id` (ids rise).
    fn send(&mut self, id: u64, o: Outstanding) {
        self.outstanding.push_back((id, Some(o)));
    }

    /// Takes the batch `id` if it is still awaited and its deadline has not passed at
    /// `now_us`; a late answer is one the client has already given up on (the next
    /// quantum expires it).
    fn settle(&mut self, id: u64, now_us: i64) -> Option<Outstanding> {
        let i = self
            .outstanding
            .binary_search_by_key(&id, |(k, _)| *k)
            .ok()?;
        let slot = &mut self.outstanding[i].1;
        if slot.as_ref().is_none_or(|o| now_us > o.deadline_us) {
            return None;
        }
        let o = slot.take();
        while self.outstanding.front().is_some_and(|(_, o)| o.is_none()) {
            self.outstanding.pop_front();
        }
        o
    }

    /// Removes every batch whose deadline has passed; returns their requests, following
    /// the target away from each silent node.
    fn expire(&mut self, now_us: i64, nodes: usize) -> u64 {
        let mut timed_out = 0;
        while let Some((_, front)) = self.outstanding.front() {
            match front {
                Some(o) if o.deadline_us >= now_us => break,
                Some(_) => {
                    let o = self
                        .outstanding
                        .pop_front()
                        .and_then(|(_, o)| o)
                        .expect("some");
                    timed_out += o.count;
                    self.follow(o.target, None, nodes);
                }
                None => {
                    self.outstanding.pop_front();
                }
            }
        }
        timed_out
    }

    /// Adds the requests that arrived over `elapsed_us`; returns how many are due now.
    fn due(&mut self, rate_per_s: u64, elapsed_us: u64) -> u64 {
        self.credit += rate_per_s * elapsed_us;
        let n = self.credit / 1_000_000;
        self.credit %= 1_000_000;
        n
    }
}

struct Seen {
    stats: ClientStats,
    handed_out: Ranges,
    next: Stream,
    reads: Stream,
    nodes: usize,
}

/// The client's shared record, read by the run at the end.
#[derive(Clone)]
pub struct ClientRecord(Arc<Mutex<Seen>>);

impl ClientRecord {
    /// A record for a client of a fleet of `nodes`.
    pub fn new(nodes: usize) -> Self {
        ClientRecord(Arc::new(Mutex::new(Seen {
            stats: ClientStats::default(),
            handed_out: Ranges::default(),
            next: Stream::new(),
            reads: Stream::new(),
            nodes,
        })))
    }

    /// The counts so far.
    pub fn stats(&self) -> ClientStats {
        self.0.lock().unwrap().stats.clone()
    }

    fn on_next(&self, answers: NextAnswers) {
        let now_us = global_now_us();
        let mut guard = self.0.lock().unwrap();
        let seen = &mut *guard;
        for (id, reply) in answers.0 {
            let Some(o) = seen.next.settle(id, now_us) else {
                continue;
            };
            match reply {
                NextReply::Ok { first, last, .. } => {
                    debug_assert_eq!(last + 1 - first, o.count, "one number per request");
                    seen.stats.ok += o.count;
                    seen.stats.by_send_time[o.slice].ok += o.count;
                    seen.stats.reused += seen.handed_out.insert(first, last);
                }
                NextReply::NotLeader { hint } => {
                    seen.stats.not_leader += o.count;
                    seen.next.follow(o.target, hint.as_ref(), seen.nodes);
                }
                NextReply::Unavailable => seen.stats.timeouts += o.count,
            }
        }
    }

    fn on_read(&self, answer: ReadAnswer) {
        let now_us = global_now_us();
        let mut guard = self.0.lock().unwrap();
        let seen = &mut *guard;
        let ReadAnswer(id, reply) = answer;
        let Some(o) = seen.reads.settle(id, now_us) else {
            return;
        };
        match reply {
            ReadReply::Value { .. } => seen.stats.reads_ok += o.count,
            ReadReply::NotLeader { hint } => seen.reads.follow(o.target, hint.as_ref(), seen.nodes),
        }
    }
}

/// Sends `rate_per_s` `next` requests and `read_rate_per_s` reads per second, one batch of
/// each per `quantum_ms`, until the node is killed.
pub async fn run(
    record: ClientRecord,
    rate_per_s: u64,
    read_rate_per_s: u64,
    timeout_ms: u64,
    quantum_ms: u64,
) {
    if rate_per_s == 0 && read_rate_per_s == 0 {
        return futures::future::pending().await;
    }
    let ep = Endpoint::bind(CLIENT_ADDR).expect("the client address is free");
    let r = record.clone();
    ep.add_message_handler(move |a: NextAnswers, _| r.on_next(a));
    let r = record.clone();
    ep.add_message_handler(move |a: ReadAnswer, _| r.on_read(a));
    let timeout_us = timeout_ms as i64 * 1000;
    let mut batch = 0u64;
    let mut last_us = global_now_us();
    loop {
        madsim::time::sleep(Duration::from_millis(quantum_ms)).await;
        let now_us = global_now_us();
        // Credit accrues with the simulated time that actually passed, so the rate holds.
        let elapsed_us = (now_us - last_us) as u64;
        last_us = now_us;
        let mut guard = record.0.lock().unwrap();
        let seen = &mut *guard;
        let nodes = seen.nodes;
        seen.stats.timeouts += seen.next.expire(now_us, nodes);
        seen.reads.expire(now_us, nodes);
        let count = seen.next.due(rate_per_s, elapsed_us);
        if count > 0 {
            batch += 1;
            let target = seen.next.target;
            seen.stats.sent += count;
            let slice = (now_us / SLICE_US) as usize;
            let by_time = &mut seen.stats.by_send_time;
            if by_time.len() <= slice {
                by_time.resize(slice + 1, SentOk::default());
            }
            by_time[slice].sent += count;
            seen.next.send(
                batch,
                Outstanding {
                    count,
                    slice,
                    target,
                    deadline_us: now_us + timeout_us,
                },
            );
            ep.send(node_addr(target + 1), NextBatch { batch, count });
        }
        let count = seen.reads.due(read_rate_per_s, elapsed_us);
        if count > 0 {
            batch += 1;
            let target = seen.reads.target;
            seen.stats.reads_sent += count;
            seen.reads.send(
                batch,
                Outstanding {
                    count,
                    slice: 0,
                    target,
                    deadline_us: now_us + timeout_us,
                },
            );
            let msg = ReadBatch {
                batch,
                count,
                sent_at_us: now_us,
            };
            ep.send(node_addr(target + 1), msg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_count_overlap_and_merge() {
        let mut r = Ranges::default();
        assert_eq!(r.insert(1, 10), 0);
        assert_eq!(r.insert(11, 20), 0);
        assert_eq!(r.0.len(), 1, "touching ranges merge");
        assert_eq!(r.insert(30, 40), 0);
        assert_eq!(r.insert(5, 35), 16 + 6, "5..=20 and 30..=35 were in");
        assert_eq!(r.0.len(), 1);
        assert_eq!(r.0.get(&1), Some(&40));
        assert_eq!(r.insert(41, 41), 0);
        assert_eq!(r.insert(40, 40), 1);
    }
}
