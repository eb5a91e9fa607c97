//! LWE ciphertexts, encoding, and the integer-exact encryption with given randomness.
//!
//! Layout: an LWE ciphertext of dimension `d` is `d + 1` words, the mask `a_0 .. a_{d-1}`
//! then the body `b` (as in tfhe-rs). Its phase under a binary key `s` is
//! `b - sum_i a_i s_i` mod `2^64`.

use crate::error::Error;
use crate::params::{LweDimension, NoiseDistribution};
use crate::polynomial::{check_len, zeroed_words};
use crate::rng::Csprng;

/// An LWE ciphertext: `dimension + 1` words, mask then body.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LweCiphertext {
    data: Vec<u64>,
}

impl LweCiphertext {
    /// Wraps raw words (mask then body).
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `data` has fewer than 2 words (dimension 0).
    pub fn from_vec(data: Vec<u64>) -> Result<Self, Error> {
        if data.len() < 2 {
            return Err(Error::DimensionMismatch {
                what: "LWE ciphertext length (at least dimension 1 plus the body)",
                expected: 2,
                got: data.len(),
            });
        }
        Ok(Self { data })
    }

    /// The noiseless ciphertext `(0, ..., 0, plaintext)` of the given dimension.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] for dimension 0; [`Error::SizeOverflow`] when `d + 1`
    /// words overflow or cannot be allocated.
    pub fn trivial(plaintext: u64, dimension: LweDimension) -> Result<Self, Error> {
        let what = "LWE ciphertext length";
        let len = dimension
            .0
            .checked_add(1)
            .ok_or(Error::SizeOverflow { what })?;
        let mut data = zeroed_words(what, len)?;
        data[dimension.0] = plaintext;
        Self::from_vec(data)
    }

    pub(crate) fn from_vec_unchecked(data: Vec<u64>) -> Self {
        debug_assert!(data.len() >= 2);
        Self { data }
    }

    /// The dimension `d` of the key it is encrypted under.
    #[must_use]
    pub fn dimension(&self) -> LweDimension {
        LweDimension(self.data.len() - 1)
    }

    /// The mask, `d` words.
    #[must_use]
    pub fn mask(&self) -> &[u64] {
        &self.data[..self.data.len() - 1]
    }

    /// The body.
    #[must_use]
    pub fn body(&self) -> u64 {
        self.data[self.data.len() - 1]
    }

    /// All `d + 1` words, mask then body.
    #[must_use]
    pub fn as_slice(&self) -> &[u64] {
        &self.data
    }

    /// All `d + 1` words, mutable (for tests that tamper with ciphertexts).
    pub fn as_mut_slice(&mut self) -> &mut [u64] {
        &mut self.data
    }

    /// The words, mask then body.
    #[must_use]
    pub fn into_vec(self) -> Vec<u64> {
        self.data
    }
}

/// `m * delta` with `delta = 2^63 / p` (one bit of padding above the message).
///
/// # Errors
///
/// [`Error::MessageOutOfRange`] unless `m < p`; [`Error::InvalidParameter`] unless `p` is a
/// power of two from 2 to `2^63`.
pub fn encode(message: u64, plaintext_modulus: u64) -> Result<u64, Error> {
    check_plaintext_modulus(plaintext_modulus)?;
    if message >= plaintext_modulus {
        return Err(Error::MessageOutOfRange {
            message,
            modulus: plaintext_modulus,
        });
    }
    Ok(message * ((1u64 << 63) / plaintext_modulus))
}

/// The message nearest to a phase: `round(phase / delta) mod p` (a result whose padding bit
/// was set, i.e. `round(phase / delta) >= p`, is reduced mod `p` too).
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `p` is a power of two from 2 to `2^63`.
pub fn decode(phase: u64, plaintext_modulus: u64) -> Result<u64, Error> {
    check_plaintext_modulus(plaintext_modulus)?;
    let delta = (1u64 << 63) / plaintext_modulus;
    let rounded = phase.wrapping_add(delta / 2) / delta;
    Ok(rounded % plaintext_modulus)
}

fn check_plaintext_modulus(p: u64) -> Result<(), Error> {
    if !p.is_power_of_two() || !(2..=1u64 << 63).contains(&p) {
        return Err(Error::InvalidParameter {
            name: "plaintext_modulus",
            reason: format!("p = {p} must be a power of two from 2 to 2^63"),
        });
    }
    Ok(())
}

/// The LWE encryption with its randomness given: `(mask, sum_i mask_i key_i + plaintext +
/// noise)`, all mod `2^64`. `key` holds the binary key's bits as 0 or 1 words; `noise` is
/// the two's complement of the signed noise.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when `mask` and `key` differ in length or are empty.
pub fn encrypt_lwe_with_randomness(
    key: &[u64],
    plaintext: u64,
    mask: &[u64],
    noise: u64,
) -> Result<LweCiphertext, Error> {
    check_len("LWE mask length", key.len(), mask.len())?;
    let mut data = Vec::with_capacity(mask.len() + 1);
    data.extend_from_slice(mask);
    data.push(dot(mask, key).wrapping_add(plaintext).wrapping_add(noise));
    LweCiphertext::from_vec(data)
}

/// Encrypts under a binary key (one word 0 or 1 per bit) with fresh randomness: the mask
/// from `key.len()` words of `rng`, then one noise sample; the body as in
/// [`encrypt_lwe_with_randomness`].
///
/// # Errors
///
/// [`Error::DimensionMismatch`] for an empty key; [`Error::InvalidParameter`] for a noise
/// distribution [`crate::Parameters::new`] would refuse (nothing is drawn then).
pub fn encrypt_lwe(
    key: &[u64],
    plaintext: u64,
    noise: NoiseDistribution,
    rng: &mut Csprng,
) -> Result<LweCiphertext, Error> {
    if key.is_empty() {
        return Err(Error::DimensionMismatch {
            what: "LWE key dimension (at least 1)",
            expected: 1,
            got: 0,
        });
    }
    noise.validate("noise distribution")?;
    Ok(encrypt_lwe_unchecked(key, plaintext, noise, rng))
}

/// [`encrypt_lwe`] under a non-empty key with a checked noise distribution.
pub(crate) fn encrypt_lwe_unchecked(
    key: &[u64],
    plaintext: u64,
    noise: NoiseDistribution,
    rng: &mut Csprng,
) -> LweCiphertext {
    debug_assert!(!key.is_empty());
    let mut data = vec![0u64; key.len() + 1];
    rng.fill_uniform(&mut data[..key.len()]);
    let e = rng.next_noise_unchecked(noise);
    data[key.len()] = dot(&data[..key.len()], key)
        .wrapping_add(plaintext)
        .wrapping_add(e);
    LweCiphertext { data }
}

/// The phase `b - sum_i a_i key_i` mod `2^64` of a ciphertext under a binary key.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when the ciphertext's dimension is not the key's.
pub fn lwe_phase(key: &[u64], ciphertext: &LweCiphertext) -> Result<u64, Error> {
    check_len(
        "LWE ciphertext dimension",
        key.len(),
        ciphertext.dimension().0,
    )?;
    Ok(ciphertext.body().wrapping_sub(dot(ciphertext.mask(), key)))
}

/// `sum_i a_i b_i` mod `2^64`.
pub(crate) fn dot(a: &[u64], b: &[u64]) -> u64 {
    a.iter()
        .zip(b)
        .fold(0u64, |acc, (&x, &y)| acc.wrapping_add(x.wrapping_mul(y)))
}
