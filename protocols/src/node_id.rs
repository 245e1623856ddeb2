//! The name of one node of the fleet under test.

use serde::{Deserialize, Serialize};
use std::borrow::Borrow;
use std::fmt;

/// The name of a node of the fleet under test: `n1`, `n2`, ... for Baton's own nodes
/// ([`NodeId::nth`]), or whatever name a node run by `--node-cmd` was given.
///
/// It is a name, not an index: it serialises as the bare string (every file Baton writes
/// reads as before) and orders as strings do (`n10` before `n2`), so that maps keyed by
/// node iterate in the same order as when they were keyed by their names. A name that is
/// not a fleet node's (an etcd member such as `etcd-1`, the `backend` server, a fault's
/// unresolved target such as `leader`) is not a `NodeId`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(String);

impl NodeId {
    /// The fleet's node number `i` (1-based): `n{i}`.
    pub fn nth(i: usize) -> NodeId {
        NodeId(format!("n{i}"))
    }

    /// The names of a fleet of `nodes`: `n1` to `n{nodes}`, in order.
    pub fn fleet(nodes: usize) -> Vec<NodeId> {
        (1..=nodes).map(NodeId::nth).collect()
    }

    /// The node's number `i` when it is named `n{i}` (1-based), else `None`.
    pub fn number(&self) -> Option<usize> {
        self.0.strip_prefix('n')?.parse().ok()
    }

    /// The name, as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name, as an owned string (for a backend that stores it as text).
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for NodeId {
    fn from(name: &str) -> Self {
        NodeId(name.to_string())
    }
}

impl From<String> for NodeId {
    fn from(name: String) -> Self {
        NodeId(name)
    }
}

impl From<&String> for NodeId {
    fn from(name: &String) -> Self {
        NodeId(name.clone())
    }
}

impl From<NodeId> for String {
    fn from(id: NodeId) -> Self {
        id.0
    }
}

/// A node's name reads as text wherever text is wanted (a lane's name, a backend's
/// value, a message): the conversion that needs saying is the other way, from text to a
/// node.
impl std::ops::Deref for NodeId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for NodeId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Maps keyed by node can be looked up by name (`map.get("n1")`): a `NodeId` compares,
/// orders and hashes exactly as its name does.
impl Borrow<str> for NodeId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for NodeId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for NodeId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for NodeId {
    fn eq(&self, other: &String) -> bool {
        self.0 == *other
    }
}

impl PartialEq<NodeId> for String {
    fn eq(&self, other: &NodeId) -> bool {
        *self == other.0
    }
}

impl PartialEq<NodeId> for str {
    fn eq(&self, other: &NodeId) -> bool {
        self == other.0
    }
}

impl PartialEq<NodeId> for &str {
    fn eq(&self, other: &NodeId) -> bool {
        *self == other.0
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: a `NodeId` must be invisible in what Baton writes and in how maps
    //! keyed by it iterate: it serialises as its bare name and orders as strings do.
    use super::*;

    #[test]
    fn it_serialises_and_orders_as_its_name() {
        assert_eq!(serde_json::to_string(&NodeId::nth(3)).unwrap(), "\"n3\"");
        let back: NodeId = serde_json::from_str("\"n3\"").unwrap();
        assert_eq!(back, "n3");
        let mut v = NodeId::fleet(10);
        v.sort();
        let names: Vec<&str> = v.iter().map(NodeId::as_str).collect();
        assert_eq!(
            names,
            ["n1", "n10", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9"]
        );
        assert_eq!(NodeId::nth(12).number(), Some(12));
        assert_eq!(NodeId::from("etcd-1").number(), None);
    }
}
