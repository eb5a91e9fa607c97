//! GLWE ciphertexts, their integer-exact encryption with given randomness, and sample
//! extraction.
//!
//! Layout: a GLWE ciphertext of dimension `k` and polynomial size `N` is `(k + 1) N` words:
//! the `k` mask polynomials `A_0 .. A_{k-1}` then the body `B`, each `N` coefficients,
//! constant term first (as in tfhe-rs). Its phase under the key `(S_0 .. S_{k-1})` is
//! `B - sum_j A_j S_j` in `Z_{2^64}[X] / (X^N + 1)`.
//!
//! The key's polynomials laid end to end, `s[j N + t] = S_j[t]`, form the *big* LWE key of
//! dimension `kN` that [`sample_extract`]'s output is encrypted under.

use crate::error::Error;
use crate::lwe::LweCiphertext;
use crate::params::{GlweDimension, PolynomialSize};
use crate::polynomial::{ExactMultiplier, check_len, checked_size, zeroed_words};

/// A GLWE ciphertext: `k` mask polynomials then the body, `(k + 1) N` words.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GlweCiphertext {
    data: Vec<u64>,
    glwe_dimension: GlweDimension,
    polynomial_size: PolynomialSize,
}

impl GlweCiphertext {
    /// Wraps raw words (`(k + 1) N` of them, masks then body).
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when the length is not `(k + 1) N`, or `k` or `N` is 0;
    /// [`Error::SizeOverflow`] when `(k + 1) N` overflows.
    pub fn from_vec(
        data: Vec<u64>,
        glwe_dimension: GlweDimension,
        polynomial_size: PolynomialSize,
    ) -> Result<Self, Error> {
        let expected = checked_size(
            "GLWE ciphertext length",
            &[glwe_dimension.0.saturating_add(1), polynomial_size.0],
        )?;
        if glwe_dimension.0 == 0 || polynomial_size.0 == 0 {
            return Err(Error::DimensionMismatch {
                what: "GLWE dimension and polynomial size (both at least 1)",
                expected: 1,
                got: 0,
            });
        }
        check_len("GLWE ciphertext length", expected, data.len())?;
        Ok(Self {
            data,
            glwe_dimension,
            polynomial_size,
        })
    }

    /// The noiseless ciphertext with zero masks and `body` as its body.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `body` is empty or `k = 0`; [`Error::SizeOverflow`]
    /// when `(k + 1) N` words overflow or cannot be allocated.
    pub fn trivial(body: &[u64], glwe_dimension: GlweDimension) -> Result<Self, Error> {
        let n = body.len();
        if glwe_dimension.0 == 0 || n == 0 {
            return Err(Error::DimensionMismatch {
                what: "GLWE dimension and polynomial size (both at least 1)",
                expected: 1,
                got: 0,
            });
        }
        let what = "GLWE ciphertext length";
        let len = checked_size(what, &[glwe_dimension.0.saturating_add(1), n])?;
        let mut data = zeroed_words(what, len)?;
        data[len - n..].copy_from_slice(body);
        Self::from_vec(data, glwe_dimension, PolynomialSize(n))
    }

    pub(crate) fn from_vec_unchecked(
        data: Vec<u64>,
        glwe_dimension: GlweDimension,
        polynomial_size: PolynomialSize,
    ) -> Self {
        debug_assert_eq!(data.len(), (glwe_dimension.0 + 1) * polynomial_size.0);
        Self {
            data,
            glwe_dimension,
            polynomial_size,
        }
    }

    /// `k`.
    #[must_use]
    pub fn glwe_dimension(&self) -> GlweDimension {
        self.glwe_dimension
    }

    /// `N`.
    #[must_use]
    pub fn polynomial_size(&self) -> PolynomialSize {
        self.polynomial_size
    }

    /// Polynomial `j` (`j < k`: mask `A_j`; `j = k`: the body).
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `j > k`.
    pub fn polynomial(&self, j: usize) -> Result<&[u64], Error> {
        if j > self.glwe_dimension.0 {
            return Err(Error::DimensionMismatch {
                what: "GLWE polynomial index (at most k)",
                expected: self.glwe_dimension.0,
                got: j,
            });
        }
        Ok(self.polynomial_unchecked(j))
    }

    /// Polynomial `j <= k`.
    fn polynomial_unchecked(&self, j: usize) -> &[u64] {
        let n = self.polynomial_size.0;
        &self.data[j * n..(j + 1) * n]
    }

