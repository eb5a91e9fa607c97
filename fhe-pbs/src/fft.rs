//! The f64 negacyclic FFT of the fast blind-rotation mode, and the Fourier bootstrap key.
//!
//! # Transform
//!
//! `R[X] / (X^N + 1)` maps onto `C[X] / (X^{N/2} - i)` by `a ↦ sum_{j < N/2} (a_j + i a_{j+N/2})
//! X^j` (injective on real polynomials: the other factor `X^{N/2} + i` carries the complex
//! conjugate). Substituting `X = w Y` with `w = exp(i pi / N)` (so `w^{N/2} = i`) turns that
//! ring into the cyclic `C[Y] / (Y^{N/2} - 1)`, which an `N/2`-point complex DFT diagonalizes.
//! So the forward transform is: twist `c_j = (a_j + i a_{j+N/2}) w^j`, then an `N/2`-point FFT;
//! products are pointwise; the backward transform is the inverse FFT, the untwist
//! `w^{-j} / (N/2)`, and the real and imaginary parts are coefficients `j` and `j + N/2`.
//!
//! The FFTs are `rustfft`'s (MIT/Apache-2.0, pure Rust, with AVX/SSE/NEON kernels chosen at run
//! time): a mature mixed-radix implementation whose accuracy is that of a standard
//! Cooley–Tukey FFT, much faster than what we would write ourselves, and with no `unsafe` on
//! our side. The twiddles `w^j` are computed directly with `sin_cos` for each `j`.
//!
//! # Precision
//!
//! Torus coefficients enter as signed 64-bit integers (`u64` read as `i64`) rounded to f64
//! (53 bits, an error up to `2^10`); the decomposed digits (`|d| <= B/2`) enter exactly. As in
//! tfhe-rs's 64-bit FFT, nothing is split: a coefficient of a product of a digit polynomial and
//! a key polynomial is about `sqrt(N) * B/2 * 2^63`, for instance `2^90` with `N = 2048` and
//! `B = 2^23`, so its f64 rounding errors are near `2^90 * 2^-53 * log2(N)` (a few `2^40`),
//! far below `delta = 2^59` for `p = 16`. The backward transform rounds each coefficient to
//! the nearest integer and reduces it mod `2^64` exactly (in floating point, without error,
//! since the value can exceed `2^64`), which is the two's-complement wrap. The test
//! `fast_and_exact_blind_rotations_agree` in `tests/bootstrap.rs` measures the resulting
//! distance to the exact (integer) blind rotation.

use std::fmt;
use std::sync::Arc;

use rayon::prelude::*;
use rustfft::num_complex::Complex64;
use rustfft::{Fft, FftPlanner};

use crate::bootstrap_key::BootstrapKey;
use crate::error::Error;
use crate::params::PolynomialSize;
use crate::polynomial::check_len;

/// Negacyclic transforms of one polynomial size (see the module docs).
#[derive(Clone)]
pub struct NegacyclicFft {
    polynomial_size: usize,
    forward: Arc<dyn Fft<f64>>,
    inverse: Arc<dyn Fft<f64>>,
    twist: Vec<Complex64>,
    untwist: Vec<Complex64>,
    scratch_len: usize,
}

impl fmt::Debug for NegacyclicFft {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NegacyclicFft")
            .field("polynomial_size", &self.polynomial_size)
            .finish_non_exhaustive()
    }
}

