//! Methodology: hand-built timelines on the default scenario (etcd-lease, declared
//! bounds 0 ms / 0 ppm / 0 ms, resource timeout 500 ms). Canaries: a leader still
//! believing after its key expired, and writing, with nothing to excuse it; a leader
//! that released its grant while a write was in flight, the write landing after the
//! next leader's claim: one violation each, fence-saved (the fence stopped the write).
//! Quiet: the same after a pause (fence-saved, counted), after a drift fault on its
//! clock, a write that landed after its sender gave it up, a write in flight when the
//! grant expired (its flight beyond the 0 ms the protocol tolerates), and a leader that
//! stops in time (protocol-safe). A stop recorded after an in-flight write counts from
//! when its belief ended (`lost_at_us`). A damaging violation makes the run unsafe.
use super::*;
use crate::checker::testing::*;
use crate::checker::{Flights, Property};
use crate::scenario::Resolved;
use crate::timeline::WriteOp;
use crate::timeline::{Entry, Event};

fn judge(entries: &[Entry]) -> (ProtocolSafetySummary, Vec<Violation>) {
    let r = resolved();
    let mut c = ProtocolSafety::new(&r);
    let mut flights = Flights::new(&r);
    for (i, e) in entries.iter().enumerate() {
        c.entry(e);
        if let Some(w) = flights.entry(i, e) {
            c.landed(&w);
        }
    }
    let mut v = vec![];
    let mut s = c.finish(10_000_000, &mut v);
    s.judge(&v);
    (s, v)
}

fn attempted(at_ms: i64, node: &str, token: u64) -> Entry {
    at(
        at_ms,
        Event::WriteAttempted {
            node: node.into(),
            token,
            op: WriteOp::Tick { n: 1 },
        },
    )
}

/// n1 leads under token 5; its key expires at 3000; it believes until 3400 and writes
/// at 3200; `extra` goes in before the expiry.
fn overrun(extra: Vec<Entry>) -> Vec<Entry> {
    let mut v = vec![leader(100, "n1", 5), attempted(1000, "n1", 5)];
    v.extend(extra);
    v.extend([
        key_deleted(3000, 5),
        attempted(3200, "n1", 5),
        stopped(3400, "n1", 5, "deadline_passed"),
    ]);
    v
}

#[test]
fn acting_past_the_grant_inside_the_bounds_fails() {
    let (s, v) = judge(&overrun(vec![]));
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].property, Property::ActedPastGrant);
    assert_eq!(v[0].at_ms, 3000.0);
    assert!(
        v[0].detail
            .contains("believed it led 400 ms longer and started 1 protected write after it"),
        "{}",
        v[0].detail
    );
    // The protocol broke its promise; nothing reached the resource: fence-saved, and the
    // violation fails the run.
    assert_eq!(
        (s.outcome, s.past_grant_in_bounds, s.writes_past_grant),
        (Outcome::FenceSaved, 1, 1)
    );
    // A stale write the resource took makes it unsafe.
    let mut s = s;
    let mut damage = v.clone();
    damage.push(Violation {
        property: Property::StaleTokenAccepted,
        at_ms: 3300.0,
        detail: String::new(),
    });
    s.judge(&damage);
    assert_eq!(s.outcome, Outcome::Unsafe);
}

/// n1 leads under token 5 and sends a tick at 2900 ms; its grant ends at 2960 (released
/// on purpose at 2950 when `release`); n2 wins (token 6) and its claim is accepted at
/// 3000; n1's tick lands, rejected, at `landed_ms`.
fn in_flight(release: bool, landed_ms: i64) -> Vec<Entry> {
    let mut v = vec![
        leader(100, "n1", 5),
        sent(2900, "n1", 5, WriteOp::Tick { n: 1 }),
    ];
    if release {
        v.push(at(
            2950,
            Event::Released {
                node: "n1".into(),
                token: 5,
            },
        ));
    }
    v.extend([
        stopped(2950, "n1", 5, "resigned"),
        key_deleted(2960, 5),
        leader(2970, "n2", 6),
        accepted(3000, "n2", 6, 5, WriteOp::Claim),
        at(
            landed_ms,
            Event::WriteRejected {
                node: "n1".into(),
                token: 5,
                max_token: 6,
                op: WriteOp::Tick { n: 1 },
            },
        ),
    ]);
    v
}

