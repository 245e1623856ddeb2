//! Which of a node's links a fault verb acts on, and which way: [`Link`], [`Direction`].

use crate::supervisor::proxy::Flow;

/// A node's link that a proxy carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// The node and etcd (all members).
    Backend,
    /// The node and one etcd member (0-based: `etcd-1` is 0).
    Member(usize),
    /// The node and the fenced resource.
    Resource,
    /// The load client and the node.
    Client,
    /// The node and another node (0-based: `n2` is 1), for protocols whose nodes talk to
    /// each other (raft): the proxy this node's messages to that peer go through.
    Peer(usize),
}

/// Which way, seen from the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// What the node sends.
    FromNode,
    /// What the node receives.
    ToNode,
    /// Both.
    Both,
}

impl Direction {
    /// The proxy flow: the node connects out to the backend and the resource (so what it
    /// sends flows forward), and the client connects in to it (what it sends flows back).
    pub(super) fn flow(self, link: Link) -> Flow {
        let node_is_client = !matches!(link, Link::Client);
        match (self, node_is_client) {
            (Direction::Both, _) => Flow::Both,
            (Direction::FromNode, true) | (Direction::ToNode, false) => Flow::Forward,
            (Direction::FromNode, false) | (Direction::ToNode, true) => Flow::Backward,
        }
    }
}
