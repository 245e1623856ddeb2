//! How a run sees the beliefs of nodes that write no event log (`--node-cmd`): the
//! supervisor asks each node's `GET /status` every [`POLL_INTERVAL_MS`] and turns what
//! it sees into the timeline's role changes, and what breaks the contract into
//! `contract_broken` events.
//!
//! A poll is sent at `s` and answered at `r` (the run's clock); the node's answer was
//! true at some instant between. So a belief is stamped at the edge of its window that
//! gives the node the benefit of the doubt: a node **becomes leader** at `r` of the
//! first poll that saw it lead (later than it did, by up to one interval and a round
//! trip), and **stops leading** at `s` of the last poll that still saw it lead (earlier
//! than it did, by as much), never before it was first seen to lead. Two beliefs that
//! overlap for less than a poll interval are therefore not seen, and a belief is never
//! said to last longer than it did. ([`crate::contract::outside_view`] then moves a leadership's
//! start earlier still when the resource accepted its write first, and a step-down
//! stamped while the node was stopped to when it ran again.)
//!
//! A node that does not answer (paused, killed, slow) tells nothing: its last belief
//! stands until a poll sees another. A new process of a node (a restart) starts from
//! nothing: the supervisor's `node_killed` already ended the old one's belief. Each
//! rule a process breaks is recorded once: a `/status` answer that is not the
//! contract's JSON (rule `status`), and a process that exited by itself (rule
//! `keeps-running`).

use crate::contract::rules::{check_status, AnswerError};
use crate::events::{Event, EventLog, Role};
use crate::node::StatusBody;
use crate::process::ManagedChild;
use baton_model::NodeId;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

/// How often each node is asked (the design's 10-20 ms).
pub const POLL_INTERVAL_MS: u64 = 15;

/// How often a node is asked while hurried ([`Hurry`]): after Baton asked it to step
/// down or continued it from a pause, when its step-down is due.
pub const HURRY_INTERVAL_MS: u64 = 1;

/// How long a hurry lasts.
pub const HURRY_MS: u64 = 1000;

/// Until when (run clock, µs) a node is polled every [`HURRY_INTERVAL_MS`]: set by the
/// supervisor when it sends `POST /resign` or SIGCONT, so that the two polls around the
/// step-down that follows are about a millisecond apart, not fifteen.
pub type Hurry = Arc<AtomicI64>;

/// How long a poll waits for an answer (a paused node gives none).
const POLL_TIMEOUT_MS: u64 = 200;

/// What one poll of a node learned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sighting {
    /// It answered `200`; `status` is what it said, or why that broke rule `status`.
    Answer {
        /// When the poll was sent (run clock, µs).
        sent_us: i64,
        /// When its answer came.
        answered_us: i64,
        /// Its status, checked.
        status: Result<StatusBody, AnswerError>,
    },
    /// Its process had exited by itself, seen at this time.
    Exited(i64),
}

/// A leadership seen by polls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    token: u64,
    first_answered_us: i64,
    last_sent_us: i64,
}

/// One node's beliefs as the polls saw them, and the rules already reported for its
/// current process.
#[derive(Debug)]
pub struct Tracker {
    node: NodeId,
    incarnation: u64,
    leading: Option<Seen>,
    reported: BTreeSet<&'static str>,
}

impl Tracker {
    /// A tracker for `node`, which has not been seen yet.
    pub fn new(node: &str) -> Tracker {
        Tracker {
            node: node.into(),
            incarnation: 0,
            leading: None,
            reported: BTreeSet::new(),
        }
    }

    /// The end of the leadership seen so far, stamped as the module doc says, and its
    /// first proof, `seen_us` (the answer that showed it over).
    fn step_down(&mut self, role: Role, seen_us: i64) -> Vec<(i64, Event)> {
        let Some(l) = self.leading.take() else {
            return vec![];
        };
        let node = self.node.clone();
        let at_us = l.last_sent_us.max(l.first_answered_us);
        vec![
            (
                at_us,
                Event::RoleChanged {
                    node: node.clone(),
                    role,
                    token: None,
                },
            ),
            (seen_us.max(at_us), Event::StepDownSeen { node }),
        ]
    }

    fn breach(&mut self, at_us: i64, rule: &'static str, detail: String) -> Option<(i64, Event)> {
        self.reported.insert(rule).then(|| {
            (
                at_us,
                Event::ContractBroken {
                    node: self.node.clone(),
                    rule: rule.to_string(),
                    detail,
                },
            )
        })
    }

