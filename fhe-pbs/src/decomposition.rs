//! The balanced signed gadget decomposition with rounding, bit for bit tfhe-rs 1.8's
//! `SignedDecomposer` (`tfhe/src/core_crypto/commons/math/decomposition/`).
//!
//! With base `B = 2^b` and `l` levels, a torus element `x` (a `u64`) is first rounded to the
//! closest multiple of `2^(64 - b l)`, ties (exactly half-way) rounding up, and wrapping to 0
//! at the top ([`closest_representable`]): `V = round(x / 2^(64 - b l)) mod B^l`. The
//! decomposition writes `V` as
//!
//! ```text
//! V = sum_{j=1..l} d_j * B^(l - j)  (mod B^l),    d_j in [-B/2, B/2]
//! ```
//!
//! where level 1 is the most significant, so that `x~ = V * 2^(64 - b l)` is
//! `sum_j d_j * 2^(64 - j b)` mod `2^64`. The rules, as tfhe-rs's `init_decomposer_state`
//! and `decompose_one_level`:
//!
//! 1. **Balance the whole value first.** `V` is read as a signed state `S = V - B^l` when
//!    `V > B^l / 2`, or when `V = B^l / 2` and the rounding bit (bit `63 - b l` of `x`, the
//!    one that decided the rounding) is set; else `S = V`.
//! 2. **Digits from the least significant level up.** Take the `b` low bits `r` of `S` and
//!    shift them out (an arithmetic shift: `S` may be negative); the digit is `r`, or `r - B`
//!    with a carry of 1 added to `S`. The carry is taken when `r > B/2`, and on a tie
//!    (`r = B/2`) when bit `b - 1` of the shifted state is set (the next raw digit is itself
//!    `>= B/2`, or, at the top level, `S` was negative).
//!
//! So below the top level both `+B/2` and `-B/2` occur on ties; at the top level a tie is
//! `-B/2` exactly when step 1 balanced the value (before tfhe-rs balanced the state, a top
//! tie was always `+B/2`; `tests/tfhe_rs.rs` checks the digits against tfhe-rs 1.8.2's). tfhe-rs requires
//! `b l < 64`; with `b l = 64` there is no rounding bit, and this crate reads `V = x` as a
//! signed state (the same residues, top digit `-2^(b-1)` on the tie `x = 2^63`).
//!
//! Digits are returned as `i64`, most significant level first (`digits[0]` is level 1, of
//! weight `2^(64 - b)`). For `b = 64` the digit `+2^63` reads as `i64::MIN`, the same
//! residue mod `2^64`. For uniform inputs every level has `E[d^2]` close to `(B^2 + 2) / 12`.

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
    let mut digits = vec![0; params.level_count().0];
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
    check_len("decomposition digits", params.level_count().0, digits.len())?;
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
        params.level_count().0 * input.len(),
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
    let levels = params.level_count().0;
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
        let b = params.base_log().0 as u32;
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
    #[inline(always)]
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
        let Some(last) = levels.checked_sub(1) else {
            return;
        };
        // The least significant level straight from the input, then the others from `states`.
        let row = &mut out[last * level_stride..last * level_stride + len];
        for ((d, s), &x) in row.iter_mut().zip(&mut states[..len]).zip(input) {
            *s = self.balanced_state(x);
            *d = self.next_digit(s);
        }
        for j in (0..last).rev() {
            let row = &mut out[j * level_stride..j * level_stride + len];
            for (d, s) in row.iter_mut().zip(&mut states[..len]) {
                *d = self.next_digit(s);
            }
        }
    }

    /// Step 1 of the module docs: `x` rounded to `V` and balanced, as a two's-complement
    /// state.
    #[inline(always)]
    fn balanced_state(&self, x: u64) -> u64 {
        let dropped = self.dropped;
        if dropped == 0 {
            return x;
        }
        let rounding_bit = (x >> (dropped - 1)) & 1;
        let value = ((x >> dropped) + rounding_bit) & (u64::MAX >> dropped);
        let half = 1u64 << (63 - dropped);
        let balance = value > half || (value == half && rounding_bit == 1);
        value.wrapping_sub(u64::from(balance) << (64 - dropped))
    }

    /// Step 2 of the module docs: the next digit from the least significant level up, for
    /// `b < 64`.
    #[inline(always)]
    fn next_digit(&self, state: &mut u64) -> i64 {
        let b = self.base_log;
        let raw = *state & self.mask;
        let rest = ((*state as i64) >> b) as u64;
        let carry =
            u64::from(raw > self.half) | (u64::from(raw == self.half) & (rest >> (b - 1)) & 1);
        *state = rest.wrapping_add(carry);
        raw.wrapping_sub(carry << b) as i64
    }

    /// Writes the digits of `x` into `digits` (most significant level first); `digits.len()`
    /// must be the level count.
    #[inline]
    pub(crate) fn decompose(&self, x: u64, digits: &mut [i64]) {
        if self.base_log >= 64 {
            // One level of 64 bits: the digit is x itself (+2^63 reading as -2^63).
            if let Some(digit) = digits.first_mut() {
                *digit = x as i64;
            }
            return;
        }
        let mut state = self.balanced_state(x);
        for digit in digits.iter_mut().rev() {
            *digit = self.next_digit(&mut state);
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
    check_len("decomposition digits", params.level_count().0, digits.len())?;
    let b = params.base_log().0;
    Ok(digits.iter().enumerate().fold(0u64, |acc, (j, &d)| {
        let weight = 1u64 << (64 - (j + 1) * b);
        acc.wrapping_add((d as u64).wrapping_mul(weight))
    }))
}
