//! Fencing: no write with a stale token takes effect.
//!
//! Every accepted write whose token is below the highest token accepted before it is a
//! [`Property::StaleTokenAccepted`], one per write (the incident view, one per burst,
//! is [`super::double_leader`]). The highest token is recomputed from accepted writes.
//!
//! Rejections are the fence doing its job: each `WriteRejected` is gathered into
//! `fencing.rejections` so a report shows the trap was reached and held.

use super::{accepted_writes, us_to_ms, Accepted, CheckInput, Property, Violation};
use crate::timeline::{Entry, Event};
use crate::NodeId;
use serde::Serialize;

/// A write the fenced resource rejected, as written in `fencing.rejections`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rejection {
    /// When.
    pub at_ms: f64,
    /// The writer.
    pub node: NodeId,
    /// The token it carried.
    pub token: u64,
    /// The resource's highest accepted token at the time.
    pub max_token: u64,
}

/// Appends one violation per stale accepted write; returns their count and every
/// rejection, in timeline order.
pub fn check(input: &CheckInput, out: &mut Vec<Violation>) -> (u64, Vec<Rejection>) {
    let mut t = StaleToken::default();
    for e in input.entries {
        t.entry(e);
    }
    for w in accepted_writes(input.entries) {
        t.write(&w);
    }
    t.finish(out)
}

/// Stale accepts and rejections, read one event and one accepted write at a time.
#[derive(Default)]
pub(crate) struct StaleToken {
    stale: u64,
    max_before: Option<u64>,
    rejections: Vec<Rejection>,
    violations: Vec<Violation>,
}

impl StaleToken {
    /// Reads the next event (for rejections).
    pub fn entry(&mut self, e: &Entry) {
        if let Event::WriteRejected {
            node,
            token,
            max_token,
            ..
        } = &e.event
        {
            self.rejections.push(Rejection {
                at_ms: e.at_ms(),
                node: node.clone(),
                token: *token,
                max_token: *max_token,
            });
        }
    }

    /// Reads the next accepted write.
    pub fn write(&mut self, w: &Accepted) {
        if let Some(max) = self.max_before.filter(|&m| w.token < m) {
            self.stale += 1;
            self.violations.push(Violation {
                property: Property::StaleTokenAccepted,
                at_ms: us_to_ms(w.at_us),
                detail: format!(
                    "write from {} with token {} accepted after token {}",
                    w.node, w.token, max
                ),
            });
        }
        self.max_before = Some(self.max_before.map_or(w.token, |m| m.max(w.token)));
    }

    /// Appends the violations; returns the stale accepts and the rejections.
    pub fn finish(self, out: &mut Vec<Violation>) -> (u64, Vec<Rejection>) {
        out.extend(self.violations);
        (self.stale, self.rejections)
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: hand-built timelines. The canary accepts two stale writes (one
    //! violation each); the quiet case has the same writes rejected, which must show up
    //! as rejections and not as violations.
    use super::super::testing::*;
    use super::*;

    #[test]
    fn every_stale_accept_fires() {
        let r = resolved();
        let entries = vec![
            tick(100, "n1", 1),
            tick(200, "n2", 3),
            tick(300, "n1", 1),
            tick(301, "n3", 2),
            tick(400, "n2", 3),
        ];
        let mut v = vec![];
        let (n, rej) = check(&input(&r, &entries, 1000), &mut v);
        assert_eq!(n, 2);
        assert!(rej.is_empty());
        assert_eq!(
            v[1],
            Violation {
                property: Property::StaleTokenAccepted,
                at_ms: 301.0,
                detail: "write from n3 with token 2 accepted after token 3".into(),
            }
        );
    }

    #[test]
    fn rejections_are_gathered_not_violations() {
        let r = resolved();
        let mut entries = clean_failover();
        entries.push(rejected(5200, "n1", 1, 2));
        entries.push(rejected(5300, "n1", 1, 2));
        let mut v = vec![];
        let (n, rej) = check(&input(&r, &entries, 6000), &mut v);
        assert_eq!(n, 0);
        assert!(v.is_empty());
        assert_eq!(
            rej,
            vec![
                Rejection {
                    at_ms: 5200.0,
                    node: "n1".into(),
                    token: 1,
                    max_token: 2
                },
                Rejection {
                    at_ms: 5300.0,
                    node: "n1".into(),
                    token: 1,
                    max_token: 2
                },
            ]
        );
    }
}
