//! Watches: `WatchClient`, `WatchOptions`, `WatchFilterType` and the stream's halves,
//! as etcd-client 0.21 has them. The stream itself is a task on the calling node
//! (`watch_task.rs`) that polls the member the client talks to.

use super::connection::Connection;
use super::error::{Error, Result};
use super::options::KeyRange;
use super::watch_response::WatchResponse;
use super::watch_task::{Create, StreamReq, StreamTask};
use baton_sim::world::service::etcd::watch_messages::WatchSpec;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// Client for watch operations.
#[derive(Clone)]
pub struct WatchClient {
    conn: Arc<Connection>,
}

impl WatchClient {
    pub(crate) fn new(conn: Arc<Connection>) -> Self {
        WatchClient { conn }
    }

    /// Limits the maximum size of a decoded message. Accepted and kept: the simulation
    /// decodes nothing.
    pub fn max_decoding_message_size(self, _limit: usize) -> Self {
        self
    }

    /// Watches for events happening or that have happened. One watch stream can watch
    /// on multiple key ranges; the event history can be watched from the oldest
    /// revision the member keeps. Fails as a call does when the member it talks to is
    /// dead; the first message on the stream is the watch's `created` response.
    pub async fn watch(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<WatchOptions>,
    ) -> Result<WatchStream> {
        let create = options.unwrap_or_default().with_key(key).into_create();
        open(&self.conn, create).await
    }
}

/// Opens a stream with its first watch.
pub(crate) async fn open(conn: &Arc<Connection>, create: Create) -> Result<WatchStream> {
    let at = conn.check_open().await?;
    let (req_tx, req_rx) = mpsc::channel(100);
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let mut task = StreamTask::new(conn.clone(), at, out_tx);
    task.handle(StreamReq::Create(create));
    madsim::task::spawn(task.run(req_rx));
    Ok(WatchStream {
        request_sender: WatchRequestSender(req_tx),
        response_stream: WatchResponseStream(out_rx),
    })
}

/// Options for `Watch` operation.
#[derive(Debug, Default, Clone)]
pub struct WatchOptions {
    key_range: KeyRange,
    start_revision: i64,
    progress_notify: bool,
    filters: Vec<WatchFilterType>,
    prev_kv: bool,
    watch_id: i64,
}

impl WatchOptions {
    /// Sets key.
    pub fn with_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.key_range.key = key.into();
        self
    }

    /// Creates a new `WatchOptions`.
    pub const fn new() -> Self {
        WatchOptions {
            key_range: KeyRange::new(),
            start_revision: 0,
            progress_notify: false,
            filters: Vec::new(),
            prev_kv: false,
            watch_id: 0,
        }
    }

    /// Sets the end of the range `[key, end)` to watch. If `end` is not given, only the
    /// key argument is watched. If `end` is equal to `\0`, all keys greater than or
    /// equal to the key argument are watched.
    pub fn with_range(mut self, end: impl Into<Vec<u8>>) -> Self {
        self.key_range.with_range(end.into());
        self
    }

    /// Watches all keys >= key.
    pub fn with_from_key(mut self) -> Self {
        let r = &mut self.key_range;
        (r.from_key, r.prefix, r.all_keys) = (true, false, false);
        self
    }

    /// Watches all keys prefixed with key.
    pub fn with_prefix(mut self) -> Self {
        let r = &mut self.key_range;
        (r.prefix, r.from_key, r.all_keys) = (true, false, false);
        self
    }

    /// Watches all keys.
    pub fn with_all_keys(mut self) -> Self {
        let r = &mut self.key_range;
        (r.all_keys, r.prefix, r.from_key) = (true, false, false);
        self
    }

    /// Sets the revision to watch from (inclusive). No `start_revision` is "now".
    pub const fn with_start_revision(mut self, revision: i64) -> Self {
        self.start_revision = revision;
        self
    }

    /// The member sends a `WatchResponse` with no events to the watcher when it had none
    /// for a while (etcd's default interval, 10 minutes).
    pub const fn with_progress_notify(mut self) -> Self {
        self.progress_notify = true;
        self
    }

    /// Filter the events at server side before it sends back to the watcher.
    pub fn with_filters(mut self, filters: impl Into<Vec<WatchFilterType>>) -> Self {
        self.filters = filters.into();
        self
    }

    /// If `prev_kv` is set, created watcher gets the previous KV before the event
    /// happens.
    pub const fn with_prev_key(mut self) -> Self {
        self.prev_kv = true;
        self
    }

    /// If `watch_id` is provided and non-zero, it will be assigned to this watcher; an
    /// id already in use on the stream gets the watch canceled at creation.
    pub const fn with_watch_id(mut self, watch_id: i64) -> Self {
        self.watch_id = watch_id;
        self
    }

    /// Enables splitting large revisions into multiple watch responses. Accepted: the
    /// simulation never splits a revision.
    pub const fn with_fragment(self) -> Self {
        self
    }

    pub(crate) fn into_create(self) -> Create {
        let (key, range_end) = self.key_range.build();
        Create {
            spec: WatchSpec {
                key,
                range_end,
                no_put: self.filters.contains(&WatchFilterType::NoPut),
                no_delete: self.filters.contains(&WatchFilterType::NoDelete),
                prev_kv: self.prev_kv,
            },
            start_revision: self.start_revision,
            progress_notify: self.progress_notify,
            watch_id: self.watch_id,
        }
    }
}

