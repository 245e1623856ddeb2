//! [`ZkApi`] over a live ZooKeeper, with the `zookeeper-client` crate: what
//! `zk-sequential` runs on in real mode, the same recipe code as in the simulator.
//!
//! The recipe speaks of sessions by id; here each session is one `zookeeper-client`
//! `zookeeper_client::Client` (one TCP connection, through the node's proxy), kept by id:
//! - `create_session` connects a new client asking for the recipe's timeout; the server
//!   answers with the negotiated one (`Client::session_timeout`);
//! - `ping` is a `sync` on the session: a request the server answers only while it
//!   counts the session alive, which it then counts alive from then (the client library
//!   also pings by itself when idle, as every ZooKeeper client does);
//! - `close_session` drops the client, which closes the session: the server deletes its
//!   ephemeral znodes at once;
//! - `exists_watch` sets a one-shot watch and waits for the znode's deletion at most
//!   `wait_ms`;
//! - session `0` is a read made without one of the recipe's sessions (an observer's
//!   look): it uses a session of its own, made on first use.
//!
//! Every call is bounded by `rpc_timeout_ms`: no answer in time is
//! [`ZkError::ConnectionLoss`], as ZooKeeper's own clients report a lost connection.
//! The server's errors map onto the recipe's by name; a closed or expired session is
//! [`ZkError::SessionExpired`].

use async_trait::async_trait;
use baton_protocols::zk_sequential::{CreateMode, SessionGrant, Stat, ZkApi, ZkError};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;
use zookeeper_client as zk;

/// A node's ZooKeeper client. See the module doc.
pub struct RealZk {
    connect: String,
    timeout: Duration,
    sessions: Mutex<BTreeMap<i64, zk::Client>>,
    observer: tokio::sync::Mutex<Option<zk::Client>>,
}

fn error(e: zk::Error) -> ZkError {
    match e {
        zk::Error::NoNode => ZkError::NoNode,
        zk::Error::NodeExists => ZkError::NodeExists,
        zk::Error::NotEmpty => ZkError::NotEmpty,
        zk::Error::SessionExpired | zk::Error::ClientClosed => ZkError::SessionExpired,
        _ => ZkError::ConnectionLoss,
    }
}

fn stat(s: &zk::Stat) -> Stat {
    Stat {
        czxid: s.czxid,
        ephemeral_owner: s.ephemeral_owner,
    }
}

impl RealZk {
    /// A client of the ZooKeeper at `connect` (`127.0.0.1:<port>`, through the node's
    /// proxy) whose every call waits at most `rpc_timeout_ms`.
    pub fn new(connect: &str, rpc_timeout_ms: u64) -> RealZk {
        RealZk {
            connect: connect.to_string(),
            timeout: Duration::from_millis(rpc_timeout_ms.max(1)),
            sessions: Mutex::new(BTreeMap::new()),
            observer: tokio::sync::Mutex::new(None),
        }
    }

    /// Runs `call` within the call timeout.
    async fn bounded<T>(
        &self,
        call: impl Future<Output = Result<T, zk::Error>>,
    ) -> Result<T, ZkError> {
        tokio::time::timeout(self.timeout, call)
            .await
            .map_err(|_| ZkError::ConnectionLoss)?
            .map_err(error)
    }

    /// The client of session `id` (0: the observer's, made if needed).
    async fn session(&self, id: i64) -> Result<zk::Client, ZkError> {
        if id != 0 {
            return self
                .sessions
                .lock()
                .unwrap()
                .get(&id)
                .cloned()
                .ok_or(ZkError::SessionExpired);
        }
        let mut g = self.observer.lock().await;
        if let Some(c) = g.as_ref().filter(|c| !c.state().is_terminated()) {
            return Ok(c.clone());
        }
        let c = self.bounded(zk::Client::connect(&self.connect)).await?;
        *g = Some(c.clone());
        Ok(c)
    }
}

#[async_trait]
impl ZkApi for RealZk {
    async fn create_session(&self, timeout_ms: u64) -> Result<SessionGrant, ZkError> {
        let connector =
            zk::Client::connector().with_session_timeout(Duration::from_millis(timeout_ms));
        let c = self.bounded(connector.connect(&self.connect)).await?;
        let grant = SessionGrant {
            id: c.session_id().0,
            timeout_ms: c.session_timeout().as_millis() as u64,
        };
        self.sessions.lock().unwrap().insert(grant.id, c);
        Ok(grant)
    }

