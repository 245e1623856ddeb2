//! `Client` and `ConnectOptions`: the entry points, as etcd-client 0.21 has them.

use super::connection::Connection;
use super::election::ElectionClient;
use super::election_types::{
    CampaignResponse, LeaderResponse, ObserveStream, ProclaimOptions, ProclaimResponse,
    ResignOptions, ResignResponse,
};
use super::error::Result;
use super::kv::KvClient;
use super::lease::{
    LeaseClient, LeaseGrantOptions, LeaseGrantResponse, LeaseKeepAliveStream, LeaseKeeper,
    LeaseRevokeResponse, LeaseTimeToLiveOptions, LeaseTimeToLiveResponse,
};
use super::lock::{LockClient, LockOptions, LockResponse, UnlockResponse};
use super::options::{DeleteOptions, GetOptions, PutOptions};
use super::responses::{DeleteResponse, GetResponse, PutResponse};
use super::txn::{Txn, TxnResponse};
use super::watch::{WatchClient, WatchOptions, WatchStream};
use std::sync::Arc;
use std::time::Duration;

/// Asynchronous `etcd` client using v3 API, served by Baton's simulated members.
#[derive(Clone)]
pub struct Client {
    kv: KvClient,
    lease: LeaseClient,
    watch: WatchClient,
    election: ElectionClient,
    lock: LockClient,
}

impl Client {
    /// Connect to `etcd` servers from given `endpoints`, from the calling simulated node.
    /// Nothing is sent yet: a member that is down is met by the first call.
    pub async fn connect<E: AsRef<str>, S: AsRef<[E]>>(
        endpoints: S,
        options: Option<ConnectOptions>,
    ) -> Result<Self> {
        let endpoints: Vec<&str> = endpoints.as_ref().iter().map(|e| e.as_ref()).collect();
        let addrs = Connection::parse(&endpoints)?;
        let timeout = options.and_then(|o| o.timeout);
        let conn = Arc::new(Connection::open(&addrs, timeout)?);
        Ok(Client {
            kv: KvClient::new(conn.clone()),
            lease: LeaseClient::new(conn.clone()),
            watch: WatchClient::new(conn.clone()),
            election: ElectionClient::new(conn.clone()),
            lock: LockClient::new(conn),
        })
    }

    /// Gets a KV client.
    pub fn kv_client(&self) -> KvClient {
        self.kv.clone()
    }

    /// Gets a watch client.
    pub fn watch_client(&self) -> WatchClient {
        self.watch.clone()
    }

    /// Gets a lock client.
    pub fn lock_client(&self) -> LockClient {
        self.lock.clone()
    }

    /// Gets an election client.
    pub fn election_client(&self) -> ElectionClient {
        self.election.clone()
    }

    /// Gets a lease client.
    pub fn lease_client(&self) -> LeaseClient {
        self.lease.clone()
    }

    /// Put the given key into the key-value store.
    pub async fn put(
        &mut self,
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        options: Option<PutOptions>,
    ) -> Result<PutResponse> {
        self.kv.put(key, value, options).await
    }

    /// Gets the key from the key-value store.
    pub async fn get(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<GetOptions>,
    ) -> Result<GetResponse> {
        self.kv.get(key, options).await
    }

    /// Deletes the given key from the key-value store.
    pub async fn delete(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<DeleteOptions>,
    ) -> Result<DeleteResponse> {
        self.kv.delete(key, options).await
    }

    /// Processes multiple operations in a single transaction.
    pub async fn txn(&mut self, txn: Txn) -> Result<TxnResponse> {
        self.kv.txn(txn).await
    }

    /// Watches for events happening or that have happened. Both input and output are
    /// streams; the input stream is for creating and canceling watchers and the output
    /// stream sends events. The event history can be watched from the oldest revision
    /// the member keeps.
    pub async fn watch(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<WatchOptions>,
    ) -> Result<WatchStream> {
        self.watch.watch(key, options).await
    }

    /// Creates a lease which expires if the server does not receive a keepAlive within a
    /// given time to live period.
    pub async fn lease_grant(
        &mut self,
        ttl: i64,
        options: Option<LeaseGrantOptions>,
    ) -> Result<LeaseGrantResponse> {
        self.lease.grant(ttl, options).await
    }

    /// Revokes a lease. All keys attached to the lease will expire and be deleted.
    pub async fn lease_revoke(&mut self, id: i64) -> Result<LeaseRevokeResponse> {
        self.lease.revoke(id).await
    }

    /// Keeps the lease alive by streaming keep alive requests from the client to the
    /// server and streaming keep alive responses from the server to the client.
    pub async fn lease_keep_alive(
        &mut self,
        id: i64,
    ) -> Result<(LeaseKeeper, LeaseKeepAliveStream)> {
        self.lease.keep_alive(id).await
    }

    /// Retrieves lease information.
    pub async fn lease_time_to_live(
        &mut self,
        id: i64,
        options: Option<LeaseTimeToLiveOptions>,
    ) -> Result<LeaseTimeToLiveResponse> {
        self.lease.time_to_live(id, options).await
    }

    /// Lock acquires a distributed shared lock on a given named lock. On success, it
    /// will return a unique key that exists so long as the lock is held by the caller.
    pub async fn lock(
        &mut self,
        name: impl Into<Vec<u8>>,
        options: Option<LockOptions>,
    ) -> Result<LockResponse> {
        self.lock.lock(name, options).await
    }

    /// Unlock takes a key returned by Lock and releases the hold on lock.
    pub async fn unlock(&mut self, key: impl Into<Vec<u8>>) -> Result<UnlockResponse> {
        self.lock.unlock(key).await
    }

    /// Puts a value as eligible for the election on the prefix key. Multiple sessions
    /// can participate in the election for the same prefix, but only one can be the
    /// leader at a time.
    pub async fn campaign(
        &mut self,
        name: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        lease: i64,
    ) -> Result<CampaignResponse> {
        self.election.campaign(name, value, lease).await
    }

    /// Lets the leader announce a new value without another election.
    pub async fn proclaim(
        &mut self,
        value: impl Into<Vec<u8>>,
        options: Option<ProclaimOptions>,
    ) -> Result<ProclaimResponse> {
        self.election.proclaim(value, options).await
    }

    /// Returns the leader value for the current election.
    pub async fn leader(&mut self, name: impl Into<Vec<u8>>) -> Result<LeaderResponse> {
        self.election.leader(name).await
    }

    /// Returns a channel that reliably observes ordered leader proposals as
    /// `LeaderResponse` values on every current elected leader key.
    pub async fn observe(&mut self, name: impl Into<Vec<u8>>) -> Result<ObserveStream> {
        self.election.observe(name).await
    }

    /// Releases election leadership and then start a new election.
    pub async fn resign(&mut self, option: Option<ResignOptions>) -> Result<ResignResponse> {
        self.election.resign(option).await
    }
}

/// Options for `Connect` operation.
#[derive(Debug, Default, Clone)]
pub struct ConnectOptions {
    timeout: Option<Duration>,
    connect_timeout: Option<Duration>,
}

impl ConnectOptions {
    /// Creates a `ConnectOptions`.
    pub fn new() -> Self {
        ConnectOptions::default()
    }

    /// Apply a timeout to each request: a call with no answer by then fails with
    /// `Code::Cancelled`, as tonic's deadline does.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Apply a timeout to connecting to the endpoint. Accepted and kept: the simulation
    /// models no connection handshake.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }
}
