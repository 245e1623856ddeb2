//! What real mode can run, checked before anything starts.
//!
//! A scenario loaded by the model is valid for the simulator; real mode can apply only
//! part of it. [`check`] refuses, with one line naming the file (its line when the value
//! is written there, or the `--set` that gave it), the key and why, everything real mode
//! cannot do faithfully:
//!
//! - a protocol without a real backend (see [`crate::RealProtocol`]: etcd-lease on etcd,
//!   redis-naive and redis-fenced on Redis, zk-sequential on ZooKeeper, db-row on
//!   PostgreSQL, raft among the node processes); raft with its sequencer in the log
//!   (`raft.sequencer = "log"`: the real node hands out numbers at the resource only);
//! - packet loss (`network.loss_ppm`, a `network` fault's `loss_ppm`): TCP proxies cannot
//!   lose packets, a TCP stream retransmits them;
//! - a SWIM failure detector (`[swim]`) or sharded leadership (`partitions`): the real
//!   node has neither;
//! - a partition or slow link between two nodes, except under raft (lease nodes do not
//!   talk to each other: there is no link to cut), or between two non-nodes (`backend`,
//!   `resource`, `client`: no proxy sits between them); under raft, as in the simulator,
//!   `backend` stands for every other node;
//! - a clock fault on `backend` or an etcd member (a live server reads the machine's
//!   clock, which is not skewed), a `slow-disk` fault, a partition of a member from its peers (raft
//!   traffic has no proxy); member kill, restart, pause and partitions from the clients
//!   run (see crate::trial::driver);
//! - a `transfer` fault: the real node has no handover to a named successor;
//! - service-side settings of the simulated etcd (`etcd-lease.min_lease_ttl_ms`,
//!   `expiry_check_interval_ms`) other than what a real etcd at its default settings
//!   does (2000 ms, 500 ms): a real etcd has its own; and of the simulated ZooKeeper's
//!   costs (`zk-sequential.fsync_ms`, `session_setup_ms`) other than those a live one
//!   measured here, and of the simulated raft disk's and database's (`raft.fsync_ms`,
//!   `db-row.fsync_ms`).
//!
//! What it runs differently, it says in the report instead ([`Plan::notes`]): the
//! `[work.job]` compaction job is not run (the real node has none), and the load client
//! sends at most every 10 ms.

use crate::protocol::{RealProtocol, REAL_PROTOCOLS};
use baton_model::fault::Fault;
use baton_model::protocol::ProtocolName;
use baton_model::scenario::{line_of_key, Resolved, Scenario};
use baton_protocols::etcd_lease::EtcdLeaseConfig;
use baton_protocols::zk_sequential::ZkSequentialConfig;
use std::fmt;

/// The load client's shortest quantum over HTTP (see [`crate::supervisor::RealConfig`]).
pub const CLIENT_QUANTUM_MS_MIN: u64 = 10;

/// Why real mode refuses a scenario: where and why, for one line on stderr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The scenario file as the model displays it.
    pub file: String,
    /// The line of the key, when the file holds the value.
    pub line: Option<usize>,
    /// The `--set` the value came from, if it did.
    pub set: Option<String>,
    /// The dotted key.
    pub key: String,
    /// Which fault, when it is one the file does not list as such (a repetition, or a
    /// fault `[swarm]` drew).
    pub fault: Option<String>,
    /// Why, and what is allowed.
    pub why: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        baton_model::scenario::write_location(f, &self.file, self.set.as_deref(), self.line)?;
        write!(f, ": key `{}`", self.key)?;
        if let Some(fault) = &self.fault {
            write!(f, " ({fault})")?;
        }
        write!(f, ": real mode cannot run this: {}", self.why)
    }
}

/// What real mode will run of a scenario it accepted.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The scenario as real mode runs it: without `[work.job]`. The report is rendered
    /// from it, so its `scenario.toml` says what ran.
    pub resolved: Resolved,
    /// The load client's quantum.
    pub client_quantum_ms: u64,
    /// What real mode does differently from the file, one sentence each, for the report.
    pub notes: Vec<String>,
}

