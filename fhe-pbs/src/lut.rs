//! Lookup tables for the programmable bootstrap (tfhe-rs's `generate_lookup_table`).
//!
//! With `p` messages, polynomial size `N`, `delta = 2^63 / p` and `box = N / p`:
//! coefficient `t` first gets `f(t / box) * delta` (box `m` is the `box` coefficients
//! `m box .. (m + 1) box`); then the first `box / 2` coefficients are negated and the whole
//! polynomial is rotated left by `box / 2`, so they end up at the top. Result:
//!
//! ```text
//! lut[t] = f((t + box/2) / box) * delta      for t <  N - box/2
//! lut[t] = -f(0) * delta                      for t >= N - box/2
//! ```
//!
//! After the blind rotation by `-phase~` (`phase~` = the modulus-switched phase, about
//! `m * 2N / (2p) = m box`, plus noise), coefficient 0 is `lut[phase~]`, or `-lut[phase~ - N]`
//! past `N` (the negacyclic wrap): in both cases `f(m) * delta` as long as the noise stays
//! within half a box. Integer-exact.

use crate::error::Error;
use crate::params::{Parameters, PolynomialSize};

/// A lookup table: the body polynomial (`N` words) of the trivial GLWE accumulator.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LookupTable {
    polynomial: Vec<u64>,
    plaintext_modulus: u64,
}

impl LookupTable {
    /// The table of `f: [0, p) -> [0, p)`.
    ///
    /// # Errors
    ///
    /// [`Error::LutOutputOutOfRange`] when some `f(m) >= p`.
    pub fn new(params: &Parameters, f: impl Fn(u64) -> u64) -> Result<Self, Error> {
        let values: Vec<u64> = (0..params.plaintext_modulus()).map(f).collect();
        Self::from_values(params, &values)
    }

    /// The table with `f(m) = values[m]`.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] unless there are `p` values;
    /// [`Error::LutOutputOutOfRange`] when a value is `>= p`.
    pub fn from_values(params: &Parameters, values: &[u64]) -> Result<Self, Error> {
        let polynomial =
            lut_polynomial(params.polynomial_size(), params.plaintext_modulus(), values)?;
        Ok(Self {
            polynomial,
            plaintext_modulus: params.plaintext_modulus(),
        })
    }

    /// The `N` coefficients.
    #[must_use]
    pub fn polynomial(&self) -> &[u64] {
        &self.polynomial
    }

    /// `N`.
    #[must_use]
    pub fn polynomial_size(&self) -> PolynomialSize {
        PolynomialSize(self.polynomial.len())
    }

    /// `p`.
    #[must_use]
    pub fn plaintext_modulus(&self) -> u64 {
        self.plaintext_modulus
    }
}

/// The lookup-table polynomial of `values` (`f(m) = values[m]`, see the module docs).
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `p` is a power of two from 2 to `N` and `N` a power of
/// two; [`Error::DimensionMismatch`] unless there are `p` values;
/// [`Error::LutOutputOutOfRange`] when a value is `>= p`.
pub fn lut_polynomial(
    polynomial_size: PolynomialSize,
    plaintext_modulus: u64,
    values: &[u64],
) -> Result<Vec<u64>, Error> {
    let n = polynomial_size.0;
    let p = plaintext_modulus;
    if !n.is_power_of_two() {
        return Err(Error::InvalidParameter {
            name: "polynomial_size",
            reason: format!("N = {n} must be a power of two"),
        });
    }
    if !p.is_power_of_two() || p < 2 || p > n as u64 {
        return Err(Error::InvalidParameter {
            name: "plaintext_modulus",
            reason: format!("p = {p} must be a power of two from 2 to N = {n}"),
        });
    }
    crate::polynomial::check_len("lookup table values", p as usize, values.len())?;
    if let Some((input, &output)) = values.iter().enumerate().find(|&(_, &v)| v >= p) {
        return Err(Error::LutOutputOutOfRange {
            input: input as u64,
            output,
            modulus: p,
        });
    }
    let delta = (1u64 << 63) / p;
    let box_size = n / p as usize;
    let mut lut: Vec<u64> = (0..n).map(|t| values[t / box_size] * delta).collect();
    let half_box = box_size / 2;
    for c in &mut lut[..half_box] {
        *c = c.wrapping_neg();
    }
    lut.rotate_left(half_box);
    Ok(lut)
}
