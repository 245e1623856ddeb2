//! Sharded leadership on a node (`partitions = P`): one leader per partition, the
//! partitions spread over the live nodes by rendezvous hashing
//! ([`baton_model::owned`]), each elected and fenced on its own.
//!
//! **Membership** lives in the lease service: every node keeps a key
//! `/members/<node>` under a lease of its own (granted with the protocol's TTL, kept
//! alive every TTL / 3, granted again if lost), and reads the members every
//! [`MEMBERS_POLL_MS`]. A node that dies leaves the set when its lease expires; one
//! that returns joins when it registers again. Every node reads the same set, so every
//! node computes the same owners.
//!
//! **Ownership.** A node campaigns in the election of each partition it owns (the
//! protocol's elector over that partition's own prefix: an etcd-lease election, a
//! fencing token per partition), and leads it once elected: a claim, then every
//! `work.tick_interval_ms` a tick and one sequence number, each a protected write to the
//! partition's own rows at the resource. A partition it no longer owns (a node joined
//! that outranks it) it hands over: it stops writing, then resigns, and the new owner,
//! already queued, takes the seat. A campaign for a partition it no longer owns is
//! withdrawn. The election and the fence, not the hash, keep each partition safe: two
//! nodes that briefly both think they own it queue in one election.
//!
//! What the node records is its partition's (`Event::Shard`): campaigns, beliefs,
//! stops, releases, and at the resource each write.

use crate::world::net::Endpoint;
use crate::world::node::control::NodeControl;
use crate::world::node::env::NodeEnv;
use crate::world::rpc::{call, FencedWrite, WriteReply, RESOURCE_ADDR};
use crate::world::timeline::{Event, Role, WriteOp};
use baton_protocols::sleep_local;
use baton_protocols::{Clock, Elector, Leadership, LossReason};
use baton_protocols::{EtcdApi, RangeRequest, Txn, TxnOp};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// How often a node reads the membership registry.
pub const MEMBERS_POLL_MS: u64 = 200;
/// The registry's prefix at the lease service.
const MEMBERS: &str = "/members/";

pub use crate::world::protocol::ShardKit as Kit;

/// A request to a partition's task to stop: hand over if it leads, withdraw if it
/// campaigns.
#[derive(Default)]
struct Stop {
    asked: AtomicBool,
    notify: Notify,
}