/// The text of the scenario file and the run's overrides, to point at lines and `--set`s.
pub struct Source<'a> {
    /// The file's text (for lines).
    pub text: &'a str,
    /// The `--set` overrides, as given.
    pub overrides: &'a [String],
    /// The scenario as loaded, before a `[swarm]` drew its faults (to tell a drawn fault
    /// from one the file lists).
    pub base: &'a Resolved,
    /// The seed the swarm drew with, when the scenario has one.
    pub swarm_seed: Option<u64>,
}

/// Checks that real mode can run `resolved` (its swarm, if any, already drawn); returns
/// what it will run.
pub fn check(resolved: &Resolved, src: &Source) -> Result<Plan, Box<Refusal>> {
    let refuse = Refuse { resolved, src };
    for rule in RULES {
        if let Some(why) = (rule.refuses)(&resolved.scenario) {
            return Err(refuse.at(rule.key, None, why));
        }
    }
    check_faults(resolved, src, &refuse)?;
    Ok(plan(resolved))
}

/// Builds a [`Refusal`] for a key: the file's line holding it, or the `--set` that gave
/// it.
struct Refuse<'a> {
    resolved: &'a Resolved,
    src: &'a Source<'a>,
}

impl Refuse<'_> {
    /// The refusal of `key` (of `fault`, when the file does not list that fault as
    /// such), for `why`.
    fn at(&self, key: &str, fault: Option<String>, why: String) -> Box<Refusal> {
        let set = self
            .src
            .overrides
            .iter()
            .rev()
            .find(|o| {
                let p = o.split('=').next().unwrap_or("").trim();
                p == key || key.starts_with(&format!("{p}.")) || p.starts_with(&format!("{key}."))
            })
            .cloned();
        let path: Vec<&str> = key.split('.').collect();
        Box::new(Refusal {
            file: self.resolved.path.clone(),
            line: if set.is_some() || fault.is_some() {
                None
            } else {
                line_of_key(self.src.text, &path)
            },
            set,
            key: key.to_string(),
            fault,
            why,
        })
    }
}

/// One scenario-wide rule: the key it guards, and why real mode cannot run the
/// scenario's value there (`None`: it can).
struct Rule {
    key: &'static str,
    refuses: fn(&Scenario) -> Option<String>,
}

/// Every scenario-wide rule, in the order they are checked: the first one broken is the
/// one reported.
const RULES: &[Rule] = &[
    Rule {
        key: "protocol",
        refuses: protocol_without_backend,
    },
    Rule {
        key: "raft.sequencer",
        refuses: raft_log_sequencer,
    },
    Rule {
        key: "etcd-lease.canary",
        refuses: etcd_release_in_flight,
    },
    Rule {
        key: "raft.canary",
        refuses: raft_release_in_flight,
    },
    Rule {
        key: "network.loss_ppm",
        refuses: network_loss,
    },
    Rule {
        key: "swim",
        refuses: swim_detector,
    },
    Rule {
        key: "partitions",
        refuses: sharded,
    },
    Rule {
        key: "etcd-lease.min_lease_ttl_ms",
        refuses: simulated_min_lease_ttl,
    },
    Rule {
        key: "etcd-lease.expiry_check_interval_ms",
        refuses: simulated_expiry_check,
    },
    Rule {
        key: "work.client_timeout_ms",
        refuses: client_timeout_below_quantum,
    },
    Rule {
        key: "zk-sequential.fsync_ms",
        refuses: simulated_zk_fsync,
    },
    Rule {
        key: "zk-sequential.session_setup_ms",
        refuses: simulated_zk_session_setup,
    },
    Rule {
        key: "raft.fsync_ms",
        refuses: simulated_raft_fsync,
    },
    Rule {
        key: "db-row.fsync_ms",
        refuses: simulated_db_fsync,
    },
];

fn protocol_without_backend(s: &Scenario) -> Option<String> {
    RealProtocol::from_config(s.protocol_config())
        .err()
        .map(|why| {
            let allowed: Vec<&str> = REAL_PROTOCOLS.iter().map(|p| p.name()).collect();
            format!("{why} (allowed: {})", allowed.join(", "))
        })
}

fn raft_log_sequencer(s: &Scenario) -> Option<String> {
    use baton_protocols::raft::SequencerPath;
    let raft = s.raft.clone().unwrap_or_default();
    (s.protocol == ProtocolName::Raft && raft.sequencer == SequencerPath::Log).then(|| {
        "log: the real node hands out sequence numbers at the fenced resource only (allowed: resource)".into()
    })
}

