//! The Goldilocks field p = 2^64 - 2^32 + 1.
//!
//! [`Felt`] is the public element type and always holds the canonical value in `[0, p)`.
//! The hash works internally on plain `u64`s that may exceed `p` (any value below 2^64 stands
//! for its residue), which saves a comparison per operation; [`canonical`] maps back.

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

/// Reduces a 128-bit value to a `u64` congruent to it mod p (not always canonical).
///
/// With `x = lo + 2^64 (hl + 2^32 hh)`: `2^64 = 2^32 - 1` and `2^96 = -1` mod p, so
/// `x = lo - hh + hl (2^32 - 1)`.
#[inline(always)]
pub(crate) fn reduce128(x: u128) -> u64 {
    let lo = x as u64;
    let hi = (x >> 64) as u64;
    let hh = hi >> 32;
    let hl = hi & EPSILON;
    let (mut t, borrow) = lo.overflowing_sub(hh);
    if borrow {
        t = t.wrapping_sub(EPSILON);
    }
    let product = hl * EPSILON;
    let (sum, carry) = t.overflowing_add(product);
    sum.wrapping_add(EPSILON * u64::from(carry))
}

/// `a * b mod p` for any `a, b < 2^64` (result not always canonical).
#[inline(always)]
pub(crate) fn mul(a: u64, b: u64) -> u64 {
    reduce128(u128::from(a) * u128::from(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference_mul(a: u64, b: u64) -> u64 {
        ((u128::from(a) * u128::from(b)) % u128::from(MODULUS)) as u64
    }

    #[test]
    fn multiplication_matches_u128_remainder_at_the_edges() {
        let edges = [
            0,
            1,
            2,
            EPSILON,
            EPSILON + 1,
            MODULUS - 1,
            MODULUS,
            MODULUS + 1,
            u64::MAX,
        ];
        for &a in &edges {
            for &b in &edges {
                assert_eq!(canonical(mul(a, b)), reference_mul(a, b), "{a} * {b}");
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
