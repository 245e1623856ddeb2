//! Nodes of your own (`--node-cmd`, `docs/src/node-contract.md`): the contract's rules and
//! the checks of what a node answers ([`rules`]), the command template and the start
//! ([`node_cmd`]) and its placeholders ([`placeholders`]), the backends a node may elect
//! on ([`backends`]) and what Baton reads of a grant on them ([`grant_check`]), the rules checked before the first fault ([`preflight`]), beliefs and
//! breaches seen by polling `/status` ([`status_poll`]), the timeline completed from
//! outside ([`outside_view`]), Baton's own node behind the contract's flags
//! ([`baton_node`]), and the `conform` command: the spec's experiments against any node,
//! and its report ([`conform`]).

pub mod answer_error;
pub mod backends;
pub mod baton_node;
pub mod conform;
pub mod grant_check;
pub mod node_cmd;
pub mod outside_view;
pub mod placeholders;
pub mod preflight;
pub mod rules;
pub mod status_poll;