/// The release-in-flight canary lives in the simulated node's work loop (it drops its
/// wait for a write in flight when asked to step down); the real node always drains its
/// write first, so it would run the honest protocol under the canary's name.
const RELEASE_IN_FLIGHT: &str = "release-in-flight: the simulator's node carries this canary, the real node does not (allowed: every other value)";

fn etcd_release_in_flight(s: &Scenario) -> Option<String> {
    use baton_protocols::etcd_lease::Canary;
    let c = s.etcd_lease.clone().unwrap_or_default();
    (s.protocol == ProtocolName::EtcdLease && c.canary == Canary::ReleaseInFlight)
        .then(|| RELEASE_IN_FLIGHT.into())
}

fn raft_release_in_flight(s: &Scenario) -> Option<String> {
    use baton_protocols::raft::RaftCanary;
    let c = s.raft.clone().unwrap_or_default();
    (s.protocol == ProtocolName::Raft && c.canary == RaftCanary::ReleaseInFlight)
        .then(|| RELEASE_IN_FLIGHT.into())
}

fn network_loss(s: &Scenario) -> Option<String> {
    (s.network.loss_ppm > 0).then(|| {
        format!("{}: the proxies carry TCP, which retransmits what a network loses, so loss has no counterpart (allowed: 0)", s.network.loss_ppm)
    })
}

fn swim_detector(s: &Scenario) -> Option<String> {
    s.swim.is_some().then(|| {
        "the SWIM failure detector runs in the simulator only (the real node has none); remove [swim]".into()
    })
}

fn sharded(s: &Scenario) -> Option<String> {
    (s.partitions > 0).then(|| {
        format!("{}: sharded leadership runs in the simulator only (the real node leads one global seat) (allowed: 0)", s.partitions)
    })
}

fn simulated_min_lease_ttl(s: &Scenario) -> Option<String> {
    if s.protocol != ProtocolName::EtcdLease {
        return None;
    }
    let lease = s.etcd_lease.clone().unwrap_or_default();
    let etcd = EtcdLeaseConfig::default();
    (lease.min_lease_ttl_ms != etcd.min_lease_ttl_ms).then(|| {
        format!(
            "{}: a real etcd sets its own minimum TTL ({} ms at its default election timeout); this key tunes the simulated etcd only (allowed: {})",
            lease.min_lease_ttl_ms, etcd.min_lease_ttl_ms, etcd.min_lease_ttl_ms
        )
    })
}

fn simulated_expiry_check(s: &Scenario) -> Option<String> {
    if s.protocol != ProtocolName::EtcdLease {
        return None;
    }
    let lease = s.etcd_lease.clone().unwrap_or_default();
    let etcd = EtcdLeaseConfig::default();
    (lease.expiry_check_interval_ms != etcd.expiry_check_interval_ms).then(|| {
        format!(
            "{}: a real etcd's lessor checks every {} ms; this key tunes the simulated etcd only (allowed: {})",
            lease.expiry_check_interval_ms,
            etcd.expiry_check_interval_ms,
            etcd.expiry_check_interval_ms
        )
    })
}

/// A cost that tunes the simulated `protocol` only (`set`, against `real`, the default
/// measured here): a live server or process has its own, which `live` names.
fn simulated_cost(
    s: &Scenario,
    protocol: ProtocolName,
    set: [u64; 2],
    real: [u64; 2],
    live: &str,
) -> Option<String> {
    (s.protocol == protocol && set != real).then(|| {
        format!(
            "{set:?}: {live}; this key tunes the simulated one only (allowed: {real:?}, what was measured here)"
        )
    })
}

fn simulated_zk(
    s: &Scenario,
    live: &str,
    get: fn(&ZkSequentialConfig) -> [u64; 2],
) -> Option<String> {
    let set = get(&s.zk_sequential.clone().unwrap_or_default());
    let real = get(&ZkSequentialConfig::default());
    simulated_cost(s, ProtocolName::ZkSequential, set, real, live)
}

fn simulated_zk_fsync(s: &Scenario) -> Option<String> {
    simulated_zk(s, "a live ZooKeeper has its own fsync", |c| c.fsync_ms)
}

fn simulated_zk_session_setup(s: &Scenario) -> Option<String> {
    simulated_zk(s, "a live ZooKeeper has its own session set-up", |c| {
        c.session_setup_ms
    })
}

