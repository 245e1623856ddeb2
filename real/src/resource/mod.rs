//! The fenced resource as a process: the SQLite [`Ledger`] behind `POST /write`.
//!
//! Nodes reach it through their own proxies (so a partition can cut one node off it). It
//! handles one write at a time: each is one transaction, and its event
//! (`write_accepted`, `write_rejected` or `seq_refused`) is logged before the next
//! begins, so the log's order is the ledger's commit order.

pub mod ledger;

use crate::events::{Event, EventLog, WriteOp};
use crate::resource::ledger::{Ledger, Outcome};
use crate::run_clock::RunClock;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use baton_model::NodeId;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What the supervisor tells the resource process (written as JSON, passed by path).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResourceConfig {
    /// The SQLite database.
    pub db_path: PathBuf,
    /// Whether the fence is on.
    pub fencing: bool,
    /// Where its events go.
    pub log_path: PathBuf,
    /// The run's epoch ([`RunClock::epoch_us`]).
    pub epoch_us: i64,
}

/// A protected write, as a node sends it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FencedWrite {
    /// The writer.
    pub node: NodeId,
    /// Its fencing token.
    pub token: u64,
    /// What it writes.
    pub op: WriteOp,
}

/// The resource's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum WriteReply {
    /// Accepted; where the sequence row and the job's cursor stand now.
    Accepted {
        /// `sequence.last_seq`.
        last_seq: u64,
        /// The job's cursor.
        cursor: u64,
    },
    /// Rejected by the fence.
    Rejected {
        /// The highest token accepted so far.
        max_token: u64,
    },
    /// A leader's own late batch, refused by the row.
    Behind {
        /// `sequence.last_seq`.
        last_seq: u64,
    },
}

struct Resource {
    ledger: Mutex<Ledger>,
    log: EventLog,
}

/// Why the resource process stopped, or a write failed.
#[derive(Debug, thiserror::Error)]
pub enum ResourceError {
    /// Its event log cannot be opened.
    #[error("{}: {source}", .path.display())]
    Log {
        /// The log's file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Its ledger cannot be opened.
    #[error("{}: {source}", .path.display())]
    Ledger {
        /// The ledger's file.
        path: std::path::PathBuf,
        /// Why.
        source: rusqlite::Error,
    },
    /// A write's transaction failed (the write's `500`).
    #[error("ledger: {0}")]
    Write(rusqlite::Error),
    /// No port to listen on.
    #[error("bind: {0}")]
    Bind(std::io::Error),
    /// The port it listens on cannot be read.
    #[error("{0}")]
    Address(std::io::Error),
}

/// Applies `w` and logs what happened, in one critical section.
fn apply(r: &Resource, w: FencedWrite) -> Result<WriteReply, ResourceError> {
    let mut ledger = r.ledger.lock().unwrap_or_else(|p| p.into_inner());
    let at_us = r.log.clock().now_us();
    let outcome = ledger
        .write(&w.node, w.token, w.op, at_us)
        .map_err(ResourceError::Write)?;
    Ok(match outcome {
        Outcome::Accepted {
            max_token_before,
            last_seq,
            cursor,
        } => {
            r.log.record(Event::WriteAccepted {
                node: w.node,
                token: w.token,
                max_token: max_token_before,
                op: w.op,
            });
            WriteReply::Accepted { last_seq, cursor }
        }
        Outcome::Rejected { max_token } => {
            r.log.record(Event::WriteRejected {
                node: w.node,
                token: w.token,
                max_token,
                op: w.op,
            });
            WriteReply::Rejected { max_token }
        }
        Outcome::Behind { last_seq } => {
            if let WriteOp::Seq { first, last } = w.op {
                r.log.record(Event::SeqRefused {
                    node: w.node,
                    token: w.token,
                    first,
                    last,
                    last_seq,
                });
            }
            WriteReply::Behind { last_seq }
        }
    })
}

async fn write(
    State(r): State<Arc<Resource>>,
    Json(w): Json<FencedWrite>,
) -> Result<Json<WriteReply>, (StatusCode, String)> {
    apply(&r, w)
        .map(Json)
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

/// Runs the resource process: opens the ledger, listens on a free loopback port,
/// announces it, and serves until killed.
pub async fn run(cfg: ResourceConfig) -> Result<(), ResourceError> {
    let log =
        EventLog::open(&cfg.log_path, RunClock::from_epoch(cfg.epoch_us)).map_err(|source| {
            ResourceError::Log {
                path: cfg.log_path.clone(),
                source,
            }
        })?;
    let ledger =
        Ledger::open(&cfg.db_path, cfg.fencing).map_err(|source| ResourceError::Ledger {
            path: cfg.db_path.clone(),
            source,
        })?;
    let state = Arc::new(Resource {
        ledger: Mutex::new(ledger),
        log,
    });
    let listener = tokio::net::TcpListener::bind((crate::ports::LOOPBACK, 0))
        .await
        .map_err(ResourceError::Bind)?;
    let addr = listener.local_addr().map_err(ResourceError::Address)?;
    crate::process::announce_listening(addr);
    serve(listener, state).await
}

/// Serves `POST /write` and `GET /health` on `listener`, until the process ends.
async fn serve(listener: tokio::net::TcpListener, state: Arc<Resource>) -> ! {
    let app = Router::new()
        .route("/write", post(write))
        .route("/health", get(|| async { "ok" }))
        .with_state(state);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of descriptors and the like: axum's own loop waits and goes on too.
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            // Half-close on: a write whose whole request arrived is applied even if its
            // writer hung up before the answer (its timeout fired as it woke from a
            // pause), as a database commits a statement it received. With it off, hyper
            // drops the handler when it reads the EOF, and the write can vanish.
            let _ = hyper::server::conn::http1::Builder::new()
                .half_close(true)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A writer whose write's last bytes leave with its hang-up (a node woken from a
    /// pause whose timeout fired: the head was held before the pause, the body follows
    /// with the close) still has it applied: the resource is a database, not a party to
    /// the writer's patience. With hyper's half-close off this fails: the Go node's
    /// fence-off GC pause then sometimes reproduced nothing in CI.
    #[tokio::test]
    async fn a_write_whose_writer_hung_up_is_still_applied() {
        let dir = tempfile::tempdir().unwrap();
        let clock = RunClock::start();
        let state = Arc::new(Resource {
            ledger: Mutex::new(Ledger::open(&dir.path().join("l.db"), true).unwrap()),
            log: EventLog::open(&dir.path().join("events.jsonl"), clock).unwrap(),
        });
        let listener = tokio::net::TcpListener::bind((crate::ports::LOOPBACK, 0))
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, state.clone()));
        for token in [7, 9] {
            let body = format!(r#"{{"node":"n1","token":{token},"op":{{"kind":"claim"}}}}"#);
            let request = format!(
                "POST /write HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            // The body's last bytes come with the hang-up, after the server began on
            // the request (it reads the head and waits for the body).
            let (first, last) = request.split_at(request.len() - 5);
            let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
            c.write_all(first.as_bytes()).await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            c.write_all(last.as_bytes()).await.unwrap();
            drop(c);
            let mut applied = false;
            for _ in 0..200 {
                applied = state.ledger.lock().unwrap().max_token().unwrap() == token;
                if applied {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            assert!(
                applied,
                "token {token} was dropped with its writer's connection"
            );
        }
    }
}
