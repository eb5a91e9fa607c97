//! The modulus switch from `2^64` to `2N` of a blind rotation's input, in both of tfhe-rs
//! 1.8's `ModulusSwitchType`s that this crate runs ([`ModulusSwitchType`]).
//!
//! Every word is switched by rounding, `x~ = round(x * 2N / 2^64) mod 2N`, computed exactly as
//! `((x >> (64 - log2(2N) - 1)) + 1) >> 1`, then reduced mod `2N`: keep one bit more than
//! needed, add one half, drop it. Ties (exactly half-way) round up, and values within half a
//! step of `2^64` wrap to 0 (tfhe-rs's `modulus_switch`).
//!
//! With [`ModulusSwitchType::CenteredMeanNoiseReduction`] (tfhe-rs's
//! `lwe_ciphertext_centered_binary_modulus_switch`) the mask is switched so, but the body is
//! first corrected by [`centered_body_correction`]: the rounding error `e_i` of each mask word
//! (as a signed integer, `round(a_i) - a_i` on the 64-bit torus) contributes `e_i s_i` to the
//! phase, whose mean over a uniform binary key is `e_i / 2`; adding `sum_i e_i / 2` to the body
//! centres that error, and subtracting half a step of `2N` (`2^(63 - log2(2N))`) centres the
//! body's own rounding inside the lookup table's boxes. The halves are taken as tfhe-rs takes
//! them: `h_i = e_i / 2` truncated toward zero, `r_i = 2 h_i - e_i` in `{-1, 0, 1}`, and the
//! correction is `sum h_i - (sum r_i) / 2 - 2^(63 - log2(2N))` (the last division truncated
//! too), mod `2^64`. Integer-exact.

use crate::error::Error;
use crate::lwe::LweCiphertext;
use crate::params::PolynomialSize;

/// How a bootstrap's input is switched from `2^64` to `2N` (tfhe-rs's `ModulusSwitchType`,
/// less its drift-technique variant, which needs a key of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModulusSwitchType {
    /// Every word rounded (tfhe-rs's `Standard`).
    Standard,
    /// The mask rounded, the body corrected first (see the module docs): what tfhe-rs 1.4 and
    /// later run for `PARAM_MESSAGE_2_CARRY_2_KS_PBS_TUNIFORM_2M128`, whose failure probability
    /// assumes it.
    CenteredMeanNoiseReduction,
}

/// `round(x * 2N / 2^64) mod 2N`.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `N` is a power of two from 1 to `2^62`.
pub fn modulus_switch(x: u64, polynomial_size: PolynomialSize) -> Result<usize, Error> {
    let log2_2n = log2_2n(polynomial_size)?;
    Ok(modulus_switch_unchecked(x, log2_2n))
}

/// The switched words of a ciphertext (mask then body), as the blind rotation reads them.
///
/// # Errors
///
/// As [`modulus_switch`].
pub fn modulus_switch_lwe(
    ciphertext: &LweCiphertext,
    polynomial_size: PolynomialSize,
    switch_type: ModulusSwitchType,
) -> Result<Vec<usize>, Error> {
    let log2_2n = log2_2n(polynomial_size)?;
    Ok(switch_lwe_unchecked(
        ciphertext.as_slice(),
        log2_2n,
        switch_type,
    ))
}

/// The monomial degrees of one group of a multi-bit bootstrap (tfhe-rs's
/// `modulus_switch_multi_bit`): for each pattern `t` from 1 to `2^g - 1`, the sum (mod
/// `2^64`) of the group's mask words `a_j` whose bit `g - 1 - j` is set in `t`, then switched
/// to `2N` ([`modulus_switch`]). `group` holds the `g` mask words.
///
/// # Errors
///
/// As [`modulus_switch`]; [`Error::InvalidParameter`] unless `group` has 2 to 4 words.
pub fn multi_bit_degrees(
    group: &[u64],
    polynomial_size: PolynomialSize,
) -> Result<Vec<usize>, Error> {
    let log2_2n = log2_2n(polynomial_size)?;
    if !(2..=4).contains(&group.len()) {
        return Err(Error::InvalidParameter {
            name: "grouping_factor",
            reason: format!("g = {} must be 2, 3 or 4", group.len()),
        });
    }
    let mut degrees = vec![0; 1 << group.len()];
    multi_bit_degrees_unchecked(group, log2_2n, &mut degrees);
    degrees.remove(0);
    Ok(degrees)
}

