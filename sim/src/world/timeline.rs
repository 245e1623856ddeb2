//! The recorder of a simulated run's timeline: every simulated component appends
//! [`Event`]s to one [`Timeline`], stamped with madsim's global simulated time.
//!
//! The event types themselves live in the model crate ([`baton_model::timeline`]), which
//! the real-network mode shares; they are re-exported here.

pub use baton_model::timeline::*;
use std::sync::{Arc, Mutex};

/// The shared recorder every simulated component appends to.
#[derive(Clone)]
pub struct Timeline {
    inner: Arc<Mutex<Recorder>>,
    _alive: Arc<Alive>,
}

struct Recorder {
    /// Every event, when the timeline keeps them (a bare timeline, in tests).
    kept: Option<Vec<Entry>>,
    /// Where a streaming timeline sends them.
    sink: Option<Arc<Mutex<dyn EntrySink>>>,
    /// Faults and role changes, which the driver's triggers look for.
    notable: Vec<Entry>,
    /// Events recorded.
    count: usize,
    /// The highest log index recorded by [`Timeline::record_first_apply`].
    applied_index: Option<u64>,
}

impl Default for Timeline {
    fn default() -> Self {
        Self::with(Some(vec![]), None)
    }
}

/// Counts timelines alive in the process, so a test can prove runs do not leak.
static LIVE_TIMELINES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

struct Alive;

impl Alive {
    /// Counts one more timeline alive.
    fn count() -> Self {
        LIVE_TIMELINES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Alive
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        LIVE_TIMELINES.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Timeline {
    fn with(kept: Option<Vec<Entry>>, sink: Option<Arc<Mutex<dyn EntrySink>>>) -> Self {
        Timeline {
            inner: Arc::new(Mutex::new(Recorder {
                kept,
                sink,
                notable: vec![],
                count: 0,
                applied_index: None,
            })),
            _alive: Arc::new(Alive::count()),
        }
    }

    /// An empty timeline that keeps every event in memory ([`Timeline::entries`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// A timeline that hands every event to `sink` as it is recorded and keeps only the
    /// few the driver's triggers need.
    pub fn streaming(sink: Arc<Mutex<dyn EntrySink>>) -> Self {
        Self::with(None, Some(sink))
    }

    /// How many timelines (each a run's, shared by all its processes) are alive in this
    /// process. A finished run must leave none behind.
    pub fn live_count() -> usize {
        LIVE_TIMELINES.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Records `event` at the current simulated time.
    pub fn record(&self, event: Event) {
        let at_us = crate::world::clock::global_now_us();
        let entry = Entry { at_us, event };
        let mut r = self.inner.lock().unwrap();
        r.count += 1;
        if let Some(sink) = &r.sink {
            sink.lock().unwrap().entry(&entry);
        }
        let notable = matches!(
            entry.event,
            Event::RoleChanged { .. }
                | Event::FaultApplied { .. }
                | Event::FaultHealed { .. }
                | Event::FaultSkipped { .. }
        );
        if notable {
            r.notable.push(entry.clone());
        }
        if let Some(kept) = &mut r.kept {
            kept.push(entry);
        }
    }

    /// Records `event` for log position `index` unless an entry for it (or a later one)
    /// was recorded already: every node applies every entry, and the first application
    /// is when it took effect. Applications happen in log order on each node, so the
    /// first applications of successive entries come in log order too.
    pub fn record_first_apply(&self, index: u64, event: Event) {
        {
            let mut r = self.inner.lock().unwrap();
            if r.applied_index.is_some_and(|h| index <= h) {
                return;
            }
            r.applied_index = Some(index);
        }
        self.record(event);
    }

    /// A copy of every entry so far, in order (empty for a streaming timeline, which
    /// keeps none).
    pub fn entries(&self) -> Vec<Entry> {
        self.inner.lock().unwrap().kept.clone().unwrap_or_default()
    }

    /// True if a fault or role-change event at or after `since_us` satisfies `pred`
    /// (those are the events a timeline always keeps).
    pub fn any_since(&self, since_us: i64, pred: impl Fn(&Event) -> bool) -> bool {
        let r = self.inner.lock().unwrap();
        let start = r.notable.partition_point(|e| e.at_us < since_us);
        r.notable[start..].iter().any(|e| pred(&e.event))
    }

    /// The number of entries so far.
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap().count
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