    /// Reads one sighting of process `incarnation`; returns the events it implies,
    /// each with its stamp.
    pub fn observe(&mut self, incarnation: u64, sighting: Sighting) -> Vec<(i64, Event)> {
        if incarnation != self.incarnation {
            self.incarnation = incarnation;
            self.leading = None;
            self.reported.clear();
        }
        let mut out = vec![];
        match sighting {
            Sighting::Exited(at_us) => {
                out.extend(self.step_down(Role::Follower, at_us));
                let detail = format!(
                    "its process exited by itself (its stderr: run/{}.stderr)",
                    self.node
                );
                out.extend(self.breach(at_us, "keeps-running", detail));
            }
            Sighting::Answer {
                answered_us,
                status: Err(why),
                ..
            } => out.extend(self.breach(answered_us, "status", why.to_string())),
            Sighting::Answer {
                sent_us,
                answered_us,
                status: Ok(s),
            } => match (s.role, s.fence_token, self.leading.as_mut()) {
                (Role::Leader, Some(t), Some(l)) if l.token == t => l.last_sent_us = sent_us,
                (Role::Leader, Some(token), _) => {
                    out.extend(self.step_down(Role::Follower, answered_us));
                    self.leading = Some(Seen {
                        token,
                        first_answered_us: answered_us,
                        last_sent_us: sent_us,
                    });
                    out.push((
                        answered_us,
                        Event::RoleChanged {
                            node: self.node.clone(),
                            role: Role::Leader,
                            token: Some(token),
                        },
                    ));
                }
                (role, _, _) => out.extend(self.step_down(role, answered_us)),
            },
        }
        out
    }
}

/// Where a node's current process serves, and which start of the node it is; `None`
/// before its first start.
pub type Current = Arc<Mutex<Option<(SocketAddr, u64)>>>;

/// One node the poller watches.
pub struct Target {
    /// Its name.
    pub name: NodeId,
    /// Its current process's address and start number, set by the supervisor.
    pub current: Current,
    /// Its current process (taken out by a kill), to see it exit by itself.
    pub child: Arc<Mutex<Option<ManagedChild>>>,
    /// Until when it is polled faster.
    pub hurry: Hurry,
}

/// Polls `target` until aborted, recording into `log` what [`Tracker`] makes of it.
pub async fn poll(target: Target, http: reqwest::Client, log: EventLog) {
    let mut tracker = Tracker::new(&target.name);
    let clock = log.clock();
    loop {
        let sent_us = clock.now_us();
        let current = *target.current.lock().unwrap();
        if let Some((addr, incarnation)) = current {
            let exited = target
                .child
                .lock()
                .unwrap()
                .as_mut()
                .is_some_and(|c| !c.is_running());
            let sighting = if exited {
                Some(Sighting::Exited(sent_us))
            } else {
                ask(&http, addr, &target.name, sent_us, clock).await
            };
            for (at_us, event) in sighting
                .map(|s| tracker.observe(incarnation, s))
                .unwrap_or_default()
            {
                log.record_at(at_us, event);
            }
        }
        let hurried = clock.now_us() < target.hurry.load(Ordering::SeqCst);
        let every_ms = if hurried {
            HURRY_INTERVAL_MS
        } else {
            POLL_INTERVAL_MS
        };
        let next_us = sent_us + every_ms as i64 * 1000;
        let wait_us = (next_us - clock.now_us()).max(every_ms as i64 * 1000 / 2);
        tokio::time::sleep(Duration::from_micros(wait_us as u64)).await;
    }
}

/// One `GET /status`; `None` when nothing answered in time.
async fn ask(
    http: &reqwest::Client,
    addr: SocketAddr,
    name: &str,
    sent_us: i64,
    clock: crate::run_clock::RunClock,
) -> Option<Sighting> {
    let resp = http
        .get(format!("http://{addr}/status"))
        .timeout(Duration::from_millis(POLL_TIMEOUT_MS))
        .send()
        .await
        .ok()?;
    let code = resp.status().as_u16();
    let body = resp.text().await.ok()?;
    let answered_us = clock.now_us();
    let status = if code == 200 {
        check_status(name, &body)
    } else {
        Err(AnswerError::StatusCode {
            code,
            body: crate::contract::rules::shown(&body),
        })
    };
    Some(Sighting::Answer {
        sent_us,
        answered_us,
        status,
    })
}

