//! One root seed, forked per subsystem.
//!
//! Every random draw in a run comes from a ChaCha8 generator derived from the run's seed
//! and a subsystem label, so adding a draw in one subsystem never shifts another's
//! sequence. madsim's own generator (task order) is seeded with the same root seed.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The largest seed: TOML's largest integer, since a report's resolved `scenario.toml`
/// records its run's seed (`seed = N`) and TOML integers are signed 64-bit.
pub const MAX: u64 = i64::MAX as u64;

/// What a seed may be, in words, for every error about one.
pub const ALLOWED: &str = "a whole number from 0 to 9223372036854775807 (TOML's largest integer; a report's scenario.toml records its seed)";

/// A seed, or a seed range, that could not be read: the text as given, and what is
/// allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SeedError {
    /// Not a whole number from 0 to [`MAX`].
    #[error("`{0}` is not a seed: {}", ALLOWED)]
    NotASeed(String),
    /// No `..` between the two ends.
    #[error("`{0}` is not a range A..B (B excluded)")]
    NotARange(String),
    /// The end is not a whole number from 1 to one past [`MAX`].
    #[error("`{0}` is not the end of a seed range: a whole number from 1 to 9223372036854775808 (B is excluded; seeds go up to 9223372036854775807)")]
    NotAnEnd(String),
    /// A is not below B.
    #[error("`{0}` is empty: A must be below B")]
    Empty(String),
}

/// Parses a seed, or says in one line what a seed may be.
pub fn parse(text: &str) -> Result<u64, SeedError> {
    match text.trim().parse::<u64>() {
        Ok(n) if n <= MAX => Ok(n),
        _ => Err(SeedError::NotASeed(text.trim().to_string())),
    }
}

/// Parses a seed range `A..B` (B excluded, so B may be one past [`MAX`]).
pub fn parse_range(text: &str) -> Result<std::ops::Range<u64>, SeedError> {
    let (a, b) = text
        .split_once("..")
        .ok_or_else(|| SeedError::NotARange(text.to_string()))?;
    let a = parse(a)?;
    let b = match b.trim().parse::<u64>() {
        Ok(n) if n <= MAX + 1 => n,
        _ => return Err(SeedError::NotAnEnd(b.trim().to_string())),
    };
    if a >= b {
        return Err(SeedError::Empty(text.to_string()));
    }
    Ok(a..b)
}

/// The generator for `label` under `seed`.
///
/// The label is hashed with FNV-1a (stable across platforms and Rust versions, unlike
/// `std`'s `DefaultHasher`) and mixed with the seed through splitmix64.
pub fn fork(seed: u64, label: &str) -> ChaCha8Rng {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in label.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    ChaCha8Rng::seed_from_u64(splitmix64(seed ^ splitmix64(h)))
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;

    #[test]
    fn seeds_stop_at_tomls_largest_integer() {
        assert_eq!(parse("9223372036854775807"), Ok(MAX));
        assert!(parse("9223372036854775808")
            .unwrap_err()
            .to_string()
            .contains("0 to 9223372036854775807"));
        assert!(parse("18446744073709551615").is_err());
        assert!(parse("-1").is_err());
        assert_eq!(parse_range("0..9223372036854775808"), Ok(0..MAX + 1));
        assert!(parse_range("0..9223372036854775809").is_err());
        assert!(parse_range("5..5")
            .unwrap_err()
            .to_string()
            .contains("empty"));
        assert!(parse_range("5").is_err());
    }

    #[test]
    fn forks_differ_by_label_and_seed_and_repeat() {
        let a = fork(42, "client").next_u64();
        assert_eq!(a, fork(42, "client").next_u64());
        assert_ne!(a, fork(42, "node/n1").next_u64());
        assert_ne!(a, fork(43, "client").next_u64());
    }
}
