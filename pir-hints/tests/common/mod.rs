//! Inputs shared by the CPU and GPU tests.

use pir_hints::{Params, Scheme};

/// Master keys found by search under which, with c = 2 blocks, one hint draws two equal select
/// values (a tie at the cutoff, so an invalid hint): `(scheme, key, tied hint, params)`, the key
/// bytes 0..8 a searched seed and the rest zero, 1500 main and 500 backup hints.
pub fn ties() -> Vec<(Scheme, [u8; 32], u64, Params)> {
    [
        (Scheme::Rms24, 549_757_380_321u64, 1108),
        (Scheme::Plinko, 549_756_066_914, 1341),
    ]
    .into_iter()
    .map(|(scheme, seed, tied)| {
        let mut master = [0u8; 32];
        master[..8].copy_from_slice(&seed.to_le_bytes());
        let params = Params::new(scheme, 10, 4)
            .and_then(|p| p.with_block_size(8))
            .and_then(|p| p.with_hints(1500, 500))
            .unwrap();
        assert_eq!(params.blocks(), 2);
        (scheme, master, tied, params)
    })
    .collect()
}