fn simulated_raft_fsync(s: &Scenario) -> Option<String> {
    let set = s.raft.clone().unwrap_or_default().fsync_ms;
    let real = baton_protocols::raft::RaftConfig::default().fsync_ms;
    let live = "a raft node process fsyncs its own file on this machine's disk";
    simulated_cost(s, ProtocolName::Raft, set, real, live)
}

fn simulated_db_fsync(s: &Scenario) -> Option<String> {
    let set = s.db_row.clone().unwrap_or_default().fsync_ms;
    let real = baton_protocols::db_row::DbRowConfig::default().fsync_ms;
    let live = "a live PostgreSQL flushes its own WAL at each commit";
    simulated_cost(s, ProtocolName::DbRow, set, real, live)
}

fn client_timeout_below_quantum(s: &Scenario) -> Option<String> {
    (s.work.client_timeout_ms < CLIENT_QUANTUM_MS_MIN).then(|| {
        format!(
            "{}: the load client sends at most every {CLIENT_QUANTUM_MS_MIN} ms, and a request must be allowed that long (allowed: {CLIENT_QUANTUM_MS_MIN} or more)",
            s.work.client_timeout_ms
        )
    })
}

/// Refuses the first fault real mode cannot apply, named by its key.
fn check_faults(resolved: &Resolved, src: &Source, refuse: &Refuse) -> Result<(), Box<Refusal>> {
    let nodes = resolved.node_names();
    let is_node =
        |t: &str| nodes.iter().any(|n| n == t) || ["leader", "follower", "previous"].contains(&t);
    // Faults map to the file's tables one for one unless some repeat (or a swarm drew
    // some): only then can a key name a line of the file.
    let file_tables = src
        .text
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| t.get("faults").and_then(|f| f.as_array()).map(|a| a.len()));
    let one_for_one = src.swarm_seed.is_none() && file_tables == Some(resolved.faults.len());
    let raft = resolved.scenario.protocol == ProtocolName::Raft;
    let etcd = resolved.scenario.protocol == ProtocolName::EtcdLease;
    for (i, firing) in resolved.faults.iter().enumerate() {
        let Some((field, why)) = fault_refusal(&firing.fault, &is_node, raft, etcd) else {
            continue;
        };
        let (key_base, fault) = fault_key_base(resolved, src, i, one_for_one);
        // A swarm's weight is the key to change whatever field of the fault is wrong.
        let key = if key_base.starts_with("swarm.") {
            key_base
        } else {
            format!("{key_base}.{field}")
        };
        return Err(refuse.at(&key, fault, why));
    }
    Ok(())
}

