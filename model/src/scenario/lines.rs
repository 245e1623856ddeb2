//! Line lookup: which line of a scenario's text holds a dotted key path, so that every
//! error names file:line.

pub(super) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

/// Finds the line of a dotted key path (`faults.0.kind`) in `text`, or of the nearest
/// enclosing key when the full path is not there.
pub(super) fn locate(text: &str, path: &[String]) -> Option<usize> {
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    locate_in(text, doc.as_table(), path)
}

/// The 1-based line of a dotted key path (`["faults", "0", "to"]`) in a scenario's text,
/// or of the nearest enclosing key when the full path is not there: for checks made on a
/// loaded scenario outside this module (real mode's, of what it can apply).
pub fn line_of_key(text: &str, path: &[&str]) -> Option<usize> {
    locate(
        text,
        &path.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
    )
}

fn locate_in(text: &str, table: &dyn toml_edit::TableLike, path: &[String]) -> Option<usize> {
    let (key, item) = table.get_key_value(path.first()?)?;
    let here = key.span().map(|s| line_of(text, s.start));
    let rest = &path[1..];
    let Some(next) = rest.first() else {
        return here;
    };
    if let Ok(i) = next.parse::<usize>() {
        if let Some(t) = item.as_array_of_tables().and_then(|a| a.get(i)) {
            let header = t.span().map(|s| line_of(text, s.start));
            return locate_in(text, t, &rest[1..]).or(header).or(here);
        }
        if let Some(v) = item.as_array().and_then(|a| a.get(i)) {
            return v.span().map(|s| line_of(text, s.start)).or(here);
        }
        return here;
    }
    item.as_table_like()
        .and_then(|t| locate_in(text, t, rest))
        .or(here)
}
