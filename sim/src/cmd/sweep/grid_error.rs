//! What `--grid` can get wrong, read alone or against the scenario and protocols.

use baton_model::scenario::ScenarioError;

/// A `--grid` that cannot be read, or that cannot be swept: the axis and what is allowed.
#[derive(Debug, thiserror::Error)]
pub enum GridError {
    /// No `=`.
    #[error("--grid `{0}`: expected KEY=V1,V2,... (for example ttl_ms=1000,3000,10000)")]
    NotKeyValues(String),
    /// The key is not a dotted path.
    #[error("--grid `{arg}`: `{key}` is not a dotted scenario key")]
    NotAKey {
        /// The argument.
        arg: String,
        /// Its key.
        key: String,
    },
    /// No values.
    #[error("--grid {0}: the grid is empty: give at least one value (KEY=V1,V2,...)")]
    Empty(String),
    /// A TTL axis value out of range.
    #[error("--grid {key}: `{value}` is not a TTL: expected whole milliseconds, 1 to 3600000")]
    NotATtl {
        /// The axis.
        key: String,
        /// The value.
        value: String,
    },
    /// A value given twice.
    #[error("--grid {key}: `{value}` is given twice")]
    Twice {
        /// The axis.
        key: String,
        /// The value.
        value: String,
    },
    /// `--grid protocol=...`.
    #[error("--grid protocol: sweep protocols with --protocols, not --grid")]
    Protocol,
    /// A key of one protocol's table, swept with another protocol.
    #[error("--grid {key}: protocol {swept} has no such key (only {owner} reads its table); allowed: a key of every swept protocol, or a TTL key (ttl_ms, or {owner_ttl}) that maps to each protocol's own")]
    OtherProtocolsKey {
        /// The axis.
        key: String,
        /// The swept protocol without it.
        swept: &'static str,
        /// The protocol whose table holds it.
        owner: &'static str,
        /// That protocol's own TTL key.
        owner_ttl: String,
    },
    /// The first axis holds a value that is not a number.
    #[error("--grid {key}: `{value}` is not a number; the first --grid axis is the plots' x axis, so its values must be numbers (put another axis first)")]
    XNotANumber {
        /// The axis.
        key: String,
        /// The value.
        value: String,
    },
    /// More than one TTL axis.
    #[error("--grid: more than one TTL axis; give one (ttl_ms or a protocol's TTL key)")]
    TwoTtls,
    /// A grid point the scenario's checks refuse.
    #[error("--grid {at}, protocol {protocol}: {error}")]
    Scenario {
        /// The point, `KEY=V ...`.
        at: String,
        /// The protocol.
        protocol: &'static str,
        /// What the loader said.
        error: Box<ScenarioError>,
    },
}
