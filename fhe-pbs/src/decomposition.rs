//! The balanced signed gadget decomposition with rounding (tfhe-rs's `SignedDecomposer`).
//!
//! With base `B = 2^b` and `l` levels, a torus element `x` (a `u64`) is first rounded to the
//! closest multiple of `2^(64 - b l)`, ties (exactly half-way) rounding up, and wrapping to 0
//! at the top ([`closest_representable`]). The rounded value `x~ = V * 2^(64 - b l)` then
//! satisfies, mod `2^64`,
//!
//! ```text
//! x~ = sum_{j=1..l} d_j * 2^(64 - j b),    d_j in [-B/2, B/2]
//! ```
//!
//! where level 1 is the most significant. The digits are found from the least significant
//! level up: take the `b` low bits `r` of the running state `V` and shift them out; the digit
//! is `r` or `r - B` (adding a carry of 1 to the state). The carry is taken when `r > B/2`;
//! when `r = B/2` exactly (a tie), it is taken when the top bit (bit `b - 1`) of the
//! remaining, already shifted state is set, i.e. when the next more significant raw digit
//! would itself be `>= B/2`. This is the rule of tfhe-rs's `decompose_one_level`
//! (`tfhe/src/core_crypto/commons/math/decomposition/iter.rs`, used by
//! `SignedDecompositionIter`): its carry is bit `b - 1` of `((r - 1) | state) & r`. Below the
//! top level both `+B/2` and `-B/2` occur, equally often for uniform inputs (mean 0); at the
//! top level the remaining state is 0 (or a carry of 1), so for `b >= 2` a tie there always
//! stays `+B/2` (with one level, as in the PBS of both predefined sets, every tie is `+B/2`).
//! For uniform inputs every level has `E[d^2]` close to `(B^2 + 2) / 12`.
//!
//! Digits are returned as `i64`, most significant level first (`digits[0]` is level 1, of
//! weight `2^(64 - b)`). For `b = 64` the digit `+2^63` reads as `i64::MIN`, the same
//! residue mod `2^64`.

use crate::error::Error;
use crate::params::DecompositionParams;
use crate::polynomial::check_len;

/// `x` rounded to the closest multiple of `2^(64 - base_log * level_count)`, ties up, mod
/// `2^64` (so values just below `2^64` round to 0). Identity when all 64 bits are represented.
#[must_use]
pub fn closest_representable(x: u64, params: DecompositionParams) -> u64 {
    let bits = params.represented_bits();
    if bits >= 64 {
        return x;
    }
    let dropped = 64 - bits as u32;
    let round_bit = (x >> (dropped - 1)) & 1;
    ((x >> dropped) + round_bit).wrapping_shl(dropped)
}

/// The `level_count` digits of `x`, most significant level first (see the module docs).
#[must_use]
pub fn decompose(x: u64, params: DecompositionParams) -> Vec<i64> {
    let mut digits = vec![0; params.level_count.0];
    decompose_unchecked(x, params, &mut digits);
    digits
}

/// Writes the digits of `x` into `digits` (most significant level first).
///
/// # Errors
///
/// [`Error::DimensionMismatch`] unless `digits.len()` is the level count.
pub fn decompose_into(
    x: u64,
    params: DecompositionParams,
    digits: &mut [i64],
) -> Result<(), Error> {
    check_len("decomposition digits", params.level_count.0, digits.len())?;
    decompose_unchecked(x, params, digits);
    Ok(())
}

/// Decomposes every coefficient of `input` at once, level-major:
/// `out[j * input.len() + i]` is digit `j` (level `j + 1`) of `input[i]`.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] unless `out.len() == level_count * input.len()`.
pub fn decompose_slice(
    input: &[u64],
    params: DecompositionParams,
    out: &mut [i64],
) -> Result<(), Error> {
    check_len(
        "decomposed slice",
        params.level_count.0 * input.len(),
        out.len(),
    )?;
    decompose_slice_unchecked(input, params, out);
    Ok(())
}

/// [`decompose_slice`] without the length check.
pub(crate) fn decompose_slice_unchecked(
    input: &[u64],
    params: DecompositionParams,
    out: &mut [i64],
) {
    let len = input.len();
    let levels = params.level_count.0;
    let decomposer = Decomposer::new(params);
    let mut digits = [0i64; 64];
    for (i, &x) in input.iter().enumerate() {
        decomposer.decompose(x, &mut digits[..levels]);
        for (j, &d) in digits[..levels].iter().enumerate() {
            out[j * len + i] = d;
        }
    }
}

