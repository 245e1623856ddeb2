//! summary.txt's sections on safety, in the order the summary writes them: leaders
//! acting by belief and by effect, whether the protocol kept its leaders inside their
//! grants by itself (and what stopped them when it did not), the fence's rejections, the
//! sequence, and reads from leader leases.

use super::section::{ms, Run};
use crate::checker::protocol_safety::Outcome;
use std::fmt::Write;

/// Leaders acting by belief (with each overlap) and by effect, and the double-leader
/// incidents.
pub(super) fn leaders_acting(w: &mut String, run: &Run) {
    let f = run.f;
    let _ = writeln!(w, "leaders acting by belief: max {}", f.belief.max);
    for o in &f.belief.overlaps {
        let _ = writeln!(
            w,
            "  overlap {} .. {} ({}): {}",
            ms(o.from_ms),
            ms(o.to_ms),
            ms(o.to_ms - o.from_ms),
            o.nodes.join(", ")
        );
    }
    let _ = writeln!(w, "leaders acting by effect: max {}", f.effect.max);
    let _ = writeln!(
        w,
        "double-leader-acting incidents: {}",
        f.double_leader_acting_incidents
    );
}

/// Whether the protocol kept its leaders inside their grants by itself: the outcome in
/// words, what the protocol tolerates on its own, and each leadership that acted past its
/// grant, with what stopped its writes (the fence, or nothing: fencing off).
pub(super) fn protocol_safety(w: &mut String, run: &Run) {
    let p = &run.f.protocol_safety;
    let protocol = run.r.scenario.protocol.name();
    let meaning = match p.outcome {
        Outcome::ProtocolSafe => {
            "no leader acted after its grant ended, and every safety property held".to_string()
        }
        Outcome::FenceSaved if p.past_grant_in_bounds > 0 => {
            "the resource stayed right, but the protocol broke its own promise: see violations"
                .to_string()
        }
        Outcome::FenceSaved => {
            "every safety property held; a leader outlived its grant, not by the protocol's fault"
                .to_string()
        }
        Outcome::Unsafe => {
            "the work went wrong: a safety property failed, see violations".to_string()
        }
    };
    let _ = writeln!(w, "protocol safety: {} ({meaning})", p.outcome.name());
    if let Some(b) = p.bounds {
        if b.self_safe {
            let _ = writeln!(
                w,
                "  {protocol} on its own stays safe through pauses up to {} ms, clock drift up to {} ppm and clock jumps up to {} ms{}",
                b.pause_ms,
                b.drift_ppm,
                b.offset_ms,
                if b.peers_judge { ", on every node's clock" } else { "" }
            );
        } else {
            let _ = writeln!(
                w,
                "  {protocol} promises no safety of its own: only the fence stops a leader acting past its grant"
            );
        }
    }
    if p.past_grant_in_bounds > 0 {
        let _ = writeln!(
            w,
            "  {} after {} grant ended with no pause, clock fault or network delay beyond those limits: a bug in the protocol (see violations)",
            leaderships_acted(p.past_grant_in_bounds),
            their(p.past_grant_in_bounds)
        );
    }
    if p.writes_landed_past_grant > 0 {
        let _ = writeln!(
            w,
            "  {} in flight when {} leader's grant ended reached the resource after another leader's claim (a write in flight is its leader still acting)",
            match p.writes_landed_past_grant {
                1 => "1 write".to_string(),
                n => format!("{n} writes"),
            },
            if p.writes_landed_past_grant == 1 { "its" } else { "their" }
        );
    }
    if p.past_grant_fence_saved > 0 {
        let n = p.past_grant_fence_saved;
        let writes = p.writes_past_grant;
        let fate = if writes == 0 {
            ", and started no write in that time, so the resource was never at risk".to_string()
        } else {
            let (count, those) = match writes {
                1 => ("1 write".to_string(), "that write"),
                k => (format!("{k} writes"), "those writes"),
            };
            let stopped = if !run.r.scenario.fencing {
                format!("with fencing off, nothing stopped {those}")
            } else if p.outcome == Outcome::Unsafe {
                "fencing was on, yet a safety property failed (see violations)".to_string()
            } else if run.f.rejections.is_empty() {
                "every safety property held".to_string()
            } else {
                "the fence saved it, refusing what came too late (see fencing rejections)"
                    .to_string()
            };
            format!(", and started {count} in that time; {stopped}")
        };
        let _ = writeln!(
            w,
            "  {} after {} grant ended, for a cause beyond those limits (not the protocol's fault){fate}",
            leaderships_acted(n),
            their(n)
        );
        for line in p.fence_saved_plain.iter().take(5) {
            let _ = writeln!(w, "    {line}");
        }
        if p.fence_saved.len() > 5 {
            let _ = writeln!(w, "    ... {} more in report.json", p.fence_saved.len() - 5);
        }
    }
}

