//! An election module on etcd, as a Rust team writes one with the `etcd-client` crate.
//!
//! A node campaigns with etcd's election API under a lease of its own, keeps the lease
//! alive, observes who leads, and while it leads does the singleton work, every write
//! fenced with the leader key's create revision as its token: a claim, a scheduler tick
//! every `tick`, and one write of the sequence row for each batch of the sequencer's
//! requests, whose numbers it hands out only once that write was accepted. It steps down
//! when its local deadline passes (the send of the last keep-alive etcd answered, plus
//! the TTL etcd granted), when etcd says the lease is gone, when a write is fenced off,
//! or when its host asks it to resign; then it resigns, revokes the lease and campaigns
//! again. The host (the program it runs in) carries its writes to the fenced resource,
//! its requests in, and its beliefs out.
//!
//! Nothing here knows about Baton: the module uses `etcd_client` and `tokio` only, so the
//! same file builds against the real `etcd-client` (see `plain/`) and, renamed in
//! `Cargo.toml`, against Baton's simulated one.
//!
//! The feature `no-local-deadline` plants a realistic bug: the leader trusts its
//! keep-alive stream alone. Cut off from etcd, its keep-alive hangs without an error,
//! so it goes on leading after etcd gave the seat away, as etcd's Go `concurrency`
//! session does (etcd-io/etcd#5571).

use etcd_client::{Client, ConnectOptions, LeaderKey, ResignOptions};
use std::future::Future;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{sleep, sleep_until, timeout, Instant};

/// Where and how a node campaigns.
#[derive(Clone, Debug)]
pub struct Config {
    /// The etcd members' client URLs.
    pub endpoints: Vec<String>,
    /// The election's name: the node's key is `<prefix>/<lease id in hex>`.
    pub prefix: String,
    /// The node's name, the key's value (what followers name as the leader).
    pub name: String,
    /// The lease TTL to ask for (etcd grants whole seconds).
    pub lease_ttl: Duration,
    /// The timeout of each call but the campaign's wait and the watch.
    pub call_timeout: Duration,
    /// How long a node waits before it campaigns again after a term or an error.
    pub retry: Duration,
    /// The scheduler's tick while it leads.
    pub tick: Duration,
}

/// Why a node stopped leading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepDown {
    /// Its local deadline passed before etcd renewed the lease.
    DeadlinePassed,
    /// etcd answered that the lease is gone (or a renewal failed outright).
    LeaseLost,
    /// The resource refused a write: a newer leader exists.
    Fenced,
    /// The host asked it to step down.
    Resigned,
}

/// A protected write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Announces the token (fencing every older one) and reads the sequence row.
    Claim,
    /// The scheduler's tick `n` of this term.
    Tick(u64),
    /// Moves the sequence row to `last`, handing out `first..=last`.
    Seq {
        /// The batch's first number.
        first: u64,
        /// Its last.
        last: u64,
    },
}

/// What a protected write came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// Accepted: where the sequence row stands after it.
    Accepted {
        /// The row's last number.
        last_seq: u64,
    },
    /// Refused: a newer token exists.
    Rejected,
    /// No answer in time (it may still land), or refused as a late batch of its own.
    Failed,
}

/// Requests of the sequencer's client, taken together.
pub trait Batch: Send {
    /// How many numbers they ask for.
    fn count(&self) -> u64;
    /// Hands out `first..first + count()` under `token`.
    fn grant(self, token: u64, first: u64);
    /// Answers that the numbers could not be made durable: the client tries again.
    fn unavailable(self);
}

