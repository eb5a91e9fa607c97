//! Poseidon2 over Goldilocks with a 12-element state, bit-compatible with miden-crypto 0.28.1
//! (`miden_crypto::hash::poseidon2::Poseidon2`, which permutes with Plonky3's
//! `Poseidon2Goldilocks<12>` and its default constants), the hash of miden-crypto's
//! `MerkleTree`.
//!
//! The permutation: the external linear layer; four external rounds (`+ constants`, `x^7` on
//! every element, the external layer); 22 internal rounds (`s[0] += c`, `s[0] = s[0]^7`, the
//! internal layer); four more external rounds. The external layer multiplies each block of
//! four by `M4 = [[2, 3, 1, 1], [1, 2, 3, 1], [1, 1, 2, 3], [3, 1, 1, 2]]` and then adds to
//! each element the sum of the elements at its place in the three blocks; the internal layer
//! is `s[i] <- s[i] MATRIX_DIAGONAL[i] + sum(s)`. The sponge is that of [`Rpo256`](crate::Rpo256). The
//! constants are the published instance's; `tests/miden.rs` checks them against miden-crypto.

use crate::digest::Digest;
use crate::field::{self, Felt, MODULUS, add_any};
use crate::hasher::{Hasher, sealed};
use crate::rescue::pow7;
use crate::sponge::{self, Permutation, STATE_WIDTH, State, sbox};

/// External rounds before (and after) the internal ones.
pub const HALF_EXTERNAL_ROUNDS: usize = 4;
/// Internal rounds.
pub const INTERNAL_ROUNDS: usize = 22;

/// The internal matrix is `1 + diag(MATRIX_DIAGONAL)`: `s[i] <- s[i] MATRIX_DIAGONAL[i] + sum(s)`.
pub const MATRIX_DIAGONAL: [u64; STATE_WIDTH] = [
    0xfffffffeffffffff,
    0x0000000000000001,
    0x0000000000000002,
    0x7fffffff80000001,
    0x0000000000000003,
    0x0000000000000004,
    0x7fffffff80000000,
    0xfffffffefffffffe,
    0xfffffffefffffffd,
    0xbfffffff40000001,
    0x3fffffffc0000000,
    0xdfffffff20000001,
];

/// Round constants of the four initial external rounds (canonical values).
pub const EXTERNAL_INITIAL: [[u64; STATE_WIDTH]; HALF_EXTERNAL_ROUNDS] = [
    [
        0x13dcf33aba214f46,
        0x30b3b654a1da6d83,
        0x1fc634ada6159b56,
        0x937459964dc03466,
        0xedd2ef2ca7949924,
        0xede9affde0e22f68,
        0x8515b9d6bac9282d,
        0x6b5c07b4e9e900d8,
        0x1ec66368838c8a08,
        0x9042367d80d1fbab,
        0x400283564a3c3799,
        0x4a00be0466bca75e,
    ],
    [
        0x7913beee58e3817f,
        0xf545e88532237d90,
        0x22f8cb8736042005,
        0x6f04990e247a2623,
        0xfe22e87ba37c38cd,
        0xd20e32c85ffe2815,
        0x117227674048fe73,
        0x4e9fb7ea98a6b145,
        0xe0866c232b8af08b,
        0x00bbc77916884964,
        0x7031c0fb990d7116,
        0x240a9e87cf35108f,
    ],
    [
        0x2e6363a5a12244b3,
        0x5e1c3787d1b5011c,
        0x4132660e2a196e8b,
        0x3a013b648d3d4327,
        0xf79839f49888ea43,
        0xfe85658ebafe1439,
        0xb6889825a14240bd,
        0x578453605541382b,
        0x4508cda8f6b63ce9,
        0x9c3ef35848684c91,
        0x0812bde23c87178c,
        0xfe49638f7f722c14,
    ],
    [
        0x8e3f688ce885cbf5,
        0xb8e110acf746a87d,
        0xb4b2e8973a6dabef,
        0x9e714c5da3d462ec,
        0x6438f9033d3d0c15,
        0x24312f7cf1a27199,
        0x23f843bb47acbf71,
        0x9183f11a34be9f01,
        0x839062fbb9d45dbf,
        0x24b56e7e6c2e43fa,
        0xe1683da61c962a72,
        0xa95c63971a19bfa7,
    ],
];

