//! Exact arithmetic in `Z_{2^64}[X] / (X^N + 1)`: polynomials are `&[u64]` of `N`
//! coefficients, constant term first, with wrapping (mod `2^64`) arithmetic.
//!
//! [`negacyclic_mul`] is the exact product the blind rotation's oracle mode and the key
//! generation use: Karatsuba down to 32 coefficients, then schoolbook, then the negacyclic
//! fold. No division is involved, so it is exact mod `2^64`.

use crate::error::Error;

/// Below this many coefficients Karatsuba falls back to schoolbook.
const KARATSUBA_THRESHOLD: usize = 32;

/// `out = X^k * input` in `Z_{2^64}[X] / (X^N + 1)`, for any `k` (taken mod `2N`).
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when `out` and `input` differ in length.
pub fn multiply_by_monomial(out: &mut [u64], input: &[u64], k: usize) -> Result<(), Error> {
    check_len("monomial product output", input.len(), out.len())?;
    multiply_by_monomial_unchecked(out, input, k);
    Ok(())
}

/// [`multiply_by_monomial`] without the length check (lengths must be equal).
#[inline(always)]
pub(crate) fn multiply_by_monomial_unchecked(out: &mut [u64], input: &[u64], k: usize) {
    monomial_terms(out, input, k, |o, term| *o = term);
}

/// `out += X^k input` in `Z_{2^64}[X] / (X^N + 1)` (lengths must be equal).
#[inline(always)]
pub(crate) fn add_monomial_product_unchecked(out: &mut [u64], input: &[u64], k: usize) {
    monomial_terms(out, input, k, |o, term| *o = o.wrapping_add(term));
}

/// Calls `combine(&mut out[j], t_j)` for every coefficient `t_j` of `X^k input` (lengths must be
/// equal).
#[inline(always)]
fn monomial_terms(out: &mut [u64], input: &[u64], k: usize, combine: impl Fn(&mut u64, u64)) {
    let n = input.len();
    if n == 0 {
        return;
    }
    let k = k % (2 * n);
    let (shift, negate) = if k >= n { (k - n, true) } else { (k, false) };
    // Coefficient i goes to i + shift; the top `shift` ones pass X^N and wrap around negated.
    let (low, high) = out.split_at_mut(shift);
    let (wrapped, kept) = input.split_at(n - shift);
    for (o, &c) in high.iter_mut().zip(wrapped) {
        combine(o, if negate { c.wrapping_neg() } else { c });
    }
    for (o, &c) in low.iter_mut().zip(kept) {
        combine(o, if negate { c } else { c.wrapping_neg() });
    }
}

/// `out = a * b` in `Z_{2^64}[X] / (X^N + 1)`, by schoolbook multiplication (`N^2` products).
/// The slow, obviously correct reference for [`negacyclic_mul`].
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when the three lengths differ.
pub fn negacyclic_mul_schoolbook(out: &mut [u64], a: &[u64], b: &[u64]) -> Result<(), Error> {
    check_len("negacyclic product operand", a.len(), b.len())?;
    check_len("negacyclic product output", a.len(), out.len())?;
    let n = a.len();
    out.fill(0);
    for (i, &ai) in a.iter().enumerate() {
        for (j, &bj) in b.iter().enumerate() {
            let p = ai.wrapping_mul(bj);
            if i + j < n {
                out[i + j] = out[i + j].wrapping_add(p);
            } else {
                out[i + j - n] = out[i + j - n].wrapping_sub(p);
            }
        }
    }
    Ok(())
}

/// `out = a * b` in `Z_{2^64}[X] / (X^N + 1)`, exactly, by Karatsuba (for power-of-two `N`;
/// other lengths fall back to schoolbook).
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when the three lengths differ.
pub fn negacyclic_mul(out: &mut [u64], a: &[u64], b: &[u64]) -> Result<(), Error> {
    check_len("negacyclic product operand", a.len(), b.len())?;
    check_len("negacyclic product output", a.len(), out.len())?;
    let mut multiplier = ExactMultiplier::new(a.len());
    multiplier.mul(out, a, b);
    Ok(())
}

/// Scratch space for repeated exact negacyclic products of one size.
#[derive(Debug, Clone)]
pub(crate) struct ExactMultiplier {
    n: usize,
    full: Vec<u64>,
    scratch: Vec<u64>,
}

impl ExactMultiplier {
    pub(crate) fn new(n: usize) -> Self {
        Self {
            n,
            full: vec![0; 2 * n],
            scratch: vec![0; 4 * n],
        }
    }

    /// `out = a * b` (all of length `n`).
    pub(crate) fn mul(&mut self, out: &mut [u64], a: &[u64], b: &[u64]) {
        self.full_product(a, b);
        let n = self.n;
        for (j, o) in out.iter_mut().enumerate() {
            *o = self.full[j].wrapping_sub(self.full[j + n]);
        }
    }

    /// `out += a * b` (all of length `n`).
    pub(crate) fn mul_add(&mut self, out: &mut [u64], a: &[u64], b: &[u64]) {
        self.full_product(a, b);
        let n = self.n;
        for (j, o) in out.iter_mut().enumerate() {
            *o = o.wrapping_add(self.full[j].wrapping_sub(self.full[j + n]));
        }
    }

