//! The Goldilocks field p = 2^64 - 2^32 + 1.
//!
//! [`Felt`] is the public element type and always holds the canonical value in `[0, p)`.
//! The CPU hashes work internally on plain `u64`s that may exceed `p` (any value below 2^64
//! stands for its residue), which saves a comparison per operation, and multiply with direct
//! reductions ([`mul`]: one 64 x 64-bit multiplication a product). The GPU kernels work on
//! Montgomery forms (`x` held as `x 2^64 mod p`); [`to_mont_const`] converts their constants.

use std::fmt;

use crate::error::Error;

/// The field modulus p = 2^64 - 2^32 + 1.
pub const MODULUS: u64 = 0xffff_ffff_0000_0001;

/// 2^64 mod p = 2^32 - 1: what a carry out of bit 63 is worth.
const EPSILON: u64 = 0xffff_ffff;

/// An element of the Goldilocks field, in canonical form (`value < p`).
///
/// The same element as winter-math's `f64::BaseElement`, which keeps Montgomery form
/// internally; the `winter` feature converts between the two.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Felt(u64);

impl Felt {
    /// Zero.
    pub const ZERO: Felt = Felt(0);
    /// One.
    pub const ONE: Felt = Felt(1);

    /// The element `value mod p` (every `u64` names an element; values from `p` up wrap).
    pub const fn new(value: u64) -> Felt {
        Felt(canonical(value))
    }

    /// The element with canonical value `value`, or an error if `value >= p`.
    pub const fn from_canonical(value: u64) -> Result<Felt, Error> {
        if value < MODULUS {
            Ok(Felt(value))
        } else {
            Err(Error::NotCanonical { value })
        }
    }

