//! The job's handoffs (`[work.job]`): work redone, work skipped, work thrown away, and
//! how long the cursor stood still across each change of leader. A record, not a
//! property: the discipline it depends on ("stop the step, then release") is defended by
//! `acted_after_release` in [`failover`](super::failover).
//!
//! - A step is **redone** when a segment's work finishes a second time (its first
//!   checkpoint was lost: fenced, timed out, or its leader died before writing it).
//! - Segments are **skipped** when an accepted checkpoint moves the cursor past segments
//!   nobody checkpointed. The resource only moves the cursor to the checkpointed segment
//!   plus one, so this stays 0 unless something is broken.
//! - An **abandoned** step is work a leader threw away when it stopped leading, or that
//!   died with it when it was killed (timed from the step's start to the kill).
//! - A **handoff** is the first accepted checkpoint of a new leadership: the cursor stood
//!   still from the previous leadership's last accepted checkpoint to it.

use super::{us_to_ms, Accepted};
use crate::timeline::{Entry, Event, WriteOp};
use crate::NodeId;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One change of the leader doing the job.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobHandoff {
    /// The leader whose checkpoint came before.
    pub old_node: NodeId,
    /// Its token.
    pub old_token: u64,
    /// The leader checkpointing now.
    pub new_node: NodeId,
    /// Its token.
    pub new_token: u64,
    /// When the new leader's first checkpoint was accepted.
    pub at_ms: f64,
    /// The cursor stood still this long: the old leadership's last accepted checkpoint to
    /// the new one's first.
    pub cursor_still_ms: f64,
    /// The work the old leader threw away when it stopped (its abandoned step).
    pub abandoned_ms: u64,
}

/// `job` in report.json.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct JobSummary {
    /// Steps whose work finished.
    pub steps_done: u64,
    /// Of those, steps on a segment whose work had finished before.
    pub steps_redone: u64,
    /// Segments the cursor moved past without a checkpoint.
    pub segments_skipped: u64,
    /// Steps given up half-way.
    pub steps_abandoned: u64,
    /// The work in them, summed.
    pub abandoned_ms: u64,
    /// The cursor at the end: the first segment not checkpointed.
    pub cursor: u64,
    /// Each change of the leader doing the job.
    pub handoffs: Vec<JobHandoff>,
}

/// The job's record, read one event and one accepted write at a time.
#[derive(Default)]
pub(crate) struct Job {
    done: BTreeSet<u64>,
    summary: JobSummary,
    /// Abandoned work by leadership (node, token).
    abandoned: BTreeMap<(NodeId, u64), u64>,
    /// The last accepted checkpoint: (node, token, time).
    last: Option<(NodeId, u64, i64)>,
    /// Steps in progress by node: (token, start µs).
    running: BTreeMap<NodeId, (u64, i64)>,
}

impl Job {
    /// Reads the next event.
    pub fn entry(&mut self, e: &Entry) {
        match &e.event {
            Event::JobStepStarted { node, token, .. } => {
                self.running.insert(node.clone(), (*token, e.at_us));
            }
            // A killed leader's step dies with it: its work is thrown away as surely as
            // an abandoned one's.
            Event::NodeKilled { node } => {
                if let Some((token, start)) = self.running.remove(node) {
                    let ms = ((e.at_us - start).max(0) / 1000) as u64;
                    self.summary.steps_abandoned += 1;
                    self.summary.abandoned_ms += ms;
                    *self.abandoned.entry((node.clone(), token)).or_default() += ms;
                }
            }
            Event::JobStepDone { node, segment, .. } => {
                self.running.remove(node);
                self.summary.steps_done += 1;
                if !self.done.insert(*segment) {
                    self.summary.steps_redone += 1;
                }
            }
            Event::JobStepAbandoned {
                node,
                token,
                elapsed_ms,
                ..
            } => {
                self.running.remove(node);
                self.summary.steps_abandoned += 1;
                self.summary.abandoned_ms += elapsed_ms;
                *self.abandoned.entry((node.clone(), *token)).or_default() += elapsed_ms;
            }
            _ => {}
        }
    }

