//! A fleet node: one [`Elector`] campaigning in a loop, and the leader work while it leads.
//!
//! The node's life: campaign -> lead (claim the resource, then scheduler ticks and
//! sequencer batches, every write fenced) -> stop writing -> release -> campaign again.
//! It stops its protected writes before it lets leadership go, so a graceful handoff has
//! a positive gap; after a pause or partition it may not know it lost, which is what the
//! fenced resource is for.

pub mod control;
pub mod desk;
pub mod env;
pub mod shard;
pub mod swim;
pub mod transfer;
pub mod work;

use crate::world::net::Endpoint;
use crate::world::node::desk::NodeDesk;
use crate::world::node::work::{lead, LeaderWork};
use crate::world::protocol::ElectorCtx;
use crate::world::rpc::{node_addr, NextBatch, ReadAnswer, ReadBatch, ReadReply};
use crate::world::timeline::{Event, Role, Timeline};
use baton_model::NodeId;
use baton_protocols::sleep_local;
use baton_protocols::{Clock, Elector, Leadership, LossReason};
use rand::Rng;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

// The world's handles on a node live in their own modules, which the leader's work
// reads too; the world reaches them through here, as part of a node.
pub use crate::world::node::control::{NodeControl, NodeStatus};
pub use crate::world::node::env::NodeEnv;

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
    ctl.transfer_to.lock().unwrap().take();
    boot(&ctl, &env, incarnation).await;
    let ep = Arc::new(Endpoint::bind(node_addr(ctl.index)).expect("node address is free"));
    let clock: Arc<dyn Clock> = Arc::new(ctl.clock.clone());
    // The term's desk, for a user's node that does its own protected work.
    let desk = Arc::new(tokio::sync::watch::Sender::new(None));
    let ctx = ElectorCtx {
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
        etcd_cluster: env.etcd_cluster.as_ref(),
        etcd_member: ctl.etcd_member.clone(),
        desk: desk.clone(),
    };
    if env.partitions > 0 {
        let kit = env
            .protocol
            .sharded(ctx, env.partitions)
            .expect("the scenario's checks allow partitions only where the protocol runs sharded");
        return crate::world::node::shard::run(ctl.clone(), env.clone(), ep.as_ref().clone(), kit)
            .await;
    }
    let elector: Arc<dyn Elector> = env.protocol.elector(ctx);
    let work = Arc::new(LeaderWork::new(ep.as_ref().clone()));
    serve_clients(&ep, &elector, &work, &env.timeline, &ctl.name);
    crate::world::node::transfer::serve(&ep, &elector);
    crate::world::node::swim::start(&ctl, &env, &ep, &elector, incarnation);
    spawn_observer(&elector, &work, &clock);
    let mut rng = baton_model::seed::fork(env.seed, &format!("node/{}/{incarnation}", ctl.name));
    loop {
        let Some(leadership) =
            campaign(&ctl, &env, elector.as_ref(), clock.as_ref(), &mut rng).await
        else {
            continue;
        };
        let (reason, handover) = if env.protocol.own_work() {
            let d = NodeDesk::new(
                ctl.clone(),
                env.clone(),
                ep.as_ref().clone(),
                work.clone(),
                leadership.clone(),
            );
            (desk::serve(&desk, d).await, None)
        } else {
            lead(
                &ctl,
                &env,
                &ep,
                &leadership,
                &work,
                elector.replicated_log(),
                &elector,
            )
            .await
        };
        leadership.end(reason);
        step_down(
            (&ctl, &env, &ep),
            &work,
            elector.as_ref(),
            clock.as_ref(),
            &leadership,
            (reason, handover),
        )
        .await;
    }
}