/// [`multi_bit_degrees`] into `degrees` (`2^g` entries; entry 0, the empty pattern, is 0).
pub(crate) fn multi_bit_degrees_unchecked(group: &[u64], log2_2n: u32, degrees: &mut [usize]) {
    let g = group.len();
    for (pattern, degree) in degrees.iter_mut().enumerate() {
        let sum = group
            .iter()
            .enumerate()
            .filter(|(j, _)| (pattern >> (g - 1 - j)) & 1 == 1)
            .fold(0u64, |sum, (_, &a)| sum.wrapping_add(a));
        *degree = modulus_switch_unchecked(sum, log2_2n);
    }
}

/// What [`ModulusSwitchType::CenteredMeanNoiseReduction`] adds to the body of a ciphertext
/// with this `mask` before switching it (see the module docs).
///
/// # Errors
///
/// As [`modulus_switch`].
pub fn centered_body_correction(
    mask: &[u64],
    polynomial_size: PolynomialSize,
) -> Result<u64, Error> {
    Ok(centered_correction_unchecked(
        mask,
        log2_2n(polynomial_size)?,
    ))
}

pub(crate) fn log2_2n(polynomial_size: PolynomialSize) -> Result<u32, Error> {
    let n = polynomial_size.0;
    if !n.is_power_of_two() || n > 1 << 62 {
        return Err(Error::InvalidParameter {
            name: "polynomial_size",
            reason: format!("N = {n} must be a power of two from 1 to 2^62"),
        });
    }
    Ok(n.trailing_zeros() + 1)
}

/// The switch for `2N = 2^log2_2n`, `1 <= log2_2n <= 63`: the top `log2_2n` bits plus the
/// rounding bit below them (the same as `((x >> (63 - log2_2n)) + 1) >> 1`, which overflows
/// for `log2_2n = 63`).
pub(crate) fn modulus_switch_unchecked(x: u64, log2_2n: u32) -> usize {
    let switched = (x >> (64 - log2_2n)) + ((x >> (63 - log2_2n)) & 1);
    (switched & ((1u64 << log2_2n) - 1)) as usize
}

/// [`modulus_switch_lwe`] of the words of a ciphertext (at least the body).
pub(crate) fn switch_lwe_unchecked(
    words: &[u64],
    log2_2n: u32,
    switch_type: ModulusSwitchType,
) -> Vec<usize> {
    let mut switched: Vec<usize> = words
        .iter()
        .map(|&x| modulus_switch_unchecked(x, log2_2n))
        .collect();
    if let (ModulusSwitchType::CenteredMeanNoiseReduction, Some((&body, mask))) =
        (switch_type, words.split_last())
    {
        let corrected = body.wrapping_add(centered_correction_unchecked(mask, log2_2n));
        if let Some(last) = switched.last_mut() {
            *last = modulus_switch_unchecked(corrected, log2_2n);
        }
    }
    switched
}

fn centered_correction_unchecked(mask: &[u64], log2_2n: u32) -> u64 {
    let dropped = 64 - log2_2n;
    let mut halves = 0u64;
    let mut halving_errors = 0i64;
    for &a in mask {
        let rounded = (modulus_switch_unchecked(a, log2_2n) as u64) << dropped;
        let error = rounded.wrapping_sub(a) as i64;
        let half = error / 2;
        halves = halves.wrapping_add(half as u64);
        halving_errors += 2 * half - error;
    }
    halves
        .wrapping_sub((halving_errors / 2) as u64)
        .wrapping_sub(1u64 << (dropped - 1))
}
