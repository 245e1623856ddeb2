//! `--set key=value` overrides, applied to the file's TOML document before it is parsed.

/// A `--set` that cannot be applied to the document; the loader turns it into a
/// `ScenarioError` naming the `--set`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum SetError {
    /// No `=`.
    #[error("`{0}` is not key=value")]
    NotAnAssignment(String),
    /// An empty segment in the key.
    #[error("`{0}` is not a dotted key path")]
    NotAKeyPath(String),
    /// A numeric segment under a key that is not a list of tables.
    #[error("`{0}` is not a list of tables")]
    NotAList(String),
    /// A numeric segment past the list's end.
    #[error("`{key}` has {len} entries, no index {index}")]
    NoSuchIndex {
        /// The list's key.
        key: String,
        /// Its length.
        len: usize,
        /// The index asked for.
        index: usize,
    },
    /// The path ends at a table of a list, which one value cannot replace.
    #[error("`{key}.{index}` is a whole table; set one of its keys")]
    WholeTable {
        /// The list's key.
        key: String,
        /// The index.
        index: usize,
    },
    /// A segment under a key that is not a table.
    #[error("`{0}` is not a table")]
    NotATable(String),
}

/// Applies one `--set key=value`: the value is read as a TOML value (number, bool,
/// string, array) and, failing that, as a bare string. A numeric segment indexes a list
/// of tables (`faults.0.at_ms`).
pub(super) fn apply_set(
    doc: &mut toml_edit::DocumentMut,
    assignment: &str,
) -> Result<(), SetError> {
    let Some((path, raw)) = assignment.split_once('=') else {
        return Err(SetError::NotAnAssignment(assignment.to_string()));
    };
    let segs: Vec<&str> = path.trim().split('.').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return Err(SetError::NotAKeyPath(path.to_string()));
    }
    let value: toml_edit::Value = raw
        .trim()
        .parse()
        .unwrap_or_else(|_| toml_edit::Value::from(raw.trim()));
    set_in(doc.as_table_mut(), &segs, value)
}

pub(super) fn set_in(
    table: &mut dyn toml_edit::TableLike,
    segs: &[&str],
    value: toml_edit::Value,
) -> Result<(), SetError> {
    let seg = segs[0];
    if segs.len() == 1 {
        table.insert(seg, toml_edit::Item::Value(value));
        return Ok(());
    }
    if table.get(seg).is_none() {
        table.insert(seg, toml_edit::Item::Table(toml_edit::Table::new()));
    }
    let item = table.get_mut(seg).expect("present or just inserted");
    if let Ok(idx) = segs[1].parse::<usize>() {
        let arr = item
            .as_array_of_tables_mut()
            .ok_or_else(|| SetError::NotAList(seg.to_string()))?;
        let len = arr.len();
        let t = arr.get_mut(idx).ok_or_else(|| SetError::NoSuchIndex {
            key: seg.to_string(),
            len,
            index: idx,
        })?;
        if segs.len() == 2 {
            return Err(SetError::WholeTable {
                key: seg.to_string(),
                index: idx,
            });
        }
        return set_in(t, &segs[2..], value);
    }
    let t = item
        .as_table_like_mut()
        .ok_or_else(|| SetError::NotATable(seg.to_string()))?;
    set_in(t, &segs[1..], value)
}