/// Starts one poller per target; they end when the returned tasks are aborted.
pub fn spawn(targets: Vec<Target>, log: &EventLog) -> Vec<JoinHandle<()>> {
    let http = reqwest::Client::builder()
        .build()
        .expect("a plain HTTP client builds");
    targets
        .into_iter()
        .map(|t| tokio::spawn(poll(t, http.clone(), log.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    //! Methodology: sightings as the poller makes them, checked against the stamps the
    //! module doc promises: a step-up at the first answer that showed it, a step-down at
    //! the send of the last poll that still showed it (never before the step-up), a
    //! restart forgetting the old process, each breach once per process.
    use super::*;

    fn status(role: Role, token: Option<u64>) -> StatusBody {
        StatusBody {
            node_id: "n1".into(),
            role,
            fence_token: token,
            lease_ttl_remaining_ms: None,
        }
    }

    fn seen(s: i64, r: i64, role: Role, token: Option<u64>) -> Sighting {
        Sighting::Answer {
            sent_us: s,
            answered_us: r,
            status: Ok(status(role, token)),
        }
    }

    fn roles(events: &[(i64, Event)]) -> Vec<(i64, Role, Option<u64>)> {
        events
            .iter()
            .filter_map(|(at, e)| match e {
                Event::RoleChanged { role, token, .. } => Some((*at, *role, *token)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_step_down_keeps_the_role_the_node_gave() {
        // A leader that campaigns again right away is recorded as a candidate.
        let mut t = Tracker::new("n1");
        t.observe(1, seen(0, 900, Role::Leader, Some(2)));
        let down = t.observe(1, seen(15_000, 15_100, Role::Candidate, None));
        assert_eq!(roles(&down), vec![(900, Role::Candidate, None)]);
    }

    #[test]
    fn beliefs_are_stamped_at_the_last_instant_a_poll_proves() {
        let mut t = Tracker::new("n1");
        let mut all = vec![];
        all.extend(t.observe(1, seen(0, 500, Role::Candidate, None)));
        all.extend(t.observe(1, seen(15_000, 15_400, Role::Leader, Some(4))));
        all.extend(t.observe(1, seen(30_000, 30_300, Role::Leader, Some(4))));
        all.extend(t.observe(1, seen(45_000, 45_200, Role::Follower, None)));
        assert_eq!(
            roles(&all),
            vec![
                (15_400, Role::Leader, Some(4)),
                (30_000, Role::Follower, None)
            ]
        );
        // Seen leading once only: it stopped no earlier than it was seen to start.
        let mut t = Tracker::new("n1");
        t.observe(1, seen(0, 900, Role::Leader, Some(2)));
        let down = t.observe(1, seen(15_000, 15_100, Role::Follower, None));
        assert_eq!(roles(&down), vec![(900, Role::Follower, None)]);
        // The first proof of the step-down: the answer that showed it over.
        assert!(
            matches!(&down[1], (15_100, Event::StepDownSeen { node }) if node == "n1"),
            "{down:?}"
        );
    }

    #[test]
    fn a_new_token_is_a_new_leadership_and_a_restart_forgets() {
        let mut t = Tracker::new("n1");
        t.observe(1, seen(0, 100, Role::Leader, Some(2)));
        let e = t.observe(1, seen(15_000, 15_100, Role::Leader, Some(5)));
        assert_eq!(
            roles(&e),
            vec![(100, Role::Follower, None), (15_100, Role::Leader, Some(5))]
        );
        // Killed and started again: the new process's first answer is not a step-down.
        let e = t.observe(2, seen(90_000, 90_100, Role::Follower, None));
        assert!(e.is_empty(), "{e:?}");
    }

    #[test]
    fn each_breach_is_recorded_once_per_process() {
        let mut t = Tracker::new("n1");
        let bad = || Sighting::Answer {
            sent_us: 0,
            answered_us: 10,
            status: Err(AnswerError::UnknownRole("boss".into())),
        };
        assert_eq!(t.observe(1, bad()).len(), 1);
        assert!(t.observe(1, bad()).is_empty());
        t.observe(1, seen(20, 30, Role::Leader, Some(3)));
        let e = t.observe(1, Sighting::Exited(50));
        assert_eq!(roles(&e), vec![(30, Role::Follower, None)]);
        assert!(matches!(
            &e[2].1,
            Event::ContractBroken { rule, .. } if rule == "keeps-running"
        ));
        assert!(t.observe(1, Sighting::Exited(60)).is_empty());
        assert_eq!(t.observe(2, bad()).len(), 1, "a new process is judged anew");
    }
}
