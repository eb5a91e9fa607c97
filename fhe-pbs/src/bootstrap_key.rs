//! The bootstrap key: GGSW encryptions of the small key's bits under the GLWE key.
//!
//! Layout (`BootstrapKey::as_slice`), all `u64`, tfhe-rs's `LweBootstrapKey`: `n` GGSW
//! ciphertexts one after the other, each `l (k + 1) (k + 1) N` words. Inside GGSW `i`: `l`
//! level matrices, from the least significant (level `l`) to the most significant (level 1,
//! factor `2^(64 - b)`), as tfhe-rs stores them; each has `k + 1` rows; each row is a GLWE
//! ciphertext ([`crate::glwe`] layout: `k` masks then the body, `N` coefficients each). So
//! polynomial `c` of row `r` of the level matrix at position `m` (from 0; level `l - m`) of
//! GGSW `i` starts at word `(((i l + m) (k + 1) + r) (k + 1) + c) N`.
//!
//! Row `r` of level `j` (1-based) encrypts, as in tfhe-rs, the plaintext `-s_i f_j S_r` for
//! `r < k` and `s_i f_j` (a constant polynomial) for `r = k`, with `f_j = 2^(64 - j b)`, so
//! its phase is `s_i f_j` times the gadget's `r`-th unit vector dotted with `(-S, 1)`.

use rayon::prelude::*;

use crate::error::Error;
use crate::keys::{GlweSecretKey, LweSecretKey};
use crate::params::{
    DecompositionParams, GlweDimension, LweDimension, NoiseDistribution, PolynomialSize,
};
use crate::polynomial::{ExactMultiplier, check_len, checked_size};
use crate::rng::Csprng;

/// A bootstrap key in the standard (coefficient) domain; see the module docs for its layout.
/// `Debug` shows the dimensions, not the (large) contents.
#[derive(Clone, PartialEq, Eq)]
pub struct BootstrapKey {
    data: Vec<u64>,
    lwe_dimension: LweDimension,
    glwe_dimension: GlweDimension,
    polynomial_size: PolynomialSize,
    decomposition: DecompositionParams,
}

impl std::fmt::Debug for BootstrapKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BootstrapKey")
            .field("lwe_dimension", &self.lwe_dimension)
            .field("glwe_dimension", &self.glwe_dimension)
            .field("polynomial_size", &self.polynomial_size)
            .field("decomposition", &self.decomposition)
            .finish_non_exhaustive()
    }
}

impl BootstrapKey {
    /// Generates the key: for each bit of `lwe_key`, each level, each row, the GLWE mask (`k N`
    /// words of `rng`) then the `N` noise samples, all drawn in that order before the bodies
    /// are computed (in parallel, so the result does not depend on the thread count).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] for a noise distribution [`crate::Parameters::new`] would
    /// refuse (nothing is drawn then).
    pub fn generate(
        lwe_key: &LweSecretKey,
        glwe_key: &GlweSecretKey,
        decomposition: DecompositionParams,
        noise: NoiseDistribution,
        rng: &mut Csprng,
    ) -> Result<Self, Error> {
        noise.validate("noise distribution")?;
        Ok(Self::generate_unchecked(
            lwe_key,
            glwe_key,
            decomposition,
            noise,
            rng,
        ))
    }

    /// [`BootstrapKey::generate`] with a checked noise distribution.
    pub(crate) fn generate_unchecked(
        lwe_key: &LweSecretKey,
        glwe_key: &GlweSecretKey,
        decomposition: DecompositionParams,
        noise: NoiseDistribution,
        rng: &mut Csprng,
    ) -> Self {
        Self {
            data: encrypt_ggsw_list(lwe_key.as_slice(), glwe_key, decomposition, noise, rng),
            lwe_dimension: lwe_key.dimension(),
            glwe_dimension: glwe_key.glwe_dimension(),
            polynomial_size: glwe_key.polynomial_size(),
            decomposition,
        }
    }

    /// Wraps raw words in the documented layout.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when the length does not match the dimensions or one is 0;
    /// [`Error::SizeOverflow`] when their product overflows; [`Error::InvalidParameter`] for
    /// a bad decomposition.
    pub fn from_vec(
        data: Vec<u64>,
        lwe_dimension: LweDimension,
        glwe_dimension: GlweDimension,
        polynomial_size: PolynomialSize,
        decomposition: DecompositionParams,
    ) -> Result<Self, Error> {
        if lwe_dimension.0 == 0 || glwe_dimension.0 == 0 || polynomial_size.0 == 0 {
            return Err(Error::DimensionMismatch {
                what: "bootstrap key dimensions (all at least 1)",
                expected: 1,
                got: 0,
            });
        }
        let k1 = glwe_dimension.0.saturating_add(1);
        let what = "bootstrap key length";
        let expected = checked_size(
            what,
            &[
                lwe_dimension.0,
                decomposition.level_count().0,
                k1,
                k1,
                polynomial_size.0,
            ],
        )?;
        check_len(what, expected, data.len())?;
        Ok(Self {
            data,
            lwe_dimension,
            glwe_dimension,
            polynomial_size,
            decomposition,
        })
    }

    /// The words, in the documented layout.
    #[must_use]
    pub fn as_slice(&self) -> &[u64] {
        &self.data
    }