/// The digit loop; `digits.len()` must be the level count.
pub(crate) fn decompose_unchecked(x: u64, params: DecompositionParams, digits: &mut [i64]) {
    Decomposer::new(params).decompose(x, digits);
}

/// The decomposition's constants, computed once for many values.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Decomposer {
    /// `b`.
    base_log: u32,
    /// `64 - b l`: the dropped bits.
    dropped: u32,
    /// `2^b - 1` (all ones for `b = 64`).
    mask: u64,
    /// `2^(b - 1)`.
    half: u64,
}

impl Decomposer {
    pub(crate) fn new(params: DecompositionParams) -> Self {
        let b = params.base_log.0 as u32;
        Self {
            base_log: b,
            dropped: 64 - params.represented_bits() as u32,
            mask: if b >= 64 { u64::MAX } else { (1u64 << b) - 1 },
            half: 1u64 << (b - 1),
        }
    }

    /// Decomposes a whole slice level by level (a loop the compiler vectorizes): digit `j`
    /// of `input[t]` goes to `out[j * level_stride + t]`. `states` is scratch of
    /// `input.len()` words; `levels` must be the level count.
    pub(crate) fn decompose_levels(
        &self,
        input: &[u64],
        states: &mut [u64],
        out: &mut [i64],
        level_stride: usize,
        levels: usize,
    ) {
        let len = input.len();
        let b = self.base_log;
        if b >= 64 {
            // One level of 64 bits: the digit is x itself (+2^63 reading as -2^63).
            for (d, &x) in out[..len].iter_mut().zip(input) {
                *d = x as i64;
            }
            return;
        }
        let (mask, half) = (self.mask, self.half);
        let dropped = self.dropped;
        for (s, &x) in states.iter_mut().zip(input) {
            *s = if dropped == 0 {
                x
            } else {
                ((x >> dropped) + ((x >> (dropped - 1)) & 1)) & (u64::MAX >> dropped)
            };
        }
        for j in (0..levels).rev() {
            let row = &mut out[j * level_stride..j * level_stride + len];
            for (d, s) in row.iter_mut().zip(states.iter_mut()) {
                let raw = *s & mask;
                let rest = *s >> b;
                let carry =
                    u64::from(raw > half) | (u64::from(raw == half) & (rest >> (b - 1)) & 1);
                *s = rest + carry;
                *d = raw.wrapping_sub(carry << b) as i64;
            }
        }
    }

    /// Writes the digits of `x` into `digits` (most significant level first); `digits.len()`
    /// must be the level count.
    #[inline]
    pub(crate) fn decompose(&self, x: u64, digits: &mut [i64]) {
        let b = self.base_log;
        let mut state = if self.dropped == 0 {
            x
        } else {
            // Round to the closest multiple of 2^dropped (ties up), keeping the top b l bits;
            // a carry into bit b l is 2^64, i.e. 0.
            ((x >> self.dropped) + ((x >> (self.dropped - 1)) & 1)) & (u64::MAX >> self.dropped)
        };
        for digit in digits.iter_mut().rev() {
            let raw = state & self.mask;
            state = state.checked_shr(b).unwrap_or(0);
            let carry =
                u64::from(raw > self.half || (raw == self.half && (state >> (b - 1)) & 1 == 1));
            state += carry;
            *digit = raw.wrapping_sub(carry.checked_shl(b).unwrap_or(0)) as i64;
        }
    }
}

/// `sum_j digits[j] * 2^(64 - (j + 1) b)` mod `2^64`: the inverse of [`decompose`] on
/// rounded values.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] unless `digits.len()` is the level count.
pub fn recompose(digits: &[i64], params: DecompositionParams) -> Result<u64, Error> {
    check_len("decomposition digits", params.level_count.0, digits.len())?;
    let b = params.base_log.0;
    Ok(digits.iter().enumerate().fold(0u64, |acc, (j, &d)| {
        let weight = 1u64 << (64 - (j + 1) * b);
        acc.wrapping_add((d as u64).wrapping_mul(weight))
    }))
}
