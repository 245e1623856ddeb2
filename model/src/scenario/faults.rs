//! The `[[faults]]` tables' checks: each fault's keys against its kind (the fault's own
//! `resolve`), its targets against the fleet, and its time against the run and the
//! faults before it.

use super::context::Cx;
use super::error::ScenarioError;
use super::types::Scenario;
use crate::fault::{Fault, FaultSpec, Firing, PausePoint, When};
use crate::protocol::{ProtocolName, ServerFaults};
use crate::scenario::etcd_cluster::{CLIENTS, ETCD_LEADER, LEADER_MEMBER, PEERS};

/// The checked faults.
pub(super) struct Faults {
    /// The firings, typed, in firing order (file order, or time order when a fault
    /// repeats).
    pub(super) firings: Vec<Firing>,
    /// One table per firing with every optional key of its kind filled in, for the
    /// resolved `scenario.toml`.
    pub(super) filled: Vec<FaultSpec>,
}

/// What the faults checked so far leave for the next one.
#[derive(Default)]
struct Before {
    /// The index and time of the last fault with an `at_ms`.
    last_at: Option<(usize, u64)>,
    /// Whether an earlier fault hit a node (so that `previous` names one).
    node: bool,
}

/// Checks every fault of `s`, whose fleet is `nodes`.
pub(super) fn check(cx: &Cx, s: &Scenario, nodes: &[String]) -> Result<Faults, ScenarioError> {
    let mut out = Faults {
        firings: vec![],
        filled: vec![],
    };
    let mut before = Before::default();
    for (i, spec) in firings(cx, s)?.iter().map(|(i, f)| (*i, f)) {
        let idx = i.to_string();
        let (when, fault) = spec
            .resolve(
                (s.network.latency_ms_min, s.network.latency_ms_max),
                s.network.loss_ppm,
            )
            .map_err(|e| cx.fail(&["faults", &idx, &e.key], e.message))?;
        previous(cx, &idx, spec, nodes, &mut before.node)?;
        let server = s
            .protocol
            .server_faults(s.etcd_cluster().is_cluster())
            .map(|f| (s.protocol, f));
        targets(cx, &idx, &fault, nodes, &s.etcd_members(), server)?;
        let jitter_ms = spec.jitter_ms.unwrap_or(0);
        if let When::At(t) = when {
            time(cx, (i, t), jitter_ms, s.duration_ms, &mut before.last_at)?;
        }
        out.filled.push(spec.filled(&fault));
        out.firings.push(Firing {
            when,
            jitter_ms,
            fault,
        });
    }
    Ok(out)
}

/// Each fault's firings, with the index of its table in the file (for errors). A
/// scenario with a repeating fault fires everything in time order (ties in file order),
/// so every fault of it needs an at_ms.
fn firings(cx: &Cx, s: &Scenario) -> Result<Vec<(usize, FaultSpec)>, ScenarioError> {
    let mut firings = vec![];
    for (i, spec) in s.faults.iter().enumerate() {
        let reps = spec
            .repetitions(s.duration_ms)
            .map_err(|e| cx.fail(&["faults", &i.to_string(), &e.key], e.message))?;
        firings.extend(reps.into_iter().map(|r| (i, r)));
    }
    if s.faults.iter().any(FaultSpec::repeats) {
        if let Some(i) = s.faults.iter().position(|f| f.at_ms.is_none()) {
            return Err(cx.fail(
                &["faults", &i.to_string(), "after"],
                "a scenario with a repeating fault fires its faults in time order: give this one an at_ms".into(),
            ));
        }
        firings.sort_by_key(|(_, f)| f.at_ms);
    }
    Ok(firings)
}