    /// The canonical value, in `[0, p)`.
    pub const fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Debug for Felt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for Felt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl From<u32> for Felt {
    fn from(value: u32) -> Felt {
        Felt(value.into())
    }
}

/// The canonical representative of `value mod p`.
#[inline(always)]
pub(crate) const fn canonical(value: u64) -> u64 {
    if value >= MODULUS {
        value - MODULUS
    } else {
        value
    }
}

/// `a + b mod p` for any `a < 2^64` and a canonical `b` (the sum then never needs a second
/// correction: `a + b - 2^64 + EPSILON < p + EPSILON = 2^64`).
#[inline(always)]
pub(crate) fn add(a: u64, b: u64) -> u64 {
    let (sum, carry) = a.overflowing_add(b);
    sum.wrapping_add(EPSILON * u64::from(carry))
}

/// `a + b mod p` for any `a, b < 2^64` (neither need be canonical).
#[inline(always)]
pub(crate) fn add_any(a: u64, b: u64) -> u64 {
    add(a, canonical(b))
}

/// A `u64` congruent to `x mod p`, for `x < 2^96`: `x = lo + 2^64 hi = lo + hi (2^32 - 1)`
/// mod p, and `hi (2^32 - 1) < p`, so one carry correction suffices.
#[inline(always)]
pub(crate) fn reduce96(x: u128) -> u64 {
    let lo = x as u64;
    let hi = (x >> 64) as u64;
    add(lo, hi * EPSILON)
}

/// A `u64` congruent to `x mod p` for any `x < 2^128`, by direct reduction: with `x = lo +
/// 2^64 (2^32 h1 + h0)`, `2^64 = 2^32 - 1` and `2^96 = -1` give `x = lo - h1 + h0 (2^32 - 1)`.
/// Each step's wrap is fixed once, which never wraps again (`h1 < 2^32`, `h0 (2^32 - 1) <
/// 2^64 - 2^33 + 2`). Every CPU permutation multiplies with it ([`mul`]): one 64 x 64-bit
/// multiplication where a Montgomery product takes three, and a shorter latency for chains of
/// products such as Poseidon2's internal rounds.
#[inline(always)]
pub(crate) fn reduce128(x: u128) -> u64 {
    let lo = x as u64;
    let hi = (x >> 64) as u64;
    let (h1, h0) = (hi >> 32, hi & EPSILON);
    let (t0, borrow) = lo.overflowing_sub(h1);
    // A borrow is rare (lo < h1: about 2^-32 for random products), so it is a branch, which
    // keeps its fix off the chain of dependent products that a select would lengthen.
    let t0 = if borrow { fix_borrow(t0) } else { t0 };
    let (t2, carry) = t0.overflowing_add(h0 * EPSILON);
    if carry { t2.wrapping_add(EPSILON) } else { t2 }
}

/// The borrow fix of [`reduce128`]: `t - EPSILON`, out of line so that the rare case is a
/// branch.
#[cold]
#[inline(never)]
fn fix_borrow(t: u64) -> u64 {
    t.wrapping_sub(EPSILON)
}

/// `a b mod p` for any `a, b < 2^64`, on plain (not Montgomery) forms; see [`reduce128`].
#[inline(always)]
pub(crate) fn mul(a: u64, b: u64) -> u64 {
    reduce128(u128::from(a) * u128::from(b))
}

/// The Montgomery form `x 2^64 mod p` of `x`, at compile time: the GPU kernels work on
/// Montgomery forms and take their tables of constants in it.
#[cfg(any(test, feature = "cuda"))]
pub(crate) const fn to_mont_const(x: u64) -> u64 {
    (((x as u128) << 64) % (MODULUS as u128)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    // Montgomery arithmetic, as the GPU kernels do it: the model their word-level steps are
    // checked against.

    /// 2^128 mod p (`2^96 = -1`, so `2^128 = -2^32`): Montgomery multiplication by it enters
    /// Montgomery form.
    const R2: u64 = MODULUS - (1 << 32);

    /// `p^-1 mod 2^64`: `p (1 + 2^32) = 2^96 + 1`.
    const MODULUS_INV: u64 = 1 + (1 << 32);

    /// Montgomery reduction: a `u64` congruent to `x / 2^64` mod p, for any `x < 2^128`.
    ///
    /// `m = lo(x) p^-1 mod 2^64` makes the low word of `m p` equal that of `x`, so
    /// `(x - m p) / 2^64 = hi(x) - hi(m p)` exactly. As `hi(m p) < p`, a negative difference is
    /// fixed by adding p once.
    fn mont_reduce(x: u128) -> u64 {
        let lo = x as u64;
        let hi = (x >> 64) as u64;
        let m = lo.wrapping_mul(MODULUS_INV);
        let mp_hi = ((u128::from(m) * u128::from(MODULUS)) >> 64) as u64;
        let (r, borrow) = hi.overflowing_sub(mp_hi);
        // Adding p is subtracting EPSILON mod 2^64: r >= 2^64 - hi(m p) > EPSILON here.
        if borrow { r.wrapping_sub(EPSILON) } else { r }
    }

    /// Montgomery product: `a b / 2^64 mod p` for any `a, b < 2^64` (not always canonical). On
    /// Montgomery forms `a 2^64, b 2^64` it gives the Montgomery form of `a b`.
    fn mont_mul(a: u64, b: u64) -> u64 {
        mont_reduce(u128::from(a) * u128::from(b))
    }

    /// The canonical Montgomery form `x 2^64 mod p` of any `x < 2^64`.
    fn to_mont(x: u64) -> u64 {
        canonical(mont_mul(x, R2))
    }

    /// The canonical value of the element whose Montgomery form is `x` (any `x < 2^64`).
    fn from_mont(x: u64) -> u64 {
        canonical(mont_reduce(u128::from(x)))
    }

    #[test]
    fn direct_products_are_exact() {
        let edges = [
            0,
            1,
            2,
            EPSILON,
            EPSILON + 1,
            1 << 63,
            MODULUS - 1,
            MODULUS,
            u64::MAX,
        ];
        let mut seed = 7u64;
        let mut values = edges.to_vec();
        for _ in 0..64 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            values.push(seed);
        }
        for &a in &values {
            for &b in &values {
                let expected = (u128::from(a) * u128::from(b)) % u128::from(MODULUS);
                assert_eq!(u128::from(canonical(mul(a, b))), expected, "{a} * {b}");
            }
        }
    }

    fn reference_mul(a: u64, b: u64) -> u64 {
        ((u128::from(a) * u128::from(b)) % u128::from(MODULUS)) as u64
    }

    const EDGES: [u64; 11] = [
        0,
        1,
        2,
        EPSILON,
        EPSILON + 1,
        1 << 32,
        MODULUS - 1,
        MODULUS,
        MODULUS + 1,
        u64::MAX - 1,
        u64::MAX,
    ];

    #[test]
    fn montgomery_multiplication_matches_u128_remainder_at_the_edges() {
        for &a in &EDGES {
            for &b in &EDGES {
                let product = from_mont(mont_mul(to_mont(a), to_mont(b)));
                assert_eq!(product, reference_mul(a, b), "{a} * {b}");
                // Raw inputs: a b / 2^64, checked by multiplying back by 2^64.
                assert_eq!(
                    reference_mul(canonical(mont_mul(a, b)), canonical(to_mont(1))),
                    reference_mul(a, b),
                    "{a} * {b} / 2^64"
                );
            }
        }
    }

    #[test]
    fn montgomery_multiplication_matches_u128_remainder_on_random_values() {
        // splitmix64, so that the test needs no dependency.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let z = (seed ^ (seed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        for _ in 0..10_000 {
            let (a, b) = (next(), next());
            assert_eq!(
                from_mont(mont_mul(to_mont(a), to_mont(b))),
                reference_mul(a, b),
                "{a} * {b}"
            );
        }
    }