/// `1 leadership acted` or `N leaderships acted`.
fn leaderships_acted(n: u64) -> String {
    match n {
        1 => "1 leadership acted".to_string(),
        n => format!("{n} leaderships acted"),
    }
}

/// `its` for one, `their` for more.
fn their(n: u64) -> &'static str {
    if n == 1 {
        "its"
    } else {
        "their"
    }
}

/// Stale-token writes accepted, and the fence's rejections (the first ten).
pub(super) fn fencing(w: &mut String, run: &Run) {
    let f = run.f;
    let _ = writeln!(w, "stale-token writes accepted: {}", f.stale_accepts);
    let _ = writeln!(w, "fencing rejections: {}", f.rejections.len());
    for rej in f.rejections.iter().take(10) {
        let _ = writeln!(
            w,
            "  at {}: {} wrote with token {} < max_token {} -> rejected",
            ms(rej.at_ms),
            rej.node,
            rej.token,
            rej.max_token
        );
    }
    if f.rejections.len() > 10 {
        let _ = writeln!(w, "  ... {} more in report.json", f.rejections.len() - 10);
    }
}

/// The sequence's steps and reuses, its late batches refused, and a real run's SQL check
/// over the ledger.
pub(super) fn sequence(w: &mut String, run: &Run) {
    let f = run.f;
    let _ = writeln!(
        w,
        "sequence: {} non-increasing steps, {} numbers accepted twice (at the resource, or committed in the log); client saw {} reused of {} handed out",
        f.sequence.non_increasing_steps, f.sequence.reused, f.sequence.client_reused, run.out.client.ok
    );
    if f.sequence.refused_late > 0 {
        let _ = writeln!(
            w,
            "  the sequence row refused {} late batches (a leader's own batch, timed out, then overtaken by its next one)",
            f.sequence.refused_late
        );
    }
    if let Some(x) = run.real {
        let l = &x.ledger;
        let _ = writeln!(
            w,
            "SQL check (lag() over the ledger's sequence): {} non-increasing steps; ledger.db holds {} sequencer batches, {} ticks, {} rejected writes, max_token {}, last_seq {}",
            l.non_increasing_steps, l.seq_batches, l.ticks, l.rejections, l.max_token, l.last_seq
        );
    }
}

/// Reads from leader leases, when the scenario reads or a read was served.
pub(super) fn reads(w: &mut String, run: &Run) {
    let (f, out) = (run.f, run.out);
    if run.r.scenario.work.read_rate_per_s > 0 || f.reads.served > 0 {
        let _ = writeln!(
            w,
            "reads: {} answered from leader leases, {} stale (up to {} numbers behind); client sent {}, {} answered",
            f.reads.served,
            f.reads.stale,
            f.reads.max_numbers_behind,
            out.client.reads_sent,
            out.client.reads_ok
        );
        if let Some(b) = run.r.protocol.read_lease_bound() {
            let _ = writeln!(w, "  bound: {b}");
        }
    }
}
