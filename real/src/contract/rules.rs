//! The node contract, version 2, as Baton checks it: the rules a node run by
//! `--node-cmd` must keep ([`RULES`], each a heading of `docs/src/node-contract.md`), and
//! the checks of what it answers over HTTP.
//!
//! A broken rule is a [`Breach`]: before the experiment (the node's start and the
//! preflight, see [`crate::contract::preflight`]) it stops the run with one line naming the rule
//! (exit 2); during the run the status poller ([`crate::contract::status_poll`]) records it in the
//! timeline, where the `node_contract` checker makes it a failed property (exit 1).

pub use crate::contract::answer_error::AnswerError;
use crate::events::Role;
use crate::node::StatusBody;
use baton_model::NodeId;
use serde_json::Value;
use std::fmt;

/// The contract's version, as `docs/src/node-contract.md` states it.
pub const VERSION: u32 = 2;

/// One rule: its name (the anchor of its heading in `docs/src/node-contract.md`) and what
/// it asks, in one line.
#[derive(Debug, PartialEq, Eq)]
pub struct Rule {
    /// The name errors and the timeline use.
    pub name: &'static str,
    /// What the node must do.
    pub asks: &'static str,
}

/// Every rule Baton checks, in the order a run meets them.
pub const RULES: &[Rule] = &[
    Rule {
        name: "listen",
        asks: "listen on 127.0.0.1:{http_port} and answer GET /status within 10 s of its start",
    },
    Rule {
        name: "status",
        asks: "GET /status answers 200 with a JSON object: node_id (its {id}), role (leader, candidate or follower), fence_token (an integer while it leads, else null), lease_ttl_remaining_ms (an integer, or null)",
    },
    Rule {
        name: "leader-emerges",
        asks: "some node reports role leader within 15 s of the fleet's start (with no backend, plus twice the election timeout max)",
    },
    Rule {
        name: "next-follower",
        asks: "POST /next on a node that does not lead answers 409 with a JSON object {leader, address}, each a string or null",
    },
    Rule {
        name: "next-leader",
        asks: "POST /next on the leader answers 200 with a JSON object {token, seq} (integers; token its fence_token) within 5 s of it reporting leader",
    },
    Rule {
        name: "fenced-writes",
        asks: "a number POST /next hands out was first written to {resource_url} under the leader's token: the resource accepted a seq write covering it",
    },
    Rule {
        name: "metrics",
        asks: "GET /metrics answers 200 with Prometheus text holding a leaders_acting gauge: 1 on the leader, 0 elsewhere",
    },
    Rule {
        name: "resign",
        asks: "POST /resign, if served, answers 409 on a node that does not lead (404 or 405: not served)",
    },
    Rule {
        name: "redis-lock",
        asks: "on Redis, a leader holds {redis_key} (SET NX PX) and its token is the answer of the one INCR {redis_key}:token right after that SET",
    },
    Rule {
        name: "zk-znode",
        asks: "on ZooKeeper, a leader's token is the czxid of its own EPHEMERAL_SEQUENTIAL child of {zk_election_path}, the only child of its session",
    },
    Rule {
        name: "pg-row",
        asks: "on PostgreSQL, {pg_table} keeps its one row, and a leader's token is the generation its acquire returned, with node its {id}",
    },
    Rule {
        name: "raft-peers",
        asks: "on no backend (none), the leader has connected to each of its peers through the address {raft_peers} gives for it, before the run",
    },
    Rule {
        name: "keeps-running",
        asks: "a node runs until Baton kills it: it never exits by itself",
    },
];

/// The rule named `name` (a name not in [`RULES`] is a bug in Baton).
pub fn rule(name: &str) -> &'static Rule {
    RULES
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no node contract rule named {name:?}"))
}

/// A node broke a rule: which node, which rule, what it did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Breach {
    /// The node (`n2`).
    pub node: NodeId,
    /// The rule's name.
    pub rule: &'static str,
    /// What it did, one line.
    pub detail: String,
}

impl Breach {
    /// Node `node` broke rule `rule`: `detail`.
    pub fn new(node: &str, rule_name: &str, detail: impl fmt::Display) -> Breach {
        Breach {
            node: node.into(),
            rule: rule(rule_name).name,
            detail: detail.to_string(),
        }
    }
}

impl fmt::Display for Breach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} broke node contract v{VERSION} rule `{}` (docs/src/node-contract.md#{}: {}): {}",
            if self.node.contains(',') {
                "nodes"
            } else {
                "node"
            },
            self.node,
            self.rule,
            self.rule,
            rule(self.rule).asks,
            self.detail
        )
    }
}

/// At most this much of a node's answer goes into a message.
const SHOWN_CHARS: usize = 160;

/// `text` cut to `SHOWN_CHARS` characters on one line, for a message.
pub fn shown(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let one_line = one_line.trim();
    if one_line.chars().count() <= SHOWN_CHARS {
        return format!("{one_line:?}");
    }
    let cut: String = one_line.chars().take(SHOWN_CHARS).collect();
    format!("{cut:?}...")
}