    /// The GPU's Montgomery reduction (`mont_reduce` in merkle/cuda/goldilocks.cuh), step by
    /// step on the 32-bit words of `x`.
    fn gpu_words(x: u128) -> u64 {
        let word = |k: u32| (x >> (32 * k)) as u32;
        let (w0, w1, w2, w3) = (word(0), word(1), word(2), word(3));
        let w3p = w3
            .checked_add(1)
            .expect("w3 < 2^32 - 1: the kernels' precondition");
        let (m1, c) = w1.overflowing_add(w0);
        let u = m1 + u32::from(c); // never wraps: m1 <= 2^32 - 2 when c is set
        let low = u64::from(w2) + u64::from(w1) + u64::from(c);
        let (lo, k) = (low as u32, (low >> 32) as u32);
        let high = u64::from(w3p) + u64::from(!u) + u64::from(k);
        let (hi, not_negative) = (high as u32, (high >> 32) as u32);
        let negative_mask = not_negative.wrapping_sub(1);
        ((u64::from(hi) << 32) | u64::from(lo)).wrapping_sub(u64::from(negative_mask))
    }

    /// The word-level Montgomery reduction of the GPU kernels ([`gpu_words`]) must equal
    /// [`mont_reduce`] up to p and be canonical, for products of canonical values (the kernels'
    /// precondition), including low halves that are zero or make `m1 + c` wrap.
    #[test]
    fn gpu_word_reduction_matches_mont_reduce() {
        let factors = [
            0,
            1,
            2,
            EPSILON,
            1 << 32,
            (1 << 32) + 1,
            1 << 63,
            MODULUS - 2,
            MODULUS - 1,
            MODULUS - (1 << 31),
            0xffff_fffe_0000_0001,
            0x1234_5678_0000_0000,
        ];
        for &a in &factors {
            for &b in &factors {
                let x = u128::from(a) * u128::from(b);
                let got = gpu_words(x);
                assert!(got < MODULUS, "{a} * {b}: {got} not canonical");
                assert_eq!(got, canonical(mont_reduce(x)), "{a} * {b}");
            }
        }
        // Low half zero with a non-zero high half (the case `u = 0`), up to the largest top
        // word allowed (2^32 - 2), and the largest product of canonical values.
        let largest = u128::from(MODULUS - 1).pow(2);
        for x in [1u128 << 64, u128::from(MODULUS - 2) << 64, largest] {
            assert_eq!(gpu_words(x), canonical(mont_reduce(x)), "{x}");
        }
    }

