//! The fault verbs: what the supervisor does to a node's process (kill, restart, pause,
//! resume, a pause armed before a write), to its links (cut, mend, latency), to its
//! clock, and to its leadership (resign). See the verb table in [`super`].

use super::error::RealError;
use super::fleet::SharedChild;
use super::link::{Direction, Link};
use super::Supervisor;
use crate::contract::status_poll;
use crate::events::{Event, EventLog};
use crate::node::{ArmPause, ClockChange, ClockState};
use crate::supervisor::proxy::{Flow, Proxy};
use baton_model::NodeId;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a `before-write` pause waits, once it let the held write go, for it to
/// reach the resource before it resumes the node anyway (a loopback write takes µs).
const DELIVERY: Duration = Duration::from_millis(500);

impl Supervisor {
    /// Kills node `node` with SIGKILL (its whole process group) and reaps it.
    pub fn kill(&mut self, node: &str) -> Result<(), RealError> {
        let i = self.slot(node)?;
        let child = self.nodes[i].child.lock().unwrap().take();
        let Some(mut child) = child else {
            return Err(RealError::NotRunning(node.to_string()));
        };
        child.kill();
        self.nodes[i].addr = None;
        self.log.record(Event::NodeKilled { node: node.into() });
        Ok(())
    }

    /// Starts node `node` again as a new process (killing it first if it still runs),
    /// with the clock its last incarnation had. Returns once it listens.
    pub async fn restart(&mut self, node: &str) -> Result<(), RealError> {
        let i = self.slot(node)?;
        if self.nodes[i].child.lock().unwrap().is_some() {
            self.kill(node)?;
        }
        // The config carries the clock the last incarnation had ([`Supervisor::skew_clock`]
        // keeps it up to date): a restart does not fix a skewed clock.
        self.log.record(Event::NodeRestarted { node: node.into() });
        self.start_node(i).await
    }

    fn signal(&self, node: &str, sig: libc::c_int) -> Result<(), RealError> {
        let i = self.slot(node)?;
        let guard = self.nodes[i].child.lock().unwrap();
        let child = guard
            .as_ref()
            .ok_or_else(|| RealError::NotRunning(node.to_string()))?;
        child.signal(sig)?;
        Ok(())
    }

    /// Stops the world on node `node` (SIGSTOP) until [`Supervisor::resume`]. Its clock
    /// keeps running, its sockets stay open.
    pub fn pause(&self, node: &str) -> Result<(), RealError> {
        self.signal(node, libc::SIGSTOP)?;
        self.log.record(Event::NodePaused { node: node.into() });
        Ok(())
    }

    /// Lets a paused node run again (SIGCONT).
    pub fn resume(&self, node: &str) -> Result<(), RealError> {
        self.hurry_poll(node);
        self.signal(node, libc::SIGCONT)?;
        self.log.record(Event::NodeResumed { node: node.into() });
        Ok(())
    }

    /// Starts a pause of the background GC noise on node `node` (`[noise.gc]`, see
    /// [`crate::trial::noise`]): SIGSTOP unless `signal` is false (a scripted pause has it
    /// stopped already), then `gc_paused` with the pause's length, as the simulator logs it.
    pub fn gc_pause(&self, node: &str, duration_ms: u64, signal: bool) -> Result<(), RealError> {
        if signal {
            self.signal(node, libc::SIGSTOP)?;
        }
        self.log.record(Event::GcPaused {
            node: node.into(),
            duration_ms,
        });
        Ok(())
    }

    /// Ends a pause of [`Supervisor::gc_pause`]: SIGCONT unless `signal` is false (a
    /// scripted pause still holds it, or it died meanwhile), then `gc_resumed`.
    pub fn gc_resume(&self, node: &str, signal: bool) {
        if signal {
            // A node killed meanwhile has nothing to resume; the pause ends all the same.
            let _ = self.signal(node, libc::SIGCONT);
        }
        self.log.record(Event::GcResumed { node: node.into() });
    }

    /// Arms a `point = "before-write"` pause of fault `index` on node `node`: the node
    /// logs the fault and stops itself (SIGSTOP) just before its next protected write;
    /// the supervisor, which polls the process state every 2 ms, resumes it
    /// `duration_ms` after it saw it stop, logging `node_resumed` and `fault_healed`. A
    /// node killed in the meantime is not resumed (its pause ends with it), but the
    /// pause's end is logged all the same, as the simulator does.
    pub async fn arm_pause_before_write(
        &mut self,
        node: &str,
        index: usize,
        duration_ms: u64,
    ) -> Result<(), RealError> {
        if self.cfg.node_cmd.is_some() {
            return self.arm_held_write(node, index, duration_ms);
        }
        let addr = self.node_addr(node)?;
        let resp = self
            .http
            .post(format!("http://{addr}/control/pause"))
            .json(&ArmPause { index })
            .send()
            .await
            .and_then(|r| r.error_for_status());
        if let Err(e) = resp {
            return Err(RealError::Control {
                node: node.into(),
                why: e.to_string(),
            });
        }
        let i = self.slot(node)?;
        let (child, incarnation) = (
            self.nodes[i].child.clone(),
            self.nodes[i].incarnation.clone(),
        );
        // Read now, not when the watcher first runs: a restart in between is another
        // incarnation, whose process the pause must not touch.
        let armed_in = incarnation.load(Ordering::SeqCst);
        self.tasks.push(tokio::spawn(resume_after_pause(
            child,
            (incarnation, armed_in),
            self.log.clone(),
            node.into(),
            index,
            duration_ms,
        )));
        Ok(())
    }

