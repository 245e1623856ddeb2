//! A fleet node: one [`Elector`] campaigning in a loop, and the leader work while it leads.
//!
//! The node's life: campaign -> lead (claim the resource, then scheduler ticks and
//! sequencer batches, every write fenced) -> stop writing -> release -> campaign again.
//! It stops its protected writes before it lets leadership go, so a graceful handoff has
//! a positive gap; after a pause or partition it may not know it lost, which is what the
//! fenced resource is for.

use crate::clock::NodeClock;
use crate::net::Endpoint;
use crate::protocol::{DiskSlot, ElectorCtx, Protocol};
use crate::rpc::{node_addr, NextBatch, ReadAnswer, ReadBatch, ReadReply};
use crate::timeline::{Event, Role, Timeline};
use crate::work::{lead, LeaderWork};
use baton_protocols::clock::sleep_local;
use baton_protocols::{Clock, Elector, LossReason};
use madsim::task::NodeId;
use rand::Rng;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::Notify;

/// A node's current belief, as the world sees it (to resolve the `leader` target).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeStatus {
    /// Its role by its own belief.
    pub role: Role,
    /// Its token while it leads.
    pub token: Option<u64>,
    /// Killed and not restarted.
    pub dead: bool,
}

/// What the world keeps for a node across kills and restarts: its identity, its clock
/// (a restart does not fix a skewed clock), its status and the world's requests to it.
pub struct NodeControl {
    /// `n1`, `n2`, ...
    pub name: String,
    /// 1-based index (`n3` is 3).
    pub index: usize,
    /// The node's clock.
    pub clock: NodeClock,
    /// Its belief, updated by the node.
    pub status: Mutex<NodeStatus>,
    /// Set by the world to ask a leader to step down.
    pub resign_requested: AtomicBool,
    /// Wakes a leader waiting for work when a resign is requested.
    pub resign_notify: Notify,
    /// A pause armed to strike at the next protected write: (fault index, duration).
    pub pause_armed: Mutex<Option<(usize, u64)>>,
    /// The madsim node id, set once the node is built.
    pub id: OnceLock<NodeId>,
    /// How many times the node has started (1 on first start).
    pub incarnation: AtomicU64,
    /// The node's disk: what a persisting protocol keeps across restarts.
    pub disk: DiskSlot,
    /// Stop-the-world pauses in force (scripted and GC noise): the node runs when none
    /// is, so that one pause ending never wakes a node another still holds.
    holds: Mutex<u32>,
}

impl NodeControl {
    /// A control block for node `index` (1-based).
    pub fn new(index: usize) -> Self {
        NodeControl {
            name: format!("n{index}"),
            index,
            clock: NodeClock::new(),
            status: Mutex::new(NodeStatus {
                role: Role::Follower,
                token: None,
                dead: false,
            }),
            resign_requested: AtomicBool::new(false),
            resign_notify: Notify::new(),
            pause_armed: Mutex::new(None),
            id: OnceLock::new(),
            incarnation: AtomicU64::new(0),
            disk: DiskSlot::default(),
            holds: Mutex::new(0),
        }
    }

    /// Stops the world on the node, one more pause in force. Returns the incarnation it
    /// hit, for [`NodeControl::release`], or `None` when the node is down.
    pub fn hold(&self) -> Option<u64> {
        if self.status.lock().unwrap().dead {
            return None;
        }
        let mut holds = self.holds.lock().unwrap();
        if *holds == 0 {
            madsim::runtime::Handle::current().pause(*self.id.get().expect("built"));
        }
        *holds += 1;
        Some(self.incarnation.load(Ordering::SeqCst))
    }

    /// Ends one pause taken by [`NodeControl::hold`] on `incarnation`; the node runs
    /// again when it was the last. A pause on an incarnation since killed ends nothing.
    pub fn release(&self, incarnation: u64) {
        if self.incarnation.load(Ordering::SeqCst) != incarnation {
            return;
        }
        let mut holds = self.holds.lock().unwrap();
        if *holds == 0 {
            return;
        }
        *holds -= 1;
        if *holds == 0 {
            madsim::runtime::Handle::current().resume(*self.id.get().expect("built"));
        }
    }

    /// Forgets every pause in force: the node was killed (madsim drops its tasks, and a
    /// restart starts it unpaused).
    pub fn clear_holds(&self) {
        *self.holds.lock().unwrap() = 0;
    }

    fn set_status(&self, role: Role, token: Option<u64>) {
        let mut s = self.status.lock().unwrap();
        s.role = role;
        s.token = token;
    }
}

/// What every node shares: the timeline, the parameters, where the chaos node is.
pub struct NodeEnv {
    /// The run's timeline.
    pub timeline: Timeline,
    /// The world's count of requests the protocol's backend served.
    pub backend_requests: Arc<crate::requests::RequestCounter>,
    /// The run's root seed.
    pub seed: u64,
    /// The protocol under test.
    pub protocol: Arc<dyn Protocol>,
    /// The fleet size.
    pub nodes: usize,
    /// Scheduler tick interval.
    pub tick_interval_ms: u64,
    /// Timeout of calls to the fenced resource.
    pub resource_timeout_ms: u64,
    /// The most a node waits before it boots (see [`run`]).
    pub start_delay_ms_max: u64,
    /// The leader's long-running job, if the scenario has one.
    pub job: Option<crate::scenario::JobConfig>,
    /// The node that runs the world's own timers (pause ends), never paused or killed.
    pub chaos_node: OnceLock<NodeId>,
}

/// How long a node takes to boot before its first message (see [`run`]).
const BOOT: Duration = Duration::from_millis(1);

/// How often a node asks the backend who leads, for its `NotLeader` hints.
const OBSERVE_INTERVAL_MS: u64 = 1000;

