//! The simulation build: etcd-client 0.21's names, served by Baton's simulated etcd.
//!
//! One file per concept: the client and its options (`client`), the connection to the
//! members that every call goes through (`connection`), the KV client (`kv`), its
//! options (`options`) and responses (`responses`), transactions (`txn`), leases (`lease`),
//! watches (`watch`, the stream's task `watch_task`, what it yields `watch_response`),
//! elections (`election`, its types `election_types`) and locks (`lock`) over the steps
//! of etcd's `concurrency` package (`concurrency`),
//! the key and header types (`key_value`), and the error (`error`).

mod client;
mod concurrency;
mod connection;
mod election;
mod election_types;
mod error;
mod key_value;
mod kv;
mod lease;
mod lock;
mod options;
mod responses;
mod txn;
mod watch;
mod watch_response;
mod watch_task;

pub use client::{Client, ConnectOptions};
pub use election::ElectionClient;
pub use election_types::{
    CampaignResponse, LeaderKey, LeaderResponse, ObserveStream, ProclaimOptions, ProclaimResponse,
    ResignOptions, ResignResponse,
};
pub use error::{Error, Result};
pub use key_value::{KeyValue, ResponseHeader};
pub use kv::KvClient;
pub use lease::{
    LeaseClient, LeaseGrantOptions, LeaseGrantResponse, LeaseKeepAliveResponse,
    LeaseKeepAliveStream, LeaseKeeper, LeaseRevokeResponse, LeaseTimeToLiveOptions,
    LeaseTimeToLiveResponse,
};
pub use lock::{LockClient, LockOptions, LockResponse, UnlockResponse};
pub use options::{DeleteOptions, GetOptions, PutOptions, SortOrder, SortTarget};
pub use responses::{DeleteResponse, GetResponse, PutResponse};
pub use txn::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse, TxnResponse};
pub use watch::{
    WatchClient, WatchFilterType, WatchOptions, WatchRequestSender, WatchResponseStream,
    WatchStream,
};
pub use watch_response::{Event, EventType, WatchResponse};
