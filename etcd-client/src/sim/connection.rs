//! A client's connection to the simulated members: every call of every sub-client goes
//! through [`Connection::call`].
//!
//! It talks to one member at a time, the first endpoint first, as Baton's own clients do
//! (`sim/src/world/protocol/etcd_cluster_client.rs`). A member whose process is dead
//! (refused at send, or noticed within `DEAD_POLL_MS` while a call waits on it, as a
//! reset connection is) or that has no leader fails the call with `Unavailable`, and the
//! connection moves to the next endpoint after `RETRY_MS`. A silent member (cut off,
//! paused) is not noticed: the call waits for the client's timeout, or for ever without
//! one, as a live client's call does while its partition lasts.

use super::error::{Error, Result};
use super::key_value::ResponseHeader;
use baton_sim::world::net::{Endpoint, Net, Request};
use baton_sim::world::service::etcd::v3_messages::{V3Error, V3Reply, V3Request};
use baton_sim::world::service::etcd_cluster::{ClientOp, Op, Refusal, Reply};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tonic::{Code, Status};

/// How long the client waits before it tries the next member (Baton's
/// `etcd.client_retry_ms` default: clientv3 retries a broken stream after about 500 ms).
const RETRY_MS: u64 = 500;
/// How often a waiting call looks whether its member's process died.
const DEAD_POLL_MS: u64 = 10;
/// A call without a timeout waits this long: longer than any run.
const FOREVER: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// The addresses a client binds on its node: `10.0.4.0/22`, port 40000.
const CLIENT_ADDRS: u32 = 1024;

/// One client's connection: its socket on the calling node and the members it knows.
pub(crate) struct Connection {
    ep: Endpoint,
    members: Vec<SocketAddr>,
    at: AtomicUsize,
    timeout: Option<Duration>,
    /// Who asks, for the timeline's lease grants: the madsim node.
    pub(crate) node: String,
}

/// `http://10.0.2.1:2379`, `https://...` or `10.0.2.1:2379` as an address.
fn parse_endpoint(e: &str) -> Result<SocketAddr> {
    let bare = e
        .strip_prefix("http://")
        .or_else(|| e.strip_prefix("https://"))
        .unwrap_or(e)
        .trim_end_matches('/');
    bare.parse()
        .map_err(|_| Error::InvalidArgs(format!("endpoint {e:?} is not an ip:port address")))
}

/// etcd's error answer as the status a live client gets.
fn status_of(e: &V3Error) -> Status {
    let code = match e {
        V3Error::LeaseNotFound => Code::NotFound,
        V3Error::KeyNotFound
        | V3Error::DuplicateKey
        | V3Error::ValueProvided
        | V3Error::LeaseProvided
        | V3Error::EmptyKey => Code::InvalidArgument,
    };
    Status::new(code, e.to_string())
}

impl Connection {
    /// Binds a socket on the calling simulated node for `endpoints`.
    pub(crate) fn open(endpoints: &[SocketAddr], timeout: Option<Duration>) -> Result<Connection> {
        if endpoints.is_empty() {
            return Err(Error::InvalidArgs("no endpoints".into()));
        }
        let ep = (0..CLIENT_ADDRS)
            .find_map(|k| {
                let ip = Ipv4Addr::new(10, 0, 4 + (k / 256) as u8, (k % 256) as u8);
                Endpoint::bind_stream(SocketAddr::new(IpAddr::V4(ip), 40000)).ok()
            })
            .ok_or_else(|| Error::Internal("every simulated client address is in use".into()))?;
        Ok(Connection {
            ep,
            members: endpoints.to_vec(),
            at: AtomicUsize::new(0),
            timeout,
            node: format!("madsim-node-{}", madsim::plugin::node()),
        })
    }

    /// Parses `endpoints` as etcd-client's `connect` takes them.
    pub(crate) fn parse(endpoints: &[&str]) -> Result<Vec<SocketAddr>> {
        endpoints.iter().map(|e| parse_endpoint(e)).collect()
    }