/// Waits until node `ctl`'s `incarnation` has booted.
async fn boot(ctl: &NodeControl, env: &NodeEnv, incarnation: u64) {
    // A real process starts when its supervisor gets to it and boots for a while, so
    // nodes' timers (keepalives, renewals, polls) run at phases that differ from start
    // to start. The delay is drawn per node and per incarnation, from a generator of
    // its own. Until it has booted, the node does not listen: a message to it is lost,
    // as one to a process not yet started would be.
    let delay_ms = baton_model::seed::fork(env.seed, &format!("start/{}/{incarnation}", ctl.name))
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
}

/// Answers the sequencer client on `ep`: its `next` batches go to the leader's work,
/// its reads to the protocol's replicated log (a lease read), when it has one.
fn serve_clients(
    ep: &Arc<Endpoint>,
    elector: &Arc<dyn Elector>,
    work: &Arc<LeaderWork>,
    timeline: &Timeline,
    node: &NodeId,
) {
    let w = work.clone();
    ep.add_message_handler(move |b: NextBatch, from| w.handle_next(b, from));
    let (e, w, tl, name, reply_ep) = (
        elector.clone(),
        work.clone(),
        timeline.clone(),
        node.clone(),
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
}

/// Starts the task that keeps the node's `NotLeader` hint fresh.
fn spawn_observer(elector: &Arc<dyn Elector>, work: &Arc<LeaderWork>, clock: &Arc<dyn Clock>) {
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
}

/// One campaign: the leadership won, or `None` once a failed campaign's backoff has
/// passed (campaign again then).
async fn campaign(
    ctl: &NodeControl,
    env: &NodeEnv,
    elector: &dyn Elector,
    clock: &dyn Clock,
    rng: &mut impl Rng,
) -> Option<Leadership> {
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
            sleep_local(clock, Duration::from_millis(backoff_ms)).await;
            return None;
        }
    };
    let token = leadership.token;
    ctl.set_status(Role::Leader, Some(token));
    *ctl.leading.lock().unwrap() = Some(leadership.clone());
    env.timeline.record(Event::RoleChanged {
        node: ctl.name.clone(),
        role: Role::Leader,
        token: Some(token),
    });
    Some(leadership)
}

/// Ends a term the leader's work stopped for `reason`: stop accepting work, become a
/// follower, and only then let `leadership` go (to the successor of `handover`, for a
/// transfer).
async fn step_down(
    (ctl, env, ep): (&NodeControl, &NodeEnv, &Endpoint),
    work: &LeaderWork,
    elector: &dyn Elector,
    clock: &dyn Clock,
    leadership: &Leadership,
    (reason, handover): (LossReason, Option<crate::world::node::transfer::Handover>),
) {
    let token = leadership.token;
    ctl.leading.lock().unwrap().take();
    // Every protected write has completed or timed out by now: lead() is the only
    // writer and it has returned. Only then is leadership released.
    work.stop_leading();
    // When its belief really ended: lead() let an in-flight write finish first.
    let lost_at_us = leadership.lost_at_us(crate::world::clock::global_now_us());
    env.timeline.record(Event::StoppedActing {
        node: ctl.name.clone(),
        token,
        reason: reason.as_str().to_string(),
        lost_at_us,
    });
    ctl.set_status(Role::Follower, None);
    env.timeline.record(Event::RoleChanged {
        node: ctl.name.clone(),
        role: Role::Follower,
        token: None,
    });
    if let Some(h) = &handover {
        crate::world::node::transfer::hand_over(ctl, env, ep, elector, leadership, h).await;
        // Let the successor take over before queueing again.
        sleep_local(clock, Duration::from_millis(REJOIN_AFTER_RESIGN_MS)).await;
    } else if reason == LossReason::Resigned {
        env.timeline.record(Event::Released {
            node: ctl.name.clone(),
            token,
        });
        let _ = elector.resign(leadership).await;
        // Let the next candidate in the queue take over before queueing again.
        sleep_local(clock, Duration::from_millis(REJOIN_AFTER_RESIGN_MS)).await;
    } else {
        // Abandon the lost lease's key if the service still has it.
        let _ = elector.resign(leadership).await;
    }
}