    fn proxies(&self, node: &str, link: Link) -> Result<Vec<&Proxy>, RealError> {
        let s = &self.nodes[self.slot(node)?];
        Ok(match link {
            Link::Backend => s.backend_proxies.iter().collect(),
            Link::Member(i) => s.backend_proxies.get(i).into_iter().collect(),
            Link::Resource => vec![&s.resource_proxy],
            Link::Client => vec![&s.client_proxy],
            Link::Peer(j) => s.peer_proxy(j).into_iter().collect(),
        })
    }

    /// Cuts node `node`'s `link` in `dir`: bytes stop flowing, connections stay open,
    /// calls hang.
    pub fn cut(&self, node: &str, link: Link, dir: Direction) -> Result<(), RealError> {
        for p in self.proxies(node, link)? {
            p.cut(dir.flow(link));
        }
        Ok(())
    }

    /// Mends what [`Supervisor::cut`] cut; what was held is delivered.
    pub fn mend(&self, node: &str, link: Link, dir: Direction) -> Result<(), RealError> {
        for p in self.proxies(node, link)? {
            p.mend(dir.flow(link));
        }
        Ok(())
    }

    /// Mends every cut of every node (a scenario's `heal`).
    pub fn mend_all(&self) {
        for s in &self.nodes {
            for p in s.all_proxies() {
                p.mend(Flow::Both);
            }
        }
    }

    /// Delays node `node`'s `link` in `dir` by a latency drawn per chunk from
    /// `latency_ms_min..=latency_ms_max` (0, 0: none; a scenario's `slow-link`).
    pub fn set_latency_ms(
        &self,
        node: &str,
        link: Link,
        dir: Direction,
        latency_ms_min: u64,
        latency_ms_max: u64,
    ) -> Result<(), RealError> {
        for p in self.proxies(node, link)? {
            p.set_latency_ms(dir.flow(link), latency_ms_min, latency_ms_max);
        }
        Ok(())
    }

    /// Delays every link of every node, both ways (a scenario's `network` latency; loss
    /// has no counterpart over TCP proxies). Loopback's own latency stays under it.
    pub fn set_latency_ms_all(&self, latency_ms_min: u64, latency_ms_max: u64) {
        for s in &self.nodes {
            for p in s.all_proxies() {
                p.set_latency_ms(Flow::Both, latency_ms_min, latency_ms_max);
            }
        }
    }

    /// Changes node `node`'s clock (offset, drift, step); returns its state after.
    /// A restart keeps it.
    pub async fn skew_clock(
        &mut self,
        node: &str,
        change: ClockChange,
    ) -> Result<ClockState, RealError> {
        if !self.is_running(node)? {
            // A dead node's clock is what its next incarnation starts with (the
            // simulator's clock object outlives a kill too): change that. With no
            // process, no time passes on it between now and the restart but the run's.
            let i = self.slot(node)?;
            let c = &mut self.nodes[i].cfg;
            if let Some(o) = change.offset_ms {
                c.clock_offset_us = o * 1000;
            }
            if let Some(d) = change.drift_ppm {
                c.clock_drift_ppm = d;
            }
            if let Some(st) = change.step_ms {
                c.clock_offset_us += st * 1000;
            }
            return Ok(ClockState {
                offset_us: c.clock_offset_us,
                drift_ppm: c.clock_drift_ppm,
            });
        }
        let addr = self.node_addr(node)?;
        let err = |why: String| RealError::Control {
            node: node.into(),
            why,
        };
        let state: ClockState = self
            .http
            .post(format!("http://{addr}/control/clock"))
            .json(&change)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| err(e.to_string()))?
            .json()
            .await
            .map_err(|e| err(e.to_string()))?;
        let i = self.slot(node)?;
        self.nodes[i].cfg.clock_offset_us = state.offset_us;
        self.nodes[i].cfg.clock_drift_ppm = state.drift_ppm;
        Ok(state)
    }

    /// Asks node `node` to step down if it leads.
    pub async fn resign(&self, node: &str) -> Result<(), RealError> {
        let addr = self.node_addr(node)?;
        self.hurry_poll(node);
        self.http
            .post(format!("http://{addr}/{}", self.resign_path()))
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| RealError::Control {
                node: node.into(),
                why: e.to_string(),
            })?;
        Ok(())
    }
}