/// Why real mode cannot apply `fault`: the field of its table to change and why; `None`
/// if it can.
/// `raft`: the nodes talk to each other (a link between two of them has proxies);
/// `etcd`: the backend is a live etcd cluster (its members are named, not `backend`).
fn fault_refusal(
    fault: &Fault,
    is_node: &dyn Fn(&str) -> bool,
    raft: bool,
    etcd: bool,
) -> Option<(&'static str, String)> {
    use baton_model::scenario::etcd_cluster::{
        member_index, CLIENTS, ETCD_LEADER, LEADER_MEMBER, PEERS,
    };
    let member = |t: &str| member_index(t).is_some() || t == ETCD_LEADER || t == LEADER_MEMBER;
    const ON_MEMBERS: &str = "allowed on an etcd member: kill, restart, pause, and a partition or slow link to `clients` or a node";
    let no_leader_member = format!("`{LEADER_MEMBER}`: the live client (the etcd-client crate) spreads its calls over every member, so no one member is the leader's ({ON_MEMBERS})");
    match fault {
        Fault::Partition { to, .. } | Fault::SlowLink { to, .. } if to == LEADER_MEMBER => {
            return Some(("to", no_leader_member));
        }
        Fault::Partition { from, .. } | Fault::SlowLink { from, .. } if from == LEADER_MEMBER => {
            return Some(("from", no_leader_member));
        }
        Fault::Kill { target, .. } | Fault::Restart { target } | Fault::Pause { target, .. }
            if target == LEADER_MEMBER =>
        {
            return Some(("target", no_leader_member));
        }
        Fault::Kill { target, .. } | Fault::Restart { target } | Fault::Pause { target, .. }
            if target == "backend" && etcd =>
        {
            return Some(("target", "`backend`: the live etcd is a cluster; name a member (etcd-1, etcd-2, ...; allowed on backend: Redis, ZooKeeper, PostgreSQL)".into()));
        }
        _ => {}
    }
    match fault {
        Fault::Transfer { .. } => {
            return Some(("kind", "transfer: the real node has no transfer (its elector, the etcd-client crate's election, has no requeue and no handover to a named successor); the simulator runs it (allowed here: resign)".into()));
        }
        Fault::SlowDisk { .. } => {
            return Some(("kind", format!("slow-disk: real mode has no honest way to stall a live etcd's fsync without root and a fault-injecting filesystem ({ON_MEMBERS})")));
        }
        Fault::ClockOffset { target, .. }
        | Fault::ClockDrift { target, .. }
        | Fault::ClockStep { target, .. }
            if member(target) =>
        {
            return Some(("target", format!("`{target}`: a live etcd member reads the machine's clock, which real mode does not skew ({ON_MEMBERS})")));
        }
        Fault::Partition { from, to, .. } | Fault::SlowLink { from, to, .. }
            if member(from) || member(to) =>
        {
            let other = if member(from) { to } else { from };
            if other == PEERS || member(other) {
                return Some(("to", format!("`{other}`: the members' raft traffic runs directly between them, with no proxy to cut ({ON_MEMBERS})")));
            }
            if other != CLIENTS && !is_node(other) {
                return Some((
                    "to",
                    format!("no proxy sits between `{from}` and `{to}` ({ON_MEMBERS})"),
                ));
            }
            return None;
        }
        _ => {}
    }
    match fault {
        Fault::Partition { from, to, .. } | Fault::SlowLink { from, to, .. } => {
            match (is_node(from), is_node(to)) {
                (true, true) if raft => None,
                (true, true) => Some(("to", format!("`{from}` and `{to}` are both nodes, and lease nodes do not talk to each other: there is no link between them to cut or slow (allowed: a node and backend, resource or client)"))),
                (false, false) => Some(("to", format!("no proxy sits between `{from}` and `{to}` (allowed: a node and backend, resource or client)"))),
                _ => None,
            }
        }
        Fault::ClockOffset { target, .. }
        | Fault::ClockDrift { target, .. }
        | Fault::ClockStep { target, .. }
            if target == "backend" =>
        {
            Some(("target", "a live backend server reads the machine's clock, which real mode does not skew (allowed: a node, leader, follower, previous)".into()))
        }
        Fault::Network { loss_ppm, .. } if *loss_ppm > 0 => Some(("loss_ppm", format!("{loss_ppm}: the proxies carry TCP, which retransmits what a network loses, so loss has no counterpart (allowed: 0; latency works)"))),
        _ => None,
    }
}

/// How a refusal names fault `i`: the base of its key (`faults.<i>`, or the `[swarm]`
/// weight that drew it) and, when the file does not list it as such (a repetition, or a
/// fault the swarm drew), which fault it is.
fn fault_key_base(
    resolved: &Resolved,
    src: &Source,
    i: usize,
    one_for_one: bool,
) -> (String, Option<String>) {
    let spec = &resolved.scenario.faults[i];
    let drawn = src
        .swarm_seed
        .filter(|_| !src.base.scenario.faults.contains(spec));
    match drawn {
        _ if one_for_one => (format!("faults.{i}"), None),
        Some(seed) => {
            let weight = match &resolved.faults[i].fault {
                Fault::Partition { one_way: true, .. } => "one-way-partition",
                Fault::Partition { .. } => "partition",
                f => f.kind().name(),
            };
            (
                format!("swarm.weights.{weight}"),
                Some(format!(
                    "fault {i}, a {} that [swarm] drew under seed {seed}; a weight of 0 draws none",
                    spec.kind.name()
                )),
            )
        }
        None => (
            format!("faults.{i}"),
            Some(format!(
                "fault {i} of the resolved scenario, a {}",
                spec.kind.name()
            )),
        ),
    }
}

