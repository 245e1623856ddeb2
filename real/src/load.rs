//! The load client as a process: `POST /next` at a steady rate to whichever node leads.
//!
//! As the simulator's client (`sim/src/world/client.rs`) does, it sends the requests of each
//! quantum (`client_quantum_ms`) together, as one `POST /next?count=N`, and the leader
//! puts every request waiting when its write starts into that write. It sends to the node
//! it believes leads, through that node's proxy, without waiting for earlier answers; a
//! `409` names the leader to try next, and a timeout or error moves it to the next node
//! in the fleet. It keeps counts, per request, in a JSON file rewritten every 500 ms and
//! on SIGTERM ([`LoadStats`]).

use crate::node::{NextBody, NotLeaderBody, Peer};
use baton_model::NodeId;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the supervisor tells the load process (written as JSON, passed by path).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LoadConfig {
    /// The nodes, at their client-facing (proxied) addresses.
    pub nodes: Vec<Peer>,
    /// Requests per second (0: none).
    pub rate_per_s: u64,
    /// One message per quantum.
    pub quantum_ms: u64,
    /// A request not answered within this is counted as timed out.
    pub client_timeout_ms: u64,
    /// Where the counts go.
    pub stats_path: PathBuf,
    /// The run's epoch ([`crate::run_clock::RunClock::epoch_us`]): requests are counted
    /// by the run time they were sent at.
    pub epoch_us: i64,
}

/// The client's counts, per request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadStats {
    /// Requests sent.
    pub sent: u64,
    /// Requests answered with a number.
    pub ok: u64,
    /// Requests answered by a node that did not lead.
    pub not_leader: u64,
    /// Requests whose write timed out at the leader (503).
    pub unavailable: u64,
    /// Requests not answered in time.
    pub timed_out: u64,
    /// Requests that failed otherwise (connection refused or reset: a dead node).
    pub errors: u64,
    /// Numbers this client received more than once: 0 unless a stale leader's numbers
    /// got out (answers arrive out of order, so reuse, not order, is what it can judge).
    pub reused: u64,
    /// The highest number received.
    pub max_seq: u64,
    /// Every range received, `(first, last)`, for [`LoadStats::reused`].
    #[serde(skip)]
    pub ranges: Vec<(u64, u64)>,
    /// Requests sent, and of those answered with a number, by when they were sent: one
    /// entry per 100 ms of the run's clock (index = send time / 100 ms), as the
    /// simulator's client counts them for the load checker.
    #[serde(default)]
    pub by_send_time: Vec<SentOk>,
}

/// Requests sent in one 100 ms slice, and how many of them got a number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentOk {
    /// Sent.
    pub sent: u64,
    /// Answered with a number.
    pub ok: u64,
}

impl LoadStats {
    /// The counts as the model's checkers read them: a request that timed out, whose
    /// leader could not write in time (503) or whose node was gone (a refused or reset
    /// connection) is a timeout, as the simulator's client counts a request to a dead
    /// node.
    pub fn client_stats(&self) -> baton_model::checker::client_stats::ClientStats {
        baton_model::checker::client_stats::ClientStats {
            sent: self.sent,
            ok: self.ok,
            not_leader: self.not_leader,
            timeouts: self.timed_out + self.unavailable + self.errors,
            reused: self.reused,
            reads_sent: 0,
            reads_ok: 0,
            by_send_time: self
                .by_send_time
                .iter()
                .map(|s| baton_model::checker::client_stats::SentOk {
                    sent: s.sent,
                    ok: s.ok,
                })
                .collect(),
        }
    }
}

/// The slice of [`LoadStats::by_send_time`] a request sent at run time `at_us` is in.
fn slice_of(at_us: i64) -> usize {
    (at_us.max(0) / baton_model::checker::client_stats::SLICE_US) as usize
}

fn slice_mut(v: &mut Vec<SentOk>, i: usize) -> &mut SentOk {
    if v.len() <= i {
        v.resize(i + 1, SentOk::default());
    }
    &mut v[i]
}

impl LoadStats {
    /// Reads the counts a load process wrote.
    pub fn read(path: &Path) -> std::io::Result<LoadStats> {
        let text = std::fs::read_to_string(path)?;
        serde_json::from_str(&text).map_err(std::io::Error::other)
    }
}

/// How many numbers lie in more than one of `ranges` (counting each extra copy).
fn overlap(ranges: &[(u64, u64)]) -> u64 {
    let mut r = ranges.to_vec();
    r.sort_unstable();
    let mut reused = 0;
    let mut covered_to = 0u64; // highest number seen so far (numbers start at 1)
    for (first, last) in r {
        if first <= covered_to {
            reused += covered_to.min(last) - first + 1;
        }
        covered_to = covered_to.max(last);
    }
    reused
}

