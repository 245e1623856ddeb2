//! The election's options, responses, key and stream, with etcd-client 0.21's shapes.

use super::error::Result;
use super::key_value::{KeyValue, ResponseHeader};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// Leader key of election.
#[derive(Debug, Clone, Default)]
pub struct LeaderKey {
    pub(crate) name: Vec<u8>,
    pub(crate) key: Vec<u8>,
    pub(crate) rev: i64,
    pub(crate) lease: i64,
}

impl LeaderKey {
    /// Creates a new leader key.
    pub const fn new() -> Self {
        LeaderKey {
            name: Vec::new(),
            key: Vec::new(),
            rev: 0,
            lease: 0,
        }
    }

    /// The election identifier that corresponds to the leadership key.
    pub fn with_name(mut self, name: impl Into<Vec<u8>>) -> Self {
        self.name = name.into();
        self
    }

    /// An opaque key representing the ownership of the election.
    pub fn with_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.key = key.into();
        self
    }

    /// The creation revision of the key.
    pub const fn with_rev(mut self, rev: i64) -> Self {
        self.rev = rev;
        self
    }

    /// The lease ID of the election leader.
    pub const fn with_lease(mut self, lease: i64) -> Self {
        self.lease = lease;
        self
    }

    /// The name in byte. name is the election identifier that corresponds to the
    /// leadership key.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// The name in string.
    pub fn name_str(&self) -> Result<&str> {
        std::str::from_utf8(self.name()).map_err(From::from)
    }

    /// The name in string, unchecked.
    ///
    /// # Safety
    /// The name must be valid UTF-8.
    pub unsafe fn name_str_unchecked(&self) -> &str {
        std::str::from_utf8_unchecked(self.name())
    }

    /// The key in byte: an opaque key representing the ownership of the election.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The key in string.
    pub fn key_str(&self) -> Result<&str> {
        std::str::from_utf8(self.key()).map_err(From::from)
    }

    /// The key in string, unchecked.
    ///
    /// # Safety
    /// The key must be valid UTF-8.
    pub unsafe fn key_str_unchecked(&self) -> &str {
        std::str::from_utf8_unchecked(self.key())
    }

    /// The creation revision of the key: a fencing token, monotonic across leaderships.
    pub const fn rev(&self) -> i64 {
        self.rev
    }

    /// The lease ID of the election leader.
    pub const fn lease(&self) -> i64 {
        self.lease
    }
}

/// Options for `proclaim` operation.
#[derive(Debug, Default, Clone)]
pub struct ProclaimOptions {
    pub(crate) leader: Option<LeaderKey>,
}

impl ProclaimOptions {
    /// Creates a `ProclaimOptions`.
    pub const fn new() -> Self {
        ProclaimOptions { leader: None }
    }

    /// The leadership hold on the election.
    pub fn with_leader(mut self, leader: LeaderKey) -> Self {
        self.leader = Some(leader);
        self
    }
}

/// Options for `resign` operation.
#[derive(Debug, Default, Clone)]
pub struct ResignOptions {
    pub(crate) leader: Option<LeaderKey>,
}

impl ResignOptions {
    /// Create a new `ResignOptions`.
    pub const fn new() -> Self {
        ResignOptions { leader: None }
    }

    /// The leader to relinquish by resignation.
    pub fn with_leader(mut self, leader: LeaderKey) -> Self {
        self.leader = Some(leader);
        self
    }
}

/// Response for `Campaign` operation.
#[derive(Debug, Clone)]
pub struct CampaignResponse {
    pub(crate) header: Option<ResponseHeader>,
    pub(crate) leader: Option<LeaderKey>,
}

impl CampaignResponse {
    /// Get response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }

    /// Takes the header out of the response, leaving a [`None`] in its place.
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        self.header.take()
    }

    /// The resources used for holding leadership of the election.
    pub fn leader(&self) -> Option<&LeaderKey> {
        self.leader.as_ref()
    }

    /// Takes the leader out of the response, leaving a [`None`] in its place.
    pub fn take_leader(&mut self) -> Option<LeaderKey> {
        self.leader.take()
    }
}

/// Response for `Proclaim` operation.
#[derive(Debug, Clone)]
pub struct ProclaimResponse {
    pub(crate) header: Option<ResponseHeader>,
}

impl ProclaimResponse {
    /// Get response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }

    /// Takes the header out of the response, leaving a [`None`] in its place.
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        self.header.take()
    }
}

/// Response for `Leader` operation (and each message of an observe stream).
#[derive(Debug, Clone)]
pub struct LeaderResponse {
    pub(crate) header: Option<ResponseHeader>,
    pub(crate) kv: Option<KeyValue>,
}

impl LeaderResponse {
    /// Get response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }

    /// Takes the header out of the response, leaving a [`None`] in its place.
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        self.header.take()
    }

    /// The key-value pair representing the latest leader update.
    pub fn kv(&self) -> Option<&KeyValue> {
        self.kv.as_ref()
    }

    /// Takes the key-value pair out of the response, leaving a [`None`] in its place.
    pub fn take_kv(&mut self) -> Option<KeyValue> {
        self.kv.take()
    }
}

/// Response for `Resign` operation.
#[derive(Debug, Clone)]
pub struct ResignResponse {
    pub(crate) header: Option<ResponseHeader>,
}

impl ResignResponse {
    /// Get response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }

    /// Takes the header out of the response, leaving a [`None`] in its place.
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        self.header.take()
    }
}

/// Response for `Observe` operation: the leader now, then each change.
#[derive(Debug)]
pub struct ObserveStream {
    pub(crate) receiver: mpsc::UnboundedReceiver<Result<LeaderResponse>>,
}

impl ObserveStream {
    /// Fetches the next message from this stream.
    pub async fn message(&mut self) -> Result<Option<LeaderResponse>> {
        self.receiver.recv().await.transpose()
    }
}

impl futures::Stream for ObserveStream {
    type Item = Result<LeaderResponse>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().receiver.poll_recv(cx)
    }
}