/// The program the module runs in: what it hears of the node's beliefs, and how the
/// leader reaches the fenced resource and the sequencer's requests.
pub trait Host: Send + Sync + 'static {
    /// The requests of one [`Host::requests`].
    type Batch: Batch;
    /// The node believes it leads under fencing `token` from now.
    fn lead(&self, token: u64);
    /// It no longer believes it leads, for `why`.
    fn step_down(&self, token: u64, why: StepDown);
    /// Whom the node sees leading (name, token), or nobody.
    fn sees_leader(&self, leader: Option<(String, u64)>);
    /// One protected write under `token`.
    fn write(&self, token: u64, op: Op) -> impl Future<Output = Written> + Send;
    /// The sequencer's requests queued for the leader `token`, waiting for some;
    /// `None` when no more will come this term.
    fn requests(&self, token: u64) -> impl Future<Output = Option<Self::Batch>> + Send;
    /// Resolves when the leader `token` is asked to step down.
    fn resign_asked(&self, token: u64) -> impl Future<Output = ()> + Send;
}

/// Runs the node for ever: campaign, lead, step down, again.
pub async fn run<H: Host>(config: Config, host: H) {
    let host = std::sync::Arc::new(host);
    tokio::spawn(observe(config.clone(), host.clone()));
    loop {
        if let Ok(client) = connect(&config, Some(config.call_timeout)).await {
            let _ = one_term(&config, client, host.as_ref()).await;
        }
        sleep(config.retry).await;
    }
}

/// A client of the cluster; `call_timeout` bounds each call (none: calls that wait).
async fn connect(
    config: &Config,
    call_timeout: Option<Duration>,
) -> Result<Client, etcd_client::Error> {
    let options = call_timeout.map(|t| ConnectOptions::new().with_timeout(t));
    Client::connect(config.endpoints.clone(), options).await
}

/// One lease: campaign on it, lead while it holds, then give everything back.
async fn one_term<H: Host>(
    config: &Config,
    mut client: Client,
    host: &H,
) -> Result<(), etcd_client::Error> {
    let ttl_s = config.lease_ttl.as_secs_f64().ceil().max(1.0) as i64;
    let sent = Instant::now();
    let grant = client.lease_grant(ttl_s, None).await?;
    let lease = grant.id();
    let (deadline_tx, mut deadline) =
        watch::channel(sent + Duration::from_secs(grant.ttl().max(0) as u64));
    let keep = keep_alive(config.clone(), client.clone(), lease, deadline_tx);
    tokio::pin!(keep);
    // The campaign waits its turn for as long as it takes: a client without a timeout.
    let mut patient = connect(config, None).await?;
    let campaign = patient.campaign(config.prefix.as_str(), config.name.as_str(), lease);
    let won = tokio::select! {
        biased;
        r = campaign => r?.take_leader(),
        _ = &mut keep => None,
    };
    if let Some(key) = won {
        let token = key.rev() as u64;
        host.lead(token);
        let (stop_tx, stop) = watch::channel(false);
        let work = work(host, token, config.tick, stop);
        tokio::pin!(work);
        let why = tokio::select! {
            biased;
            why = hold_lease(&mut keep, &mut deadline) => why,
            why = &mut work => why,
            _ = host.resign_asked(token) => {
                // A graceful step-down: the write in flight is answered (or times out)
                // before the key goes, unless the deadline passes first.
                let _ = stop_tx.send(true);
                tokio::select! {
                    biased;
                    why = hold_lease(&mut keep, &mut deadline) => why,
                    why = &mut work => why,
                }
            }
        };
        host.step_down(token, why);
        resign(&mut client, key).await;
    }
    let _ = client.lease_revoke(lease).await;
    Ok(())
}

/// Holds the lease until the local deadline passes or the lease is lost.
async fn hold_lease(
    keep: &mut (impl Future<Output = ()> + Unpin),
    deadline: &mut watch::Receiver<Instant>,
) -> StepDown {
    loop {
        let until = *deadline.borrow_and_update();
        tokio::select! {
            biased;
            _ = &mut *keep => return StepDown::LeaseLost,
            _ = sleep_until(until), if cfg!(not(feature = "no-local-deadline")) => {
                return StepDown::DeadlinePassed;
            }
            // A renewal moved the deadline: wait for the new one.
            _ = deadline.changed() => {}
        }
    }
}