fn save(path: &Path, s: &LoadStats) {
    let tmp = path.with_extension("tmp");
    if std::fs::write(&tmp, serde_json::to_vec_pretty(s).expect("stats serialize")).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

enum Answer {
    Ok(NextBody),
    NotLeader(Option<NodeId>),
    Unavailable,
    TimedOut,
    Error,
}

/// Why the load client could not start.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Its config names no node.
    #[error("no nodes to send to")]
    NoNodes,
    /// No HTTP client.
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    /// SIGTERM cannot be watched for.
    #[error("{0}")]
    Signal(#[from] std::io::Error),
}

/// Runs the load client until SIGTERM (saving its counts then) or SIGKILL.
pub async fn run(cfg: LoadConfig) -> Result<(), LoadError> {
    if cfg.nodes.is_empty() {
        return Err(LoadError::NoNodes);
    }
    let http = reqwest::Client::builder()
        .timeout(Duration::from_millis(cfg.client_timeout_ms))
        .build()?;
    let client = Client {
        http,
        clock: crate::run_clock::RunClock::from_epoch(cfg.epoch_us),
        stats: Arc::new(Mutex::new(LoadStats::default())),
        target: Arc::new(Mutex::new(0)),
        nodes: cfg.nodes.clone().into(),
    };
    let saver = spawn_saver(client.stats.clone(), cfg.stats_path.clone());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let quantum = Duration::from_millis(cfg.quantum_ms.max(1));
    let mut tick = tokio::time::interval(quantum);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Requests owed, in millionths, so any rate spreads evenly over quanta.
    let mut owed_micro: u64 = 0;
    let per_quantum_micro = cfg.rate_per_s * quantum.as_micros() as u64;
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = tick.tick() => {}
        }
        owed_micro += per_quantum_micro;
        let count = owed_micro / 1_000_000;
        owed_micro %= 1_000_000;
        if count > 0 {
            client.send(count);
        }
    }
    saver.abort();
    // Requests still in flight are left out of `ok` and friends: sent minus the rest is
    // what never got an answer.
    let mut s = client.stats.lock().unwrap().clone();
    s.reused = overlap(&s.ranges);
    save(&cfg.stats_path, &s);
    Ok(())
}

/// Rewrites the counts every 500 ms, so a client killed outright leaves recent ones.
fn spawn_saver(stats: Arc<Mutex<LoadStats>>, path: PathBuf) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let mut s = stats.lock().unwrap().clone();
            s.reused = overlap(&s.ranges);
            save(&path, &s);
        }
    })
}

/// What every request of the client shares: its HTTP client, the run's clock, the counts
/// and which node it believes leads.
#[derive(Clone)]
struct Client {
    http: reqwest::Client,
    clock: crate::run_clock::RunClock,
    stats: Arc<Mutex<LoadStats>>,
    /// Index into `nodes` of the node believed to lead.
    target: Arc<Mutex<usize>>,
    nodes: Arc<[Peer]>,
}

impl Client {
    /// Sends `count` requests as one `POST /next` to the node believed to lead, without
    /// waiting for the answer: a task counts it when it comes.
    fn send(&self, count: u64) {
        let i = *self.target.lock().unwrap();
        let url = format!("{}/next?count={count}", self.nodes[i].url);
        let slice = slice_of(self.clock.now_us());
        {
            let mut s = self.stats.lock().unwrap();
            s.sent += count;
            slice_mut(&mut s.by_send_time, slice).sent += count;
        }
        let me = self.clone();
        tokio::spawn(async move {
            let answer = ask(&me.http, &url).await;
            me.count(answer, i, count, slice);
        });
    }

    /// Counts the answer to `count` requests sent to node `i` in send-time slice
    /// `slice`, and moves on to another node when this one did not lead or answer.
    fn count(&self, answer: Answer, i: usize, count: u64, slice: usize) {
        let mut s = self.stats.lock().unwrap();
        match answer {
            Answer::Ok(b) => {
                s.ok += count;
                slice_mut(&mut s.by_send_time, slice).ok += count;
                s.max_seq = s.max_seq.max(b.last);
                s.ranges.push((b.seq, b.last));
            }
            Answer::NotLeader(hint) => {
                s.not_leader += count;
                let mut t = self.target.lock().unwrap();
                // As the simulator's client: a hint naming the node that answered
                // (a node cut off from etcd still names the leader it last saw,
                // itself) is no use; move on to the next node instead.
                match hint.and_then(|h| self.nodes.iter().position(|n| n.name == h)) {
                    Some(j) if j != i => *t = j,
                    _ if *t == i => *t = (i + 1) % self.nodes.len(),
                    _ => {}
                }
            }
            Answer::Unavailable => s.unavailable += count,
            Answer::TimedOut | Answer::Error => {
                if matches!(answer, Answer::TimedOut) {
                    s.timed_out += count;
                } else {
                    s.errors += count;
                }
                let mut t = self.target.lock().unwrap();
                if *t == i {
                    *t = (i + 1) % self.nodes.len();
                }
            }
        }
    }
}

/// One `POST /next` and what its answer means.
async fn ask(http: &reqwest::Client, url: &str) -> Answer {
    match http.post(url).send().await {
        Ok(r) if r.status().is_success() => match r.json::<NextBody>().await {
            Ok(b) => Answer::Ok(b),
            Err(_) => Answer::Error,
        },
        Ok(r) if r.status() == reqwest::StatusCode::CONFLICT => {
            Answer::NotLeader(r.json::<NotLeaderBody>().await.ok().and_then(|b| b.leader))
        }
        Ok(r) if r.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE => Answer::Unavailable,
        Ok(_) => Answer::Error,
        Err(e) if e.is_timeout() => Answer::TimedOut,
        Err(_) => Answer::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::overlap;

    #[test]
    fn overlap_counts_each_number_handed_out_twice() {
        assert_eq!(overlap(&[(1, 5), (6, 10)]), 0);
        assert_eq!(overlap(&[(6, 10), (1, 5), (4, 7)]), 4);
        assert_eq!(overlap(&[(1, 10), (3, 4)]), 2);
    }
}