impl NegacyclicFft {
    /// Plans the transforms for polynomials of `N` coefficients.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `N` is a power of two, at least 2.
    pub fn new(polynomial_size: PolynomialSize) -> Result<Self, Error> {
        let n = polynomial_size.0;
        if !n.is_power_of_two() || n < 2 {
            return Err(Error::InvalidParameter {
                name: "polynomial_size",
                reason: format!("N = {n} must be a power of two, at least 2"),
            });
        }
        let half = n / 2;
        let mut planner = FftPlanner::<f64>::new();
        let forward = planner.plan_fft_forward(half);
        let inverse = planner.plan_fft_inverse(half);
        let scratch_len = forward
            .get_inplace_scratch_len()
            .max(inverse.get_inplace_scratch_len());
        let scale = 1.0 / half as f64;
        let (twist, untwist) = (0..half)
            .map(|j| {
                let (sin, cos) = (std::f64::consts::PI * j as f64 / n as f64).sin_cos();
                (
                    Complex64::new(cos, sin),
                    Complex64::new(cos * scale, -sin * scale),
                )
            })
            .unzip();
        Ok(Self {
            polynomial_size: n,
            forward,
            inverse,
            twist,
            untwist,
            scratch_len,
        })
    }

    /// `N`.
    #[must_use]
    pub fn polynomial_size(&self) -> PolynomialSize {
        PolynomialSize(self.polynomial_size)
    }

    /// `N / 2`: complex values per transformed polynomial.
    #[must_use]
    pub fn fourier_len(&self) -> usize {
        self.polynomial_size / 2
    }

    /// The approximate negacyclic product `a * b` mod `2^64` through the FFT (both operands read
    /// as signed `i64` coefficients). Exact only while the products are small enough for f64;
    /// for checking the transform.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] unless both have `N` coefficients.
    pub fn negacyclic_mul(&self, a: &[u64], b: &[u64]) -> Result<Vec<u64>, Error> {
        check_len("FFT operand length", self.polynomial_size, a.len())?;
        check_len("FFT operand length", self.polynomial_size, b.len())?;
        let mut scratch = self.make_scratch();
        let mut fa = vec![Complex64::default(); self.fourier_len()];
        let mut fb = fa.clone();
        self.forward_u64(a, &mut fa, &mut scratch);
        self.forward_u64(b, &mut fb, &mut scratch);
        for (x, y) in fa.iter_mut().zip(&fb) {
            *x *= y;
        }
        let mut out = vec![0u64; self.polynomial_size];
        self.backward_add(&mut fa, &mut out, &mut scratch);
        Ok(out)
    }

    pub(crate) fn make_scratch(&self) -> Vec<Complex64> {
        vec![Complex64::default(); self.scratch_len]
    }

    /// Forward transform of a torus polynomial (coefficients read as `i64`).
    #[inline(always)]
    pub(crate) fn forward_u64(
        &self,
        input: &[u64],
        out: &mut [Complex64],
        scratch: &mut [Complex64],
    ) {
        let (low, high) = input.split_at(self.fourier_len());
        for (((o, &w), &re), &im) in out.iter_mut().zip(&self.twist).zip(low).zip(high) {
            *o = Complex64::new(re as i64 as f64, im as i64 as f64) * w;
        }
        self.forward.process_with_scratch(out, scratch);
    }

    /// Forward transform of a polynomial of signed digits.
    #[inline(always)]
    pub(crate) fn forward_i64(
        &self,
        input: &[i64],
        out: &mut [Complex64],
        scratch: &mut [Complex64],
    ) {
        let (low, high) = input.split_at(self.fourier_len());
        for (((o, &w), &re), &im) in out.iter_mut().zip(&self.twist).zip(low).zip(high) {
            *o = Complex64::new(re as f64, im as f64) * w;
        }
        self.forward.process_with_scratch(out, scratch);
    }

    /// `out += backward(input)`, each coefficient rounded to an integer and reduced mod `2^64`;
    /// `input` is overwritten.
    #[inline(always)]
    pub(crate) fn backward_add(
        &self,
        input: &mut [Complex64],
        out: &mut [u64],
        scratch: &mut [Complex64],
    ) {
        self.inverse.process_with_scratch(input, scratch);
        let (low, high) = out.split_at_mut(self.fourier_len());
        for (((&x, &w), lo), hi) in input.iter().zip(&self.untwist).zip(low).zip(high) {
            let v = x * w;
            *lo = lo.wrapping_add(wrap_f64(v.re));
            *hi = hi.wrapping_add(wrap_f64(v.im));
        }
    }
}