/// What real mode runs of an accepted scenario, and the notes on what it runs
/// differently.
fn plan(resolved: &Resolved) -> Plan {
    let s = &resolved.scenario;
    let mut plan = resolved.clone();
    let mut notes = vec![];
    if let Some(job) = plan.scenario.work.job.take() {
        notes.push(format!(
            "[work.job] (steps of {}-{} ms) was not run: the real node has no compaction job, so this report has no job figures and its scenario.toml leaves the table out",
            job.step_ms_min, job.step_ms_max
        ));
    }
    let client_quantum_ms = s.work.client_quantum_ms.max(CLIENT_QUANTUM_MS_MIN);
    if client_quantum_ms != s.work.client_quantum_ms {
        notes.push(format!(
            "the load client sent each {client_quantum_ms} ms's requests as one POST /next (the file's work.client_quantum_ms {} is finer than HTTP requests here afford; scenario.toml says what ran)",
            s.work.client_quantum_ms
        ));
        plan.scenario.work.client_quantum_ms = client_quantum_ms;
    }
    Plan {
        resolved: plan,
        client_quantum_ms,
        notes,
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: scenarios as text, loaded by the model as `sim` loads them; each
    //! refusal must name the key a user has to change (and its line or `--set`), and
    //! what real mode can run must pass with its notes.
    use super::*;
    use baton_model::scenario::load_str;

    fn checked(text: &str, sets: &[&str]) -> Result<Plan, Box<Refusal>> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let r = load_str("x.toml", "x", text, &sets).expect("the model accepts it");
        check(
            &r,
            &Source {
                text,
                overrides: &sets,
                base: &r,
                swarm_seed: None,
            },
        )
    }

    const KILL: &str = "duration_ms = 20000\n[[faults]]\nkind = \"kill\"\nat_ms = 5000\ntarget = \"leader\"\nrestart_after_ms = 2000\n";

    #[test]
    fn what_real_mode_runs_passes() {
        for protocol in [
            "redis-naive",
            "redis-fenced",
            "zk-sequential",
            "db-row",
            "raft",
        ] {
            let set = format!("protocol={protocol}");
            assert!(checked(KILL, &[set.as_str()]).is_ok(), "{protocol}");
        }
        let p = checked(KILL, &[]).unwrap();
        assert!(p.notes.iter().any(|n| n.contains("10 ms")), "{:?}", p.notes);
        let text = format!("{KILL}[work.job]\nstep_ms_min = 100\n[[faults]]\nkind = \"partition\"\nat_ms = 6000\nfrom = \"backend\"\nto = \"leader\"\none_way = true\n");
        let p = checked(&text, &[]).unwrap();
        assert!(p.resolved.scenario.work.job.is_none());
        assert!(p.notes.iter().any(|n| n.contains("[work.job]")));
    }

    #[test]
    fn member_faults_run_except_what_has_no_honest_counterpart() {
        let cluster = format!("{KILL}[etcd]\nmembers = 3\n");
        for ok in [
            "kind = \"kill\"\nat_ms = 6000\ntarget = \"etcd-leader\"\nrestart_after_ms = 1000\n",
            "kind = \"pause\"\nat_ms = 6000\ntarget = \"etcd-2\"\nduration_ms = 1000\n",
            "kind = \"partition\"\nat_ms = 6000\nfrom = \"etcd-1\"\nto = \"clients\"\nduration_ms = 1000\n",
            "kind = \"partition\"\nat_ms = 6000\nfrom = \"n1\"\nto = \"etcd-leader\"\nduration_ms = 1000\n",
        ] {
            let text = format!("{cluster}[[faults]]\n{ok}");
            assert!(checked(&text, &[]).is_ok(), "{ok}");
        }
        for (bad, key) in [
            ("kind = \"slow-disk\"\nat_ms = 6000\ntarget = \"etcd-1\"\nduration_ms = 1000\n", "faults.1.kind"),
            ("kind = \"clock-step\"\nat_ms = 6000\ntarget = \"etcd-1\"\nstep_ms = 100\n", "faults.1.target"),
            ("kind = \"partition\"\nat_ms = 6000\nfrom = \"etcd-1\"\nto = \"peers\"\nduration_ms = 1000\n", "faults.1.to"),
            ("kind = \"partition\"\nat_ms = 6000\nfrom = \"leader-member\"\nto = \"clients\"\nduration_ms = 1000\n", "faults.1.from"),
        ] {
            let text = format!("{cluster}[[faults]]\n{bad}");
            let r = checked(&text, &[]).unwrap_err();
            assert_eq!(r.key, key, "{r}");
            assert!(!r.to_string().contains('\n'));
        }
    }

    #[test]
    fn refusals_name_the_key_and_where() {
        let r = checked(KILL, &["protocol=consul-session"]).unwrap_err();
        assert_eq!(r.key, "protocol");
        assert_eq!(r.set.as_deref(), Some("protocol=consul-session"));
        assert!(r.to_string().contains("simulation-only"), "{r}");
        assert!(
            r.to_string().contains("allowed: etcd-lease, redis-naive"),
            "{r}"
        );
        let text = format!("{KILL}[[faults]]\nkind = \"partition\"\nat_ms = 6000\nfrom = \"n1\"\nto = \"leader\"\n");
        let r = checked(&text, &[]).unwrap_err();
        assert_eq!((r.key.as_str(), r.line), ("faults.1.to", Some(11)), "{r}");
        assert!(
            r.to_string().starts_with("x.toml:11: key `faults.1.to`"),
            "{r}"
        );
        assert!(!r.to_string().contains('\n'));
        let text = format!("{KILL}[[faults]]\nkind = \"network\"\nat_ms = 6000\nloss_ppm = 10\n");
        assert_eq!(checked(&text, &[]).unwrap_err().key, "faults.1.loss_ppm");
        let text = format!("{KILL}[[faults]]\nkind = \"clock-step\"\nat_ms = 6000\ntarget = \"backend\"\nstep_ms = 100\n");
        assert_eq!(checked(&text, &[]).unwrap_err().key, "faults.1.target");
        let text = format!("{KILL}[swim]\n");
        assert_eq!(checked(&text, &[]).unwrap_err().key, "swim");
        let r = checked(KILL, &["partitions=4", "work.rate_per_s=0"]).unwrap_err();
        assert_eq!(r.key, "partitions");
        let text =
            format!("{KILL}[[faults]]\nkind = \"transfer\"\nat_ms = 6000\ntarget = \"leader\"\n");
        let r = checked(&text, &[]).unwrap_err();
        assert_eq!((r.key.as_str(), r.line), ("faults.1.kind", Some(8)), "{r}");
        assert_eq!(
            checked(KILL, &["network.loss_ppm=5"]).unwrap_err().key,
            "network.loss_ppm"
        );
        assert_eq!(
            checked(KILL, &["etcd-lease.min_lease_ttl_ms=1000"])
                .unwrap_err()
                .key,
            "etcd-lease.min_lease_ttl_ms"
        );
        let r = checked(KILL, &["protocol=raft", "raft.fsync_ms=[2,4]"]).unwrap_err();
        assert_eq!(r.key, "raft.fsync_ms");
        assert!(r.to_string().contains("allowed: [0, 1]"), "{r}");
        assert!(checked(KILL, &["protocol=raft", "raft.fsync_ms=[0,1]"]).is_ok());
        let r = checked(KILL, &["protocol=db-row", "db-row.fsync_ms=[2,4]"]).unwrap_err();
        assert_eq!(r.key, "db-row.fsync_ms");
    }

    #[test]
    fn raft_runs_links_between_nodes() {
        let link = format!("{KILL}[[faults]]\nkind = \"partition\"\nat_ms = 6000\nfrom = \"n1\"\nto = \"leader\"\nduration_ms = 1000\n");
        assert!(checked(&link, &["protocol=raft"]).is_ok());
        let backend = format!("{KILL}[[faults]]\nkind = \"partition\"\nat_ms = 6000\nfrom = \"backend\"\nto = \"leader\"\nduration_ms = 1000\n");
        assert!(checked(&backend, &["protocol=raft"]).is_ok());
        let r = checked(KILL, &["protocol=raft", "raft.sequencer=log"]).unwrap_err();
        assert_eq!(r.key, "raft.sequencer", "{r}");
    }

    #[test]
    fn a_repeated_fault_is_named_by_its_firing() {
        let text = "duration_ms = 20000\n[[faults]]\nkind = \"partition\"\nat_ms = 1000\nevery_ms = 1000\ncount = 3\nfrom = \"n1\"\nto = \"n2\"\nduration_ms = 100\n";
        let r = checked(text, &[]).unwrap_err();
        assert_eq!(r.key, "faults.0.to");
        assert_eq!(r.line, None);
        assert!(
            r.fault
                .as_deref()
                .unwrap()
                .contains("fault 0 of the resolved"),
            "{r}"
        );
    }
}
