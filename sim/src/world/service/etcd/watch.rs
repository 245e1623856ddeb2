//! Watches, served by the member a client talks to from its applied store, as etcd
//! serves them: every event of a watched range from a start revision on, in revision
//! order, once each, puts and deletes alike (a lease's expiry deletes its keys, and each
//! is an event).
//!
//! **History.** etcd keeps every revision until a compaction; the simulation keeps the
//! last `HISTORY_EVENTS` events (whole revisions), and answers a watch that starts
//! before them as etcd answers a compacted start revision: canceled, with the oldest
//! revision it still has as the compact revision.
//!
//! **Cost when nobody watches.** The history is off until the first etcd v3 request
//! (only the `baton-etcd-client` crate sends one, and it sends one before any of its
//! watches): until then every write checks one `Option` and records nothing, so Baton's
//! own protocols and their benchmark pay nothing for it. Writes before that request are
//! not in the history: a watch that starts before it is answered as compacted.

use super::v3::{kv_of, to_store};
use super::watch_messages::{WatchBatch, WatchEv, WatchFound, WatchPoll, WatchSpec};
use super::{Service, Store};
use crate::world::clock::NodeClock;
use crate::world::service::etcd::v3_messages::V3Header;
use baton_protocols::{sleep_local, Clock, KeyValue};
use std::collections::VecDeque;
use std::time::Duration;

/// How many events the history keeps.
pub const HISTORY_EVENTS: usize = 10_000;

/// One event as the store recorded it.
struct Recorded {
    delete: bool,
    /// The key after the event (for a delete: its key and the deleting revision).
    kv: KeyValue,
    prev: Option<KeyValue>,
}

/// The events of the last revisions, oldest first.
pub(crate) struct History {
    /// The oldest revision whose events are all kept.
    first_rev: i64,
    events: VecDeque<Recorded>,
}

impl History {
    /// A history that starts after revision `now` (at 1 when nothing was ever written:
    /// then it misses nothing).
    pub(crate) fn new(now: i64) -> Self {
        History {
            first_rev: if now <= 1 { 1 } else { now + 1 },
            events: VecDeque::new(),
        }
    }

    /// Records a put of `kv` (its mod revision is the put's), over `prev`.
    pub(crate) fn put(&mut self, kv: &KeyValue, prev: Option<&KeyValue>) {
        self.push(Recorded {
            delete: false,
            kv: kv.clone(),
            prev: prev.cloned(),
        });
    }

    /// Records the delete of `gone` at revision `rev`.
    pub(crate) fn delete(&mut self, gone: &KeyValue, rev: i64) {
        let kv = KeyValue {
            key: gone.key.clone(),
            value: String::new(),
            create_revision: 0,
            mod_revision: rev,
            version: 0,
            lease: 0,
        };
        self.push(Recorded {
            delete: true,
            kv,
            prev: Some(gone.clone()),
        });
    }

    fn push(&mut self, r: Recorded) {
        self.events.push_back(r);
        if self.events.len() > HISTORY_EVENTS {
            // Drop the oldest revision whole: a watch sees a revision all or nothing.
            let oldest = self.events.front().map_or(0, |e| e.kv.mod_revision);
            while self
                .events
                .front()
                .is_some_and(|e| e.kv.mod_revision == oldest)
            {
                self.events.pop_front();
            }
            self.first_rev = oldest + 1;
        }
    }

    /// What a watch of `spec` from revision `from` finds.
    fn find(&self, spec: &Range, from: i64, ask: &WatchSpec) -> WatchFound {
        if from == 0 {
            return WatchFound::Events(vec![]);
        }
        if from < self.first_rev {
            return WatchFound::Compacted(self.first_rev);
        }
        let start = self.events.partition_point(|e| e.kv.mod_revision < from);
        let events = self
            .events
            .range(start..)
            .filter(|e| spec.holds(&e.kv.key))
            .filter(|e| !(e.delete && ask.no_delete || !e.delete && ask.no_put))
            .map(|e| WatchEv {
                delete: e.delete,
                kv: kv_of(&e.kv, true),
                prev_kv: e
                    .prev
                    .as_ref()
                    .filter(|_| ask.prev_kv)
                    .map(|p| kv_of(p, true)),
            })
            .collect();
        WatchFound::Events(events)
    }
}

