//! A problem with one key of a table (a fault's, a protocol's): which key, and what is
//! wrong with it in words. The scenario loader turns it into a `ScenarioError` naming the
//! file, the line and the whole dotted path.

/// One key of a table and what is wrong with its value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("key `{key}`: {message}")]
pub struct KeyError {
    /// The key a user must fix (`duration_ms`, `lease_ttl_ms`...), relative to its table.
    pub key: String,
    /// What is wrong with it and what is allowed.
    pub message: String,
}

impl KeyError {
    /// The error about `key`.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> KeyError {
        KeyError {
            key: key.into(),
            message: message.into(),
        }
    }
}