#[test]
fn a_release_with_a_write_in_flight_is_acting_past_the_grant() {
    // Landed at 3200, inside its 500 ms timeout, after n2's claim: n1 let its grant go
    // with a write it still waited for.
    let (s, v) = judge(&in_flight(true, 3200));
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].property, Property::ActedPastGrant);
    assert_eq!(v[0].at_ms, 3200.0);
    assert!(
        v[0].detail.contains(
            "had a write in flight (sent at 2900 ms) that reached the resource at 3200 ms, after n2's claim (token 6) at 3000 ms, and was rejected by the fence"
        ),
        "{}",
        v[0].detail
    );
    assert_eq!(
        (
            s.outcome,
            s.past_grant_in_bounds,
            s.writes_landed_past_grant
        ),
        (Outcome::FenceSaved, 1, 1)
    );
}

#[test]
fn a_write_in_flight_is_excused_past_its_timeout_or_across_an_expiry() {
    // Landed at 3500, after its sender gave it up at 3400: the network held it.
    let (s, v) = judge(&in_flight(true, 3500));
    assert!(v.is_empty(), "{v:?}");
    assert_eq!(
        (s.outcome, s.past_grant_fence_saved),
        (Outcome::FenceSaved, 1)
    );
    assert!(
        s.fence_saved[0].contains(
            "excused: the network held that write 600 ms, past the 500 ms its sender waited for it"
        ),
        "{:?}",
        s.fence_saved
    );
    // No release: the grant ended under it (an expiry); its 300 ms in flight is beyond
    // the 0 ms etcd-lease tolerates between its deadline check and its act.
    let (s, v) = judge(&in_flight(false, 3200));
    assert!(v.is_empty(), "{v:?}");
    assert_eq!(
        (s.outcome, s.past_grant_fence_saved),
        (Outcome::FenceSaved, 1)
    );
    assert!(
        s.fence_saved[0].contains("that write was in flight 300 ms, beyond the 0 ms"),
        "{:?}",
        s.fence_saved
    );
    // Landed before n2's claim: nobody else had acted yet.
    let mut early = in_flight(true, 2990);
    let landed = early.pop().unwrap();
    early.insert(early.len() - 2, landed);
    let (s, v) = judge(&early);
    assert!(v.is_empty(), "{v:?}");
    assert_eq!(s.outcome, Outcome::ProtocolSafe);
}

#[test]
fn a_pause_that_lands_on_a_paused_node_extends_it() {
    // Paused at 2 s for 4.6 s, paused again at 6.6 s (while still paused) until 11 s;
    // the grant ends at 3 s and the node stops only at 11 s, as it wakes (the swarm's seed
    // 1207 on raft). One pause of 9 s excuses it; the first pause's end must not
    // close it, nor the second's start hide the first.
    let v = vec![
        leader(100, "n1", 5),
        at(2000, Event::NodePaused { node: "n1".into() }),
        key_deleted(3000, 5),
        at(6600, Event::NodePaused { node: "n1".into() }),
        at(6640, Event::NodeResumed { node: "n1".into() }),
        at(11000, Event::NodeResumed { node: "n1".into() }),
        stopped(11000, "n1", 5, "lease-expired"),
    ];
    let (s, v) = judge(&v);
    assert!(v.is_empty(), "{v:?}");
    assert_eq!(s.outcome, Outcome::FenceSaved);
    assert!(
        s.fence_saved[0].contains("paused 9000 ms"),
        "{:?}",
        s.fence_saved
    );
}

#[test]
fn a_leader_killed_while_paused_is_excused_by_its_pause() {
    // Paused at 2 s, the grant ends at 3 s, killed at 3.5 s while still paused (the
    // swarm's seed 226 on consul-session): the pause excuses its belief past the
    // grant; forgetting it at the kill made the run fail.
    let v = vec![
        leader(100, "n1", 5),
        at(2000, Event::NodePaused { node: "n1".into() }),
        key_deleted(3000, 5),
        at(3500, Event::NodeKilled { node: "n1".into() }),
    ];
    let (s, v) = judge(&v);
    assert!(v.is_empty(), "{v:?}");
    assert_eq!(s.outcome, Outcome::FenceSaved);
}