    /// Reads the next accepted write.
    pub fn write(&mut self, w: &Accepted) {
        let WriteOp::Checkpoint { segment } = w.op else {
            return;
        };
        if segment > self.summary.cursor {
            self.summary.segments_skipped += segment - self.summary.cursor;
        }
        self.summary.cursor = segment + 1;
        if let Some((node, token, at_us)) = &self.last {
            if *node != *w.node || *token != w.token {
                self.summary.handoffs.push(JobHandoff {
                    old_node: node.clone(),
                    old_token: *token,
                    new_node: NodeId::from(&*w.node),
                    new_token: w.token,
                    at_ms: us_to_ms(w.at_us),
                    cursor_still_ms: us_to_ms(w.at_us - at_us),
                    abandoned_ms: self
                        .abandoned
                        .get(&(node.clone(), *token))
                        .copied()
                        .unwrap_or(0),
                });
            }
        }
        self.last = Some((NodeId::from(&*w.node), w.token, w.at_us));
    }

    /// The job's record.
    pub fn finish(self) -> JobSummary {
        self.summary
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: a hand-built timeline with a handoff in it: n1 checkpoints segments
    //! 0 and 1, abandons 2 after 700 ms when it steps down, n2 resumes at 2 and
    //! checkpoints it; n1's segment 1 is done a second time by n2 after a lost
    //! checkpoint. Canary: a checkpoint that jumps the cursor is counted as skipped.
    use super::super::testing::*;
    use super::*;
    use crate::checker::check;

    fn step(at_ms: i64, node: &str, token: u64, segment: u64, done: bool) -> Entry {
        at(
            at_ms,
            if done {
                Event::JobStepDone {
                    node: node.into(),
                    token,
                    segment,
                    elapsed_ms: 500,
                }
            } else {
                Event::JobStepAbandoned {
                    node: node.into(),
                    token,
                    segment,
                    elapsed_ms: 700,
                }
            },
        )
    }

    fn checkpoint(at_ms: i64, node: &str, token: u64, segment: u64) -> Entry {
        accepted(at_ms, node, token, token, WriteOp::Checkpoint { segment })
    }

    fn handoff() -> Vec<Entry> {
        vec![
            leader(0, "n1", 1),
            step(500, "n1", 1, 0, true),
            checkpoint(505, "n1", 1, 0),
            step(1000, "n1", 1, 1, true),
            checkpoint(1005, "n1", 1, 1),
            step(1700, "n1", 1, 2, false),
            stopped(1700, "n1", 1, "resigned"),
            leader(1720, "n2", 2),
            step(2300, "n2", 2, 2, true),
            checkpoint(2305, "n2", 2, 2),
        ]
    }

    #[test]
    fn a_handoff_is_measured() {
        let r = resolved();
        let j = check(&input(&r, &handoff(), 5_000)).job;
        assert_eq!(
            (
                j.steps_done,
                j.steps_redone,
                j.segments_skipped,
                j.steps_abandoned,
                j.abandoned_ms,
                j.cursor
            ),
            (3, 0, 0, 1, 700, 3)
        );
        assert_eq!(
            j.handoffs,
            vec![JobHandoff {
                old_node: "n1".into(),
                old_token: 1,
                new_node: "n2".into(),
                new_token: 2,
                at_ms: 2305.0,
                cursor_still_ms: 1300.0,
                abandoned_ms: 700,
            }]
        );
    }

    #[test]
    fn a_killed_leaders_step_is_thrown_away() {
        let r = resolved();
        let e = vec![
            leader(0, "n1", 1),
            at(
                100,
                Event::JobStepStarted {
                    node: "n1".into(),
                    token: 1,
                    segment: 0,
                },
            ),
            killed(900, "n1"),
        ];
        let j = check(&input(&r, &e, 5_000)).job;
        assert_eq!((j.steps_abandoned, j.abandoned_ms), (1, 800));
    }

    #[test]
    fn redone_and_skipped_work_is_counted() {
        let r = resolved();
        let mut e = handoff();
        // n2 also redoes segment 1, and a broken checkpoint jumps from 3 to 6.
        e.push(step(2800, "n2", 2, 1, true));
        e.push(checkpoint(3000, "n2", 2, 6));
        let j = check(&input(&r, &e, 5_000)).job;
        assert_eq!((j.steps_redone, j.segments_skipped, j.cursor), (1, 3, 7));
    }
}
