//! The KV options, as etcd-client 0.21 builds them: put, get (ranges, sorts, limits,
//! filters) and delete.

use baton_sim::world::service::etcd::v3_messages::{DeleteReq, PutReq, RangeReq, SortBy};

/// The end of the range of every key prefixed with `key` (etcd-client's `get_prefix`).
pub(crate) fn get_prefix(key: &[u8]) -> Vec<u8> {
    for (i, v) in key.iter().enumerate().rev() {
        if *v < 0xFF {
            let mut end = Vec::from(&key[..=i]);
            end[i] = *v + 1;
            return end;
        }
    }
    // The next prefix does not exist (e.g. 0xffff).
    vec![0]
}

/// etcd-client's key range builder: one key, a range, from a key, a prefix, or all.
#[derive(Debug, Default, Clone)]
pub(crate) struct KeyRange {
    pub(crate) key: Vec<u8>,
    range_end: Vec<u8>,
    pub(crate) prefix: bool,
    pub(crate) from_key: bool,
    pub(crate) all_keys: bool,
}

impl KeyRange {
    /// One key, the empty one (`const`, as etcd-client's `WatchOptions::new` is).
    pub(crate) const fn new() -> Self {
        KeyRange {
            key: Vec::new(),
            range_end: Vec::new(),
            prefix: false,
            from_key: false,
            all_keys: false,
        }
    }

    pub(crate) fn with_range(&mut self, end: Vec<u8>) {
        (self.range_end, self.prefix, self.from_key, self.all_keys) = (end, false, false, false);
    }

    /// `(key, range_end)` as etcd-client builds them.
    pub(crate) fn build(self) -> (Vec<u8>, Vec<u8>) {
        let (key, end) = (self.key, self.range_end);
        if self.all_keys {
            (vec![0], vec![0])
        } else if self.from_key {
            (if key.is_empty() { vec![0] } else { key }, vec![0])
        } else if self.prefix {
            if key.is_empty() {
                (vec![0], vec![0])
            } else {
                let end = get_prefix(&key);
                (key, end)
            }
        } else {
            (key, end)
        }
    }
}

/// Options for `Put` operation.
#[derive(Debug, Default, Clone)]
pub struct PutOptions(pub(crate) PutReq);

impl PutOptions {
    pub(crate) fn with_kv(mut self, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> Self {
        self.0.key = key.into();
        self.0.value = value.into();
        self
    }

    /// Creates a `PutOptions`.
    pub fn new() -> Self {
        PutOptions::default()
    }

    /// Lease is the lease ID to associate with the key in the key-value store. A lease
    /// value of 0 indicates no lease.
    pub fn with_lease(mut self, lease: i64) -> Self {
        self.0.lease = lease;
        self
    }

    /// If prev_kv is set, etcd gets the previous key-value pair before changing it. The
    /// previous key-value pair will be returned in the put response.
    pub fn with_prev_key(mut self) -> Self {
        self.0.prev_kv = true;
        self
    }

    /// If ignore_value is set, etcd updates the key using its current value. Returns an
    /// error if the key does not exist.
    pub fn with_ignore_value(mut self) -> Self {
        self.0.ignore_value = true;
        self
    }

    /// If ignore_lease is set, etcd updates the key using its current lease. Returns an
    /// error if the key does not exist.
    pub fn with_ignore_lease(mut self) -> Self {
        self.0.ignore_lease = true;
        self
    }
}

/// How the keys of a `Get` are sorted: etcd's `SortOrder`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
pub enum SortOrder {
    /// Default, no sorting.
    None = 0,
    /// Lowest target value first.
    Ascend = 1,
    /// Highest target value first.
    Descend = 2,
}

/// Which field of a key a `Get` sorts by: etcd's `SortTarget`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
pub enum SortTarget {
    /// The key.
    Key = 0,
    /// The version.
    Version = 1,
    /// The create revision.
    Create = 2,
    /// The mod revision.
    Mod = 3,
    /// The value.
    Value = 4,
}

/// Options for `Get` operation.
#[derive(Debug, Default, Clone)]
pub struct GetOptions {
    req: RangeReq,
    key_range: KeyRange,
}

impl GetOptions {
    pub(crate) fn with_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.key_range.key = key.into();
        self
    }

    pub(crate) fn build(self) -> RangeReq {
        let (key, range_end) = self.key_range.build();
        RangeReq {
            key,
            range_end,
            ..self.req
        }
    }

    /// Creates a `GetOptions`.
    pub fn new() -> Self {
        GetOptions::default()
    }