    /// The body polynomial `B`.
    #[must_use]
    pub fn body(&self) -> &[u64] {
        self.polynomial_unchecked(self.glwe_dimension.0)
    }

    /// All words.
    #[must_use]
    pub fn as_slice(&self) -> &[u64] {
        &self.data
    }

    /// All words, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [u64] {
        &mut self.data
    }

    /// The words.
    #[must_use]
    pub fn into_vec(self) -> Vec<u64> {
        self.data
    }
}

/// The GLWE encryption with its randomness given: masks `mask` (`k N` words, `A_0` first),
/// body `sum_j A_j S_j + plaintext + noise` (exact negacyclic products mod `2^64`). `key` is
/// the `k N` words of the key's polynomials (bits 0 or 1), `plaintext` and `noise` `N` words.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when the lengths disagree or `N = 0`.
pub fn encrypt_glwe_with_randomness(
    key: &[u64],
    plaintext: &[u64],
    mask: &[u64],
    noise: &[u64],
) -> Result<GlweCiphertext, Error> {
    let n = plaintext.len();
    check_len("GLWE noise length", n, noise.len())?;
    check_len("GLWE mask length", key.len(), mask.len())?;
    if n == 0 || key.is_empty() || key.len() % n != 0 {
        return Err(Error::DimensionMismatch {
            what: "GLWE key length (a positive multiple of N)",
            expected: n.max(1),
            got: key.len(),
        });
    }
    let k = key.len() / n;
    let mut data = vec![0u64; (k + 1) * n];
    data[..k * n].copy_from_slice(mask);
    let mut multiplier = ExactMultiplier::new(n);
    encrypt_glwe_body(&mut data, key, plaintext, noise, &mut multiplier);
    Ok(GlweCiphertext::from_vec_unchecked(
        data,
        GlweDimension(k),
        PolynomialSize(n),
    ))
}

/// Fills the body of `data` (whose masks are set) with `sum_j A_j S_j + plaintext + noise`.
pub(crate) fn encrypt_glwe_body(
    data: &mut [u64],
    key: &[u64],
    plaintext: &[u64],
    noise: &[u64],
    multiplier: &mut ExactMultiplier,
) {
    let n = plaintext.len();
    let k = key.len() / n;
    let (masks, body) = data.split_at_mut(k * n);
    for (b, (&p, &e)) in body.iter_mut().zip(plaintext.iter().zip(noise)) {
        *b = p.wrapping_add(e);
    }
    for (a, s) in masks.chunks_exact(n).zip(key.chunks_exact(n)) {
        multiplier.mul_add(body, a, s);
    }
}

/// The phase `B - sum_j A_j S_j` of a GLWE ciphertext (`N` words), with exact products.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when the key is not `k N` words.
pub fn glwe_phase(key: &[u64], ciphertext: &GlweCiphertext) -> Result<Vec<u64>, Error> {
    let n = ciphertext.polynomial_size.0;
    let k = ciphertext.glwe_dimension.0;
    check_len("GLWE key length", k * n, key.len())?;
    let mut phase = vec![0u64; n];
    let mut multiplier = ExactMultiplier::new(n);
    for j in 0..k {
        multiplier.mul_add(
            &mut phase,
            ciphertext.polynomial_unchecked(j),
            &key[j * n..(j + 1) * n],
        );
    }
    for (p, &b) in phase.iter_mut().zip(ciphertext.body()) {
        *p = b.wrapping_sub(*p);
    }
    Ok(phase)
}

/// Sample extraction of coefficient 0: the LWE ciphertext of dimension `kN`, under the big
/// key (the GLWE key flattened), whose phase is the constant coefficient of the GLWE phase.
///
/// Mask: for each `j < k`, `a[j N] = A_j[0]` and `a[j N + t] = -A_j[N - t]` for
/// `1 <= t < N`; body `B[0]`. Integer-exact.
#[must_use]
pub fn sample_extract(ciphertext: &GlweCiphertext) -> LweCiphertext {
    let n = ciphertext.polynomial_size.0;
    let k = ciphertext.glwe_dimension.0;
    let mut data = vec![0u64; k * n + 1];
    for j in 0..k {
        let a = ciphertext.polynomial_unchecked(j);
        let out = &mut data[j * n..(j + 1) * n];
        out[0] = a[0];
        for t in 1..n {
            out[t] = a[n - t].wrapping_neg();
        }
    }
    data[k * n] = ciphertext.body()[0];
    LweCiphertext::from_vec_unchecked(data)
}