/// Round constants of the 22 internal rounds, added to `s[0]` (canonical values).
pub const INTERNAL: [u64; INTERNAL_ROUNDS] = [
    0x4adf842aa75d4316,
    0xf8fbb871aa4ab4eb,
    0x68e85b6eb2dd6aeb,
    0x07a0b06b2d270380,
    0xd94e0228bd282de4,
    0x8bdd91d3250c5278,
    0x209c68b88bba778f,
    0xb5e18cdab77f3877,
    0xb296a3e808da93fa,
    0x8370ecbda11a327e,
    0x3f9075283775dad8,
    0xb78095bb23c6aa84,
    0x3f36b9fe72ad4e5f,
    0x69bc96780b10b553,
    0x3f1d341f2eb7b881,
    0x4e939e9815838818,
    0xda366b3ae2a31604,
    0xbc89db1e7287d509,
    0x6102f411f9ef5659,
    0x58725c5e7ac1f0ab,
    0x0df5856c798883e7,
    0xf7bb62a8da4c961b,
];

/// Round constants of the four terminal external rounds (canonical values).
pub const EXTERNAL_TERMINAL: [[u64; STATE_WIDTH]; HALF_EXTERNAL_ROUNDS] = [
    [
        0xc68be7c94882a24d,
        0xaf996d5d5cdaedd9,
        0x9717f025e7daf6a5,
        0x6436679e6e7216f4,
        0x8a223d99047af267,
        0xbb512e35a133ba9a,
        0xfbbf44097671aa03,
        0xf04058ebf6811e61,
        0x5cca84703fac7ffb,
        0x9b55c7945de6469f,
        0x8e05bf09808e934f,
        0x2ea900de876307d7,
    ],
    [
        0x7748fff2b38dfb89,
        0x6b99a676dd3b5d81,
        0xac4bb7c627cf7c13,
        0xadb6ebe5e9e2f5ba,
        0x2d33378cafa24ae3,
        0x1e5b73807543f8c2,
        0x09208814bfebb10f,
        0x782e64b6bb5b93dd,
        0xadd5a48eac90b50f,
        0xadd4c54c736ea4b1,
        0xd58dbb86ed817fd8,
        0x6d5ed1a533f34ddd,
    ],
    [
        0x28686aa3e36b7cb9,
        0x591abd3476689f36,
        0x047d766678f13875,
        0xa2a11112625f5b49,
        0x21fd10a3f8304958,
        0xf9b40711443b0280,
        0xd2697eb8b2bde88e,
        0x3493790b51731b3f,
        0x11caf9dd73764023,
        0x7acfb8f72878164e,
        0x744ec4db23cefc26,
        0x1e00e58f422c6340,
    ],
    [
        0x21dd28d906a62dda,
        0xf32a46ab5f465b5f,
        0xbfce13201f3f7e6b,
        0xf30d2e7adb5304e2,
        0xecdf4ee4abad48e9,
        0xf94e82182d395019,
        0x4ee52e3744d887c5,
        0xa1341c7cac0083b2,
        0x2302fb26c30c834a,
        0xaea3c587273bf7d3,
        0xf798e24961823ec7,
        0x962deba3e9a2cd94,
    ],
];

/// [`EXTERNAL_INITIAL`] in Montgomery form (the CUDA kernels work on Montgomery forms).
#[cfg(feature = "cuda")]
pub(crate) const EXTERNAL_INITIAL_MONT: [State; HALF_EXTERNAL_ROUNDS] =
    crate::rescue::to_mont_table(&EXTERNAL_INITIAL);
