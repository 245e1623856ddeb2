//! Commands a user can paste: every word quoted for a POSIX shell, so that a value with
//! a space or a quote (`--set 'etcd-lease.prefix=/my election'`) stays one argument.
//!
//! The rule is Python's `shlex.quote`: a word made only of letters, digits and
//! `@%+=:,./-_` is written as it is (so `--set fencing=false` and `--seeds 0..20` read
//! as typed); any other is put in single quotes, a single quote inside becoming `'"'"'`.
//! (The shlex crate also quotes `=` and `,`, which no POSIX shell needs inside an
//! argument, and would turn every `--set` into `'key=value'`.)

/// `word`, quoted for a POSIX shell if it needs it.
pub fn quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', "'\"'\"'"))
}

/// The words joined into one command line, each quoted as needed.
pub fn join<S: AsRef<str>>(words: impl IntoIterator<Item = S>) -> String {
    words
        .into_iter()
        .map(|w| quote(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_what_needs_it_and_splits_back_to_the_same_words() {
        let words = [
            "sim",
            "run",
            "scenarios/gc-pause.toml",
            "--set",
            "etcd-lease.prefix=/my election",
            "--set",
            "name=it's",
        ];
        let line = join(words);
        assert!(
            line.starts_with("sim run scenarios/gc-pause.toml --set "),
            "{line}"
        );
        assert_eq!(shlex::split(&line).unwrap(), words);
        assert_eq!(quote("fencing=false"), "fencing=false");
        assert_eq!(quote("0..20"), "0..20");
        assert_eq!(quote(""), "''");
    }
}
