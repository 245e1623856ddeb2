//! Every checker, run together over one run's events: [`Checks`] as the run records
//! them, or [`check`] over a timeline held in memory.

use super::{
    belief, double_leader, effect, election_safety, failover, false_failover, faults, job,
    lease_service, lease_ttl, liveness, load, node_contract, protocol_safety, sequence, shards,
    sometimes, stale_read, stale_token, swim, transfer, us_to_ms, wins, Accepted, AcceptedTracker,
    CheckInput, ClientStats, Findings, Flights, Violation,
};
use crate::scenario::Resolved;
use crate::timeline::Entry;

/// Runs every checker over one finished timeline (in memory).
pub fn check(input: &CheckInput) -> Findings {
    let mut checks = Checks::new(input.resolved);
    for e in input.entries {
        checks.observe(e);
    }
    checks.finish(input.end_us, &input.client)
}

/// Every checker, fed one event at a time as the run records them, so that a run never
/// holds its timeline in memory: what each checker keeps grows with leaderships, faults
/// and violations, not with writes. (The exceptions: with the sequencer in a Raft log
/// and reads, the stale-read check keeps one entry per committed batch; and the writes
/// sent that never reached the resource, dropped by a cut link, stay in flight.)
pub struct Checks {
    resolved: Resolved,
    next_idx: usize,
    accepted: AcceptedTracker,
    flights: Flights,
    belief: belief::Belief,
    effect: effect::Effect,
    double_leader: double_leader::DoubleLeader,
    stale_token: stale_token::StaleToken,
    sequence: sequence::Sequence,
    liveness: liveness::Liveness,
    sometimes: sometimes::Sometimes,
    failover: failover::Failover,
    false_failovers: false_failover::FalseFailovers,
    job: job::Job,
    election_safety: election_safety::ElectionSafety,
    stale_read: stale_read::StaleRead,
    load: load::Load,
    wins: wins::Wins,
    faults: faults::Faults,
    lease_ttl: lease_ttl::LeaseTtl,
    lease_service: lease_service::LeaseService,
    protocol_safety: protocol_safety::ProtocolSafety,
    transfer: transfer::Transfer,
    swim: swim::Swim,
    /// Per-partition checkers, for a sharded fleet.
    shards: Option<Box<shards::Shards>>,
    node_contract: node_contract::NodeContract,
}

impl Checks {
    /// Checkers for a run of `resolved`.
    pub fn new(resolved: &Resolved) -> Self {
        Checks {
            resolved: resolved.clone(),
            next_idx: 0,
            accepted: AcceptedTracker::default(),
            flights: Flights::new(resolved),
            belief: belief::Belief::default(),
            effect: effect::Effect::default(),
            double_leader: double_leader::DoubleLeader::default(),
            stale_token: stale_token::StaleToken::default(),
            sequence: sequence::Sequence::default(),
            liveness: liveness::Liveness::default(),
            sometimes: sometimes::Sometimes::default(),
            failover: failover::Failover::default(),
            false_failovers: false_failover::FalseFailovers::default(),
            job: job::Job::default(),
            election_safety: election_safety::ElectionSafety::new(
                resolved.protocol.token_is_term(),
            ),
            stale_read: stale_read::StaleRead::default(),
            load: load::Load::default(),
            wins: wins::Wins::new(&resolved.node_names()),
            faults: faults::Faults::default(),
            lease_ttl: lease_ttl::LeaseTtl::default(),
            lease_service: lease_service::LeaseService::default(),
            protocol_safety: protocol_safety::ProtocolSafety::new(resolved),
            transfer: transfer::Transfer::default(),
            swim: swim::Swim::default(),
            shards: (resolved.scenario.partitions > 0)
                .then(|| Box::new(shards::Shards::new(resolved))),
            node_contract: node_contract::NodeContract::default(),
        }
    }

