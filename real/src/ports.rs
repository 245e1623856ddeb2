//! Loopback ports: picking free ones, and checking none is left bound.
//!
//! Baton binds only on 127.0.0.1. Its own listeners (proxies, nodes, the resource) bind
//! port 0 and keep the socket, so they cannot collide. A server or a `--node-cmd` node
//! must be told its ports, so [`free_ports`] picks ports that are free and releases them
//! for the process to bind. It picks them below the kernel's ephemeral range
//! (`net.ipv4.ip_local_port_range`, 32768-60999 by default): the local port of every
//! outgoing connection comes from that range, and with four trials of nine nodes at once
//! a port picked there was taken by a connection before the node bound it (a raft node
//! of `examples/go-raft` failed to start with "address already in use"). Below the range
//! only another listener can take it. Each process starts its walk through the pool at
//! an offset of its own (from its pid), so two Baton processes side by side rarely try
//! the same ports; a port is handed out only if it could be bound a moment ago.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU32, Ordering};

/// The only address anything in a real run binds.
pub const LOOPBACK: Ipv4Addr = Ipv4Addr::LOCALHOST;

/// The lowest port the pool starts from: below it are well-known servers' defaults.
const POOL_FLOOR: u16 = 10_000;

/// How far this process's walk through the pool has gone (`u32::MAX`: not started).
static CURSOR: AtomicU32 = AtomicU32::new(u32::MAX);

/// The kernel's ephemeral range, from `/proc` (Linux's default when it cannot be read).
fn ephemeral_range() -> (u16, u16) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().map(|w| w.parse::<u16>().ok());
            Some((it.next()??, it.next()??))
        })
        .unwrap_or((32_768, 60_999))
}

/// The ports [`free_ports`] picks from: `[POOL_FLOOR, start of the ephemeral range)`, or
/// `None` when the ephemeral range leaves no room below it (then the kernel picks).
fn pool() -> Option<std::ops::Range<u16>> {
    let (lo, _) = ephemeral_range();
    (lo > POOL_FLOOR + 1_000).then_some(POOL_FLOOR..lo)
}

/// `n` distinct ports that were free on 127.0.0.1 a moment ago, below the ephemeral
/// range where it leaves room.
pub fn free_ports(n: usize) -> std::io::Result<Vec<u16>> {
    let Some(pool) = pool() else {
        return kernel_ports(n);
    };
    let size = u32::from(pool.end - pool.start);
    // The first call sets this process's offset; later calls go on from where it is.
    let _ = CURSOR.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7919) % size,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    // Hold every listener until all n are chosen, so none is handed out twice.
    let mut held = Vec::with_capacity(n);
    for _ in 0..size {
        if held.len() == n {
            break;
        }
        let step = CURSOR.fetch_add(1, Ordering::SeqCst) % size;
        let port = pool.start + step as u16;
        if let Ok(l) = TcpListener::bind(SocketAddr::from((LOOPBACK, port))) {
            held.push(l);
        }
    }
    if held.len() < n {
        return kernel_ports(n);
    }
    held.iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
}

/// `n` distinct ports the kernel chose (in its ephemeral range).
fn kernel_ports(n: usize) -> std::io::Result<Vec<u16>> {
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

    /// Outgoing connections take their local ports from the ephemeral range: a picked
    /// port must lie below it (the kernel's own choice, port 0, lies inside it).
    #[test]
    fn free_ports_lie_below_the_ephemeral_range() {
        let (lo, hi) = ephemeral_range();
        assert!(lo < hi, "{lo}-{hi}");
        if pool().is_none() {
            return;
        }
        let ports = free_ports(40).unwrap();
        assert!(
            ports.iter().all(|p| (POOL_FLOOR..lo).contains(p)),
            "{ports:?}"
        );
        let kernel = kernel_ports(1).unwrap()[0];
        assert!(
            (lo..=hi).contains(&kernel),
            "the canary: {kernel} not in {lo}-{hi}"
        );
    }

    #[test]
    fn a_port_held_by_a_listener_is_never_picked() {
        let taken: Vec<TcpListener> = free_ports(3)
            .unwrap()
            .into_iter()
            .map(|p| TcpListener::bind(SocketAddr::from((LOOPBACK, p))).unwrap())
            .collect();
        let held: Vec<u16> = taken
            .iter()
            .map(|l| l.local_addr().unwrap().port())
            .collect();
        // Walk the whole pool: none of the held ports comes back.
        let size = pool().map_or(0, |p| usize::from(p.end - p.start));
        for _ in 0..(size / 500).max(1) {
            let got = free_ports(500.min(size.max(1))).unwrap();
            assert!(got.iter().all(|p| !held.contains(p)), "{held:?}");
        }
    }
}
