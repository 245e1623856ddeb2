//! summary.txt's sections for the features a scenario turns on: leadership transfer,
//! the SWIM failure detector and sharded leadership (partitions). Each writes nothing
//! for a run that does not use its feature.

use super::section::{ms, percentiles, Run};
use std::fmt::Write;

/// Leadership transfers, when the scenario asks for any: how the protocol hands over,
/// and what the handovers gave.
pub(super) fn transfers(w: &mut String, run: &Run) {
    if !run.r.scenario.has_fault(crate::fault::FaultKind::Transfer) {
        return;
    }
    let t = &run.f.transfer;
    let _ = writeln!(w, "transfer: {}", run.r.protocol.transfer_method());
    let _ = writeln!(
        w,
        "  {} handed over, {} taken over by their successor, {} aborted; gap (old leader's last write -> successor's first) {}",
        t.handovers.len(),
        t.honoured,
        t.aborted,
        percentiles(&t.gap_ms)
    );
    if let Some(max) = run.r.scenario.expect.transfer_gap_ms_max {
        let _ = writeln!(w, "  checked against expect.transfer_gap_ms_max = {max} ms");
    }
}

/// The SWIM detector, when the scenario runs one: its settings, how fast it confirmed
/// each death against the seat's vacancy, what it got wrong and what it sent.
pub(super) fn swim(w: &mut String, run: &Run) {
    let Some(c) = crate::scenario::swim::SwimConfig::running(&run.r.scenario.swim) else {
        return;
    };
    let s = &run.f.swim;
    let _ = writeln!(
        w,
        "swim: probe every {} ms (ack within {} ms, else {} indirect probes), down after {} ms of unrefuted suspicion; {}",
        c.probe_period_ms,
        c.probe_rtt_ms,
        c.indirect_probes,
        c.suspect_to_down_ms,
        if c.evict_dead_leader {
            "a leader declared down is evicted at the backend"
        } else {
            "it only watches"
        }
    );
    let (d, v) = (&s.detection_ms, &s.vacancy_ms);
    let _ = writeln!(
        w,
        "  {} kills: declared down after p50 {} max {} ({} detected); a killed leader's seat vacated after p50 {} max {} ({}); {} eviction requests",
        s.kills.len(),
        ms(d.p50),
        ms(d.max),
        d.count,
        ms(v.p50),
        ms(v.max),
        v.count,
        s.evictions
    );
    let _ = writeln!(
        w,
        "  false suspicions {}, false downs {} (of running processes); {} messages ({}/s)",
        s.false_suspicions, s.false_downs, s.messages, s.messages_per_s
    );
    if let Some(max) = run.r.scenario.expect.swim_detection_ms_max {
        let _ = writeln!(
            w,
            "  checked against expect.swim_detection_ms_max = {max} ms"
        );
    }
}

/// A sharded fleet: every partition's verdict, failovers, and what each membership
/// change moved against the minimum.
pub(super) fn partitions(w: &mut String, run: &Run) {
    if run.r.scenario.partitions == 0 {
        return;
    }
    let s = &run.f.shards;
    let failed: Vec<String> = s
        .each
        .iter()
        .filter(|p| !p.failed.is_empty())
        .map(|p| format!("{} ({})", p.partition, p.failed.join(", ")))
        .collect();
    let stats = crate::checker::failover::LatencyStats::of(&s.failover_ms);
    let _ = writeln!(
        w,
        "partitions: {} (rendezvous over the live members); failed: {}; failover {}",
        s.count,
        if failed.is_empty() {
            "none".into()
        } else {
            failed.join("; ")
        },
        percentiles(&stats)
    );
    for c in &s.changes {
        let _ = writeln!(
            w,
            "  {} {} at {}: {} partitions moved (minimum {}); then the busiest node led {}x the mean",
            c.kind,
            c.node,
            ms(c.at_ms),
            c.moved,
            c.minimum,
            c.balance
        );
    }
    let _ = writeln!(
        w,
        "  moved {} partitions over {} membership changes (minimum {}); worst balance {}x the mean",
        s.moved,
        s.changes.len(),
        s.minimum,
        s.balance_max
    );
}