/// Watch filter type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
pub enum WatchFilterType {
    /// Filter out put event.
    NoPut = 0,
    /// Filter out delete event.
    NoDelete = 1,
}

/// The watching handle: the request sender and the response stream of one stream.
#[derive(Debug)]
pub struct WatchStream {
    request_sender: WatchRequestSender,
    response_stream: WatchResponseStream,
}

impl WatchStream {
    /// Send watch request in the existing watch stream.
    pub async fn watch(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<WatchOptions>,
    ) -> Result<()> {
        self.request_sender.watch(key, options).await
    }

    /// Cancels watch by specified `watch_id`.
    pub async fn cancel(&mut self, watch_id: i64) -> Result<()> {
        self.request_sender.cancel(watch_id).await
    }

    /// Requests a watch stream progress status be sent in the watch response stream as
    /// soon as possible.
    pub async fn request_progress(&mut self) -> Result<()> {
        self.request_sender.request_progress().await
    }

    /// Receive [`WatchResponse`] from this watch stream.
    pub async fn message(&mut self) -> Result<Option<WatchResponse>> {
        self.response_stream.message().await
    }

    /// Splits the watch stream into a request sender and a response receiver (stream).
    pub fn split(self) -> (WatchRequestSender, WatchResponseStream) {
        (self.request_sender, self.response_stream)
    }
}

/// The sender for sending watch requests in the existing watch stream.
#[derive(Debug)]
pub struct WatchRequestSender(mpsc::Sender<StreamReq>);

impl WatchRequestSender {
    async fn send(&mut self, req: StreamReq) -> Result<()> {
        self.0
            .send(req)
            .await
            .map_err(|e| Error::WatchError(e.to_string()))
    }

    /// Send watch request in the existing watch stream.
    pub async fn watch(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<WatchOptions>,
    ) -> Result<()> {
        let create = options.unwrap_or_default().with_key(key).into_create();
        self.send(StreamReq::Create(create)).await
    }

    /// Cancels watch by specified `watch_id`.
    pub async fn cancel(&mut self, watch_id: i64) -> Result<()> {
        self.send(StreamReq::Cancel(watch_id)).await
    }

    /// Requests a watch stream progress status be sent in the watch response stream as
    /// soon as possible.
    pub async fn request_progress(&mut self) -> Result<()> {
        self.send(StreamReq::Progress).await
    }
}

/// The response stream for receiving watch responses in the existing watch stream.
#[derive(Debug)]
pub struct WatchResponseStream(mpsc::UnboundedReceiver<Result<WatchResponse>>);

impl WatchResponseStream {
    /// Receive [`WatchResponse`] from this watch response stream: `Ok(None)` once the
    /// stream ended, after its error if it broke.
    pub async fn message(&mut self) -> Result<Option<WatchResponse>> {
        self.0.recv().await.transpose()
    }
}

impl futures::Stream for WatchResponseStream {
    type Item = Result<WatchResponse>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().0.poll_recv(cx)
    }
}

impl futures::Stream for WatchStream {
    type Item = Result<WatchResponse>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.get_mut().response_stream).poll_next(cx)
    }
}