    async fn ping(&self, session: i64) -> Result<(), ZkError> {
        let c = self.session(session).await?;
        self.bounded(c.sync("/")).await
    }

    async fn close_session(&self, session: i64) -> Result<(), ZkError> {
        // Dropping the last handle of a session closes it (the library sends
        // closeSession); the recipe's call is best effort.
        self.sessions.lock().unwrap().remove(&session);
        Ok(())
    }

    async fn create(
        &self,
        session: i64,
        path: &str,
        data: &str,
        mode: CreateMode,
    ) -> Result<(String, Stat), ZkError> {
        let c = self.session(session).await?;
        let (zk_mode, sequential) = match mode {
            CreateMode::Persistent => (zk::CreateMode::Persistent, false),
            CreateMode::EphemeralSequential => (zk::CreateMode::EphemeralSequential, true),
        };
        let options = zk_mode.with_acls(zk::Acls::anyone_all());
        let (s, seq) = self
            .bounded(c.create(path, data.as_bytes(), &options))
            .await?;
        let created = if sequential {
            format!("{path}{seq}")
        } else {
            path.to_string()
        };
        Ok((created, stat(&s)))
    }

    async fn get_children(&self, session: i64, path: &str) -> Result<Vec<String>, ZkError> {
        let c = self.session(session).await?;
        self.bounded(c.list_children(path)).await
    }

    async fn get_data(&self, session: i64, path: &str) -> Result<(String, Stat), ZkError> {
        let c = self.session(session).await?;
        let (data, s) = self.bounded(c.get_data(path)).await?;
        Ok((String::from_utf8_lossy(&data).into_owned(), stat(&s)))
    }

    async fn exists_watch(
        &self,
        session: i64,
        path: &str,
        wait_ms: u64,
    ) -> Result<Option<Stat>, ZkError> {
        let c = self.session(session).await?;
        let (s, watcher) = self.bounded(c.check_and_watch_stat(path)).await?;
        let Some(s) = s else {
            return Ok(None);
        };
        match tokio::time::timeout(Duration::from_millis(wait_ms), watcher.changed()).await {
            Ok(ev) if ev.event_type == zk::EventType::NodeDeleted => Ok(None),
            Ok(ev) if ev.event_type == zk::EventType::Session => Err(ZkError::SessionExpired),
            // Changed but still there, or no change within the wait.
            _ => Ok(Some(stat(&s))),
        }
    }

    async fn delete(&self, session: i64, path: &str) -> Result<(), ZkError> {
        let c = self.session(session).await?;
        self.bounded(c.delete(path, None)).await
    }
}

/// Runs the recipe's calls `rounds` times on the server at `connect` (a session, its
/// parent, an ephemeral sequential znode, the children, the close), under a path of its
/// own that it removes: a freshly started ZooKeeper is a JVM that has loaded and
/// compiled nothing yet, and its first session took 473 ms to open where later ones took
/// 2 ms (`real/tests/call_latency.rs`, on this machine kind). Real deployments elect
/// against a warm server, so the supervisor warms it before the fleet starts.
pub async fn warm_up(connect: &str, rounds: usize) -> Result<(), super::ZkSetupError> {
    let zk = RealZk::new(connect, 5000);
    let fail = |why: ZkError| super::ZkSetupError::WarmUp {
        connect: connect.to_string(),
        why,
    };
    for _ in 0..rounds {
        let s = zk.create_session(4000).await.map_err(fail)?;
        match zk
            .create(s.id, "/baton-warm-up", "", CreateMode::Persistent)
            .await
        {
            Ok(_) | Err(ZkError::NodeExists) => {}
            Err(e) => return Err(fail(e)),
        }
        let (path, _) = zk
            .create(
                s.id,
                "/baton-warm-up/n_",
                "w",
                CreateMode::EphemeralSequential,
            )
            .await
            .map_err(fail)?;
        zk.get_children(s.id, "/baton-warm-up")
            .await
            .map_err(fail)?;
        zk.get_data(s.id, &path).await.map_err(fail)?;
        zk.ping(s.id).await.map_err(fail)?;
        zk.delete(s.id, &path).await.map_err(fail)?;
        zk.close_session(s.id).await.map_err(fail)?;
    }
    let s = zk.create_session(4000).await.map_err(fail)?;
    zk.delete(s.id, "/baton-warm-up").await.map_err(fail)?;
    zk.close_session(s.id).await.map_err(fail)
}
