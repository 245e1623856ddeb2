//! The seeds a continuous search tries: a stream drawn from one seeded generator.
//!
//! Draw seed `D` gives the stream `seed_at(0), seed_at(1), ...`: ChaCha8, forked from `D`
//! under the label `search-draw` ([`baton_model::seed::fork`]), each position one 64-bit
//! word shifted right by one bit so that every seed is one `sim run --seed` takes (0 to
//! [`baton_model::seed::MAX`]). ChaCha8 can jump to any word, so position `k` costs the
//! same as position 0: a resumed search, or a second process on the same store, starts
//! where the store's cursor says without drawing what came before.

use rand::RngCore;

/// One stream of seeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Draw {
    /// The generator's seed (`--draw-seed`).
    pub seed: u64,
}

impl Draw {
    /// The seed at `position` of the stream.
    pub fn seed_at(self, position: u64) -> u64 {
        let mut rng = baton_model::seed::fork(self.seed, "search-draw");
        // Each u64 takes two of ChaCha's 32-bit words.
        rng.set_word_pos(u128::from(position) * 2);
        rng.next_u64() >> 1
    }
}

#[cfg(test)]
mod tests {
    //! Methodology: jumping to a position gives what drawing up to it gives.
    use super::*;

    #[test]
    fn a_jump_lands_where_drawing_in_order_does() {
        let draw = Draw { seed: 7 };
        let mut rng = baton_model::seed::fork(7, "search-draw");
        for k in 0..50 {
            assert_eq!(draw.seed_at(k), rng.next_u64() >> 1, "position {k}");
        }
        assert!((0..1000).all(|k| draw.seed_at(k) <= baton_model::seed::MAX));
        assert_ne!(Draw { seed: 8 }.seed_at(0), draw.seed_at(0));
    }
}