/// `previous` names the node an earlier fault hit; there must be one. `node_before`
/// learns whether this fault hits one.
fn previous(
    cx: &Cx,
    idx: &str,
    spec: &FaultSpec,
    nodes: &[String],
    node_before: &mut bool,
) -> Result<(), ScenarioError> {
    let mentions_previous = [&spec.target, &spec.from, &spec.to]
        .iter()
        .any(|t| t.as_deref() == Some("previous"));
    let key = if spec.target.is_some() {
        "target"
    } else if spec.from.as_deref() == Some("previous") {
        "from"
    } else {
        "to"
    };
    cx.check(
        !mentions_previous || *node_before,
        &["faults", idx, key],
        "`previous` needs an earlier fault that hit a node (a node name, `leader`, `follower` or `previous`)".into(),
    )?;
    let is_node = |t: &Option<String>| {
        t.as_deref().is_some_and(|t| {
            nodes.iter().any(|n| n == t) || ["leader", "follower", "previous"].contains(&t)
        })
    };
    *node_before =
        *node_before || is_node(&spec.target) || is_node(&spec.from) || is_node(&spec.to);
    Ok(())
}

/// The fault's targets: nodes of the fleet (or `leader`, `follower`, `previous`), the
/// etcd members when the lease service is a cluster (`etcd-1`.., `etcd-leader`), the
/// protocol's one backend server (`backend`, for kill, pause and, where modelled,
/// restart: `server`), and the ends its kind also takes.
fn targets(
    cx: &Cx,
    idx: &str,
    fault: &Fault,
    nodes: &[String],
    members: &[String],
    server: Option<(ProtocolName, ServerFaults)>,
) -> Result<(), ScenarioError> {
    server_target(cx, idx, fault, server)?;
    let one = |t: &str, key: &str, extra: &[&str]| target(cx, idx, nodes, (t, key), extra);
    let mut member_ends: Vec<&str> = members.iter().map(String::as_str).collect();
    if !members.is_empty() {
        member_ends.push(ETCD_LEADER);
        member_ends.push(LEADER_MEMBER);
    }
    let with = |base: &[&'static str]| -> Vec<&str> {
        base.iter()
            .copied()
            .chain(member_ends.iter().copied())
            .collect()
    };
    match fault {
        Fault::Resign { target: t } => one(t, "target", &[]),
        Fault::Transfer { target: t, to } => {
            one(t, "target", &[])?;
            // A successor is a node, named or `next`: `leader`, `follower` and
            // `previous` would name the leader itself or a node chosen for another reason.
            let ok = to == crate::fault::NEXT || nodes.iter().any(|n| n == to);
            cx.check(
                ok,
                &["faults", idx, "to"],
                format!(
                    "unknown successor `{to}`: expected one of {}, {}",
                    nodes.join(", "),
                    crate::fault::NEXT
                ),
            )?;
            cx.check(
                to != t,
                &["faults", idx, "to"],
                format!("`{to}` is also the target: a leader cannot hand over to itself"),
            )
        }
        Fault::Kill { target: t, .. }
        | Fault::Restart { target: t }
        | Fault::Pause { target: t, .. } => {
            let backend: &[&'static str] = if server.is_some() { &["backend"] } else { &[] };
            one(t, "target", &with(backend))
        }
        Fault::ClockOffset { target: t, .. }
        | Fault::ClockDrift { target: t, .. }
        | Fault::ClockStep { target: t, .. } => one(t, "target", &with(&["backend"])),
        Fault::SlowDisk { target: t, .. } => {
            let ok = member_ends.contains(&t.as_str());
            let allowed = if members.is_empty() {
                "an etcd member, and this scenario has none: the protocol must run on etcd with [etcd] members of 2 or more".to_string()
            } else {
                format!("one of {}", member_ends.join(", "))
            };
            cx.check(
                ok,
                &["faults", idx, "target"],
                format!("unknown target `{t}`: expected {allowed}"),
            )
        }
        Fault::Partition { from, to, .. } | Fault::SlowLink { from, to, .. } => {
            let mut ends = with(&["backend", "resource", "client"]);
            if !members.is_empty() {
                ends.extend([CLIENTS, PEERS]);
            }
            one(from, "from", &ends)?;
            one(to, "to", &ends)?;
            cx.check(
                from != to,
                &["faults", idx, "to"],
                format!("`{to}` is also `from`: a link needs two ends"),
            )?;
            let group = |e: &str| e == CLIENTS || e == PEERS;
            let is_member = |e: &str| member_ends.contains(&e);
            cx.check(
                (!group(to) || is_member(from)) && (!group(from) || is_member(to)),
                &["faults", idx, if group(to) { "to" } else { "from" }],
                format!("`{CLIENTS}` and `{PEERS}` are seen from an etcd member: the other end must be one (etcd-1.., etcd-leader)"),
            )
        }
        Fault::Heal | Fault::Network { .. } => Ok(()),
    }
}

/// A kill, restart or pause of `backend`: a restart only where the simulated server
/// keeps what the real one keeps, a pause at any moment (a server writes nothing to the
/// fenced resource, so `before-write` has no moment to strike).
fn server_target(
    cx: &Cx,
    idx: &str,
    fault: &Fault,
    server: Option<(ProtocolName, ServerFaults)>,
) -> Result<(), ScenarioError> {
    let Some((protocol, f)) = server else {
        return Ok(());
    };
    let (restarts, key) = match fault {
        Fault::Restart { target } if target == "backend" => (true, "target"),
        Fault::Kill {
            target,
            restart_after_ms: Some(_),
        } if target == "backend" => (true, "restart_after_ms"),
        Fault::Pause { target, point, .. }
            if target == "backend" && *point == PausePoint::BeforeWrite =>
        {
            return cx.check(
                false,
                &["faults", idx, "point"],
                "`before-write` on `backend`: a server writes nothing to the fenced resource (allowed on backend: anywhere)".into(),
            );
        }
        _ => (false, ""),
    };
    cx.check(
        !restarts || f.restart_modelled,
        &["faults", idx, key],
        format!(
            "a restart of `backend`: the simulated {} keeps nothing across a restart, where a real one keeps its data, so a restart is not modelled (allowed on backend: kill, pause)",
            protocol.backend_name()
        ),
    )
}

/// One target `t`, written at `key`: a node, `leader`, `follower`, `previous` or one of
/// `extra`.
fn target(
    cx: &Cx,
    idx: &str,
    nodes: &[String],
    (t, key): (&str, &str),
    extra: &[&str],
) -> Result<(), ScenarioError> {
    let ok = nodes.iter().any(|n| n == t)
        || t == "leader"
        || t == "follower"
        || t == "previous"
        || extra.contains(&t);
    let mut allowed = format!("one of {}, leader, follower, previous", nodes.join(", "));
    for e in extra {
        allowed.push_str(", ");
        allowed.push_str(e);
    }
    cx.check(
        ok,
        &["faults", idx, key],
        format!("unknown target `{t}`: expected {allowed}"),
    )
}

/// A fault at `t` (the `i`th table) with `jitter_ms` must fire before the run ends and
/// not before the fault with an `at_ms` listed before it (`last_at`, which it becomes).
fn time(
    cx: &Cx,
    (i, t): (usize, u64),
    jitter_ms: u64,
    duration_ms: u64,
    last_at: &mut Option<(usize, u64)>,
) -> Result<(), ScenarioError> {
    let idx = i.to_string();
    cx.check(
        t < duration_ms,
        &["faults", &idx, "at_ms"],
        format!("{t} is not before duration_ms {duration_ms}"),
    )?;
    cx.check(
        t + jitter_ms < duration_ms,
        &["faults", &idx, "jitter_ms"],
        format!("at_ms {t} + jitter_ms {jitter_ms} is not before duration_ms {duration_ms}"),
    )?;
    // Faults fire in file order; an earlier time after a later one would silently fire
    // late.
    if let Some((prev_i, prev_t)) = *last_at {
        cx.check(
            t >= prev_t,
            &["faults", &idx, "at_ms"],
            format!("{t} is before faults.{prev_i}.at_ms {prev_t}: faults fire in file order, list them by time"),
        )?;
    }
    *last_at = Some((i, t));
    Ok(())
}
