//! The rounding modulus switch from `2^64` to `2N`.
//!
//! `x~ = round(x * 2N / 2^64) mod 2N`, computed exactly as
//! `((x >> (64 - log2(2N) - 1)) + 1) >> 1`, then reduced mod `2N`: keep one bit more than
//! needed, add one half, drop it. Ties (exactly half-way) round up, and values within half a
//! step of `2^64` wrap to 0. Integer-exact.

use crate::error::Error;
use crate::lwe::LweCiphertext;
use crate::params::PolynomialSize;

/// `round(x * 2N / 2^64) mod 2N`.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `N` is a power of two from 1 to `2^62`.
pub fn modulus_switch(x: u64, polynomial_size: PolynomialSize) -> Result<usize, Error> {
    let log2_2n = log2_2n(polynomial_size)?;
    Ok(modulus_switch_unchecked(x, log2_2n))
}

/// [`modulus_switch`] applied to every word of a ciphertext (mask then body).
///
/// # Errors
///
/// As [`modulus_switch`].
pub fn modulus_switch_lwe(
    ciphertext: &LweCiphertext,
    polynomial_size: PolynomialSize,
) -> Result<Vec<usize>, Error> {
    let log2_2n = log2_2n(polynomial_size)?;
    Ok(ciphertext
        .as_slice()
        .iter()
        .map(|&x| modulus_switch_unchecked(x, log2_2n))
        .collect())
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

/// The switch for `2N = 2^log2_2n`, `1 <= log2_2n <= 63`.
pub(crate) fn modulus_switch_unchecked(x: u64, log2_2n: u32) -> usize {
    let switched = ((x >> (64 - log2_2n - 1)) + 1) >> 1;
    (switched & ((1u64 << log2_2n) - 1)) as usize
}
