//! Why a node process could not start: printed once by `baton-real`'s `main` (exit 3).

use std::path::PathBuf;

/// Why a node process could not start, one line each.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Its event log cannot be opened.
    #[error("{}: {source}", .path.display())]
    Log {
        /// The log's file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A raft node's config has no disk.
    #[error("a raft node needs raft_disk in its config")]
    NoRaftDisk,
    /// A raft node's disk cannot be read.
    #[error("{}: {source}", .path.display())]
    RaftDisk {
        /// The disk's file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The node's name is not among its peers'.
    #[error("the node is not among its peers")]
    NotAPeer,
    /// No HTTP client.
    #[error("http client: {0}")]
    Http(reqwest::Error),
    /// A lease protocol's config names no backend.
    #[error("no backend endpoint in the node's config")]
    NoEndpoint,
    /// The Redis client cannot be made.
    #[error(transparent)]
    Redis(#[from] crate::backend::redis::client::RedisUrlError),
    /// Raft asked of the lease electors (a bug in Baton).
    #[error("raft is not a lease protocol")]
    NotALease,
    /// Its HTTP port cannot be bound.
    #[error("bind 127.0.0.1:{port}: {source}")]
    Bind {
        /// The port asked for (0: any).
        port: u16,
        /// Why.
        source: std::io::Error,
    },
    /// The port it listens on cannot be read.
    #[error("{0}")]
    Address(std::io::Error),
}
