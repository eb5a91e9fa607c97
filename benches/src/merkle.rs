//! Merkle inputs shared by the `merkle` bench and the `report` binary.

use merkle::{Digest, Felt};

/// `count` pseudorandom field elements from `seed` (xorshift64*, reduced mod p).
pub fn felts(seed: u64, count: usize) -> Vec<Felt> {
    let mut state = seed | 1;
    (0..count)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            Felt::new(state.wrapping_mul(0x2545_f491_4f6c_dd1d))
        })
        .collect()
}

/// `count` pseudorandom digests from `seed`.
pub fn digests(seed: u64, count: usize) -> Vec<Digest> {
    felts(seed, 4 * count)
        .chunks_exact(4)
        .map(|c| Digest::new([c[0], c[1], c[2], c[3]]))
        .collect()
}
