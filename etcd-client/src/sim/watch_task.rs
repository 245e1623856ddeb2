//! A watch stream's task, on the node that opened it: it keeps the stream's watches,
//! polls the member the stream was opened on, and puts what it answers on the stream.
//!
//! **A broken stream.** etcd-client 0.21 does not resume a watch on another member (Go's
//! clientv3 does): a stream whose connection breaks yields the gRPC error, then ends. So
//! here: a member whose process is dead, or dies while a poll waits on it, ends the
//! stream with `Unavailable` ("connection refused" or "connection reset"); every later
//! message is `Ok(None)`, and the request sender's sends fail.
//!
//! **A silent member** (cut off, paused) is not noticed, as a live HTTP/2 stream with no
//! keep-alive does not notice it: the stream yields nothing while it lasts. When it
//! ends, TCP would deliver what was held back; here the task polls again from the last
//! revision it delivered, so nothing is lost or repeated, and events arrive within a
//! poll's wait (`POLL_WAIT_MS`) plus `SLACK_MS` of the heal.

use super::connection::{Connection, Unanswered};
use super::error::Result;
use super::watch_response::{Event, WatchResponse};
use baton_sim::world::clock::global_now_us;
use baton_sim::world::service::etcd::v3_messages::V3Header;
use baton_sim::world::service::etcd::watch_messages::{
    WatchAsk, WatchBatch, WatchFound, WatchPoll, WatchSpec,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tonic::Status;

/// How long a poll may wait at the member for an event.
const POLL_WAIT_MS: u64 = 5_000;
/// How much longer than its wait the task waits for a poll's answer before it asks again.
const SLACK_MS: u64 = 2_000;
/// How long a watch with `progress_notify` goes without an event before the member
/// reports its progress (etcd's default interval).
const PROGRESS_NOTIFY_MS: i64 = 600_000;

/// etcd's words when a watch's range holds no key.
const EMPTY_RANGE: &str = "mvcc: watcher range is empty";
/// etcd's words when a watch asks for an id the stream already uses.
const DUPLICATE_ID: &str = "mvcc: duplicate watch ID provided on the WatchStream";

/// A watch to create on the stream, as `WatchCreateRequest` has it.
#[derive(Debug, Clone)]
pub(crate) struct Create {
    pub(crate) spec: WatchSpec,
    pub(crate) start_revision: i64,
    pub(crate) progress_notify: bool,
    pub(crate) watch_id: i64,
}

/// What the stream's user asks of it.
#[derive(Debug)]
pub(crate) enum StreamReq {
    /// Create a watch.
    Create(Create),
    /// Cancel watch `id`.
    Cancel(i64),
    /// Report the stream's progress.
    Progress,
}

/// One watch of the stream.
struct Watching {
    spec: WatchSpec,
    /// The first revision it has not seen (0: created from "now", not yet created).
    next: i64,
    created: bool,
    progress_notify: bool,
    /// When it last got something (µs, global clock).
    quiet_since_us: i64,
}

/// The stream's state.
pub(crate) struct StreamTask {
    conn: Arc<Connection>,
    /// The member the stream was opened on.
    at: usize,
    watches: BTreeMap<i64, Watching>,
    next_id: i64,
    /// Responses that need a header (creations refused, cancels): sent with the next
    /// answer's.
    pending: Vec<WatchResponse>,
    progress_asked: bool,
    out: mpsc::UnboundedSender<Result<WatchResponse>>,
}

impl StreamTask {
    pub(crate) fn new(
        conn: Arc<Connection>,
        at: usize,
        out: mpsc::UnboundedSender<Result<WatchResponse>>,
    ) -> Self {
        StreamTask {
            conn,
            at,
            watches: BTreeMap::new(),
            next_id: 0,
            pending: vec![],
            progress_asked: false,
            out,
        }
    }

    /// Takes in one request of the stream's user.
    pub(crate) fn handle(&mut self, req: StreamReq) {
        match req {
            StreamReq::Create(c) => self.create(c),
            StreamReq::Cancel(id) => {
                // etcd answers a cancel of an id it does not know with nothing.
                if self.watches.remove(&id).is_some() {
                    let mut r = WatchResponse::of(V3Header::default(), id);
                    r.canceled = true;
                    self.pending.push(r);
                }
            }
            StreamReq::Progress => self.progress_asked = true,
        }
    }

    fn create(&mut self, c: Create) {
        let id = if c.watch_id != 0 {
            c.watch_id
        } else {
            // etcd's next free id on the stream.
            while self.watches.contains_key(&self.next_id) {
                self.next_id += 1;
            }
            self.next_id += 1;
            self.next_id - 1
        };
        let (key, end) = (&c.spec.key, &c.spec.range_end);
        let empty = !end.is_empty() && end.as_slice() != [0] && key >= end;
        let refusal = if empty {
            Some(EMPTY_RANGE)
        } else if self.watches.contains_key(&id) {
            Some(DUPLICATE_ID)
        } else {
            None
        };
        if let Some(why) = refusal {
            let mut r = WatchResponse::of(V3Header::default(), id);
            (r.created, r.canceled, r.cancel_reason) = (true, true, why.into());
            self.pending.push(r);
            return;
        }
        self.watches.insert(
            id,
            Watching {
                spec: c.spec,
                next: c.start_revision.max(0),
                created: false,
                progress_notify: c.progress_notify,
                quiet_since_us: global_now_us(),
            },
        );
    }

    /// Whether something waits for an answer (then a poll must not wait at the member).
    fn urgent(&self) -> bool {
        self.progress_asked || !self.pending.is_empty() || self.watches.values().any(|w| !w.created)
    }

    fn poll(&self) -> WatchPoll {
        WatchPoll {
            watches: self
                .watches
                .iter()
                .map(|(id, w)| WatchAsk {
                    id: *id,
                    spec: w.spec.clone(),
                    from: w.next,
                })
                .collect(),
            wait_ms: if self.urgent() { 0 } else { POLL_WAIT_MS },
        }
    }

    /// Runs the stream until its member fails it or its user drops the response half.
    pub(crate) async fn run(mut self, requests: mpsc::Receiver<StreamReq>) {
        let mut requests = Some(requests);
        loop {
            if self.out.is_closed() {
                return;
            }
            let poll = self.poll();
            let timeout = Duration::from_millis(poll.wait_ms + SLACK_MS);
            let (conn, out) = (self.conn.clone(), self.out.clone());
            let answer = conn.ask(self.at, poll, timeout);
            let dropped = out.closed();
            let next_req = async {
                match requests.as_mut() {
                    Some(r) => r.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                a = answer => match a {
                    Ok(batch) => self.deliver(batch),
                    Err(Unanswered::Dead(why)) => {
                        let _ = self.out.send(Err(Status::unavailable(why).into()));
                        return;
                    }
                    // Polled again from where it stands: TCP's retransmission.
                    Err(Unanswered::Silent) => {}
                },
                r = next_req => match r {
                    Some(r) => self.handle(r),
                    None => requests = None,
                },
                // The user dropped the response half: the stream is closed.
                _ = dropped => return,
            }
        }
    }

    fn send(&self, r: WatchResponse) {
        let _ = self.out.send(Ok(r));
    }

    /// Puts a member's answer on the stream: per watch in id order, its creation, its
    /// events or its compaction, its progress; then the stream's progress if asked.
    fn deliver(&mut self, batch: WatchBatch) {
        let header = batch.header;
        for mut r in std::mem::take(&mut self.pending) {
            r.header.0 = header;
            self.send(r);
        }
        let now = global_now_us();
        for (id, found) in batch.found {
            let Some(w) = self.watches.get_mut(&id) else {
                continue;
            };
            let mut out = vec![];
            if !w.created {
                w.created = true;
                let mut r = WatchResponse::of(header, id);
                r.created = true;
                out.push(r);
            }
            match found {
                WatchFound::Events(events) => {
                    if !events.is_empty() {
                        let mut r = WatchResponse::of(header, id);
                        r.events = events.into_iter().map(Event::new).collect();
                        out.push(r);
                        w.quiet_since_us = now;
                    } else if w.progress_notify
                        && now - w.quiet_since_us >= PROGRESS_NOTIFY_MS * 1000
                    {
                        out.push(WatchResponse::of(header, id));
                        w.quiet_since_us = now;
                    }
                    w.next = w.next.max(header.revision + 1);
                }
                WatchFound::Compacted(rev) => {
                    let mut r = WatchResponse::of(header, id);
                    (r.compact_revision, r.canceled) = (rev, true);
                    out.push(r);
                    self.watches.remove(&id);
                }
            }
            out.into_iter().for_each(|r| self.send(r));
        }
        if std::mem::take(&mut self.progress_asked) {
            // etcd 3.5 answers a progress request with one response for the stream.
            self.send(WatchResponse::of(header, -1));
        }
    }
}