/// The leader's protected work under `token`, one write at a time: the claim (again
/// until answered), then the scheduler's tick when due and a write of the sequence row
/// for each batch of requests. Returns when a write is fenced off, or between two writes
/// once `stop` turns true.
async fn work<H: Host>(
    host: &H,
    token: u64,
    tick: Duration,
    mut stop: watch::Receiver<bool>,
) -> StepDown {
    let mut last = loop {
        match host.write(token, Op::Claim).await {
            Written::Accepted { last_seq } => break last_seq,
            Written::Rejected => return StepDown::Fenced,
            Written::Failed => sleep(Duration::from_millis(10)).await,
        }
    };
    let (mut n, mut next_tick) = (0, Instant::now() + tick);
    loop {
        tokio::select! {
            biased;
            _ = async { drop(stop.wait_for(|stop| *stop).await) } => return StepDown::Resigned,
            _ = sleep_until(next_tick) => {
                (n, next_tick) = (n + 1, next_tick + tick);
                if host.write(token, Op::Tick(n)).await == Written::Rejected {
                    return StepDown::Fenced;
                }
            }
            batch = host.requests(token) => {
                let Some(batch) = batch else {
                    // No more requests this term: the ticks go on.
                    sleep_until(next_tick).await;
                    continue;
                };
                let (first, end) = (last + 1, last + batch.count());
                match host.write(token, Op::Seq { first, last: end }).await {
                    Written::Accepted { .. } => batch.grant(token, first),
                    Written::Rejected => {
                        batch.unavailable();
                        return StepDown::Fenced;
                    }
                    // The numbers may exist: never hand them out again.
                    Written::Failed => batch.unavailable(),
                }
                last = end;
            }
        }
    }
}

/// Keeps `lease` alive every third of its TTL, moving the deadline on each answer (the
/// request's send plus the TTL granted); returns when etcd says the lease is gone or a
/// renewal fails.
async fn keep_alive(
    config: Config,
    mut client: Client,
    lease: i64,
    deadline: watch::Sender<Instant>,
) {
    let Ok((mut keeper, mut stream)) = client.lease_keep_alive(lease).await else {
        return;
    };
    let every = config.lease_ttl / 3;
    loop {
        sleep(every).await;
        let sent = Instant::now();
        if keeper.keep_alive().await.is_err() {
            return;
        }
        // The stream has no timeout of its own: with the planted bug, nothing else
        // bounds a leader whose renewals hang.
        // (An answer later than the TTL ends the renewals: it could not be told from
        // the next request's.)
        let answer = if cfg!(feature = "no-local-deadline") {
            stream.message().await
        } else {
            match timeout(config.lease_ttl, stream.message()).await {
                Ok(answer) => answer,
                Err(_) => return,
            }
        };
        match answer {
            Ok(Some(k)) if k.ttl() > 0 => {
                let until = sent + Duration::from_secs(k.ttl() as u64);
                deadline.send_if_modified(|d| {
                    let later = until > *d;
                    if later {
                        *d = until;
                    }
                    later
                });
            }
            _ => return,
        }
    }
}

/// Gives the seat up: deletes the key if it is still ours.
async fn resign(client: &mut Client, key: LeaderKey) {
    let _ = client
        .resign(Some(ResignOptions::new().with_leader(key)))
        .await;
}

/// Follows who leads, for the host's hints: etcd's observe stream names each new leader.
async fn observe<H: Host>(config: Config, host: std::sync::Arc<H>) {
    loop {
        if let Ok(mut client) = connect(&config, None).await {
            if let Ok(mut stream) = client.observe(config.prefix.as_str()).await {
                while let Ok(Some(resp)) = stream.message().await {
                    host.sees_leader(resp.kv().and_then(|kv| {
                        let name = kv.value_str().ok()?.to_string();
                        Some((name, kv.create_revision() as u64))
                    }));
                }
            }
        }
        host.sees_leader(None);
        sleep(config.retry).await;
    }
}