    /// Reads the next event of the run.
    pub fn observe(&mut self, e: &Entry) {
        let idx = self.next_idx;
        self.next_idx += 1;
        if let Some(s) = &mut self.shards {
            s.entry(e);
        }
        self.belief.entry(e);
        self.liveness.entry(e, &self.resolved);
        self.sometimes.entry(e);
        self.failover.entry(idx, e);
        self.false_failovers.entry(e);
        self.job.entry(e);
        self.election_safety.entry(e);
        self.stale_read.entry(e);
        self.load.entry(e);
        self.wins.entry(e);
        self.faults.entry(e);
        self.lease_ttl.entry(e);
        self.lease_service.entry(e);
        self.protocol_safety.entry(e);
        // A write that reached the resource, paired with its send: the old leader acting
        // until then, for the handoff and for its grant.
        if let Some(w) = self.flights.entry(idx, e) {
            self.failover.landed(&w);
            self.protocol_safety.landed(&w);
        }
        self.transfer.entry(e);
        self.swim.entry(e);
        self.node_contract.entry(e);
        self.stale_token.entry(e);
        self.sequence.entry(e);
        for w in self.accepted.entry(idx, e) {
            self.write(&w);
        }
    }

    fn write(&mut self, w: &Accepted) {
        self.effect.write(w);
        self.double_leader.write(w);
        self.stale_token.write(w);
        self.sequence.write(w);
        self.liveness.write(w);
        self.sometimes.write(w);
        self.failover.write(w, &self.resolved);
        self.false_failovers.write(w, &self.resolved);
        self.job.write(w);
        self.transfer.write(w);
    }