/// How long a node that resigned waits before campaigning again, so that a protocol
/// without a queue (a Redis lock) does not hand leadership straight back to it.
const REJOIN_AFTER_RESIGN_MS: u64 = 1000;

/// Runs node `ctl` until it is killed.
pub async fn run(ctl: Arc<NodeControl>, env: Arc<NodeEnv>) {
    let incarnation = ctl.incarnation.fetch_add(1, Ordering::SeqCst) + 1;
    ctl.set_status(Role::Follower, None);
    ctl.resign_requested.store(false, Ordering::SeqCst);
    // A real process starts when its supervisor gets to it and boots for a while, so
    // nodes' timers (keepalives, renewals, polls) run at phases that differ from start
    // to start. The delay is drawn per node and per incarnation, from a generator of
    // its own. Until it has booted, the node does not listen: a message to it is lost,
    // as one to a process not yet started would be.
    let delay_ms = crate::seed::fork(env.seed, &format!("start/{}/{incarnation}", ctl.name))
        .gen_range(0..=env.start_delay_ms_max);
    // Every service and the client start at time 0 and bind at once; booting takes at
    // least a millisecond, so a node's first message never goes to an address nobody
    // listens on yet.
    let boot = if incarnation == 1 {
        BOOT
    } else {
        Duration::ZERO
    };
    madsim::time::sleep(boot + Duration::from_millis(delay_ms)).await;
    let ep = Arc::new(Endpoint::bind(node_addr(ctl.index)).expect("node address is free"));
    let clock: Arc<dyn Clock> = Arc::new(ctl.clock.clone());
    let elector: Arc<dyn Elector> = env.protocol.elector(ElectorCtx {
        node: &ctl.name,
        index: ctl.index,
        nodes: env.nodes,
        ep: ep.clone(),
        clock: clock.clone(),
        seed: env.seed,
        incarnation,
        timeline: env.timeline.clone(),
        disk: &ctl.disk,
        requests: env.backend_requests.clone(),
    });
    let work = Arc::new(LeaderWork::new(ep.as_ref().clone()));
    let w = work.clone();
    ep.add_message_handler(move |b: NextBatch, from| w.handle_next(b, from));
    let (e, w, tl, name, reply_ep) = (
        elector.clone(),
        work.clone(),
        env.timeline.clone(),
        ctl.name.clone(),
        ep.as_ref().clone(),
    );
    ep.add_message_handler(move |r: ReadBatch, from| {
        let reply = match e.replicated_log().and_then(|log| log.leased_read()) {
            Some((token, value)) => {
                tl.record(Event::ReadServed {
                    node: name.clone(),
                    token,
                    value,
                    sent_at_us: r.sent_at_us,
                    count: r.count,
                });
                ReadReply::Value { token, value }
            }
            None => ReadReply::NotLeader {
                hint: w.hint.lock().unwrap().clone(),
            },
        };
        reply_ep.send(from, ReadAnswer(r.batch, reply));
    });
    // Followers answer `next` with a hint; keep it fresh the way a client library would,
    // by observing the election now and then rather than on every request.
    let (obs, w, c) = (elector.clone(), work.clone(), clock.clone());
    let observe_every = Duration::from_millis(OBSERVE_INTERVAL_MS);
    madsim::task::spawn(async move {
        loop {
            if let Ok(info) = obs.observe().await {
                *w.hint.lock().unwrap() = info.map(|i| i.node);
            }
            sleep_local(c.as_ref(), observe_every).await;
        }
    });
    let mut rng = crate::seed::fork(env.seed, &format!("node/{}/{incarnation}", ctl.name));
    loop {
        ctl.set_status(Role::Candidate, None);
        env.timeline.record(Event::CampaignStarted {
            node: ctl.name.clone(),
        });
        let leadership = match elector.campaign().await {
            Ok(l) => l,
            Err(e) => {
                env.timeline.record(Event::CampaignFailed {
                    node: ctl.name.clone(),
                    error: e.to_string(),
                });
                ctl.set_status(Role::Follower, None);
                // Randomised backoff so failed candidates do not retry in lockstep.
                let backoff_ms = rng.gen_range(100..300);
                sleep_local(clock.as_ref(), Duration::from_millis(backoff_ms)).await;
                continue;
            }
        };
        let token = leadership.token;
        ctl.set_status(Role::Leader, Some(token));
        env.timeline.record(Event::RoleChanged {
            node: ctl.name.clone(),
            role: Role::Leader,
            token: Some(token),
        });
        let reason = lead(
            &ctl,
            &env,
            &ep,
            &leadership,
            &work,
            elector.replicated_log(),
            elector.as_ref(),
        )
        .await;
        leadership.end(reason);
        // Every protected write has completed or timed out by now: lead() is the only
        // writer and it has returned. Only then is leadership released.
        work.stop_leading();
        env.timeline.record(Event::StoppedActing {
            node: ctl.name.clone(),
            token,
            reason: reason.as_str().to_string(),
        });
        ctl.set_status(Role::Follower, None);
        env.timeline.record(Event::RoleChanged {
            node: ctl.name.clone(),
            role: Role::Follower,
            token: None,
        });
        if reason == LossReason::Resigned {
            env.timeline.record(Event::Released {
                node: ctl.name.clone(),
                token,
            });
            let _ = elector.resign(&leadership).await;
            // Let the next candidate in the queue take over before queueing again.
            sleep_local(
                clock.as_ref(),
                Duration::from_millis(REJOIN_AFTER_RESIGN_MS),
            )
            .await;
        } else {
            // Abandon the lost lease's key if the service still has it.
            let _ = elector.resign(&leadership).await;
        }
    }
}