/// `round(x)` (ties to even) mod `2^64`, exactly, for any finite `x`.
///
/// Read off the bits of `x = ±M 2^e` (`M` the 53-bit significand, `e` the exponent less 52):
/// for `e >= 0` the value is the integer `M 2^e`, whose residue is `M << e` (0 from `e = 64`
/// on); for `e < 0` it is `M >> -e` rounded by the bits shifted out (up when they exceed one
/// half, or equal it and the quotient is odd; 0 from `-e = 54` on, where `|x| < 1/2`); the sign
/// negates modulo `2^64`. Only integer operations without branches, so that the loops over a
/// polynomial vectorize (a float-to-integer cast saturates in Rust, which kept them scalar).
#[inline(always)]
fn wrap_f64(x: f64) -> u64 {
    let bits = x.to_bits();
    let biased = (bits >> 52) & 0x7ff;
    let fraction = bits & ((1 << 52) - 1);
    // Subnormals (biased exponent 0) have no implicit bit and the exponent of biased 1.
    let significand = fraction | (u64::from(biased != 0) << 52);
    let exponent = biased.max(1) as i64 - 1075;
    let magnitude = if exponent >= 0 {
        let shift = exponent as u64;
        if shift < 64 { significand << shift } else { 0 }
    } else {
        let shift = exponent.unsigned_abs();
        if shift < 54 {
            let quotient = significand >> shift;
            let rest = significand & ((1 << shift) - 1);
            let half = 1u64 << (shift - 1);
            let up = rest > half || (rest == half && quotient & 1 == 1);
            quotient + u64::from(up)
        } else {
            0
        }
    };
    if bits >> 63 == 1 {
        magnitude.wrapping_neg()
    } else {
        magnitude
    }
}

#[cfg(test)]
mod tests {
    use super::wrap_f64;

    #[test]
    fn wrap_f64_is_the_residue_of_the_rounded_value() {
        let cases: [f64; 12] = [
            0.0,
            -0.4,
            2.5,
            -3.0,
            2f64.powi(63),
            -(2f64.powi(63)),
            2f64.powi(64),
            1.3e19,
            -1.3e19,
            2f64.powi(90),
            -3.7e28,
            4.4e30,
        ];
        for x in cases {
            let expected = (x.round_ties_even() as i128) as u64;
            assert_eq!(wrap_f64(x), expected, "x = {x:e}");
        }
        // Beyond i128: every f64 from 2^117 on is a multiple of 2^64.
        for x in [2f64.powi(117), 3.0 * 2f64.powi(200), f64::MAX] {
            assert_eq!(wrap_f64(x), 0, "x = {x:e}");
            assert_eq!(wrap_f64(-x), 0, "x = {:e}", -x);
        }
        // 2^63 + 2^11, exact in an f64, keeps its low bits (and its negation wraps).
        assert_eq!(wrap_f64(2f64.powi(63) + 2048.0), (1u64 << 63) + 2048);
        assert_eq!(
            wrap_f64(-(2f64.powi(63) + 2048.0)),
            ((1u64 << 63) + 2048).wrapping_neg()
        );
        // Subnormals and the smallest normals round to 0; halves round to even.
        for x in [5e-324, f64::MIN_POSITIVE, -5e-324, 0.5, -0.5] {
            assert_eq!(wrap_f64(x), 0, "x = {x:e}");
        }
        assert_eq!(wrap_f64(1.5), 2);
        assert_eq!(wrap_f64(-2.5), 2u64.wrapping_neg());
        // Random magnitudes from 2^-2 to 2^110, both signs, and half-integers.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..100_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let mantissa = (state >> 11) as f64 / (1u64 << 53) as f64;
            let x =
                (mantissa + 0.5) * 2f64.powi((i % 113) - 2) * if i % 2 == 0 { 1.0 } else { -1.0 };
            let x = if i % 7 == 0 { x.trunc() + 0.5 } else { x };
            assert_eq!(
                wrap_f64(x),
                (x.round_ties_even() as i128) as u64,
                "x = {x:e}"
            );
        }
    }
}

