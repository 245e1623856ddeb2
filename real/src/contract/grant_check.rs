//! The backend rules of node contract version 2 (`redis-lock`, `zk-znode`, `pg-row`),
//! checked on the backend itself: the token a leader reports must be the backend's own
//! number for its grant, or Baton's observer (see [`crate::backend`]) cannot tell when
//! that grant ended, and the protocol-level verdict would judge the wrong instant.
//!
//! The preflight ([`crate::contract::preflight`]) asks once, with the fleet quiet and a
//! leader found: it reads the backend directly (no proxy) and compares. What it reads:
//!
//! | backend | read | the leader's `fence_token` must be |
//! |---|---|---|
//! | Redis | `GET {redis_key}`, `GET {redis_key}:token` | the counter's value, with the lock set |
//! | ZooKeeper | the children of `{zk_election_path}` and their `Stat` | the czxid of an ephemeral child, the only one of its session |
//! | PostgreSQL | every row of `{pg_table}` | the one row's `generation`, its `node` the leader |
//!
//! A backend that does not answer in time judges nothing: that is not the node's fault.
//! etcd is not read here (version 1 has no such rule).

use crate::contract::rules::{shown, Breach};
use std::net::SocketAddr;
use std::time::Duration;

/// How long one read of the backend may take.
const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// Where Baton reads a backend's record of the grant, directly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GrantSource {
    /// A Redis server and the lock's key.
    Redis {
        /// The server.
        addr: SocketAddr,
        /// `{redis_key}`.
        key: String,
    },
    /// A ZooKeeper server and the election's parent znode.
    Zookeeper {
        /// The server's connect string.
        connect: String,
        /// `{zk_election_path}`.
        path: String,
    },
    /// A PostgreSQL database.
    Postgres {
        /// Its connection string.
        conninfo: String,
    },
}

impl GrantSource {
    /// The rule this backend's grant falls under.
    pub fn rule(&self) -> &'static str {
        match self {
            GrantSource::Redis { .. } => "redis-lock",
            GrantSource::Zookeeper { .. } => "zk-znode",
            GrantSource::Postgres { .. } => "pg-row",
        }
    }

    /// Why `token`, reported by leader `node`, is not the backend's number for its
    /// grant (`Some`, one line), or `None` when it is, or when the backend did not
    /// answer in time.
    pub async fn mismatch(&self, node: &str, token: u64) -> Option<String> {
        let read = async {
            match self {
                GrantSource::Redis { addr, key } => redis(*addr, key, token).await,
                GrantSource::Zookeeper { connect, path } => zookeeper(connect, path, token).await,
                GrantSource::Postgres { conninfo } => postgres(conninfo, node, token).await,
            }
        };
        tokio::time::timeout(READ_TIMEOUT, read)
            .await
            .ok()
            .flatten()
            .flatten()
    }

    /// The breach of leader `node` whose token is `token`, when the backend says so.
    pub async fn check(&self, node: &str, token: u64) -> Result<(), Breach> {
        match self.mismatch(node, token).await {
            Some(why) => Err(Breach::new(node, self.rule(), why)),
            None => Ok(()),
        }
    }
}

/// Redis: the lock is set and its counter stands at `token`. `None`: unread.
async fn redis(addr: SocketAddr, key: &str, token: u64) -> Option<Option<String>> {
    let client = ::redis::Client::open(format!("redis://{addr}/")).ok()?;
    let mut c = client.get_multiplexed_async_connection().await.ok()?;
    let counter_key = format!("{key}:token");
    let (lock, counter): (Option<String>, Option<i64>) = ::redis::pipe()
        .get(key)
        .get(&counter_key)
        .query_async(&mut c)
        .await
        .ok()?;
    let says = format!("its /status says it leads under token {token}, but");
    Some(match (lock, counter) {
        (None, _) => Some(format!(
            "{says} {key} is not set (the lock is taken with SET {key} V NX PX)"
        )),
        (Some(_), c) if c != Some(token as i64) => Some(format!(
            "{says} {counter_key} reads {} (the token is the answer of the one INCR {counter_key} right after the SET NX)",
            c.map_or("nothing".to_string(), |c| c.to_string())
        )),
        _ => None,
    })
}

/// ZooKeeper: some ephemeral child of `path` was created at zxid `token`.
async fn zookeeper(connect: &str, path: &str, token: u64) -> Option<Option<String>> {
    let c = zookeeper_client::Client::connect(connect).await.ok()?;
    let mut children = vec![];
    for child in c.list_children(path).await.ok()? {
        if let Ok(Some(s)) = c.check_stat(&format!("{path}/{child}")).await {
            children.push((child, s.czxid, s.ephemeral_owner));
        }
    }
    children.sort();
    let says = format!("its /status says it leads under token {token}, but");
    Some(match children.iter().find(|c| c.1 == token as i64) {
        Some((child, _, 0)) => Some(format!(
            "{says} {path}/{child}, created at that zxid, is not ephemeral (create one EPHEMERAL_SEQUENTIAL child)"
        )),
        Some((child, _, session)) => {
            let also: Vec<String> = children
                .iter()
                .filter(|c| c.2 == *session && c.0 != *child)
                .map(|c| format!("{path}/{}", c.0))
                .collect();
            (!also.is_empty()).then(|| {
                format!(
                    "its session, which owns {path}/{child} (czxid {token}), also owns {} (create one child per session)",
                    also.join(", ")
                )
            })
        }
        None => {
            let seen: Vec<String> = children
                .iter()
                .map(|(name, czxid, _)| format!("{name} czxid {czxid}"))
                .collect();
            Some(format!(
                "{says} no child of {path} has czxid {token} (the token is the czxid of the node's own znode; children: {})",
                if seen.is_empty() { "none".to_string() } else { seen.join(", ") }
            ))
        }
    })
}

/// PostgreSQL: the table's one row is the leader's, at generation `token`.
async fn postgres(conninfo: &str, node: &str, token: u64) -> Option<Option<String>> {
    let table = crate::backend::pg::client::TABLE;
    let c = crate::backend::pg::client::connect(conninfo, READ_TIMEOUT)
        .await
        .ok()?;
    let rows = c
        .query(&format!("SELECT node, generation FROM {table}"), &[])
        .await
        .ok()?;
    let says = format!("its /status says it leads under token {token}, but");
    Some(match rows.as_slice() {
        [row] => {
            let (holder, generation): (String, i64) = (row.get(0), row.get(1));
            (holder != node || generation != token as i64).then(|| {
                format!(
                    "{says} the lease row holds node {} at generation {generation} (the token is the generation its acquire returned)",
                    shown(&holder)
                )
            })
        }
        rows => Some(format!(
            "{says} {table} holds {} rows, not Baton's one (insert or delete none)",
            rows.len()
        )),
    })
}
