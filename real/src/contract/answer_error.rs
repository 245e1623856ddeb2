//! What is wrong with one answer of a node run by `--node-cmd`: the detail of a
//! [`crate::contract::rules::Breach`], worded for the person who wrote the node.

use serde_json::Value;

/// How a node's HTTP answer broke the rule it answers to. `which` names the body
/// (`the body`, `the 409's body`, `the 200's body`); bodies and lines are shown cut to
/// one line ([`crate::contract::rules::shown`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// `GET /status` answered something other than 200.
    #[error("GET /status answered {code} {body}")]
    StatusCode {
        /// The HTTP status.
        code: u16,
        /// The body, shown.
        body: String,
    },
    /// The body is not JSON.
    #[error("{which} {body} is not JSON ({why})")]
    NotJson {
        /// Which body.
        which: &'static str,
        /// The body, shown.
        body: String,
        /// The parser's words.
        why: String,
    },
    /// The body is JSON, not an object.
    #[error("{which} {body} is not a JSON object")]
    NotAnObject {
        /// Which body.
        which: &'static str,
        /// The body, shown.
        body: String,
    },
    /// A `/status` field is missing.
    #[error("field `{0}` is missing")]
    Missing(&'static str),
    /// `node_id` is not a string.
    #[error("`node_id` is {0}: allowed a string")]
    NodeIdNotAString(Value),
    /// `node_id` is another node's.
    #[error("`node_id` is {got:?}, but Baton started it as {want:?}")]
    OtherNodeId {
        /// What it said.
        got: String,
        /// Its `{id}`.
        want: String,
    },
    /// `role` is a string that names no role.
    #[error("`role` is {0:?}: allowed \"leader\", \"candidate\", \"follower\"")]
    UnknownRole(String),
    /// `role` is not a string.
    #[error("`role` is {0}: allowed \"leader\", \"candidate\", \"follower\"")]
    RoleNotAString(Value),
    /// A field that must be an integer or null.
    #[error("`{key}` is {value}: allowed a non-negative integer or null")]
    NotIntOrNull {
        /// The field.
        key: &'static str,
        /// Its value.
        value: Value,
    },
    /// A leader without a token.
    #[error("`role` is \"leader\" but `fence_token` is null")]
    LeaderWithoutToken,
    /// A `409` field that must be a string or null.
    #[error("the 409's `{key}` is {value}: allowed a string or null")]
    NotStringOrNull {
        /// The field.
        key: &'static str,
        /// Its value.
        value: Value,
    },
    /// A `409` without one of its fields.
    #[error("the 409's body lacks `{0}`")]
    NotLeaderLacks(&'static str),
    /// A `200` field that must be an integer.
    #[error("the 200's `{key}` is {value}: allowed a non-negative integer")]
    NotAnInteger {
        /// The field.
        key: &'static str,
        /// Its value.
        value: Value,
    },
    /// A `200` without its token or its number: the fields it lacks, then its body.
    #[error("the 200's body {1} lacks {0}")]
    NextLacks(&'static str, String),
    /// Numbers handed out under another token than the one `/status` gave.
    #[error(
        "it handed out numbers under token {token}, but its /status says fence_token {fence_token}"
    )]
    OtherToken {
        /// The `200`'s token.
        token: u64,
        /// `/status`'s.
        fence_token: u64,
    },
    /// A range that ends before it starts.
    #[error("the 200's `last` {last} is below its `seq` {seq}")]
    LastBelowSeq {
        /// `last`.
        last: u64,
        /// `seq`.
        seq: u64,
    },
    /// A `leaders_acting` sample whose labels do not close.
    #[error("the sample {0} has no closing `}}`")]
    Unclosed(String),
    /// A `leaders_acting` sample without a number.
    #[error("the sample {0} has no number")]
    NoNumber(String),
    /// No `leaders_acting` sample.
    #[error("no `leaders_acting` sample in GET /metrics")]
    NoSample,
}
