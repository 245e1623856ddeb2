//! Leases: `LeaseClient`, the keeper and its stream, options and responses, as
//! etcd-client 0.21 has them. TTLs are whole seconds here, as in etcd's API; the
//! simulated lessor keeps milliseconds and judges expiry on its leader's clock.

use super::connection::{unexpected, unexpected_v3, Connection};
use super::error::{Error, Result};
use super::key_value::ResponseHeader;
use baton_sim::world::service::etcd::v3_messages::{V3Header, V3Reply, V3Request};
use baton_sim::world::service::etcd_cluster::{Op, Reply};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;

/// The header of a grant or a keep-alive, which the simulated lessor answers without
/// one (stage 1): zeros.
const NO_HEADER: ResponseHeader = ResponseHeader(V3Header {
    revision: 0,
    raft_term: 0,
    member_id: 0,
});

/// Client for lease operations.
#[derive(Clone)]
pub struct LeaseClient {
    conn: Arc<Connection>,
}

impl LeaseClient {
    pub(crate) fn new(conn: Arc<Connection>) -> Self {
        LeaseClient { conn }
    }

    /// Creates a lease which expires if the server does not receive a keepAlive within a
    /// given time to live period (seconds; raised to the lessor's minimum). All keys
    /// attached to the lease will be expired and deleted if the lease expires.
    pub async fn grant(
        &mut self,
        ttl: i64,
        _options: Option<LeaseGrantOptions>,
    ) -> Result<LeaseGrantResponse> {
        let ttl_ms = u64::try_from(ttl).unwrap_or(0).saturating_mul(1000);
        let op = Op::Grant {
            node: self.conn.node.as_str().into(),
            ttl_ms,
        };
        match self.conn.call(op).await? {
            Reply::Granted(g) => Ok(LeaseGrantResponse {
                ttl: (g.ttl_ms / 1000) as i64,
                id: g.id,
            }),
            other => Err(unexpected(&other)),
        }
    }

    /// Revokes a lease. All keys attached to the lease will expire and be deleted.
    pub async fn revoke(&mut self, id: i64) -> Result<LeaseRevokeResponse> {
        match self.conn.v3(V3Request::LeaseRevoke(id)).await? {
            (h, V3Reply::Revoked) => Ok(LeaseRevokeResponse(h)),
            (_, other) => Err(unexpected_v3(&other)),
        }
    }

    /// Keeps the lease alive by streaming keep alive requests from the client to the
    /// server and streaming keep alive responses from the server to the client. The
    /// first request is answered here: an error when the lease is gone.
    pub async fn keep_alive(&mut self, id: i64) -> Result<(LeaseKeeper, LeaseKeepAliveStream)> {
        match keep_alive_once(&self.conn, id, self.conn.timeout()).await? {
            r if r.ttl() <= 0 => Err(Error::LeaseKeepAliveError("lease not found".into())),
            _ => {
                let (req_tx, req_rx) = mpsc::channel(100);
                let (resp_tx, resp_rx) = mpsc::unbounded_channel();
                madsim::task::spawn(keep_alive_stream(self.conn.clone(), id, req_rx, resp_tx));
                Ok((
                    LeaseKeeper { id, sender: req_tx },
                    LeaseKeepAliveStream { receiver: resp_rx },
                ))
            }
        }
    }

    /// Retrieves lease information.
    pub async fn time_to_live(
        &mut self,
        id: i64,
        options: Option<LeaseTimeToLiveOptions>,
    ) -> Result<LeaseTimeToLiveResponse> {
        let keys = options.is_some_and(|o| o.keys);
        match self
            .conn
            .v3(V3Request::LeaseTimeToLive { id, keys })
            .await?
        {
            (
                header,
                V3Reply::TimeToLive {
                    ttl_s,
                    granted_ttl_s,
                    keys,
                },
            ) => Ok(LeaseTimeToLiveResponse {
                header,
                id,
                ttl: ttl_s,
                granted_ttl: granted_ttl_s,
                keys,
            }),
            (_, other) => Err(unexpected_v3(&other)),
        }
    }
}

/// One keep-alive request and its answer (`ttl` 0 when the lease is gone, as etcd's).
async fn keep_alive_once(
    conn: &Connection,
    id: i64,
    timeout: Option<Duration>,
) -> Result<LeaseKeepAliveResponse> {
    match conn.call_within(Op::KeepAlive(id), timeout).await? {
        Reply::KeptAlive(ttl_ms) => Ok(LeaseKeepAliveResponse {
            id,
            ttl: ttl_ms.map_or(0, |ms| (ms / 1000) as i64),
        }),
        other => Err(unexpected(&other)),
    }
}

