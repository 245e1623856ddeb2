//! The SWIM failure detector on a node (`[swim]`, see [`baton_model::scenario::swim`]): a `foca`
//! instance whose messages cross Baton's network and whose timers run on the node's own
//! clock, and what the node does with what it learns.
//!
//! foca has no runtime of its own: each call (a packet arrived, a timer fired) leaves
//! what to send, what to schedule and what to announce in an `AccumulatingRuntime`,
//! which `Detector::drain` carries out. One task per node owns the instance and takes
//! its inputs in order from a channel, so a run is deterministic; its random draws come
//! from a ChaCha8 generator seeded from `seed::fork(seed, "swim/<node>/<start>")`.
//!
//! A node's identity is (its index, which start of its process, how often it renewed):
//! a restarted process is a new member that wins over its predecessor's address, and a
//! process declared down while alive (a long pause) rejoins under a renewed identity.
//! At start-up it announces itself to every other node.
//!
//! What the node records: `swim_suspected` when its view first holds a member as
//! suspect, `swim_down` when it declares one down, `swim_traffic` every second (the
//! messages it sent). With `evict_dead_leader`, a member declared down (and not since
//! replaced by a newer process of the same node) is handed to [`Elector::evict`], and a
//! seat taken is recorded as `swim_evicted`.

use crate::world::net::Endpoint;
use crate::world::node::control::NodeControl;
use crate::world::node::env::NodeEnv;
use crate::world::rpc::{node_addr, SwimPacket};
use crate::world::timeline::{Event, Timeline};
use baton_model::scenario::swim::SwimConfig;
use baton_model::NodeId;
use baton_protocols::sleep_local;
use baton_protocols::{Clock, Elector};
use foca::{
    AccumulatingRuntime, Config, Foca, Identity, OwnedNotification, PostcardCodec, State, Timer,
};
use rand::RngCore;
use rand_chacha_010::rand_core::SeedableRng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::num::{NonZeroU8, NonZeroUsize};
use std::sync::Arc;
use std::time::Duration;

/// How often a node records the messages its detector sent.
const TRAFFIC_EVERY: Duration = Duration::from_secs(1);

/// A member of the SWIM group: a node's process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SwimId {
    /// The node's index (`n3` is 3): its address in the group.
    node: u16,
    /// Which start of its process (1 at first).
    start: u32,
    /// How often this process renewed its identity after being declared down.
    renewal: u32,
}

impl Identity for SwimId {
    type Addr = u16;

    fn renew(&self) -> Option<Self> {
        Some(SwimId {
            renewal: self.renewal + 1,
            ..*self
        })
    }

    fn addr(&self) -> u16 {
        self.node
    }

    fn win_addr_conflict(&self, other: &Self) -> bool {
        (self.start, self.renewal) > (other.start, other.renewal)
    }
}

/// What the detector's task takes, in order.
enum Input {
    Data(Vec<u8>),
    Timer(Timer<SwimId>),
    Traffic,
}

/// foca's settings from the `[swim]` table.
fn config(c: &SwimConfig) -> Config {
    let ms = Duration::from_millis;
    let mut f = Config::simple();
    f.probe_period = ms(c.probe_period_ms);
    f.probe_rtt = ms(c.probe_rtt_ms);
    f.num_indirect_probes = NonZeroUsize::new(c.indirect_probes as usize).expect("validated");
    f.suspect_to_down_after = ms(c.suspect_to_down_ms);
    f.max_transmissions = NonZeroU8::new(c.max_transmissions as u8).expect("validated");
    // Dissemination rides on the probes alone, as in the paper; every node announces
    // itself once at start-up. A member declared down while alive (a long pause) is
    // told, so that it renews its identity and rejoins (foca's extension to SWIM).
    f.periodic_announce = None;
    f.periodic_announce_to_down_members = None;
    f.periodic_gossip = None;
    f.notify_down_members = true;
    f
}

/// A node's detector.
struct Detector {
    foca: Foca<SwimId, PostcardCodec, rand_chacha_010::ChaCha8Rng, foca::NoCustomBroadcast>,
    rt: AccumulatingRuntime<SwimId>,
    me: NodeId,
    ep: Endpoint,
    clock: Arc<dyn Clock>,
    timeline: Timeline,
    tx: tokio::sync::mpsc::UnboundedSender<Input>,
    elector: Option<Arc<dyn Elector>>,
    /// Members already recorded as suspect, by identity and incarnation.
    suspected: BTreeSet<(SwimId, u16)>,
    sent: u64,
}

