//! `baton-real contract-node`: Baton's own etcd-lease node started the way the node
//! contract starts any node (flags, or the `BATON_*` environment variables a
//! `--node-cmd` node is given), so that `sim conform` can test it exactly as it tests a
//! node of your own: from outside, through the contract alone.
//!
//! It is the node `baton-real node` runs (the same elector, leader work and HTTP
//! interface); only its start differs. Its event log goes to `<dir>/events.jsonl`,
//! stamped on its own clock: Baton does not read it in a `--node-cmd` run (kept for a
//! person comparing what the node believed with what the polls saw). With
//! `--node-cmd 'target/real/release/baton-real contract-node'` every value comes from
//! the environment.

use crate::node::{NodeConfig, Peer};
use crate::protocol::RealProtocol;
use baton_protocols::etcd_lease::EtcdLeaseConfig;
use clap::Args;
use std::path::PathBuf;

/// The contract's parameters; each flag falls back to its `BATON_*` variable.
#[derive(Clone, Debug, Default, Args)]
pub struct ContractNodeArgs {
    /// The node's name (BATON_ID).
    #[arg(long)]
    pub id: Option<String>,
    /// The port to serve HTTP on, on 127.0.0.1 (BATON_HTTP_PORT).
    #[arg(long)]
    pub http_port: Option<String>,
    /// etcd client URLs, comma-separated (BATON_ETCD_ENDPOINTS).
    #[arg(long)]
    pub etcd_endpoints: Option<String>,
    /// The election's key prefix (BATON_ELECTION_PREFIX).
    #[arg(long)]
    pub election_prefix: Option<String>,
    /// The lease TTL to ask for, ms (BATON_LEASE_TTL_MS).
    #[arg(long)]
    pub lease_ttl_ms: Option<String>,
    /// The fenced resource's write URL (BATON_RESOURCE_URL).
    #[arg(long)]
    pub resource_url: Option<String>,
    /// name=url of every node, comma-separated (BATON_PEERS).
    #[arg(long)]
    pub peers: Option<String>,
    /// The leader's tick interval, ms (BATON_TICK_MS).
    #[arg(long)]
    pub tick_ms: Option<String>,
    /// Each write's timeout, ms (BATON_WRITE_TIMEOUT_MS).
    #[arg(long)]
    pub write_timeout_ms: Option<String>,
    /// A directory for its event log (BATON_NODE_DIR).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// A flag (or its variable) that is missing or unreadable: one line naming both.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    /// Neither the flag nor its variable.
    #[error("--{name} (or {env}) is required")]
    Required {
        /// The flag, without `--`.
        name: &'static str,
        /// Its variable.
        env: &'static str,
    },
    /// A value that is not a number.
    #[error("--{name} ({env}): {value:?} is not a number")]
    NotANumber {
        /// The flag, without `--`.
        name: &'static str,
        /// Its variable.
        env: &'static str,
        /// The value given.
        value: String,
    },
    /// A peer that is not `name=url`.
    #[error("--peers (BATON_PEERS): {0:?} is not name=url")]
    NotAPeer(String),
}

/// `flag`'s value, else variable `env`'s; `Err` names both.
fn given(
    flag: &Option<String>,
    name: &'static str,
    env: &'static str,
) -> Result<String, FlagError> {
    flag.clone()
        .or_else(|| std::env::var(env).ok().filter(|v| !v.is_empty()))
        .ok_or(FlagError::Required { name, env })
}

fn number<T: std::str::FromStr>(
    flag: &Option<String>,
    name: &'static str,
    env: &'static str,
) -> Result<T, FlagError> {
    let value = given(flag, name, env)?;
    value
        .parse()
        .map_err(|_| FlagError::NotANumber { name, env, value })
}

impl ContractNodeArgs {
    /// The node's config and its port; `Err` is one line naming the flag.
    pub fn config(&self) -> Result<(NodeConfig, u16), FlagError> {
        let id = given(&self.id, "id", "BATON_ID")?;
        let port: u16 = number(&self.http_port, "http-port", "BATON_HTTP_PORT")?;
        let dir = match &self.dir {
            Some(d) => d.clone(),
            None => PathBuf::from(given(&None, "dir", "BATON_NODE_DIR")?),
        };
        let peers = given(&self.peers, "peers", "BATON_PEERS").unwrap_or_default();
        let peers = peers
            .split(',')
            .filter(|p| !p.is_empty())
            .map(|p| match p.split_once('=') {
                Some((name, url)) => Ok(Peer {
                    name: name.into(),
                    url: url.into(),
                }),
                None => Err(FlagError::NotAPeer(p.to_string())),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let etcd = EtcdLeaseConfig {
            lease_ttl_ms: number(&self.lease_ttl_ms, "lease-ttl-ms", "BATON_LEASE_TTL_MS")?,
            prefix: given(
                &self.election_prefix,
                "election-prefix",
                "BATON_ELECTION_PREFIX",
            )?,
            ..EtcdLeaseConfig::default()
        };
        let cfg = NodeConfig {
            log_path: dir.join("events.jsonl"),
            epoch_us: crate::run_clock::RunClock::start().epoch_us(),
            backend_endpoints: given(
                &self.etcd_endpoints,
                "etcd-endpoints",
                "BATON_ETCD_ENDPOINTS",
            )?
            .split(',')
            .map(String::from)
            .collect(),
            resource_url: given(&self.resource_url, "resource-url", "BATON_RESOURCE_URL")?,
            protocol: RealProtocol::EtcdLease(etcd),
            tick_interval_ms: number(&self.tick_ms, "tick-ms", "BATON_TICK_MS")?,
            resource_timeout_ms: number(
                &self.write_timeout_ms,
                "write-timeout-ms",
                "BATON_WRITE_TIMEOUT_MS",
            )?,
            peers,
            clock_offset_us: 0,
            clock_drift_ppm: 0,
            seed: 0,
            incarnation: 1,
            start_delay_ms_max: 0,
            name: id.into(),
            raft_peers: vec![],
            raft_disk: None,
        };
        Ok((cfg, port))
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: the flags a `--node-cmd` template gives; a missing one is named with
    //! its variable.
    use super::*;

    #[test]
    fn flags_make_a_node_config_and_a_missing_one_is_named() {
        let args = ContractNodeArgs {
            id: Some("n2".into()),
            http_port: Some("4100".into()),
            etcd_endpoints: Some("http://127.0.0.1:1,http://127.0.0.1:2".into()),
            election_prefix: Some("/e".into()),
            lease_ttl_ms: Some("2000".into()),
            resource_url: Some("http://127.0.0.1:9/write".into()),
            peers: Some("n1=http://127.0.0.1:7,n2=http://127.0.0.1:8".into()),
            tick_ms: Some("1000".into()),
            write_timeout_ms: Some("500".into()),
            dir: Some(PathBuf::from("/tmp/x")),
        };
        let (cfg, port) = args.config().unwrap();
        assert_eq!((cfg.name.as_str(), port), ("n2", 4100));
        assert_eq!(cfg.backend_endpoints.len(), 2);
        assert_eq!(cfg.peers[1].url, "http://127.0.0.1:8");
        assert_eq!(cfg.protocol.etcd_lease().unwrap().lease_ttl_ms, 2000);
        let mut bad = args.clone();
        bad.tick_ms = Some("soon".into());
        assert!(bad
            .config()
            .unwrap_err()
            .to_string()
            .contains("--tick-ms (BATON_TICK_MS)"));
    }
}
