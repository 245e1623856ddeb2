//! `--set key=value` overrides, applied to the file's TOML document before it is parsed.

/// Applies one `--set key=value`: the value is read as a TOML value (number, bool,
/// string, array) and, failing that, as a bare string. A numeric segment indexes a list
/// of tables (`faults.0.at_ms`).
pub(super) fn apply_set(doc: &mut toml_edit::DocumentMut, assignment: &str) -> Result<(), String> {
    let Some((path, raw)) = assignment.split_once('=') else {
        return Err(format!("`{assignment}` is not key=value"));
    };
    let segs: Vec<&str> = path.trim().split('.').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return Err(format!("`{path}` is not a dotted key path"));
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
) -> Result<(), String> {
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
            .ok_or_else(|| format!("`{seg}` is not a list of tables"))?;
        let len = arr.len();
        let t = arr
            .get_mut(idx)
            .ok_or_else(|| format!("`{seg}` has {len} entries, no index {idx}"))?;
        if segs.len() == 2 {
            return Err(format!(
                "`{seg}.{idx}` is a whole table; set one of its keys"
            ));
        }
        return set_in(t, &segs[2..], value);
    }
    let t = item
        .as_table_like_mut()
        .ok_or_else(|| format!("`{seg}` is not a table"))?;
    set_in(t, &segs[1..], value)
}