/// A JSON object's field as an unsigned integer, `null` as `None`; anything else (or a
/// missing field) is `Err` with what was found.
fn int_or_null(
    o: &serde_json::Map<String, Value>,
    key: &'static str,
) -> Result<Option<u64>, AnswerError> {
    match o.get(key) {
        None => Err(AnswerError::Missing(key)),
        Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| AnswerError::NotIntOrNull {
                key,
                value: v.clone(),
            }),
    }
}

/// `body` read as a JSON object, or why it is not one; `which` names the body.
fn object(which: &'static str, body: &str) -> Result<serde_json::Map<String, Value>, AnswerError> {
    let v: Value = serde_json::from_str(body).map_err(|e| AnswerError::NotJson {
        which,
        body: shown(body),
        why: e.to_string(),
    })?;
    match v {
        Value::Object(o) => Ok(o),
        _ => Err(AnswerError::NotAnObject {
            which,
            body: shown(body),
        }),
    }
}

/// Checks a `GET /status` body from node `id` (rule `status`) and reads it.
pub fn check_status(id: &str, body: &str) -> Result<StatusBody, AnswerError> {
    let o = &object("the body", body)?;
    let node_id = match o.get("node_id") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(AnswerError::NodeIdNotAString(other.clone())),
        None => return Err(AnswerError::Missing("node_id")),
    };
    if node_id != id {
        return Err(AnswerError::OtherNodeId {
            got: node_id,
            want: id.to_string(),
        });
    }
    let role = match o.get("role") {
        Some(Value::String(s)) => serde_json::from_value::<Role>(Value::String(s.clone()))
            .map_err(|_| AnswerError::UnknownRole(s.clone()))?,
        Some(other) => return Err(AnswerError::RoleNotAString(other.clone())),
        None => return Err(AnswerError::Missing("role")),
    };
    let fence_token = int_or_null(o, "fence_token")?;
    if role == Role::Leader && fence_token.is_none() {
        return Err(AnswerError::LeaderWithoutToken);
    }
    let lease_ttl_remaining_ms = int_or_null(o, "lease_ttl_remaining_ms")?;
    Ok(StatusBody {
        node_id: node_id.into(),
        role,
        fence_token: if role == Role::Leader {
            fence_token
        } else {
            None
        },
        lease_ttl_remaining_ms,
    })
}

/// Checks a follower's `409` body (rule `next-follower`).
pub fn check_not_leader(body: &str) -> Result<(), AnswerError> {
    let o = object("the 409's body", body)?;
    for key in ["leader", "address"] {
        match o.get(key) {
            Some(Value::String(_)) | Some(Value::Null) => {}
            Some(other) => {
                return Err(AnswerError::NotStringOrNull {
                    key,
                    value: other.clone(),
                })
            }
            None => return Err(AnswerError::NotLeaderLacks(key)),
        }
    }
    Ok(())
}

/// What a leader's `POST /next` handed out: numbers `seq..=last` under `token`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handed {
    /// The token.
    pub token: u64,
    /// The first number.
    pub seq: u64,
    /// The last (`seq` when the body has no `last`).
    pub last: u64,
}

/// Checks a leader's `200` body (rule `next-leader`) against its `fence_token`.
pub fn check_next(body: &str, fence_token: u64) -> Result<Handed, AnswerError> {
    let o = object("the 200's body", body)?;
    let num = |key: &'static str| -> Result<Option<u64>, AnswerError> {
        match o.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| AnswerError::NotAnInteger {
                    key,
                    value: v.clone(),
                }),
        }
    };
    // Name exactly what is missing: an author fixes one field at a time.
    let (token, seq) = match (num("token")?, num("seq")?) {
        (Some(token), Some(seq)) => (token, seq),
        (None, Some(_)) => return Err(AnswerError::NextLacks("`token`", shown(body))),
        (Some(_), None) => return Err(AnswerError::NextLacks("`seq`", shown(body))),
        (None, None) => return Err(AnswerError::NextLacks("`token` and `seq`", shown(body))),
    };
    if token != fence_token {
        return Err(AnswerError::OtherToken { token, fence_token });
    }
    let last = num("last")?.unwrap_or(seq);
    if last < seq {
        return Err(AnswerError::LastBelowSeq { last, seq });
    }
    Ok(Handed { token, seq, last })
}

/// The value of the `leaders_acting` gauge in Prometheus text (the first sample of that
/// name, labels allowed), or why there is none (rule `metrics`).
pub fn leaders_acting(text: &str) -> Result<f64, AnswerError> {
    for line in text.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("leaders_acting") else {
            continue;
        };
        // The name ends at a label set or a space (`leaders_acting_total` is another).
        let rest = match rest.chars().next() {
            Some('{') => match rest.find('}') {
                Some(end) => &rest[end + 1..],
                None => return Err(AnswerError::Unclosed(shown(line))),
            },
            Some(c) if c.is_whitespace() => rest,
            _ => continue,
        };
        let value = rest.split_whitespace().next().unwrap_or("");
        return value
            .parse::<f64>()
            .map_err(|_| AnswerError::NoNumber(shown(line)));
    }
    Err(AnswerError::NoSample)
}

