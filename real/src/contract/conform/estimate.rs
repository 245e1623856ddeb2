//! How long a `conform` run will take, said before it starts (its first line) and in
//! `--help`: each trial's scenario duration plus a start/stop overhead per trial, summed
//! over the experiments and trials asked for, the TTL sweep's (one per TTL, each its
//! noise, the kill and 1.5 TTL + 5 s) included: the run's wall time one trial at a
//! time, or with `--jobs N` the time N slots take to run them in order ([`with_jobs`]).

use crate::contract::backends::ContractBackend;

/// The wall time a trial takes beyond its scenario's duration, on backend `b`: starting
/// the backend, the resource, the nodes and the load client, waiting for the first
/// leader, then stopping them all, checking the timeline and writing the report.
///
/// Measured on a 2-core machine shared with a build, for Baton's own node
/// (`baton-real contract-node`): on etcd, from the committed
/// reports/conformance/baton-etcd/conformance.json (30 trials; each trial's `wall_ms`
/// minus its scenario's `duration_ms` averages 1.5 s, 0.9 to 2.6 s) and from a `--quick`
/// run with the 9-node churn (`/usr/bin/time` of the whole run minus the scenarios'
/// durations, over its 10 trials); on Redis, from a `--quick` run the same way. ZooKeeper
/// (a JVM to start) and PostgreSQL (`initdb` per trial) were not measured: their figure
/// is a guess on the high side, so the estimate errs long. With no backend nothing is
/// started but the nodes: etcd's figure, not measured apart.
pub fn overhead_ms(b: ContractBackend) -> u64 {
    match b {
        ContractBackend::Etcd => 2_000,
        ContractBackend::Redis => 2_000,
        ContractBackend::Zookeeper => 5_000,
        ContractBackend::Postgres => 5_000,
        ContractBackend::None => 2_000,
    }
}

/// The estimate of a run whose trials' scenario durations are `durations_ms`, on `b`.
pub fn total_ms(durations_ms: &[u64], b: ContractBackend) -> u64 {
    durations_ms.iter().map(|d| d + overhead_ms(b)).sum()
}

/// The estimate of one trial, `spec`, on `b`: its scenario's duration and the overhead.
pub fn trial_ms(spec: &crate::trial::TrialSpec, b: ContractBackend) -> u64 {
    spec.plan.resolved.scenario.duration_ms + overhead_ms(b)
}

/// The estimate of the same run with `jobs` trials at a time, started in order, the
/// next as soon as one ends (as the run does): the time the last one ends.
pub fn with_jobs(durations_ms: &[u64], b: ContractBackend, jobs: u64) -> u64 {
    let mut slots = vec![0u64; jobs.max(1) as usize];
    for d in durations_ms {
        let first_free = slots.iter_mut().min().expect("at least one slot");
        *first_free += d + overhead_ms(b);
    }
    slots.into_iter().max().unwrap_or(0)
}

/// `ms` as the first line and `--help` say it: whole minutes from 2 minutes up (rounded
/// up, an estimate should not promise too little), seconds below.
pub fn say(ms: u64) -> String {
    if ms >= 120_000 {
        format!("about {} minutes", ms.div_ceil(60_000))
    } else {
        format!("about {} seconds", ms.div_ceil(1000))
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: the estimate of a hand-made list of durations, and its wording at the
    //! boundary between seconds and minutes.
    use super::*;

    #[test]
    fn the_estimate_adds_the_overhead_to_every_trial_and_rounds_up() {
        let etcd = overhead_ms(ContractBackend::Etcd);
        assert_eq!(
            total_ms(&[16_000, 12_000], ContractBackend::Etcd),
            28_000 + 2 * etcd
        );
        assert_eq!(
            with_jobs(&[16_000, 12_000, 10_000], ContractBackend::Etcd, 2),
            12_000 + 10_000 + 2 * etcd,
            "16 s in one slot, 12 s then 10 s in the other"
        );
        assert_eq!(
            with_jobs(&[16_000, 12_000], ContractBackend::Etcd, 1),
            total_ms(&[16_000, 12_000], ContractBackend::Etcd)
        );
        assert_eq!(say(119_999), "about 120 seconds");
        assert_eq!(say(120_000), "about 2 minutes");
        assert_eq!(say(120_001), "about 3 minutes");
    }
}