/// A bootstrap key in the Fourier domain: every polynomial of the [`BootstrapKey`] replaced
/// by its `N/2` complex values ([`NegacyclicFft`]), with each GGSW's level matrices in the
/// order the blind rotation takes the digits, the most significant (level 1) first (the
/// standard key stores them least significant first, as tfhe-rs does). So polynomial `c` of
/// row `r` of level `j` (1-based) of GGSW `i` is
/// `as_slice()[q N/2 .. (q + 1) N/2]` with `q = ((i l + j - 1) (k + 1) + r) (k + 1) + c`.
#[derive(Clone)]
pub struct FourierBootstrapKey {
    data: Vec<Complex64>,
    fft: NegacyclicFft,
    ggsw_len: usize,
}

impl fmt::Debug for FourierBootstrapKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FourierBootstrapKey")
            .field("polynomial_size", &self.fft.polynomial_size)
            .field("complex_values", &self.data.len())
            .finish_non_exhaustive()
    }
}

impl FourierBootstrapKey {
    /// Transforms a standard-domain key (in parallel over its GGSW ciphertexts).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless the key's `N` is a power of two, at least 2.
    pub fn new(key: &BootstrapKey) -> Result<Self, Error> {
        let fft = NegacyclicFft::new(key.polynomial_size())?;
        let n = key.polynomial_size().0;
        let half = n / 2;
        let polys = key.as_slice().len() / n;
        let mut data = vec![Complex64::default(); polys * half];
        let ggsw_polys = key.ggsw_len() / n;
        let level_polys = ggsw_polys / key.decomposition().level_count().0;
        data.par_chunks_exact_mut(ggsw_polys * half)
            .zip(key.as_slice().par_chunks_exact(ggsw_polys * n))
            .for_each_init(
                || fft.make_scratch(),
                |scratch, (out, ggsw)| ggsw_to_fourier(&fft, ggsw, out, level_polys, scratch),
            );
        Ok(Self {
            data,
            fft,
            ggsw_len: ggsw_polys * half,
        })
    }

    /// The complex values, in the documented layout.
    #[must_use]
    pub fn as_slice(&self) -> &[Complex64] {
        &self.data
    }

    /// The transforms used.
    #[must_use]
    pub fn fft(&self) -> &NegacyclicFft {
        &self.fft
    }

    /// GGSW `i` in the Fourier domain (`i < n`, else an empty slice).
    pub(crate) fn ggsw(&self, i: usize) -> &[Complex64] {
        self.data
            .get(i * self.ggsw_len..(i + 1) * self.ggsw_len)
            .unwrap_or(&[])
    }
}

/// One standard-domain GGSW (`level_polys` polynomials a level, least significant level first)
/// into `out` in the Fourier layout of [`FourierBootstrapKey`] (most significant level first).
#[inline(always)]
pub(crate) fn ggsw_to_fourier(
    fft: &NegacyclicFft,
    ggsw: &[u64],
    out: &mut [Complex64],
    level_polys: usize,
    scratch: &mut [Complex64],
) {
    let n = fft.polynomial_size;
    let half = n / 2;
    let levels_out = out.chunks_exact_mut(level_polys * half);
    let levels_in = ggsw.chunks_exact(level_polys * n).rev();
    for (out_level, level) in levels_out.zip(levels_in) {
        for (o, p) in out_level.chunks_exact_mut(half).zip(level.chunks_exact(n)) {
            fft.forward_u64(p, o, scratch);
        }
    }
}
