//! The fault verbs on the etcd cluster's members: kill, restart, pause and resume a
//! member's process, and who leads etcd. A member cut from the clients is a cut of each
//! node's proxy to it ([`Link::Member`](super::Link::Member)), in `verbs`.
//!
//! Who leads is read from the members' own status ([`leader_among`]); a watcher polls it
//! every [`LEADER_POLL_MS`] and logs `etcd_leader_elected` when the leader or its term
//! changes, stamped when the poll saw it (up to one poll late).

use super::error::RealError;
use super::Supervisor;
use crate::etcd_cluster::leader_among;
use crate::events::{Event, EventLog};
use std::time::Duration;

/// How often the leader watcher asks the members who leads.
pub const LEADER_POLL_MS: u64 = 100;

impl Supervisor {
    /// The etcd cluster: member faults are refused before the run unless the protocol
    /// runs on etcd (see crate::support).
    fn etcd_mut(&mut self) -> &mut crate::etcd_cluster::EtcdCluster {
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

    /// The member that leads etcd now, if one does.
    pub async fn etcd_leader(&self) -> Option<String> {
        leader_among(&self.http, &self.etcd_urls())
            .await
            .map(|(m, _)| m)
    }
}

/// Logs `etcd_leader_elected` each time the leader or its term changes (see the module
/// doc); runs until aborted.
pub async fn watch_leader(urls: Vec<String>, log: EventLog) {
    let http = reqwest::Client::builder()
        .build()
        .expect("a plain HTTP client builds");
    let mut last: Option<(String, u64)> = None;
    loop {
        let at_us = log.clock().now_us();
        if let Some(now) = leader_among(&http, &urls).await {
            if last.as_ref() != Some(&now) {
                log.record_at(
                    at_us,
                    Event::EtcdLeaderElected {
                        member: now.0.clone(),
                        term: now.1,
                    },
                );
                last = Some(now);
            }
        }
        tokio::time::sleep(Duration::from_millis(LEADER_POLL_MS)).await;
    }
}