impl Stop {
    fn ask(&self) {
        self.asked.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    fn asked(&self) -> bool {
        self.asked.load(Ordering::SeqCst)
    }

    async fn wait(&self) {
        loop {
            let n = self.notify.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if self.asked() {
                return;
            }
            n.await;
        }
    }
}

/// One node's share of a sharded fleet: what it needs to lead its partitions.
#[derive(Clone)]
struct Node {
    ctl: Arc<NodeControl>,
    env: Arc<NodeEnv>,
    ep: Endpoint,
    clock: Arc<dyn Clock>,
}

/// Runs node `ctl` of a sharded fleet until it is killed.
pub async fn run(ctl: Arc<NodeControl>, env: Arc<NodeEnv>, ep: Endpoint, kit: Kit) {
    let clock: Arc<dyn Clock> = Arc::new(ctl.clock.clone());
    let node = Node {
        ctl,
        env,
        ep,
        clock,
    };
    spawn_registration(&node, kit.registry.clone(), kit.ttl_ms);
    let partitions = kit.electors.len() as u32;
    let mut running: BTreeMap<u32, Arc<Stop>> = BTreeMap::new();
    loop {
        if let Some(live) = members(kit.registry.as_ref()).await {
            let me = node.ctl.index as u32;
            let mine = baton_model::owned(me, partitions, &live);
            for &p in &mine {
                if let std::collections::btree_map::Entry::Vacant(slot) = running.entry(p) {
                    let stop = slot.insert(Arc::new(Stop::default())).clone();
                    let (n, e) = (node.clone(), kit.electors[p as usize].clone());
                    madsim::task::spawn(async move { partition(n, p, e, stop).await });
                }
            }
            running.retain(|p, stop| {
                let keep = mine.contains(p);
                if !keep {
                    stop.ask();
                }
                keep
            });
        }
        sleep_local(node.clock.as_ref(), Duration::from_millis(MEMBERS_POLL_MS)).await;
    }
}

/// The live members (1-based node indexes, in order), or `None` when the registry did not
/// answer.
async fn members(api: &dyn EtcdApi) -> Option<Vec<u32>> {
    let resp = api
        .range(RangeRequest {
            key: MEMBERS.to_string(),
            prefix: true,
            max_create_revision: None,
            newest_first: false,
            limit: 0,
        })
        .await
        .ok()?;
    let mut live: Vec<u32> = resp
        .kvs
        .iter()
        .filter_map(|kv| kv.value.parse().ok())
        .collect();
    live.sort_unstable();
    live.dedup();
    Some(live)
}

/// Keeps `/members/<node>` under a lease of the node's own: granted, put, kept alive
/// every TTL / 3, and granted and put again whenever the lease is lost.
fn spawn_registration(node: &Node, api: Arc<dyn EtcdApi>, ttl_ms: u64) {
    let (clock, name, index) = (node.clock.clone(), node.ctl.name.clone(), node.ctl.index);
    let every = Duration::from_millis((ttl_ms / 3).max(1));
    madsim::task::spawn(async move {
        loop {
            let Ok(grant) = api.lease_grant(ttl_ms).await else {
                sleep_local(clock.as_ref(), every).await;
                continue;
            };
            let put = Txn {
                compare: vec![],
                success: vec![TxnOp::Put {
                    key: format!("{MEMBERS}{name}"),
                    value: index.to_string(),
                    lease: grant.id,
                }],
                failure: vec![],
            };
            if api.txn(put).await.is_err() {
                continue;
            }
            loop {
                sleep_local(clock.as_ref(), every).await;
                match api.lease_keep_alive(grant.id).await {
                    Ok(Some(_)) | Err(_) => {}
                    Ok(None) => break,
                }
            }
        }
    });
}

/// Records `event` as partition `p`'s.
fn record(node: &Node, p: u32, event: Event) {
    node.env.timeline.record(Event::Shard {
        partition: p,
        inner: Box::new(event),
    });
}

/// Partition `p` on this node, while it owns it: campaign, lead, and once no longer the
/// owner, hand over (or withdraw a campaign).
async fn partition(node: Node, p: u32, elector: Arc<dyn Elector>, stop: Arc<Stop>) {
    let name = node.ctl.name.clone();
    while !stop.asked() {
        record(&node, p, Event::CampaignStarted { node: name.clone() });
        let won = tokio::select! {
            // Biased: tokio would otherwise pick among ready branches with its own RNG,
            // which madsim does not seed.
            biased;
            _ = stop.wait() => None,
            r = elector.campaign() => Some(r),
        };
        let l = match won {
            None => {
                elector.withdraw().await;
                return;
            }
            Some(Err(e)) => {
                let error = e.to_string();
                record(
                    &node,
                    p,
                    Event::CampaignFailed {
                        node: name.clone(),
                        error,
                    },
                );
                sleep_local(node.clock.as_ref(), Duration::from_millis(200)).await;
                continue;
            }
            Some(Ok(l)) => l,
        };
        let token = l.token;
        let role = |role, token| Event::RoleChanged {
            node: name.clone(),
            role,
            token,
        };
        record(&node, p, role(Role::Leader, Some(token)));
        let reason = lead(&node, p, &l, &stop).await;
        l.end(reason);
        let lost_at_us = l.lost_at_us(crate::world::clock::global_now_us());
        let stopped = Event::StoppedActing {
            node: name.clone(),
            token,
            reason: reason.as_str().to_string(),
            lost_at_us,
        };
        record(&node, p, stopped);
        record(&node, p, role(Role::Follower, None));
        if reason == LossReason::Resigned {
            record(
                &node,
                p,
                Event::Released {
                    node: name.clone(),
                    token,
                },
            );
        }
        let _ = elector.resign(&l).await;
    }
}

/// Leads partition `p` until its leadership is lost (why) or the node no longer owns it
/// (`Resigned`): a claim, then a tick and one sequence number every tick interval.
async fn lead(node: &Node, p: u32, l: &Leadership, stop: &Stop) -> LossReason {
    let mut last_seq = loop {
        match write(node, p, l, WriteOp::Claim).await {
            Some(Ok(last_seq)) => break last_seq,
            Some(Err(reason)) => return reason,
            None if stop.asked() => return LossReason::Resigned,
            None => {}
        }
    };
    let every = Duration::from_millis(node.env.tick_interval_ms);
    for n in 1.. {
        if stop.asked() {
            return LossReason::Resigned;
        }
        for op in [
            WriteOp::Tick { n },
            WriteOp::Seq {
                first: last_seq + 1,
                last: last_seq + 1,
            },
        ] {
            match write(node, p, l, op).await {
                Some(Err(reason)) => return reason,
                // A batch that timed out may still land: its number is skipped.
                _ => last_seq += u64::from(matches!(op, WriteOp::Seq { .. })),
            }
        }
        tokio::select! {
            // Biased: as above.
            biased;
            _ = l.lost() => {}
            _ = stop.wait() => {}
            _ = sleep_local(node.clock.as_ref(), every) => {}
        }
    }
    unreachable!("the loop above only ends by returning")
}

/// One protected write to partition `p`'s rows: `Some(Ok(last_seq))` accepted,
/// `Some(Err(why))` the leader must stop, `None` no answer in time.
async fn write(
    node: &Node,
    p: u32,
    l: &Leadership,
    op: WriteOp,
) -> Option<Result<u64, LossReason>> {
    if !l.acting() {
        return Some(Err(l.loss_reason()));
    }
    let name = node.ctl.name.clone();
    let attempted = Event::WriteAttempted {
        node: name.clone(),
        token: l.token,
        op,
    };
    record(node, p, attempted);
    let req = FencedWrite {
        partition: Some(p),
        node: name,
        token: l.token,
        op,
    };
    match call(&node.ep, RESOURCE_ADDR, req, node.env.resource_timeout_ms).await {
        Ok(WriteReply::Accepted { last_seq, .. }) => Some(Ok(last_seq)),
        Ok(WriteReply::Rejected { .. }) => Some(Err(LossReason::Fenced)),
        Ok(WriteReply::Behind { .. }) | Err(_) => None,
    }
}