impl Supervisor {
    /// A foreign node's `before-write` pause (it takes no `/control/pause`): its resource
    /// proxy holds the next bytes it sends there (its next protected write), and at
    /// that moment the supervisor stops it (SIGSTOP), logging the fault's application
    /// and the pause; `duration_ms` later it logs `node_resumed`, lets the held write go
    /// on to the resource, and once it is there (at most [`DELIVERY`]) resumes the
    /// process (SIGCONT) and logs `fault_healed`. The write left the node before the
    /// pause and lands after it, as a write whose lease check passed just before a GC
    /// pause would. A node killed or restarted before it wrote is not paused: the trap
    /// is disarmed.
    fn arm_held_write(
        &mut self,
        node: &str,
        index: usize,
        duration_ms: u64,
    ) -> Result<(), RealError> {
        let i = self.slot(node)?;
        let slot = &self.nodes[i];
        if slot.child.lock().unwrap().is_none() {
            return Err(RealError::NotRunning(node.to_string()));
        }
        let trap = slot.resource_proxy.trap();
        let incarnation = slot.incarnation.clone();
        let armed_in = incarnation.load(Ordering::SeqCst);
        let (child, log, name) = (slot.child.clone(), self.log.clone(), NodeId::from(node));
        let hurry = self.hurry.get(i).cloned();
        let clock = log.clock();
        trap.arm();
        self.tasks.push(tokio::spawn(async move {
            let same = || incarnation.load(Ordering::SeqCst) == armed_in;
            loop {
                tokio::select! {
                    _ = trap.struck() => break,
                    _ = tokio::time::sleep(Duration::from_millis(2)) => {
                        if !same() || child.lock().unwrap().is_none() {
                            trap.disarm();
                            return;
                        }
                    }
                }
            }
            log.record(Event::FaultApplied {
                index,
                kind: baton_model::fault::FaultKind::Pause,
                target: name.to_string(),
            });
            let stopped = match child.lock().unwrap().as_ref() {
                Some(c) if same() => c.signal(libc::SIGSTOP).is_ok(),
                _ => false,
            };
            if stopped {
                log.record(Event::NodePaused { node: name.clone() });
            }
            tokio::time::sleep(Duration::from_millis(duration_ms)).await;
            // The pause ends: the held write goes on first, and the process is let go
            // once it reached the resource, so the write is not charged to the node's
            // own timeout, which ran while it was stopped (a woken node whose timeout
            // fired hangs up, and the write must already be on its way).
            if stopped {
                log.record(Event::NodeResumed { node: name.clone() });
            }
            trap.release();
            let _ = tokio::time::timeout(DELIVERY, trap.delivered()).await;
            if stopped && same() {
                if let Some(h) = &hurry {
                    let until = clock.now_us() + status_poll::HURRY_MS as i64 * 1000;
                    h.store(until, Ordering::SeqCst);
                }
                if let Some(c) = child.lock().unwrap().as_ref() {
                    let _ = c.signal(libc::SIGCONT);
                }
            }
            log.record(Event::FaultHealed {
                index,
                kind: baton_model::fault::FaultKind::Pause,
                target: name.to_string(),
            });
        }));
        Ok(())
    }
}

/// The watcher of an armed `before-write` pause (see
/// [`Supervisor::arm_pause_before_write`]): polls every 2 ms until the node's process,
/// the incarnation `armed_in` it was armed in, has stopped itself; then resumes it `duration_ms`
/// later and logs the pause's end. It gives up, logging nothing, if the process is
/// killed before it struck.
async fn resume_after_pause(
    child: SharedChild,
    (incarnation, armed_in): (Arc<AtomicU64>, u64),
    log: EventLog,
    name: NodeId,
    index: usize,
    duration_ms: u64,
) {
    let same = || incarnation.load(Ordering::SeqCst) == armed_in;
    loop {
        let stopped = {
            let g = child.lock().unwrap();
            match g.as_ref() {
                Some(c) if same() => c.is_stopped(),
                _ => return, // killed before it struck: nothing to resume
            }
        };
        if stopped {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    tokio::time::sleep(Duration::from_millis(duration_ms)).await;
    if same() {
        if let Some(c) = child.lock().unwrap().as_ref() {
            let _ = c.signal(libc::SIGCONT);
        }
    }
    log.record(Event::NodeResumed { node: name.clone() });
    log.record(Event::FaultHealed {
        index,
        kind: baton_model::fault::FaultKind::Pause,
        target: name.to_string(),
    });
}
