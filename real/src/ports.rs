//! Loopback ports: picking free ones, and checking none is left bound.
//!
//! Baton binds only on 127.0.0.1. Its own listeners (proxies, nodes, the resource) bind
//! port 0 and keep the socket, so they cannot collide. etcd must be told its ports, so
//! [`free_ports`] asks the kernel for free ones and releases them just before etcd binds
//! them: another program could take one in between, and the etcd cluster then retries
//! with fresh ports.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};

/// The only address anything in a real run binds.
pub const LOOPBACK: Ipv4Addr = Ipv4Addr::LOCALHOST;

/// `n` distinct ports that were free on 127.0.0.1 a moment ago.
pub fn free_ports(n: usize) -> std::io::Result<Vec<u16>> {
    // Hold all the listeners until every port is chosen, so the kernel cannot hand out
    // the same one twice.
    let listeners = (0..n)
        .map(|_| TcpListener::bind(SocketAddr::from((LOOPBACK, 0))))
        .collect::<std::io::Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
}

/// True if nothing listens on (or holds) 127.0.0.1:`port`: it can be bound now.
pub fn port_is_free(port: u16) -> bool {
    TcpListener::bind(SocketAddr::from((LOOPBACK, port))).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_distinct_and_free() {
        let ports = free_ports(5).unwrap();
        let mut sorted = ports.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 5);
        assert!(ports.iter().all(|p| port_is_free(*p)));
        let held = TcpListener::bind(SocketAddr::from((LOOPBACK, ports[0]))).unwrap();
        assert!(!port_is_free(ports[0]));
        drop(held);
    }
}