#[cfg(test)]
mod tests {
    //! Methodology: what Baton's Rust node and the Go node answer must pass; each way a
    //! body can break its rule must be refused with a message naming the field.
    use super::*;

    #[test]
    fn both_reference_nodes_status_bodies_pass() {
        let rust =
            r#"{"node_id":"n1","role":"follower","fence_token":null,"lease_ttl_remaining_ms":0}"#;
        let go =
            r#"{"node_id":"n1","role":"leader","fence_token":7,"lease_ttl_remaining_ms":null}"#;
        assert_eq!(check_status("n1", rust).unwrap().role, Role::Follower);
        let s = check_status("n1", go).unwrap();
        assert_eq!((s.role, s.fence_token), (Role::Leader, Some(7)));
    }

    #[test]
    fn a_wrong_status_body_names_what_is_wrong() {
        for (body, says) in [
            ("not json", "is not JSON"),
            ("[1]", "not a JSON object"),
            (r#"{"role":"leader"}"#, "`node_id` is missing"),
            (
                r#"{"node_id":"n2","role":"leader"}"#,
                "Baton started it as \"n1\"",
            ),
            (r#"{"node_id":"n1"}"#, "`role` is missing"),
            (r#"{"node_id":"n1","role":"boss"}"#, "allowed \"leader\""),
            (
                r#"{"node_id":"n1","role":"leader","fence_token":null,"lease_ttl_remaining_ms":1}"#,
                "fence_token` is null",
            ),
            (
                r#"{"node_id":"n1","role":"leader","fence_token":"7","lease_ttl_remaining_ms":1}"#,
                "`fence_token` is \"7\"",
            ),
            (
                r#"{"node_id":"n1","role":"follower","fence_token":null}"#,
                "`lease_ttl_remaining_ms` is missing",
            ),
            (
                r#"{"node_id":"n1","role":"follower","fence_token":null,"lease_ttl_remaining_ms":-1}"#,
                "non-negative",
            ),
        ] {
            let e = check_status("n1", body).unwrap_err().to_string();
            assert!(e.contains(says), "{body}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn next_bodies_are_checked_against_the_token() {
        assert!(check_not_leader(r#"{"leader":"n2","address":null}"#).is_ok());
        assert!(check_not_leader(r#"{"leader":3,"address":null}"#).is_err());
        assert!(check_not_leader("{}").is_err());
        assert_eq!(
            check_next(r#"{"token":5,"seq":10,"last":12}"#, 5).unwrap(),
            Handed {
                token: 5,
                seq: 10,
                last: 12
            }
        );
        assert_eq!(check_next(r#"{"token":5,"seq":10}"#, 5).unwrap().last, 10);
        assert!(check_next(r#"{"token":4,"seq":10}"#, 5)
            .unwrap_err()
            .to_string()
            .contains("fence_token 5"));
        assert!(check_next(r#"{"seq":10}"#, 5).is_err());
    }

    #[test]
    fn a_next_body_names_the_one_field_it_lacks() {
        for (body, says) in [
            (r#"{"seq":10}"#, "lacks `token`"),
            (r#"{"token":5}"#, "lacks `seq`"),
            (r#"{"last":12}"#, "lacks `token` and `seq`"),
        ] {
            let e = check_next(body, 5).unwrap_err().to_string();
            assert!(e.ends_with(says), "{body}: {e}");
        }
    }

    #[test]
    fn the_gauge_is_read_with_or_without_labels() {
        let text =
            "# TYPE leaders_acting gauge\nleaders_acting_total 9\nleaders_acting{node=\"n1\"} 1\n";
        assert_eq!(leaders_acting(text).unwrap(), 1.0);
        assert_eq!(leaders_acting("leaders_acting 0\n").unwrap(), 0.0);
        assert!(leaders_acting("baton_role 1\n").is_err());
        assert!(leaders_acting("leaders_acting{node=\"n1\" 1\n").is_err());
    }

    #[test]
    fn every_rule_has_its_heading_in_the_contract() {
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/node-contract.md"),
        )
        .unwrap();
        assert!(doc.contains(&format!("Version {VERSION}")), "the version");
        for r in RULES {
            assert!(
                doc.contains(&format!("### `{}`", r.name)),
                "docs/src/node-contract.md has no heading for rule `{}`",
                r.name
            );
        }
        let b = Breach::new("n2", "status", "`role` is \"boss\"");
        let line = b.to_string();
        assert!(
            line.starts_with("node n2 broke node contract v2 rule `status`"),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }
}