/// The stream's task, on the node that opened it: each request the keeper queued is
/// sent in order, and its answer put on the stream. A failed request ends the stream
/// after its error, as a broken gRPC stream does; the keeper's next send then fails.
async fn keep_alive_stream(
    conn: Arc<Connection>,
    id: i64,
    mut requests: mpsc::Receiver<()>,
    answers: mpsc::UnboundedSender<Result<LeaseKeepAliveResponse>>,
) {
    while requests.recv().await.is_some() {
        // The stream is open: its messages wait as long as it takes (a cut link holds
        // them, as TCP does), with no call deadline.
        let answer = keep_alive_once(&conn, id, None).await;
        let failed = answer.is_err();
        if answers.send(answer).is_err() || failed {
            return;
        }
    }
}

/// Options for `Grant` operation (a lease id of one's own is not supported yet).
#[derive(Debug, Default, Clone)]
pub struct LeaseGrantOptions(());

impl LeaseGrantOptions {
    /// Creates a `LeaseGrantOptions`.
    pub fn new() -> Self {
        LeaseGrantOptions(())
    }
}

/// Response for `Grant` operation.
#[derive(Debug, Clone)]
pub struct LeaseGrantResponse {
    ttl: i64,
    id: i64,
}

impl LeaseGrantResponse {
    /// Get response header (zeros in the simulation's stage 1).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&NO_HEADER)
    }

    /// TTL is the server chosen lease time-to-live in seconds.
    pub const fn ttl(&self) -> i64 {
        self.ttl
    }

    /// ID is the lease ID for the granted lease.
    pub const fn id(&self) -> i64 {
        self.id
    }

    /// Error message if return error.
    pub fn error(&self) -> &str {
        ""
    }
}

/// Response for `Revoke` operation.
#[derive(Debug, Clone)]
pub struct LeaseRevokeResponse(ResponseHeader);

impl LeaseRevokeResponse {
    /// Get response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.0)
    }

    /// Takes the header out of the response (the simulation's header is a copy).
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        Some(self.0)
    }
}

/// Response for `KeepAlive` operation.
#[derive(Debug, Clone)]
pub struct LeaseKeepAliveResponse {
    id: i64,
    ttl: i64,
}

impl LeaseKeepAliveResponse {
    /// Get response header (zeros in the simulation's stage 1).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&NO_HEADER)
    }

    /// TTL is the new time-to-live for the lease (0 once it is gone).
    pub const fn ttl(&self) -> i64 {
        self.ttl
    }

    /// ID is the lease ID for the keep alive request.
    pub const fn id(&self) -> i64 {
        self.id
    }
}

/// Options for `TimeToLive` operation.
#[derive(Debug, Default, Clone)]
pub struct LeaseTimeToLiveOptions {
    keys: bool,
}

impl LeaseTimeToLiveOptions {
    /// Keys is true to query all the keys attached to this lease.
    pub fn with_keys(mut self) -> Self {
        self.keys = true;
        self
    }

    /// Creates a `LeaseTimeToLiveOptions`.
    pub fn new() -> Self {
        LeaseTimeToLiveOptions::default()
    }
}

/// Response for `TimeToLive` operation.
#[derive(Debug, Clone)]
pub struct LeaseTimeToLiveResponse {
    header: ResponseHeader,
    id: i64,
    ttl: i64,
    granted_ttl: i64,
    keys: Vec<Vec<u8>>,
}

impl LeaseTimeToLiveResponse {
    /// Get response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// TTL is the remaining TTL in seconds for the lease; -1 when it is gone.
    pub const fn ttl(&self) -> i64 {
        self.ttl
    }

    /// ID is the lease ID from the keep alive request.
    pub const fn id(&self) -> i64 {
        self.id
    }

    /// GrantedTTL is the initial granted time in seconds upon lease creation/renewal.
    pub const fn granted_ttl(&self) -> i64 {
        self.granted_ttl
    }

    /// Keys is the list of keys attached to this lease.
    pub fn keys(&self) -> &[Vec<u8>] {
        &self.keys
    }
}

/// The lease keep alive handle.
#[derive(Debug)]
pub struct LeaseKeeper {
    id: i64,
    sender: mpsc::Sender<()>,
}

impl LeaseKeeper {
    /// The lease id which user want to keep alive.
    pub const fn id(&self) -> i64 {
        self.id
    }

    /// Sends a keep alive request; its answer comes on the stream.
    pub async fn keep_alive(&mut self) -> Result<()> {
        self.sender
            .send(())
            .await
            .map_err(|e| Error::LeaseKeepAliveError(e.to_string()))
    }
}

/// The lease keep alive response stream.
#[derive(Debug)]
pub struct LeaseKeepAliveStream {
    receiver: mpsc::UnboundedReceiver<Result<LeaseKeepAliveResponse>>,
}

impl LeaseKeepAliveStream {
    /// Fetches the next message from this stream.
    pub async fn message(&mut self) -> Result<Option<LeaseKeepAliveResponse>> {
        self.receiver.recv().await.transpose()
    }
}

impl futures::Stream for LeaseKeepAliveStream {
    type Item = Result<LeaseKeepAliveResponse>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().receiver.poll_recv(cx)
    }
}
