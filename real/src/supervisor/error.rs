//! Why a real run could not start, or a verb failed: [`RealError`].

use crate::etcd_cluster::EtcdStartError;
use crate::server::ServerStartError;
use std::path::PathBuf;

/// Why a run could not start (the CLI's exit 2) or a verb failed.
#[derive(Debug, thiserror::Error)]
pub enum RealError {
    /// etcd did not start.
    #[error(transparent)]
    Etcd(#[from] EtcdStartError),
    /// A backend server (Redis, ZooKeeper, PostgreSQL) did not start, or did not come
    /// back after a restart.
    #[error(transparent)]
    Server(#[from] ServerStartError),
    /// The backend started but what the protocol needs on it could not be made (the
    /// database's table, the election's parent znode).
    #[error("{backend}: {why}")]
    Setup {
        /// The backend.
        backend: &'static str,
        /// What failed.
        why: String,
    },
    /// The run directory holds an earlier run.
    #[error("{0} already holds a run (supervisor.jsonl exists): choose another directory")]
    RunDirUsed(PathBuf),
    /// A child did not start.
    #[error("{what} did not start: {why} (stderr: {stderr})")]
    Child {
        /// Which child.
        what: String,
        /// Why.
        why: String,
        /// Its stderr file.
        stderr: String,
    },
    /// No node by that name.
    #[error("no node named {0:?}")]
    UnknownNode(String),
    /// The node is not running.
    #[error("node {0} is not running")]
    NotRunning(String),
    /// A node's control endpoint did not answer.
    #[error("node {node}: {why}")]
    Control {
        /// The node.
        node: String,
        /// What went wrong.
        why: String,
    },
    /// A node run by `--node-cmd` broke the node contract before the run began.
    #[error("{0}")]
    Contract(crate::node_contract::Breach),
    /// File or OS error.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
