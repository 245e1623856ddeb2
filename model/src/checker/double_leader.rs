//! Double-leader-acting incidents: two leaderships' writes both took effect, interleaved.
//!
//! Leaderships are ordered by token, then by when each first had a write accepted (see
//! `Succession` in the checker module). An accepted write from a leadership older than one that has
//! already written means an old leader acted after a newer one. Two ways it happens:
//!
//! - **Stale token.** The write's token is below one already accepted: a paused or
//!   partitioned leader woke and its write was let through (fencing off).
//! - **Shared token.** The write's token equals the newer leadership's (a protocol with
//!   no token, such as redis-naive, or a broken one): the resource cannot tell the two
//!   leaders apart. A clean handoff under a shared token is no incident; only writes
//!   that interleave are.
//!
//! A woken leader usually sends a burst, so each maximal run of consecutive stale
//! accepted writes (consecutive among accepted writes) from one leadership is ONE
//! incident: the count says how many times the trap sprang, not how many writes went
//! through (that is [`super::stale_token`]). Each is one [`Property::DoubleLeaderActing`].
//!
//! The order is recomputed from the accepted writes rather than read from the resource's
//! `max_token`, so the checker does not trust the code it checks.

use super::{
    accepted_writes, us_to_ms, Accepted, CheckInput, LeadershipKey, Property, Step, Succession,
    Violation,
};

/// Appends one violation per incident and returns the number of incidents.
pub fn check(input: &CheckInput, out: &mut Vec<Violation>) -> u64 {
    let mut d = DoubleLeader::default();
    for w in accepted_writes(input.entries) {
        d.write(&w);
    }
    d.finish(out)
}

/// Incidents, read one accepted write at a time.
#[derive(Default)]
pub(crate) struct DoubleLeader {
    incidents: u64,
    succession: Succession,
    stale_run: Option<LeadershipKey>,
    violations: Vec<Violation>,
}

impl DoubleLeader {
    /// Reads the next accepted write.
    pub fn write(&mut self, w: &Accepted) {
        match self.succession.step(w) {
            Step::Stale { newest } => {
                if self.stale_run.as_ref() != Some(&w.leadership) {
                    self.stale_run = Some(w.leadership.clone());
                    self.incidents += 1;
                    let detail = if w.token < newest.token {
                        format!(
                            "{} acted with stale token {} after token {} was accepted",
                            w.node, w.token, newest.token
                        )
                    } else {
                        format!(
                            "{} acted under token {} after {} took over under the same token: the token cannot tell them apart",
                            w.node, w.token, newest.node
                        )
                    };
                    self.violations.push(Violation {
                        property: Property::DoubleLeaderActing,
                        at_ms: us_to_ms(w.at_us),
                        detail,
                    });
                }
            }
            Step::Current | Step::Newer { .. } => self.stale_run = None,
        }
    }

    /// Appends the violations; returns the number of incidents.
    pub fn finish(self, out: &mut Vec<Violation>) -> u64 {
        out.extend(self.violations);
        self.incidents
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built timelines. Canaries: a stale burst interrupted by the new
    //! leader (two incidents), and two nodes sharing a token. Quiet: a clean failover, and
    //! fenced stale writes (rejected, so no effect).
    use super::super::testing::*;
    use super::*;

    fn run(entries: &[crate::timeline::Entry]) -> (u64, Vec<Violation>) {
        let r = resolved();
        let mut v = vec![];
        let n = check(&input(&r, entries, 10_000), &mut v);
        (n, v)
    }

    #[test]
    fn stale_bursts_count_once_each() {
        let entries = vec![
            tick(100, "n1", 1),
            tick(200, "n2", 2),
            tick(300, "n1", 1),
            tick(301, "n1", 1),
            tick(302, "n1", 1),
            tick(400, "n2", 2),
            tick(500, "n1", 1),
        ];
        let (n, v) = run(&entries);
        assert_eq!(n, 2);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].at_ms, 300.0);
        assert_eq!(v[1].at_ms, 500.0);
        assert!(v[0].detail.contains("stale token 1 after token 2"));
    }

    #[test]
    fn a_shared_token_interleaving_is_an_incident_a_clean_handoff_is_not() {
        // n2 takes over from n1 under the same token: a clean handoff, nothing wrong yet.
        let handoff = vec![tick(100, "n1", 5), tick(200, "n2", 5), tick(300, "n2", 5)];
        assert_eq!(run(&handoff).0, 0);
        // n1 then writes again under that token: two leaders acted, interleaved.
        let mut interleaved = handoff.clone();
        interleaved.push(tick(400, "n1", 5));
        interleaved.push(tick(450, "n1", 5));
        interleaved.push(tick(500, "n2", 5));
        interleaved.push(tick(600, "n1", 5));
        let (n, v) = run(&interleaved);
        assert_eq!(n, 2, "{v:?}");
        assert!(v[0]
            .detail
            .contains("n1 acted under token 5 after n2 took over under the same token"));
        assert_eq!(v[1].at_ms, 600.0);
    }

    #[test]
    fn the_same_node_winning_twice_under_one_token_is_two_leaderships() {
        // redis-naive: n1 leads, n2 leads, n1 wins again, all under token 0. Each win is
        // its own leadership: n1's second leadership is newer than n2's, no incident.
        let entries = vec![
            leader(100, "n1", 0),
            tick(150, "n1", 0),
            follower(200, "n1"),
            leader(300, "n2", 0),
            tick(350, "n2", 0),
            follower(400, "n2"),
            leader(500, "n1", 0),
            tick(550, "n1", 0),
        ];
        assert_eq!(run(&entries).0, 0);
    }

    #[test]
    fn quiet_for_clean_failover_and_fenced_stale_writes() {
        let mut entries = clean_failover();
        entries.push(rejected(5200, "n1", 1, 2));
        let (n, v) = run(&entries);
        assert_eq!(n, 0);
        assert!(v.is_empty());
    }
}