    /// `self.full[0..2n] = a * b` in `Z_{2^64}[X]` (the last coefficient is 0).
    fn full_product(&mut self, a: &[u64], b: &[u64]) {
        debug_assert_eq!(a.len(), self.n);
        debug_assert_eq!(b.len(), self.n);
        if self.n.is_power_of_two() {
            karatsuba(&mut self.full, a, b, &mut self.scratch);
        } else {
            schoolbook_full(&mut self.full, a, b);
        }
    }
}

/// `out[0..2n] = a * b` (plain product, `out[2n-1] = 0`), `a` and `b` of power-of-two length
/// `n`; `scratch` holds at least `4n` words.
fn karatsuba(out: &mut [u64], a: &[u64], b: &[u64], scratch: &mut [u64]) {
    let n = a.len();
    if n <= KARATSUBA_THRESHOLD {
        schoolbook_full(out, a, b);
        return;
    }
    let h = n / 2;
    let (a0, a1) = a.split_at(h);
    let (b0, b1) = b.split_at(h);
    {
        let (z0, z2) = out.split_at_mut(n);
        karatsuba(z0, a0, b0, scratch);
        karatsuba(z2, a1, b1, scratch);
    }
    let (sa, rest) = scratch.split_at_mut(h);
    let (sb, rest) = rest.split_at_mut(h);
    let (z1, rest) = rest.split_at_mut(n);
    for i in 0..h {
        sa[i] = a0[i].wrapping_add(a1[i]);
        sb[i] = b0[i].wrapping_add(b1[i]);
    }
    karatsuba(z1, sa, sb, rest);
    // z1 -= z0 + z2, then out[h..h+n] += z1.
    for i in 0..n {
        z1[i] = z1[i].wrapping_sub(out[i]).wrapping_sub(out[n + i]);
    }
    for i in 0..n {
        out[h + i] = out[h + i].wrapping_add(z1[i]);
    }
}

/// `out[0..2n] = a * b` by schoolbook.
fn schoolbook_full(out: &mut [u64], a: &[u64], b: &[u64]) {
    let n = a.len();
    out[..2 * n].fill(0);
    for (i, &ai) in a.iter().enumerate() {
        let row = &mut out[i..i + n];
        for (o, &bj) in row.iter_mut().zip(b) {
            *o = o.wrapping_add(ai.wrapping_mul(bj));
        }
    }
}

/// The product of `factors`, or [`Error::SizeOverflow`] naming `what` when it overflows.
pub(crate) fn checked_size(what: &'static str, factors: &[usize]) -> Result<usize, Error> {
    factors
        .iter()
        .try_fold(1usize, |size, &f| size.checked_mul(f))
        .ok_or(Error::SizeOverflow { what })
}

/// `len` zero words, or [`Error::SizeOverflow`] naming `what` when they cannot be allocated.
pub(crate) fn zeroed_words(what: &'static str, len: usize) -> Result<Vec<u64>, Error> {
    let mut words = Vec::new();
    words
        .try_reserve_exact(len)
        .map_err(|_| Error::SizeOverflow { what })?;
    words.resize(len, 0);
    Ok(words)
}

pub(crate) fn check_len(what: &'static str, expected: usize, got: usize) -> Result<(), Error> {
    if expected == got {
        Ok(())
    } else {
        Err(Error::DimensionMismatch {
            what,
            expected,
            got,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed ^ (*seed >> 29)
    }

    #[test]
    fn karatsuba_matches_schoolbook() {
        let mut seed = 7;
        for n in [1usize, 2, 4, 32, 64, 128, 512, 48] {
            let a: Vec<u64> = (0..n).map(|_| lcg(&mut seed)).collect();
            let b: Vec<u64> = (0..n).map(|_| lcg(&mut seed)).collect();
            let mut fast = vec![0; n];
            let mut slow = vec![0; n];
            negacyclic_mul(&mut fast, &a, &b).unwrap();
            negacyclic_mul_schoolbook(&mut slow, &a, &b).unwrap();
            assert_eq!(fast, slow, "n = {n}");
        }
    }

    #[test]
    fn monomial_is_a_product_with_x_to_the_k() {
        let n = 16;
        let a: Vec<u64> = (1..=n as u64).collect();
        for k in [0, 1, 5, 15, 16, 17, 31, 32, 40] {
            let mut x_k = vec![0u64; n];
            let kk = k % (2 * n);
            if kk < n {
                x_k[kk] = 1;
            } else {
                x_k[kk - n] = u64::MAX;
            }
            let mut expected = vec![0; n];
            negacyclic_mul_schoolbook(&mut expected, &a, &x_k).unwrap();
            let mut got = vec![0; n];
            multiply_by_monomial(&mut got, &a, k).unwrap();
            assert_eq!(got, expected, "k = {k}");
            // The same product added to a polynomial with wrapping coefficients.
            let base: Vec<u64> = (0..n as u64).map(|i| u64::MAX - 3 * i).collect();
            let mut sum = base.clone();
            add_monomial_product_unchecked(&mut sum, &a, k);
            for ((s, b), e) in sum.iter().zip(&base).zip(&expected) {
                assert_eq!(*s, b.wrapping_add(*e), "k = {k}");
            }
        }
    }

    #[test]
    fn length_errors() {
        let mut out = vec![0; 3];
        assert!(matches!(
            negacyclic_mul(&mut out, &[1, 2], &[3, 4]),
            Err(Error::DimensionMismatch { .. })
        ));
        assert!(multiply_by_monomial(&mut out, &[1, 2], 1).is_err());
    }
}