/// [`EXTERNAL_TERMINAL`] in Montgomery form.
#[cfg(feature = "cuda")]
pub(crate) const EXTERNAL_TERMINAL_MONT: [State; HALF_EXTERNAL_ROUNDS] =
    crate::rescue::to_mont_table(&EXTERNAL_TERMINAL);
/// [`INTERNAL`] in Montgomery form.
#[cfg(feature = "cuda")]
pub(crate) const INTERNAL_MONT: [u64; INTERNAL_ROUNDS] =
    crate::rescue::to_mont_table(&[INTERNAL])[0];
/// [`MATRIX_DIAGONAL`] in Montgomery form.
#[cfg(feature = "cuda")]
pub(crate) const MATRIX_DIAGONAL_MONT: State = crate::rescue::to_mont_table(&[MATRIX_DIAGONAL])[0];

/// Poseidon2, the hash of miden-crypto's `Poseidon2` and `MerkleTree`, as a [`Hasher`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Poseidon2;

impl Poseidon2 {
    /// Applies the permutation to `state` (canonical in, canonical out).
    pub fn permute(state: &mut [Felt; STATE_WIDTH]) {
        sponge::permute_canonical::<Self>(state);
    }
}

/// Plain forms with direct reductions ([`field::mul`]), as every CPU permutation: the internal
/// rounds are a chain of products, whose latency that reduction also shortens (one merge 2.86
/// -> 2.38 µs against Montgomery products, on a loaded 2-core VM; see the crate's journal).
impl Permutation for Poseidon2 {
    fn permute(state: &mut State) {
        // Each external round's constants are added in the reduction of the external layer
        // before it, so the layer at index r adds the constants of external round r.
        external_layer_add(state, &EXTERNAL_INITIAL[0]);
        for r in 0..HALF_EXTERNAL_ROUNDS {
            sbox(state);
            let next = EXTERNAL_INITIAL.get(r + 1).unwrap_or(&NO_CONSTANTS);
            external_layer_add(state, next);
        }
        for &constant in &INTERNAL {
            state[0] = pow7(add_any(state[0], constant));
            internal_layer(state);
        }
        for constants in &EXTERNAL_TERMINAL {
            for (x, &k) in state.iter_mut().zip(constants) {
                *x = add_any(*x, k);
            }
            sbox(state);
            external_layer_add(state, &NO_CONSTANTS);
        }
    }
}

/// Zero constants, for external layers that no external round follows.
const NO_CONSTANTS: State = [0; STATE_WIDTH];

/// The external layer followed by `+ constants`: each block of four times `M4`, then each
/// element plus the sum of its column of blocks. The layer has small integer coefficients
/// (28 in all per output), so it runs exactly over the integers (below 28 * 2^64), and the sum
/// plus the constant is reduced once per element. On `u128`s rather than on the 32-bit halves
/// of the inputs (two passes, then `lo + 2^32 hi`): one merge 1.20x -> 0.95-0.98x
/// miden-crypto's time (see the crate's journal).
#[inline(always)]
fn external_layer_add(state: &mut State, constants: &State) {
    let sums = external_integer(state.map(u128::from));
    for ((out, sum), &k) in state.iter_mut().zip(sums).zip(constants) {
        *out = field::reduce96(sum + u128::from(k));
    }
}