#[test]
fn a_pause_or_a_clock_fault_beyond_the_bounds_excuses_it() {
    let paused = overrun(vec![
        at(2000, Event::NodePaused { node: "n1".into() }),
        at(3100, Event::NodeResumed { node: "n1".into() }),
    ]);
    let (s, v) = judge(&paused);
    assert!(v.is_empty(), "{v:?}");
    assert_eq!(
        (s.outcome, s.past_grant_fence_saved),
        (Outcome::FenceSaved, 1)
    );
    assert!(
        s.fence_saved[0].contains("paused 1100 ms"),
        "{:?}",
        s.fence_saved
    );
    // The summary's words for it: the cause, its length, and the limit it passed.
    assert!(
        s.fence_saved_plain[0].ends_with(
            "; not the protocol's fault: n1 was paused for 1.1 s from 2000.0 ms, longer than etcd-lease tolerates (0 ms)"
        ),
        "{:?}",
        s.fence_saved_plain
    );
    // A drift fault (fault 0 of a scenario that has one) on n1's clock.
    let mut r = resolved();
    r.faults.push(crate::fault::Firing {
        when: crate::fault::When::At(2000),
        jitter_ms: 0,
        fault: crate::fault::Fault::ClockDrift {
            target: "n1".into(),
            drift_ppm: -200_000,
        },
    });
    let mut c = ProtocolSafety::new(&r);
    for e in overrun(vec![at(
        2000,
        Event::FaultApplied {
            index: 0,
            kind: crate::fault::FaultKind::ClockDrift,
            target: "n1".into(),
        },
    )]) {
        c.entry(&e);
    }
    let mut v = vec![];
    let s = c.finish(10_000_000, &mut v);
    assert!(v.is_empty(), "{v:?}");
    assert!(
        s.fence_saved[0].contains("drifting -200000 ppm"),
        "{:?}",
        s.fence_saved
    );
}

#[test]
fn an_offset_inside_the_bounds_set_on_a_drifted_clock_is_judged_by_its_jump() {
    // k8s-lease's defaults tolerate 5,000 ms and 333,333 ppm. n1 runs 200,000 ppm
    // fast from 0 (inside), then at 30 s its clock is set to -13 ms (inside as a
    // value): it had gained 6 s, so it jumps back 6,013 ms, beyond the bound (raft
    // swarm seed 4586). The same offset on a true clock excuses nothing.
    let faults = |drift: bool| {
        let mut text = String::from("protocol = \"k8s-lease\"\n");
        if drift {
            text += "[[faults]]\nkind = \"clock-drift\"\ntarget = \"n1\"\ndrift_ppm = 200000\nat_ms = 0\n";
        }
        text += "[[faults]]\nkind = \"clock-offset\"\ntarget = \"n1\"\noffset_ms = -13\nat_ms = 30000\n";
        crate::scenario::load_str("t.toml", "t", &text, &[]).expect("loads")
    };
    let applied = |index: usize, kind| {
        at(
            if index == 0 && kind == crate::fault::FaultKind::ClockDrift {
                0
            } else {
                30_000
            },
            Event::FaultApplied {
                index,
                kind,
                target: "n1".into(),
            },
        )
    };
    let run = |r: &Resolved, extra: Vec<Entry>| {
        let mut c = ProtocolSafety::new(r);
        let mut v = vec![leader(100, "n1", 5)];
        v.extend(extra);
        v.extend([
            key_deleted(31_000, 5),
            stopped(31_400, "n1", 5, "deadline_passed"),
        ]);
        for e in &v {
            c.entry(e);
        }
        let mut out = vec![];
        let s = c.finish(40_000_000, &mut out);
        (s, out)
    };
    use crate::fault::FaultKind::{ClockDrift, ClockOffset};
    let (s, v) = run(
        &faults(true),
        vec![applied(0, ClockDrift), applied(1, ClockOffset)],
    );
    assert!(v.is_empty(), "{v:?}");
    assert!(
        s.fence_saved[0].contains("set to -13 ms off at 30000 ms, a jump of -6013 ms"),
        "{:?}",
        s.fence_saved
    );
    let (_, v) = run(&faults(false), vec![applied(0, ClockOffset)]);
    assert_eq!(v.len(), 1, "{v:?}");
}

