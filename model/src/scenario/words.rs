//! Error wording: serde's and the TOML parser's words rewritten into what a user may
//! write (a whole number of milliseconds, true or false, a table and its keys).

use super::overrides::set_in;
use super::types::{Scenario, NODES_ALLOWED};

/// Keys whose allowed values are narrower than their type's: what to say instead of the
/// type's range when a value of the wrong type is given, so that one limit has one wording.
fn narrower_than_type(key: &str) -> Option<&'static str> {
    match key {
        "nodes" => Some(NODES_ALLOWED),
        "seed" => Some(crate::seed::ALLOWED),
        _ => None,
    }
}

/// Rewrites serde's words for a value of the wrong type (`invalid type: string "x",
/// expected u32`, `expected struct WorkConfig`) into what a user may write: a whole
/// number, with the unit the key's name carries, true or false, a table and its keys.
pub(super) fn plain_words(message: &str, key: &str, effective: &str, path: &[String]) -> String {
    let message = message.replace('\n', " ");
    // Names first: serde's "field" and "variant" are a TOML file's keys and values.
    for (serde, ours) in [
        ("unknown field", "unknown key"),
        ("unknown variant", "unknown value"),
        ("missing field", "missing key"),
    ] {
        if let Some(rest) = message.strip_prefix(serde) {
            let rest = rest
                .replacen(", expected one of ", "; allowed: ", 1)
                .replacen(", expected ", "; allowed: ", 1)
                .replacen(", there are no fields", "; this table takes no keys", 1);
            return format!("{ours}{rest}");
        }
    }
    let Some((got, expected)) = message.split_once(", expected ") else {
        return message;
    };
    // serde quotes a value as `v` (numbers, booleans) or "v" (strings).
    let value = |t: &str| t.trim().trim_matches('`').to_string();
    let got = if let Some(rest) = got.strip_prefix("invalid type: ") {
        match rest.split_once(' ') {
            Some(("string", v)) => format!("got the text {v}"),
            Some(("integer", v)) => format!("got the number {}", value(v)),
            Some(("floating", v)) => {
                format!("got the number {}", value(v.trim_start_matches("point")))
            }
            Some(("boolean", v)) => format!("got {}", value(v)),
            _ if rest == "sequence" => "got a list".to_string(),
            _ if rest == "map" => "got a table".to_string(),
            _ => format!("got {rest}"),
        }
    } else if let Some(rest) = got.strip_prefix("invalid value: ") {
        let v = rest
            .split_once(' ')
            .map(|(_, v)| value(v))
            .unwrap_or_default();
        format!("{v} is out of range")
    } else {
        return message;
    };
    let last = key.rsplit('.').next().unwrap_or(key);
    let unit = [
        ("_ms", " of milliseconds"),
        ("_ms_min", " of milliseconds"),
        ("_ms_max", " of milliseconds"),
        ("_ppm", " of parts per million"),
        ("_per_s", " per second"),
        ("_days", " of days"),
        ("_pct", " (percent)"),
    ]
    .iter()
    .find(|(suffix, _)| last.ends_with(suffix))
    .map_or("", |(_, u)| u);
    let allowed = match expected.trim() {
        _ if narrower_than_type(key).is_some() => {
            narrower_than_type(key).unwrap_or_default().to_string()
        }
        "u64" | "usize" => format!("a whole number{unit}, 0 or more"),
        "u32" => format!("a whole number{unit} from 0 to {}", u32::MAX),
        "u16" => format!("a whole number{unit} from 0 to {}", u16::MAX),
        "u8" => format!("a whole number{unit} from 0 to {}", u8::MAX),
        "i64" | "i32" => format!("a whole number{unit}, negative or not"),
        "f64" | "f32" => format!("a number{unit}"),
        "a boolean" => "true or false".to_string(),
        "a string" => "text in quotes".to_string(),
        "a sequence" => "a list in brackets, [...]".to_string(),
        "a map" => "a table".to_string(),
        e if e.starts_with("struct ") => match table_keys(effective, path) {
            Some(keys) => format!("a table with the keys {}", keys.join(", ")),
            None => "a table".to_string(),
        },
        e => e.to_string(),
    };
    format!("{got}; allowed: {allowed}")
}

/// The keys a table at `path` may hold, found by asking the parser itself: the value
/// there is replaced by a table holding one key no table has, and the "unknown field"
/// error lists the keys it expected.
fn table_keys(effective: &str, path: &[String]) -> Option<Vec<String>> {
    const PROBE: &str = "__no_such_key__";
    let mut doc: toml_edit::DocumentMut = effective.parse().ok()?;
    let segs: Vec<&str> = path.iter().map(String::as_str).collect();
    if segs.is_empty() {
        return None;
    }
    let mut probe = toml_edit::InlineTable::new();
    probe.insert(PROBE, 0.into());
    set_in(
        doc.as_table_mut(),
        &segs,
        toml_edit::Value::InlineTable(probe),
    )
    .ok()?;
    let text = doc.to_string();
    let e =
        serde_path_to_error::deserialize::<_, Scenario>(toml::Deserializer::new(&text)).err()?;
    let m = e.into_inner().message().to_string();
    let (head, expected) = m.split_once("expected")?;
    if !head.contains(PROBE) {
        return None;
    }
    let keys: Vec<String> = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect();
    (!keys.is_empty()).then_some(keys)
}

/// A serde path segment as a key of the dotted path (`faults.0.kind`).
pub(super) fn seg_name(seg: &serde_path_to_error::Segment) -> Option<String> {
    match seg {
        serde_path_to_error::Segment::Map { key } => Some(key.clone()),
        serde_path_to_error::Segment::Seq { index } => Some(index.to_string()),
        serde_path_to_error::Segment::Enum { variant } => Some(variant.clone()),
        serde_path_to_error::Segment::Unknown => None,
    }
}
