//! ZooKeeper: a live standalone server on loopback ([`server`]), `zookeeper-client`
//! behind the protocols' `ZkApi` ([`client`]), and the observer of the election's
//! znodes ([`watch`]).

pub mod client;
pub mod server;
pub mod watch;

use baton_protocols::zk_sequential::ZkError;

/// Why the election's ZooKeeper could not be made ready before the fleet starts.
#[derive(Debug, thiserror::Error)]
pub enum ZkSetupError {
    /// A warm-up call failed.
    #[error("warming ZooKeeper up at {connect}: {why}")]
    WarmUp {
        /// The server.
        connect: String,
        /// The call's error.
        why: ZkError,
    },
    /// No session with the server.
    #[error("ZooKeeper at {connect}: {source}")]
    Connect {
        /// The server.
        connect: String,
        /// Why.
        source: zookeeper_client::Error,
    },
    /// The election's parent znode could not be made.
    #[error("creating {path} on ZooKeeper: {source}")]
    Parent {
        /// The znode.
        path: String,
        /// Why.
        source: zookeeper_client::Error,
    },
}