/// Starts node `ctl`'s detector (its process's `start`), if the scenario runs one.
pub fn start(
    ctl: &NodeControl,
    env: &NodeEnv,
    ep: &Endpoint,
    elector: &Arc<dyn Elector>,
    start: u64,
) {
    let Some(c) = SwimConfig::running(&env.swim) else {
        return;
    };
    let me = SwimId {
        node: ctl.index as u16,
        start: start as u32,
        renewal: 0,
    };
    let seed = baton_model::seed::fork(env.seed, &format!("swim/{}/{start}", ctl.name)).next_u64();
    let rng = rand_chacha_010::ChaCha8Rng::seed_from_u64(seed);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let data = tx.clone();
    ep.add_message_handler(move |p: SwimPacket, _| {
        let _ = data.send(Input::Data(p.0));
    });
    let mut d = Detector {
        foca: Foca::new(me, config(c), rng, PostcardCodec),
        rt: AccumulatingRuntime::new(),
        me: ctl.name.clone(),
        ep: ep.clone(),
        clock: Arc::new(ctl.clock.clone()),
        timeline: env.timeline.clone(),
        tx,
        elector: c.evict_dead_leader.then(|| elector.clone()),
        suspected: BTreeSet::new(),
        sent: 0,
    };
    let nodes = env.nodes as u16;
    madsim::task::spawn(async move {
        for node in (1..=nodes).filter(|n| *n != me.node) {
            let other = SwimId {
                node,
                start: 0,
                renewal: 0,
            };
            let _ = d.foca.announce(other, &mut d.rt);
        }
        d.drain();
        d.schedule(TRAFFIC_EVERY, Input::Traffic);
        while let Some(input) = rx.recv().await {
            match input {
                Input::Data(bytes) => {
                    let _ = d.foca.handle_data(&bytes, &mut d.rt);
                }
                Input::Timer(t) => {
                    let _ = d.foca.handle_timer(t, &mut d.rt);
                }
                Input::Traffic => {
                    d.timeline.record(Event::SwimTraffic {
                        node: d.me.clone(),
                        messages: std::mem::take(&mut d.sent),
                    });
                    d.schedule(TRAFFIC_EVERY, Input::Traffic);
                }
            }
            d.drain();
        }
    });
}

/// The name of the node at SWIM address `node`.
fn name(node: u16) -> NodeId {
    NodeId::nth(node as usize)
}

impl Detector {
    /// Feeds `input` back to the task after `after` on the node's clock.
    fn schedule(&self, after: Duration, input: Input) {
        let (tx, clock) = (self.tx.clone(), self.clock.clone());
        madsim::task::spawn(async move {
            sleep_local(clock.as_ref(), after).await;
            let _ = tx.send(input);
        });
    }

    /// Carries out what the last foca call asked for, and records what changed.
    fn drain(&mut self) {
        while let Some((to, bytes)) = self.rt.to_send() {
            self.sent += 1;
            self.ep
                .send(node_addr(to.node as usize), SwimPacket(bytes.to_vec()));
        }
        while let Some((after, timer)) = self.rt.to_schedule() {
            self.schedule(after, Input::Timer(timer));
        }
        while let Some(n) = self.rt.to_notify() {
            if let OwnedNotification::MemberDown(id) = n {
                self.down(id);
            }
        }
        let suspects: Vec<(SwimId, u16)> = self
            .foca
            .iter_membership_state()
            .filter(|m| m.state() == State::Suspect)
            .map(|m| (*m.id(), m.incarnation()))
            .collect();
        for s in suspects {
            if self.suspected.insert(s) {
                self.timeline.record(Event::SwimSuspected {
                    node: self.me.clone(),
                    member: name(s.0.node),
                    start: s.0.start as u64,
                });
            }
        }
    }

    /// Member `id` was declared down here: record it, and evict it if it led and no
    /// newer process of its node has joined since.
    fn down(&mut self, id: SwimId) {
        let member = name(id.node);
        self.timeline.record(Event::SwimDown {
            node: self.me.clone(),
            member: member.clone(),
            start: id.start as u64,
        });
        let replaced = self
            .foca
            .iter_membership_state()
            .any(|m| m.id().node == id.node && m.state() != State::Down && *m.id() > id);
        let Some(elector) = self.elector.clone().filter(|_| !replaced) else {
            return;
        };
        let (timeline, me) = (self.timeline.clone(), self.me.clone());
        madsim::task::spawn(async move {
            if let Ok(true) = elector.evict(&member).await {
                timeline.record(Event::SwimEvicted { node: me, member });
            }
        });
    }
}