    /// Judges the run, which stopped at `end_us`, with what the client saw.
    pub fn finish(mut self, end_us: i64, client: &ClientStats) -> Findings {
        for w in self.accepted.finish() {
            self.write(&w);
        }
        let r = &self.resolved;
        let end_ms = us_to_ms(end_us);
        // Each checker's violations in the order the checkers ran before they streamed,
        // then one stable sort: ties keep each checker's own order.
        let mut violations = vec![];
        let double_leader_acting_incidents = self.double_leader.finish(&mut violations);
        let (stale_accepts, rejections) = self.stale_token.finish(&mut violations);
        let sequence = self.sequence.finish(client, end_ms, &mut violations);
        // A sharded fleet's work, and so its liveness and expectations, are its
        // partitions': the fleet-wide checkers see none of their writes.
        let mut fleet_wide = vec![];
        let sharded = self.shards.is_some();
        let own = if sharded {
            &mut fleet_wide
        } else {
            &mut violations
        };
        let liveness = self.liveness.finish(r, end_us, own);
        let belief = self.belief.finish(end_us);
        let mut sometimes = self.sometimes.finish(r, belief.max, end_ms, own);
        let shards = match self.shards.take() {
            Some(s) => {
                let summary = s.finish(end_us, client, &mut sometimes, &mut violations);
                for s in sometimes.iter().filter(|s| !s.met) {
                    violations.push(Violation::expectation_never_met(end_ms, s.name));
                }
                summary
            }
            None => shards::ShardsSummary::default(),
        };
        let failover = self.failover.finish(&mut violations);
        self.election_safety.finish(&mut violations);
        let reads = self.stale_read.finish(&mut violations);
        let transfer = self.transfer.finish(r, &mut violations);
        let swim = self.swim.finish(r, end_us, &mut violations);
        let mut protocol_safety = self.protocol_safety.finish(end_us, &mut violations);
        self.node_contract.finish(&mut violations);
        violations.sort_by(|a, b| {
            a.at_ms
                .total_cmp(&b.at_ms)
                .then_with(|| a.property.cmp(&b.property))
        });
        protocol_safety.judge(&violations);
        let fault_windows = self.faults.windows(r, end_us);
        let mut findings = Findings {
            violations,
            belief,
            effect: self.effect.finish(),
            double_leader_acting_incidents,
            stale_accepts,
            rejections,
            sequence,
            failover_ms: failover.failover_ms,
            election_latency_ms: failover.election_latency_ms,
            election_latencies_ms: failover.election_latencies_ms,
            election_latencies_by_start: failover.election_latencies_by_start,
            handoff_gaps: failover.handoff_gaps,
            false_failovers: self.false_failovers.finish(r.scenario.duration_ms),
            job: self.job.finish(),
            sometimes,
            liveness,
            reads,
            load: self.load.finish(r, end_us, client, &fault_windows),
            elections: self.wins.finish(),
            faults: self.faults.finish(),
            events: self.next_idx,
            lease_ttl_granted_ms: self.lease_ttl.finish(),
            lease_service: self.lease_service.finish(),
            protocol_safety,
            transfer,
            swim,
            shards,
        };
        if sharded {
            let (fleet, failovers) = (&findings.shards.fleet, &findings.shards.failover_ms);
            let (fleet, failovers) = (fleet.clone(), failovers.clone());
            fleet.fold_into(&mut findings, &failovers);
        }
        findings
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: run every checker together over a clean failover and over the same
    //! run with a stale write accepted (fencing off), and check the merged findings:
    //! quiet and passing for the first, sorted violations from several checkers for
    //! the second.
    use super::super::testing::*;
    use super::super::Property;
    use super::*;
    use crate::timeline::{Event, WriteOp};

    #[test]
    fn a_write_landing_after_its_leader_was_killed_is_no_new_leadership() {
        // n1's last write was in flight when it was killed; it lands just after. It is
        // n1's old leadership acting, not a failover to a new one.
        let r = resolved();
        let mut entries = clean_failover();
        let kill_at = entries
            .iter()
            .position(|e| matches!(e.event, Event::NodeKilled { .. }))
            .unwrap();
        entries.insert(kill_at + 1, tick(1501, "n1", 1));
        let f = check(&input(&r, &entries, 12_000));
        assert_eq!(f.failover_ms.len(), 1, "{:?}", f.failover_ms);
    }

    #[test]
    fn clean_run_passes() {
        let r = resolved();
        let entries = clean_failover();
        // The run goes on long enough after recovery (7.5 s default bound) to show it.
        let f = check(&input(&r, &entries, 12_000));
        assert!(f.passed(), "{:?}", f.violations);
        assert_eq!(f.belief.max, 1);
        assert_eq!(f.effect.max, 1);
        assert_eq!(f.failover_ms, vec![2900.0]);
    }

    #[test]
    fn stale_accept_fails_and_violations_are_sorted() {
        let r = resolved();
        let mut entries = clean_failover();
        // n1 was not killed but paused: it wakes and writes with its old token. (The
        // pause is what makes its belief past the grant the fence's to stop, not a
        // protocol bug: see `protocol_safety`.)
        entries.retain(|e| !matches!(e.event, Event::NodeKilled { .. }));
        let at_kill = entries.iter().position(|e| e.at_us >= 1_500_000).unwrap();
        entries.insert(at_kill, at(1500, Event::NodePaused { node: "n1".into() }));
        entries.push(at(5150, Event::NodeResumed { node: "n1".into() }));
        entries.push(accepted(5200, "n1", 1, 2, WriteOp::Tick { n: 2 }));
        let f = check(&input(&r, &entries, 12_000));
        let props: Vec<Property> = f.violations.iter().map(|v| v.property).collect();
        assert_eq!(
            props,
            vec![
                Property::DoubleLeaderActing,
                Property::NegativeHandoffGap,
                Property::StaleTokenAccepted
            ]
        );
        assert_eq!(f.effect.max, 2);
        assert_eq!(f.belief.max, 2);
        let json = serde_json::to_value(&f).unwrap();
        assert_eq!(json["violations"][0]["property"], "double_leader_acting");
        assert_eq!(json["violations"][0]["at_ms"], 5200.0);
    }
}