    /// Specifies the range of 'Get'. Returns the keys in the range [key, end_key).
    /// `end_key` must be lexicographically greater than start key.
    pub fn with_range(mut self, end_key: impl Into<Vec<u8>>) -> Self {
        self.key_range.with_range(end_key.into());
        self
    }

    /// Gets all keys >= key.
    pub fn with_from_key(mut self) -> Self {
        (
            self.key_range.from_key,
            self.key_range.prefix,
            self.key_range.all_keys,
        ) = (true, false, false);
        self
    }

    /// Gets all keys prefixed with key.
    pub fn with_prefix(mut self) -> Self {
        (
            self.key_range.prefix,
            self.key_range.from_key,
            self.key_range.all_keys,
        ) = (true, false, false);
        self
    }

    /// Gets all keys.
    pub fn with_all_keys(mut self) -> Self {
        (
            self.key_range.all_keys,
            self.key_range.prefix,
            self.key_range.from_key,
        ) = (true, false, false);
        self
    }

    /// Limits the number of keys returned for the request. When limit is set to 0, it is
    /// treated as no limit.
    pub fn with_limit(mut self, limit: i64) -> Self {
        self.req.limit = limit;
        self
    }

    /// Sets the order for returned sorted results.
    pub fn with_sort(mut self, target: SortTarget, order: SortOrder) -> Self {
        // etcd sorts ascending when a target other than the key comes with no order.
        self.req.sort_by = match target {
            SortTarget::Key => SortBy::Key,
            SortTarget::Version => SortBy::Version,
            SortTarget::Create => SortBy::Create,
            SortTarget::Mod => SortBy::Mod,
            SortTarget::Value => SortBy::Value,
        };
        self.req.descend = order == SortOrder::Descend;
        self
    }

    /// Sets the get request to use serializable member-local reads. Accepted; the
    /// simulation serves it as a linearizable read.
    pub fn with_serializable(self) -> Self {
        self
    }

    /// Returns only the keys and not the values.
    pub fn with_keys_only(mut self) -> Self {
        self.req.keys_only = true;
        self
    }

    /// Returns only the count of the keys in the range.
    pub fn with_count_only(mut self) -> Self {
        self.req.count_only = true;
        self
    }

    /// Sets the lower bound for returned key mod revisions.
    pub fn with_min_mod_revision(mut self, revision: i64) -> Self {
        self.req.revision_bounds[0] = revision;
        self
    }

    /// Sets the upper bound for returned key mod revisions.
    pub fn with_max_mod_revision(mut self, revision: i64) -> Self {
        self.req.revision_bounds[1] = revision;
        self
    }

    /// Sets the lower bound for returned key create revisions.
    pub fn with_min_create_revision(mut self, revision: i64) -> Self {
        self.req.revision_bounds[2] = revision;
        self
    }

    /// Sets the upper bound for returned key create revisions.
    pub fn with_max_create_revision(mut self, revision: i64) -> Self {
        self.req.revision_bounds[3] = revision;
        self
    }
}

/// Options for `Delete` operation.
#[derive(Debug, Default, Clone)]
pub struct DeleteOptions {
    prev_kv: bool,
    key_range: KeyRange,
}

impl DeleteOptions {
    pub(crate) fn with_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.key_range.key = key.into();
        self
    }

    pub(crate) fn build(self) -> DeleteReq {
        let (key, range_end) = self.key_range.build();
        DeleteReq {
            key,
            range_end,
            prev_kv: self.prev_kv,
        }
    }

    /// Creates a `DeleteOptions`.
    pub fn new() -> Self {
        DeleteOptions::default()
    }

    /// `end_key` is the key following the last key to delete for the range [key,
    /// end_key).
    pub fn with_range(mut self, end_key: impl Into<Vec<u8>>) -> Self {
        self.key_range.with_range(end_key.into());
        self
    }

    /// Deletes all keys >= key.
    pub fn with_from_key(mut self) -> Self {
        (
            self.key_range.from_key,
            self.key_range.prefix,
            self.key_range.all_keys,
        ) = (true, false, false);
        self
    }

    /// Deletes all keys prefixed with key.
    pub fn with_prefix(mut self) -> Self {
        (
            self.key_range.prefix,
            self.key_range.from_key,
            self.key_range.all_keys,
        ) = (true, false, false);
        self
    }

    /// Deletes all keys.
    pub fn with_all_keys(mut self) -> Self {
        (
            self.key_range.all_keys,
            self.key_range.prefix,
            self.key_range.from_key,
        ) = (true, false, false);
        self
    }

    /// If `prev_kv` is set, etcd gets the previous key-value pairs before deleting it.
    /// The previous key-value pairs will be returned in the delete response.
    pub fn with_prev_key(mut self) -> Self {
        self.prev_kv = true;
        self
    }
}
