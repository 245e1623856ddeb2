//! Why a real run could not start, or a verb failed: [`RealError`].

use crate::backend::BackendError;
use std::path::PathBuf;

/// Why a run could not start (the CLI's exit 2) or a verb failed.
#[derive(Debug, thiserror::Error)]
pub enum RealError {
    /// The backend (etcd, a server) did not start.
    #[error(transparent)]
    Backend(#[from] BackendError),
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
    Contract(crate::contract::rules::Breach),
    /// File or OS error.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