/// A watched range in the store's key form.
struct Range {
    start: String,
    /// `None`: the one key; `Some(None)`: every key from `start`; else the end.
    end: Option<Option<String>>,
}

impl Range {
    fn of(spec: &WatchSpec) -> Range {
        Range {
            start: to_store(&spec.key),
            end: match spec.range_end.as_slice() {
                [] => None,
                [0] => Some(None),
                e => Some(Some(to_store(e))),
            },
        }
    }

    fn holds(&self, key: &str) -> bool {
        match &self.end {
            None => key == self.start,
            Some(None) => key >= self.start.as_str(),
            Some(Some(end)) => key >= self.start.as_str() && key < end.as_str(),
        }
    }
}

impl Store {
    /// Turns the history on (the first v3 request does).
    pub(crate) fn watch_history_on(&mut self) {
        if self.history.is_none() {
            self.history = Some(Box::new(History::new(self.revision)));
        }
    }
}

impl Service {
    /// Turns the history on (see the module's docs).
    pub(crate) fn watch_history_on(&self) {
        self.store.lock().unwrap().watch_history_on();
    }

    /// Answers a watch stream's poll on a member whose clock is `clock`: at once if a
    /// watch has events or was compacted away, else when one does or `wait_ms` (on the
    /// member's clock) runs out. The header's term and member are `head`'s.
    pub(crate) async fn watch_poll(
        &self,
        clock: &NodeClock,
        poll: WatchPoll,
        head: (u64, u64),
    ) -> WatchBatch {
        let ranges: Vec<Range> = poll.watches.iter().map(|w| Range::of(&w.spec)).collect();
        let deadline = clock.now_us() + poll.wait_ms as i64 * 1000;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let (revision, found) = {
                let mut st = self.store.lock().unwrap();
                st.watch_history_on();
                let h = st.history.as_ref().expect("turned on above");
                let found: Vec<(i64, WatchFound)> = poll
                    .watches
                    .iter()
                    .zip(&ranges)
                    .map(|(w, r)| (w.id, h.find(r, w.from, &w.spec)))
                    .collect();
                (st.revision, found)
            };
            let any = found.iter().any(|(_, f)| match f {
                WatchFound::Events(e) => !e.is_empty(),
                WatchFound::Compacted(_) => true,
            });
            let now = clock.now_us();
            if any || now >= deadline {
                let header = V3Header {
                    revision,
                    raft_term: head.0,
                    member_id: head.1,
                };
                return WatchBatch { header, found };
            }
            let left = Duration::from_micros((deadline - now) as u64);
            tokio::select! {
                // Biased, as every select in the world: tokio's own pick is not seeded.
                biased;
                _ = notified => {}
                _ = sleep_local(clock, left) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{History, HISTORY_EVENTS};
    use baton_protocols::KeyValue;

    fn kv(key: &str, rev: i64) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: "v".into(),
            create_revision: rev,
            mod_revision: rev,
            version: 1,
            lease: 0,
        }
    }

    /// Methodology: fill the history past its bound with one event per revision, plus a
    /// revision of two events at the edge; the oldest revisions go whole, and the first
    /// revision kept is the one a compacted watch is told to start from.
    #[test]
    fn the_history_drops_whole_old_revisions() {
        let mut h = History::new(1);
        h.put(&kv("a", 2), None);
        h.put(&kv("b", 2), None);
        for rev in 3..(HISTORY_EVENTS as i64 + 2) {
            h.put(&kv("a", rev), None);
        }
        assert_eq!(h.first_rev, 3);
        assert_eq!(h.events.front().map(|e| e.kv.mod_revision), Some(3));
        assert_eq!(History::new(1).first_rev, 1);
        assert_eq!(History::new(7).first_rev, 8);
    }
}
