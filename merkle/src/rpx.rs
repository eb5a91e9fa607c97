//! Rpx256 (Rescue Prime eXtension), bit-compatible with miden-crypto 0.28.1
//! (`miden_crypto::hash::rpx::Rpx256`).
//!
//! Seven rounds on the 12-element state of Rpo256 (whose sponge it shares), with Rpo256's constants
//! ([`crate::rpo::ARK1`], [`crate::rpo::ARK2`]): full rounds (Rpo256's round) 0, 2 and 4;
//! extension rounds 1, 3 and 5, `+ ARK1[r]` then `x^7` on each of the four elements of the
//! cubic extension `F_p[t] / (t^3 - t - 1)` that the state's triples `s[3k..3k+3]` hold
//! (coefficients of `1, t, t^2`); a final round 6, `MDS, + ARK1[6]`.

use crate::digest::Digest;
use crate::field::{Felt, add_any, mul};
use crate::hasher::{Hasher, sealed};
use crate::rescue::mds_add;
use crate::rpo::{self, ARK1};
use crate::sponge::{self, Permutation, STATE_WIDTH, State};

/// Rpx256, the hash of miden-crypto's `Rpx256`, as a [`Hasher`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Rpx256;

impl Rpx256 {
    /// Applies the permutation to `state` (canonical in, canonical out).
    pub fn permute(state: &mut [Felt; STATE_WIDTH]) {
        sponge::permute_canonical::<Self>(state);
    }
}

impl Permutation for Rpx256 {
    fn permute(state: &mut State) {
        for r in [0, 2, 4] {
            rpo::round(state, r);
            extension_round(state, r + 1);
        }
        mds_add(state, &ARK1[6]);
    }
}

/// `+ ARK1[r]`, then `x^7` on each cubic-extension element of the state.
#[inline(always)]
fn extension_round(state: &mut State, r: usize) {
    for (x, &k) in state.iter_mut().zip(&ARK1[r]) {
        *x = add_any(*x, k);
    }
    for triple in state.chunks_exact_mut(3) {
        let a = [triple[0], triple[1], triple[2]];
        let a3 = cubic_mul(cubic_square(a), a);
        triple.copy_from_slice(&cubic_mul(cubic_square(a3), a));
    }
}

/// `a b` in `F_p[t] / (t^3 - t - 1)`: with `t^3 = t + 1` and `t^4 = t^2 + t`, the products
/// of degree 3 and 4 fold into the lower coefficients.
#[inline(always)]
fn cubic_mul(a: [u64; 3], b: [u64; 3]) -> [u64; 3] {
    let m = mul;
    let degree3 = add_any(m(a[1], b[2]), m(a[2], b[1]));
    let degree4 = m(a[2], b[2]);
    let c0 = add_any(m(a[0], b[0]), degree3);
    let c1 = add_any(
        add_any(m(a[0], b[1]), m(a[1], b[0])),
        add_any(degree3, degree4),
    );
    let c2 = add_any(
        add_any(m(a[0], b[2]), m(a[1], b[1])),
        add_any(m(a[2], b[0]), degree4),
    );
    [c0, c1, c2]
}

/// `a^2` in the cubic extension (as [`cubic_mul`], with the symmetric products once).
#[inline(always)]
fn cubic_square(a: [u64; 3]) -> [u64; 3] {
    let m = mul;
    let a12 = m(a[1], a[2]);
    let degree3 = add_any(a12, a12);
    let degree4 = m(a[2], a[2]);
    let a01 = m(a[0], a[1]);
    let a02 = m(a[0], a[2]);
    let c0 = add_any(m(a[0], a[0]), degree3);
    let c1 = add_any(add_any(a01, a01), add_any(degree3, degree4));
    let c2 = add_any(add_any(a02, a02), add_any(m(a[1], a[1]), degree4));
    [c0, c1, c2]
}

impl Hasher for Rpx256 {
    const NAME: &'static str = "Rpx256";

    fn merge(left: &Digest, right: &Digest) -> Digest {
        sponge::merge::<Self>(left, right)
    }

    fn hash_elements(elements: &[Felt]) -> Digest {
        sponge::hash_elements::<Self>(elements)
    }
}

impl sealed::Sealed for Rpx256 {
    #[cfg(feature = "cuda")]
    const DEVICE: crate::cuda::DeviceHasher = crate::cuda::RPX256;
}