    /// `n`: the number of GGSW ciphertexts.
    #[must_use]
    pub fn lwe_dimension(&self) -> LweDimension {
        self.lwe_dimension
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

    /// The decomposition.
    #[must_use]
    pub fn decomposition(&self) -> DecompositionParams {
        self.decomposition
    }

    /// Words per GGSW ciphertext: `l (k + 1) (k + 1) N`.
    #[must_use]
    pub fn ggsw_len(&self) -> usize {
        let k1 = self.glwe_dimension.0 + 1;
        self.decomposition.level_count().0 * k1 * k1 * self.polynomial_size.0
    }

    /// GGSW ciphertext `i` (the encryption of bit `i` of the small key).
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `i >= n`.
    pub fn ggsw(&self, i: usize) -> Result<&[u64], Error> {
        if i >= self.lwe_dimension.0 {
            return Err(Error::DimensionMismatch {
                what: "bootstrap key GGSW index",
                expected: self.lwe_dimension.0,
                got: i,
            });
        }
        let len = self.ggsw_len();
        Ok(&self.data[i * len..(i + 1) * len])
    }
}

/// GGSW encryptions of `cleartexts` (each 0 or 1) one after the other, in this crate's GGSW
/// layout: for each GGSW, level, row, the GLWE mask (`k N` words of `rng`) then the `N` noise
/// samples, all drawn in that order before the bodies are computed (in parallel, so the result
/// does not depend on the thread count).
pub(crate) fn encrypt_ggsw_list(
    cleartexts: &[u64],
    glwe_key: &GlweSecretKey,
    decomposition: DecompositionParams,
    noise: NoiseDistribution,
    rng: &mut Csprng,
) -> Vec<u64> {
    let n = glwe_key.polynomial_size().0;
    let k = glwe_key.glwe_dimension().0;
    let rows_per_ggsw = decomposition.level_count().0 * (k + 1);
    let row_len = (k + 1) * n;
    let ggsw_len = rows_per_ggsw * row_len;
    let mut data = vec![0u64; cleartexts.len() * ggsw_len];
    for row in data.chunks_exact_mut(row_len) {
        let (mask, body) = row.split_at_mut(k * n);
        rng.fill_uniform(mask);
        rng.fill_noise_unchecked(body, noise);
    }
    let key = glwe_key.as_slice();
    data.par_chunks_exact_mut(ggsw_len)
        .zip(cleartexts.par_iter())
        .for_each_init(
            || ExactMultiplier::new(n),
            |multiplier, (ggsw, &bit)| {
                fill_ggsw_bodies(ggsw, key, n, bit, decomposition, multiplier);
            },
        );
    data
}

/// The GGSW encryption of `bit` with its randomness given (integer-exact): `masks` holds the
/// `l (k + 1)` rows' masks (`k N` words each, rows in layout order), `noises` their `N` noise
/// words each. `glwe_key` is the `k N` key bits. Returns the `l (k + 1) (k + 1) N` words.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when the lengths disagree.
pub fn encrypt_ggsw_with_randomness(
    glwe_key: &[u64],
    polynomial_size: PolynomialSize,
    bit: u64,
    decomposition: DecompositionParams,
    masks: &[u64],
    noises: &[u64],
) -> Result<Vec<u64>, Error> {
    let n = polynomial_size.0;
    if n == 0 || glwe_key.is_empty() || glwe_key.len() % n != 0 {
        return Err(Error::DimensionMismatch {
            what: "GLWE key length (a positive multiple of N)",
            expected: n.max(1),
            got: glwe_key.len(),
        });
    }
    let k = glwe_key.len() / n;
    let rows = decomposition.level_count().0 * (k + 1);
    let what = "GGSW masks length";
    check_len(what, checked_size(what, &[rows, k, n])?, masks.len())?;
    check_len("GGSW noises length", rows * n, noises.len())?;
    let row_len = (k + 1) * n;
    let mut ggsw = vec![0u64; rows * row_len];
    for (row, (mask, noise)) in ggsw
        .chunks_exact_mut(row_len)
        .zip(masks.chunks_exact(k * n).zip(noises.chunks_exact(n)))
    {
        row[..k * n].copy_from_slice(mask);
        row[k * n..].copy_from_slice(noise);
    }
    let mut multiplier = ExactMultiplier::new(n);
    fill_ggsw_bodies(&mut ggsw, glwe_key, n, bit, decomposition, &mut multiplier);
    Ok(ggsw)
}

/// Turns rows holding (mask, noise) into GGSW rows: body = noise + plaintext + sum A_j S_j.
fn fill_ggsw_bodies(
    ggsw: &mut [u64],
    key: &[u64],
    n: usize,
    bit: u64,
    decomposition: DecompositionParams,
    multiplier: &mut ExactMultiplier,
) {
    let k = key.len() / n;
    let row_len = (k + 1) * n;
    let b = decomposition.base_log().0;
    let levels = decomposition.level_count().0;
    for (index, row) in ggsw.chunks_exact_mut(row_len).enumerate() {
        let level = levels - index / (k + 1);
        let r = index % (k + 1);
        let factor = bit.wrapping_mul(1u64 << (64 - level * b));
        let (masks, body) = row.split_at_mut(k * n);
        if r < k {
            for (c, &s) in body.iter_mut().zip(&key[r * n..(r + 1) * n]) {
                *c = c.wrapping_sub(factor.wrapping_mul(s));
            }
        } else {
            body[0] = body[0].wrapping_add(factor);
        }
        for (a, s) in masks.chunks_exact(n).zip(key.chunks_exact(n)) {
            multiplier.mul_add(body, a, s);
        }
    }
}
