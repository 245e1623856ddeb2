//! The fault verbs on the backend's processes: kill, restart, pause and resume an etcd
//! member's process, or the one server's (`backend`: Redis, ZooKeeper, PostgreSQL), and
//! who leads etcd. A member cut from the clients is a cut of each
//! node's proxy to it ([`Link::Member`](super::Link::Member)), in `verbs`.
//!
//! Who leads is read from the members' own status ([`leader_among`]); the watcher that
//! logs it is [`crate::backend::etcd::watch::watch_leader`].

use super::error::RealError;
use super::Supervisor;
use crate::backend::etcd::cluster::leader_among;
use crate::events::Event;

impl Supervisor {
    /// The etcd cluster: member faults are refused before the run unless the protocol
    /// runs on etcd (see crate::trial::refusals).
    fn etcd_mut(&mut self) -> &mut crate::backend::etcd::cluster::EtcdCluster {
        self.backend
            .as_mut()
            .and_then(crate::backend::Backend::etcd_mut)
            .expect("member faults only run on etcd, until the supervisor stops")
    }

    /// Kills member `member` (`etcd-<i>`) with SIGKILL; its data stays.
    pub fn kill_member(&mut self, member: &str) -> Result<(), RealError> {
        if !self.etcd_mut().kill(member) {
            return Err(RealError::NotRunning(member.to_string()));
        }
        self.log.record(Event::MemberKilled {
            member: member.to_string(),
        });
        Ok(())
    }

    /// Starts member `member` again on its data (killing it first if it runs).
    pub fn restart_member(&mut self, member: &str) -> Result<(), RealError> {
        let pid = self
            .etcd_mut()
            .restart(member)
            .ok_or_else(|| RealError::UnknownNode(member.to_string()))??;
        self.pids.lock().unwrap().push(pid);
        self.log.record(Event::MemberRestarted {
            member: member.to_string(),
        });
        Ok(())
    }

    /// Stops member `member` (SIGSTOP): its sockets stay open, nothing answers.
    pub fn pause_member(&mut self, member: &str) -> Result<(), RealError> {
        if !self.etcd_mut().signal(member, libc::SIGSTOP) {
            return Err(RealError::NotRunning(member.to_string()));
        }
        self.log.record(Event::MemberPaused {
            member: member.to_string(),
        });
        Ok(())
    }

    /// Lets a paused member run again (SIGCONT).
    pub fn resume_member(&mut self, member: &str) -> Result<(), RealError> {
        if !self.etcd_mut().signal(member, libc::SIGCONT) {
            return Err(RealError::NotRunning(member.to_string()));
        }
        self.log.record(Event::MemberResumed {
            member: member.to_string(),
        });
        Ok(())
    }

    /// The backend's one server: a fault names it only when there is one (see
    /// crate::trial::refusals and the model's `server_faults`).
    fn server_mut(&mut self) -> Result<&mut crate::backend::server::Server, RealError> {
        self.backend
            .as_mut()
            .and_then(crate::backend::Backend::server_mut)
            .ok_or_else(|| RealError::UnknownNode("backend".into()))
    }

    /// Kills the backend's server with SIGKILL; its data directory stays.
    pub fn kill_server(&mut self) -> Result<(), RealError> {
        if !self.server_mut()?.kill() {
            return Err(RealError::NotRunning("backend".into()));
        }
        self.log.record(Event::MemberKilled {
            member: "backend".into(),
        });
        Ok(())
    }

    /// Starts the backend's server again on its port and data (killing it first if it
    /// runs), and returns once it answers. What it keeps is its own business: Redis
    /// without persistence keeps nothing.
    pub async fn restart_server(&mut self) -> Result<(), RealError> {
        self.log.record(Event::MemberRestarted {
            member: "backend".into(),
        });
        let pid = self
            .server_mut()?
            .restart()
            .await
            .map_err(|e| RealError::Backend(crate::backend::BackendError::Server(e)))?;
        self.pids.lock().unwrap().push(pid);
        Ok(())
    }

    /// Stops the backend's server (SIGSTOP) or lets it run again (SIGCONT).
    pub fn signal_server(&mut self, stop: bool) -> Result<(), RealError> {
        let sig = if stop { libc::SIGSTOP } else { libc::SIGCONT };
        if !self.server_mut()?.signal(sig) {
            return Err(RealError::NotRunning("backend".into()));
        }
        let member = "backend".to_string();
        self.log.record(if stop {
            Event::MemberPaused { member }
        } else {
            Event::MemberResumed { member }
        });
        Ok(())
    }

    /// The member that leads etcd now, if one does.
    pub async fn etcd_leader(&self) -> Option<String> {
        leader_among(&self.http, &self.etcd_urls())
            .await
            .map(|(m, _)| m)
    }
}
