//! The one interface every election protocol implements.

use crate::leadership::Leadership;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Who leads, as a backend reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderInfo {
    /// The leader's node name.
    pub node: String,
    /// The leader's fencing token.
    pub token: u64,
}

/// Why an elector call did not succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ElectorError {
    /// The backend did not answer in time or could not be reached.
    Unavailable(String),
    /// The lease (or session) behind a campaign was lost before the campaign finished.
    LeaseLost,
}

impl std::fmt::Display for ElectorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ElectorError::Unavailable(why) => write!(f, "backend unavailable: {why}"),
            ElectorError::LeaseLost => write!(f, "lease lost during campaign"),
        }
    }
}

impl std::error::Error for ElectorError {}

/// A leader-election protocol, seen from one node.
///
/// The contract every implementation keeps:
/// - `campaign` returns only once this node leads, with a fencing token that is higher
///   than any token an earlier leadership of any node carried;
/// - the returned [`Leadership`] stops reporting `acting()` no later than the moment the
///   node must stop acting by its own clock, even if the backend never answers again;
/// - `resign` is called only after the node has stopped its protected writes.
#[async_trait]
pub trait Elector: Send + Sync {
    /// Blocks until this node leads.
    async fn campaign(&self) -> Result<Leadership, ElectorError>;

    /// Gives up leadership (or abandons a lost one) so the next candidate can win.
    async fn resign(&self, leadership: &Leadership) -> Result<(), ElectorError>;

    /// Who leads now, as the backend sees it.
    async fn observe(&self) -> Result<Option<LeaderInfo>, ElectorError>;
}
