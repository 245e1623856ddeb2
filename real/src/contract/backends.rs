//! The backends of node contract version 2 (`docs/src/node-contract.md#version-2-backends`):
//! etcd, Redis, ZooKeeper and PostgreSQL, each with the one protocol of Baton's that a
//! foreign node's grant is judged as, and `none`, where the nodes elect among themselves
//! (`docs/src/node-contract.md#no-backend-the-nodes-elect-among-themselves`) and are judged as
//! `raft`.
//!
//! A foreign node elects however it likes, but Baton can only tell when the backend
//! ended its grant if the node takes the grant the way one of Baton's observers reads it
//! (see `crate::backend`): etcd's election keys under a prefix, Redis's lock key and its
//! `INCR` token counter, ZooKeeper's ephemeral sequential znodes under a path, the
//! database's lease row. Each backend therefore stands for the protocol whose observer
//! reads it: `etcd-lease`, `redis-fenced`, `zk-sequential`, `db-row`. With no backend
//! there is no observer: a grant ends when another node wins a term at least as high
//! (the peers' quorum gave the seat away), which is how `raft`'s grants are judged.

use baton_model::protocol::ProtocolName;

/// A backend a `--node-cmd` node may elect on, as `--backend` and `{backend}` name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ContractBackend {
    /// A live 3-member etcd cluster (`etcd-lease`).
    Etcd,
    /// A live Redis (`redis-fenced`).
    Redis,
    /// A live ZooKeeper (`zk-sequential`).
    Zookeeper,
    /// A live PostgreSQL (`db-row`).
    Postgres,
    /// No backend: the nodes elect among themselves, each talking to its peers through
    /// its own proxy to each (`raft`).
    None,
}

impl ContractBackend {
    /// Every backend, in the order the contract lists them.
    pub const ALL: [ContractBackend; 5] = [
        ContractBackend::Etcd,
        ContractBackend::Redis,
        ContractBackend::Zookeeper,
        ContractBackend::Postgres,
        ContractBackend::None,
    ];

    /// Its name: `etcd`, `redis`, `zookeeper`, `postgres`, `none`.
    pub fn name(self) -> &'static str {
        match self {
            ContractBackend::Etcd => "etcd",
            ContractBackend::Redis => "redis",
            ContractBackend::Zookeeper => "zookeeper",
            ContractBackend::Postgres => "postgres",
            ContractBackend::None => "none",
        }
    }

    /// The backend named `name`, if any.
    pub fn parse(name: &str) -> Option<ContractBackend> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }

    /// Every backend's name, for messages: `etcd, redis, zookeeper, postgres, none`.
    pub fn allowed() -> String {
        Self::ALL.map(Self::name).join(", ")
    }

    /// The protocol whose observer reads this backend's grants.
    pub fn protocol(self) -> ProtocolName {
        match self {
            ContractBackend::Etcd => ProtocolName::EtcdLease,
            ContractBackend::Redis => ProtocolName::RedisFenced,
            ContractBackend::Zookeeper => ProtocolName::ZkSequential,
            ContractBackend::Postgres => ProtocolName::DbRow,
            ContractBackend::None => ProtocolName::Raft,
        }
    }

    /// The backend a scenario of `protocol` runs a foreign node on, if any.
    pub fn of_protocol(protocol: ProtocolName) -> Option<ContractBackend> {
        Self::ALL.into_iter().find(|b| b.protocol() == protocol)
    }

    /// What Baton starts for it, for reports.
    pub fn server(self) -> &'static str {
        match self {
            ContractBackend::Etcd => "a live 3-member etcd (Debian's etcd-server)",
            ContractBackend::Redis => "a live Redis (Debian's redis-server)",
            ContractBackend::Zookeeper => "a live ZooKeeper (Debian's zookeeper)",
            ContractBackend::Postgres => "a live PostgreSQL (Debian's postgresql)",
            ContractBackend::None => "no server: the nodes elect among themselves",
        }
    }

    /// The protocols `--node-cmd` runs, for messages: `etcd-lease (etcd), ...`.
    pub fn protocols() -> String {
        Self::ALL
            .map(|b| format!("{} ({})", b.protocol().name(), b.name()))
            .join(", ")
    }
}

/// The URL form (`postgresql://user@host:port/dbname`) of a libpq connection string of
/// the `host=H port=P user=U dbname=D` form the supervisor gives Baton's own nodes:
/// some clients (JDBC's, node-postgres) take only URLs.
pub fn pg_url(conninfo: &str) -> String {
    let field = |key: &str| {
        conninfo
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .unwrap_or_default()
    };
    format!(
        "postgresql://{}@{}:{}/{}",
        field("user"),
        field("host"),
        field("port"),
        field("dbname")
    )
}

#[cfg(test)]
mod tests {
    //! Methodology: each backend's name round-trips and stands for the protocol whose
    //! observer reads it; the URL form of a connection string names the same server.
    use super::*;

    #[test]
    fn every_backend_names_its_protocol() {
        for b in ContractBackend::ALL {
            assert_eq!(ContractBackend::parse(b.name()), Some(b));
            assert_eq!(ContractBackend::of_protocol(b.protocol()), Some(b));
        }
        assert_eq!(ContractBackend::parse("consul"), None);
        assert_eq!(ContractBackend::of_protocol(ProtocolName::RedisNaive), None);
        assert_eq!(
            ContractBackend::allowed(),
            "etcd, redis, zookeeper, postgres, none"
        );
    }

    #[test]
    fn a_connection_string_becomes_a_url() {
        assert_eq!(
            pg_url("host=127.0.0.1 port=5433 user=baton dbname=baton"),
            "postgresql://baton@127.0.0.1:5433/baton"
        );
    }
}