    /// Rpx256's reduction of a sum of up to five products of canonical values (`wide_reduce`
    /// in merkle/cuda/rpx.cu), step by step: the sum's three words folded to a value below
    /// 2^68 congruent to it, then the Montgomery reduction, must give the canonical `s / 2^64 mod
    /// p` for sums at the edges (zero, five of the largest product, repeated products as in the
    /// squares' doubled cross products) and for random ones.
    #[test]
    fn gpu_wide_sum_reduction_is_exact() {
        fn gpu_wide_reduce(s: (u64, u64, u32)) -> u64 {
            let (lo, hi, top) = s;
            let (h0, h1) = (hi & 0xffff_ffff, hi >> 32);
            let v = u128::from(lo) + (u128::from(h0) << 32) + 8 * u128::from(MODULUS)
                - (u128::from(h0) + u128::from(h1) + (u128::from(top) << 32));
            assert!(v < 1 << 68, "v's top word is zero");
            gpu_words(v)
        }
        let check = |products: &[(u64, u64)]| {
            let mut sum = [0u64; 3]; // lo, hi, top
            let mut exact = 0u128;
            for &(a, b) in products {
                let p = u128::from(a) * u128::from(b);
                exact = (exact + p % u128::from(MODULUS)) % u128::from(MODULUS);
                let (lo, c0) = sum[0].overflowing_add(p as u64);
                let (hi, c1) = sum[1].overflowing_add((p >> 64) as u64);
                let (hi, c2) = hi.overflowing_add(u64::from(c0));
                sum = [lo, hi, sum[2] + u64::from(c1) + u64::from(c2)];
            }
            let top = u32::try_from(sum[2]).expect("at most five products");
            let got = gpu_wide_reduce((sum[0], sum[1], top));
            // s / 2^64 mod p: the exact remainder times 2^-64 (2^64 = EPSILON mod p).
            let expected = canonical(mont_reduce(exact));
            assert_eq!(got, expected, "{products:?}");
            assert!(got < MODULUS);
        };
        let top = MODULUS - 1;
        check(&[]);
        check(&[(0, 0)]);
        check(&[(top, top); 5]);
        check(&[(top, top), (top, top), (top, top), (top, top), (1, 1)]);
        check(&[
            (top, top),
            (top, top),
            (top, 2),
            (1 << 63, 1 << 63),
            (EPSILON, EPSILON),
        ]);
        check(&[(1 << 32, 1 << 32), (EPSILON, 1 << 32), (MODULUS - 2, 3)]);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            canonical(seed ^ (seed >> 29))
        };
        for count in 1..=5 {
            for _ in 0..2_000 {
                let products: Vec<(u64, u64)> = (0..count).map(|_| (next(), next())).collect();
                check(&products);
            }
        }
    }

    /// The GPU's reduction of the MDS step's sums (`reduce_mds_sums` in
    /// merkle/cuda/rescue_lanes.cuh), step by step on the words of the doubles `2^52 + sum` as
    /// the kernel reads them: it must be canonical and equal `(lo + 2^32 hi) mod p` for every
    /// pair of sums below 2^41, at the edges where the fold is zero, the sum wraps past 2^64 or
    /// lands at or above p, and on random sums.
    #[test]
    fn gpu_mds_sum_reduction_is_canonical_and_exact() {
        const BIAS_HIGH: u32 = 0x4330_0000;
        fn gpu_words(lo_sum: u64, hi_sum: u64) -> u64 {
            // The bits of the double 2^52 + sum, for sum < 2^52.
            let bits = |sum: u64| (u64::from(BIAS_HIGH) << 32) + sum;
            let (lo_bits, hi_bits) = (bits(lo_sum), bits(hi_sum));
            let high = |bits: u64| (bits >> 32) as u32;
            let h1 = high(hi_bits).wrapping_sub(BIAS_HIGH);
            let l1_h1 = high(lo_bits)
                .wrapping_add(high(hi_bits))
                .wrapping_sub(2 * BIAS_HIGH);
            let low = (u64::from(hi_bits as u32) << 32) | u64::from(lo_bits as u32);
            let fold = (u64::from(l1_h1) << 32) - u64::from(h1);
            let (sum, wrapped) = low.overflowing_add(fold);
            let (lowered, carried) = sum.overflowing_add(EPSILON);
            if wrapped || carried { lowered } else { sum }
        }
        let check = |lo: u64, hi: u64| {
            let expected = ((u128::from(lo) + (u128::from(hi) << 32)) % u128::from(MODULUS)) as u64;
            assert_eq!(gpu_words(lo, hi), expected, "lo {lo:#x}, hi {hi:#x}");
        };
        let top = (1u64 << 41) - 1;
        let edges = [
            0,
            1,
            EPSILON - 1,
            EPSILON,
            1 << 32,
            (1 << 32) + 1,
            (2 << 32) - 1,
            161 * EPSILON,
            top - EPSILON,
            top,
        ];
        for &lo in &edges {
            for &hi in &edges {
                check(lo, hi);
            }
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..10_000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let lo = (seed >> 7) & top;
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            check(lo, (seed >> 7) & top);
        }
    }

    #[test]
    fn montgomery_form_round_trips() {
        for &x in &EDGES {
            assert_eq!(to_mont(x), to_mont_const(x));
            assert_eq!(from_mont(to_mont(x)), canonical(x));
        }
    }

    #[test]
    fn reduce96_matches_u128_remainder_at_the_edges() {
        for &hi in &[0, 1, EPSILON - 1, EPSILON] {
            for &lo in &EDGES {
                let x = (u128::from(hi) << 64) | u128::from(lo);
                let expected = (x % u128::from(MODULUS)) as u64;
                assert_eq!(canonical(reduce96(x)), expected, "{x}");
            }
        }
    }

    #[test]
    fn addition_of_a_canonical_value_wraps_correctly() {
        let edges = [0, 1, EPSILON, MODULUS - 1, MODULUS, u64::MAX];
        for &a in &edges {
            for &b in &edges[..4] {
                let expected = ((u128::from(a) + u128::from(b)) % u128::from(MODULUS)) as u64;
                assert_eq!(canonical(add(a, b)), expected, "{a} + {b}");
            }
        }
    }

    #[test]
    fn canonical_form_is_enforced() {
        assert_eq!(Felt::new(MODULUS).as_u64(), 0);
        assert_eq!(Felt::new(u64::MAX).as_u64(), EPSILON - 1);
        assert!(Felt::from_canonical(MODULUS).is_err());
        assert_eq!(
            Felt::from_canonical(MODULUS - 1).map(Felt::as_u64).ok(),
            Some(MODULUS - 1)
        );
    }
}