    async fn next_member(&self, from: usize) {
        madsim::time::sleep(Duration::from_millis(RETRY_MS)).await;
        // Another call may have moved on already: move once per failure seen at `from`.
        let _ = self.at.compare_exchange(
            from,
            (from + 1) % self.members.len(),
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }

    /// The member it talks to now (an index into its endpoints).
    pub(crate) fn member(&self) -> usize {
        self.at.load(Ordering::SeqCst)
    }

    /// Sends `req` to member `at` and waits at most `timeout` for the answer: `Dead` if
    /// the member's process is dead or dies meanwhile (the connection then moves to the
    /// next member), `Silent` if no answer came in time.
    pub(crate) async fn ask<R: Request>(
        &self,
        at: usize,
        req: R,
        timeout: Duration,
    ) -> std::result::Result<R::Response, Unanswered> {
        let to = self.members[at];
        if Net::current().refuses(to) {
            self.next_member(at).await;
            return Err(Unanswered::Dead("connection refused"));
        }
        let reply = self.ep.call_timeout(to, req, timeout);
        let died = async {
            loop {
                madsim::time::sleep(Duration::from_millis(DEAD_POLL_MS)).await;
                if Net::current().refuses(to) {
                    return;
                }
            }
        };
        tokio::select! {
            biased;
            r = reply => r.map_err(|_| Unanswered::Silent),
            _ = died => {
                self.next_member(at).await;
                Err(Unanswered::Dead("connection reset"))
            }
        }
    }

    /// Fails as a call would if the member it talks to is dead: what opening a stream
    /// meets.
    pub(crate) async fn check_open(&self) -> Result<usize> {
        let at = self.member();
        if Net::current().refuses(self.members[at]) {
            self.next_member(at).await;
            return Err(Status::unavailable("connection refused").into());
        }
        Ok(at)
    }

    /// Sends `op` to the member it talks to, and waits for the answer within the
    /// client's timeout.
    pub(crate) async fn call(&self, op: Op) -> Result<Reply> {
        self.call_within(op, self.timeout).await
    }

    /// As [`Connection::call`], waiting at most `timeout` (`None`: for ever). A message
    /// on a stream that is open has no deadline: tonic's bounds the call that opens it.
    pub(crate) async fn call_within(&self, op: Op, timeout: Option<Duration>) -> Result<Reply> {
        let at = self.member();
        let timeout = timeout.unwrap_or(FOREVER);
        match self.ask(at, ClientOp(op), timeout).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(Refusal::NoLeader)) => {
                self.next_member(at).await;
                Err(Status::unavailable("etcdserver: no leader").into())
            }
            Ok(Err(Refusal::NotCommitted(text))) => Err(Status::unavailable(text).into()),
            Err(Unanswered::Dead(why)) => Err(Status::unavailable(why).into()),
            // tonic's own words when a client deadline passes.
            Err(Unanswered::Silent) => Err(deadline_passed()),
        }
    }

    /// The client's timeout for one call, if it set one.
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Sends a full etcd v3 request; its header and body, or etcd's error as a status.
    pub(crate) async fn v3(&self, req: V3Request) -> Result<(ResponseHeader, V3Reply)> {
        match self.call(Op::V3(Box::new(req))).await? {
            Reply::V3(a) => match a.result {
                Ok(body) => Ok((ResponseHeader(a.header), body)),
                Err(e) => Err(status_of(&e).into()),
            },
            other => Err(unexpected(&other)),
        }
    }
}

/// Why a member gave no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unanswered {
    /// Its process is dead (refused, or reset while the call waited).
    Dead(&'static str),
    /// No answer within the time allowed (cut off, paused, slow).
    Silent,
}

/// What a call whose client deadline passed fails with: tonic's own words.
pub(crate) fn deadline_passed() -> Error {
    Status::cancelled("Timeout expired").into()
}

/// A reply of another request's kind: a broken simulator, reported rather than a panic
/// in the user's code.
pub(crate) fn unexpected(r: &Reply) -> Error {
    Error::Internal(format!("unexpected reply from the simulated member: {r:?}"))
}

/// A body of another request's kind (see [`unexpected`]).
pub(crate) fn unexpected_v3(r: &V3Reply) -> Error {
    Error::Internal(format!(
        "unexpected answer from the simulated member: {r:?}"
    ))
}
