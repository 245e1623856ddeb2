//! What a watch stream yields: `WatchResponse`, `Event` and `EventType`, with
//! etcd-client 0.21's accessors.

use super::key_value::{KeyValue, ResponseHeader};
use baton_sim::world::service::etcd::v3_messages::V3Header;
use baton_sim::world::service::etcd::watch_messages::WatchEv;

/// The kind of a watch event (etcd's `mvccpb.Event.EventType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
pub enum EventType {
    /// A put: the key holds new data.
    Put = 0,
    /// A delete: the key is gone.
    Delete = 1,
}

impl EventType {
    /// The name in etcd's protobuf (`PUT`, `DELETE`).
    pub fn as_str_name(&self) -> &'static str {
        match self {
            EventType::Put => "PUT",
            EventType::Delete => "DELETE",
        }
    }

    /// The value of a protobuf name, if it is one.
    pub fn from_str_name(value: &str) -> Option<Self> {
        match value {
            "PUT" => Some(EventType::Put),
            "DELETE" => Some(EventType::Delete),
            _ => None,
        }
    }
}

/// Watching event.
#[derive(Debug, Clone)]
pub struct Event {
    event_type: EventType,
    kv: KeyValue,
    prev_kv: Option<KeyValue>,
}

impl Event {
    pub(crate) fn new(e: WatchEv) -> Self {
        Event {
            event_type: if e.delete {
                EventType::Delete
            } else {
                EventType::Put
            },
            kv: KeyValue(e.kv),
            prev_kv: e.prev_kv.map(KeyValue),
        }
    }

    /// The kind of event. If type is a `Put`, it indicates new data has been stored to
    /// the key. If type is a `Delete`, it indicates the key was deleted.
    pub fn event_type(&self) -> EventType {
        self.event_type
    }

    /// The KeyValue for the event. A `Put` event contains current kv pair. A `Put`
    /// event with `kv.version()==1` indicates the creation of a key. A `Delete` event
    /// contains the deleted key with its modification revision set to the revision of
    /// deletion.
    pub fn kv(&self) -> Option<&KeyValue> {
        Some(&self.kv)
    }

    /// The key-value pair before the event happens (when the watch asked for it).
    pub fn prev_kv(&self) -> Option<&KeyValue> {
        self.prev_kv.as_ref()
    }
}

/// Response for `Watch` operation.
#[derive(Debug, Clone)]
pub struct WatchResponse {
    pub(crate) header: ResponseHeader,
    pub(crate) watch_id: i64,
    pub(crate) created: bool,
    pub(crate) canceled: bool,
    pub(crate) compact_revision: i64,
    pub(crate) cancel_reason: String,
    pub(crate) events: Vec<Event>,
}

impl WatchResponse {
    /// A response of watch `watch_id` under `header`, with nothing set.
    pub(crate) fn of(header: V3Header, watch_id: i64) -> Self {
        WatchResponse {
            header: ResponseHeader(header),
            watch_id,
            created: false,
            canceled: false,
            compact_revision: 0,
            cancel_reason: String::new(),
            events: vec![],
        }
    }

    /// Watch response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// Takes the header out of the response (the simulation's header is a copy).
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        Some(self.header)
    }

    /// The ID of the watcher that corresponds to the response (-1 for a progress
    /// report asked for with `request_progress`).
    pub const fn watch_id(&self) -> i64 {
        self.watch_id
    }

    /// Set to true if the response is for a create watch request.
    pub const fn created(&self) -> bool {
        self.created
    }

    /// Set to true if the response is for a cancel watch request or if the start
    /// revision has already been compacted. No further events will be sent to the
    /// canceled watcher.
    pub const fn canceled(&self) -> bool {
        self.canceled
    }

    /// Set to the minimum revision a watcher may start from when it tried to watch at a
    /// compacted one.
    pub const fn compact_revision(&self) -> i64 {
        self.compact_revision
    }

    /// Indicates the reason for canceling the watcher.
    pub fn cancel_reason(&self) -> &str {
        &self.cancel_reason
    }

    /// Events happened on the watched keys.
    pub fn events(&self) -> &[Event] {
        &self.events
    }
}