/// The external layer over the integers.
#[inline(always)]
fn external_integer(mut x: [u128; STATE_WIDTH]) -> [u128; STATE_WIDTH] {
    for block in x.chunks_exact_mut(4) {
        let [x0, x1, x2, x3] = [block[0], block[1], block[2], block[3]];
        let x01 = x0 + x1;
        let x23 = x2 + x3;
        let x0123 = x01 + x23;
        let x01123 = x0123 + x1;
        let x01233 = x0123 + x3;
        block[0] = x01123 + x01; // 2 x0 + 3 x1 + x2 + x3
        block[1] = x01123 + 2 * x2; // x0 + 2 x1 + 3 x2 + x3
        block[2] = x01233 + x23; // x0 + x1 + 2 x2 + 3 x3
        block[3] = x01233 + 2 * x0; // 3 x0 + x1 + x2 + 2 x3
    }
    let sums: [u128; 4] = std::array::from_fn(|i| x[i] + x[i + 4] + x[i + 8]);
    for (i, v) in x.iter_mut().enumerate() {
        *v += sums[i % 4];
    }
    x
}

/// `s[i] <- s[i] MATRIX_DIAGONAL[i] + sum(s)`. The diagonal is -2, 1, 2, 1/2, 3, 4, -1/2, -3,
/// -4, 1/4, -1/4, 1/8 (mod p; Plonky3's choice, checked against [`MATRIX_DIAGONAL`] by a unit
/// test), so each product is a few shifts and additions: each output is summed exactly over
/// the integers (a multiple of p added before a subtraction) and reduced once. `s[0]`'s
/// output, `sum - 2 s[0]`, is `rest - s[0]` with `rest` the sum of the others, which keeps the
/// next round's S-box input off the longer path through the full sum.
#[inline(always)]
fn internal_layer(state: &mut State) {
    let [s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11] = state.map(u128::from);
    let rest = s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8 + s9 + s10 + s11;
    let sum = rest + s0;
    let half = |x: u128| u128::from(half(x as u64));
    // Every operand is below 2^64, so every output below 17 * 2^64 < 2^96.
    *state = [
        rest + TWO_P - s0,
        sum + s1,
        sum + 2 * s2,
        sum + half(s3),
        sum + 3 * s4,
        sum + 4 * s5,
        sum + TWO_P - half(s6),
        sum + FIVE_P - 3 * s7,
        sum + FIVE_P - 4 * s8,
        sum + half(half(s9)),
        sum + TWO_P - half(half(s10)),
        sum + half(half(half(s11))),
    ]
    .map(field::reduce96);
}

/// Multiples of p above 2^64 and 4 * 2^64, added before subtracting up to that much.
const TWO_P: u128 = 2 * MODULUS as u128;
const FIVE_P: u128 = 5 * MODULUS as u128;

/// `x / 2 mod p` for any `x < 2^64`, below 2^64: `(x + p) / 2 = floor(x / 2) + (p + 1) / 2`
/// when `x` is odd.
#[inline(always)]
fn half(x: u64) -> u64 {
    (x >> 1) + ((x & 1).wrapping_neg() & (MODULUS / 2 + 1))
}

impl Hasher for Poseidon2 {
    const NAME: &'static str = "Poseidon2";

    fn merge(left: &Digest, right: &Digest) -> Digest {
        sponge::merge::<Self>(left, right)
    }

    fn hash_elements(elements: &[Felt]) -> Digest {
        sponge::hash_elements::<Self>(elements)
    }
}

impl sealed::Sealed for Poseidon2 {
    #[cfg(feature = "cuda")]
    const DEVICE: crate::cuda::DeviceHasher = crate::cuda::POSEIDON2;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The coefficients `internal_layer` uses are [`MATRIX_DIAGONAL`]'s.
    #[test]
    fn internal_layer_multiplies_by_the_diagonal() {
        let state: State = std::array::from_fn(|i| {
            field::canonical((i as u64 + 3).wrapping_mul(0x9e37_79b9_7f4a_7c15))
        });
        let sum = state.iter().fold(0, |acc, &x| field::add(acc, x));
        let mut got = state;
        internal_layer(&mut got);
        for i in 0..STATE_WIDTH {
            let expected = field::add(field::mul(state[i], MATRIX_DIAGONAL[i]), sum);
            assert_eq!(
                field::canonical(got[i]),
                field::canonical(expected),
                "element {i}"
            );
        }
    }
}