#[test]
fn a_followers_clock_jump_excuses_the_leader_only_where_peers_judge_the_grant() {
    // n1 leads; follower n2's clock steps 1,490 ms ahead (beyond 50 ms); n3 wins at
    // 26.655 s with n2's early vote and n1 believes 31 ms longer (raft swarm seeds
    // 1020 and 8978). Under raft, whose followers' clocks time the election, the jump
    // excuses n1; under k8s-lease, where the Lease API's clock judges, it does not.
    let run = |protocol: &str| {
        let text = format!(
            "protocol = \"{protocol}\"\n[[faults]]\nkind = \"clock-step\"\ntarget = \"n2\"\nstep_ms = 1490\nat_ms = 26623\n"
        );
        let r = crate::scenario::load_str("t.toml", "t", &text, &[]).expect("loads");
        let mut c = ProtocolSafety::new(&r);
        for e in [
            leader(100, "n1", 2),
            at(
                26_623,
                Event::FaultApplied {
                    index: 0,
                    kind: crate::fault::FaultKind::ClockStep,
                    target: "n2".into(),
                },
            ),
            leader(26_655, "n3", 3),
            stopped(26_687, "n1", 2, "lease_lost"),
        ] {
            c.entry(&e);
        }
        let mut v = vec![];
        let s = c.finish(40_000_000, &mut v);
        (s, v)
    };
    let (s, v) = run("raft");
    assert!(v.is_empty(), "{v:?}");
    assert!(
        s.fence_saved[0].contains("n2: the clock moved 1490 ms"),
        "{:?}",
        s.fence_saved
    );
    let (_, v) = run("k8s-lease");
    assert_eq!(v.len(), 1, "{v:?}");
}

#[test]
fn a_backend_restarted_without_its_data_excuses_every_leader() {
    // Redis without persistence forgets the lock at a restart: n1 acting past the
    // next win is the backend's doing. The database keeps its row: no excuse.
    let run = |protocol: &str| {
        let text = format!("protocol = \"{protocol}\"\n");
        let r = crate::scenario::load_str("t.toml", "t", &text, &[]).expect("loads");
        let mut c = ProtocolSafety::new(&r);
        for e in [
            leader(100, "n1", 1),
            at(
                10_000,
                Event::MemberRestarted {
                    member: "backend".into(),
                },
            ),
            leader(10_030, "n2", 1),
            stopped(10_110, "n1", 1, "revoked"),
        ] {
            c.entry(&e);
        }
        let mut v = vec![];
        let s = c.finish(20_000_000, &mut v);
        (s, v)
    };
    let (s, v) = run("redis-fenced");
    assert!(v.is_empty(), "{v:?}");
    assert!(
        s.fence_saved[0].contains("backend: restarted without its data"),
        "{:?}",
        s.fence_saved
    );
    let (_, v) = run("db-row");
    assert_eq!(v.len(), 1, "{v:?}");
}

#[test]
fn a_stale_win_under_an_older_token_gives_nothing_away() {
    // n2 learns late that it won term 4; n1 already leads term 5.
    let (s, v) = judge(&[
        leader(100, "n1", 5),
        leader(200, "n2", 4),
        attempted(300, "n1", 5),
        stopped(400, "n1", 5, "resigned"),
    ]);
    assert!(v.is_empty(), "{v:?}");
    assert_eq!(s.outcome, Outcome::ProtocolSafe);
}

#[test]
fn stopping_in_time_is_protocol_safe_even_after_an_in_flight_write() {
    let (s, v) = judge(&[
        leader(100, "n1", 5),
        attempted(2990, "n1", 5),
        key_deleted(3000, 5),
        // Its deadline passed at 2995; the write in flight finished at 3050.
        at(
            3050,
            Event::StoppedActing {
                node: "n1".into(),
                token: 5,
                reason: "deadline_passed".into(),
                lost_at_us: Some(2_995_000),
            },
        ),
        leader(3100, "n2", 6),
    ]);
    assert!(v.is_empty(), "{v:?}");
    assert_eq!(s.outcome, Outcome::ProtocolSafe);
}
