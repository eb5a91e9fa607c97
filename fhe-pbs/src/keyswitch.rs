//! LWE key switching from the big key (dimension `kN`) to the small key (dimension `n`).
//!
//! Key layout (`KeyswitchKey::as_slice`), tfhe-rs's `LweKeyswitchKey`: `input_dimension *
//! level_count` LWE ciphertexts of `output_dimension + 1` words each (mask, then body), input
//! coefficient major, and within each input coefficient's block the levels from the least
//! significant (level `l`) to the most significant (level 1), as tfhe-rs's decomposition
//! iterator yields them: ciphertext `(i, j)` starts at word `(i * l + j) * (n + 1)` and
//! encrypts `s_in[i] * 2^(64 - (l - j) b)` under the output key, with the LWE noise.
//!
//! Key switch (tfhe-rs's convention): start from the trivial ciphertext `(0, ..., 0, b)`, then
//! for every input mask coefficient `a_i` with digits `d_{i,j}` ([`crate::decomposition`])
//! subtract `d_{i,j} * KSK(i, j)`. The phase becomes
//! `b - sum_i a~_i s_in[i] + noise`, with `a~_i` the rounded `a_i`. Integer-exact.

use crate::decomposition::Decomposer;
use crate::error::Error;
use crate::keys::LweSecretKey;
use crate::lwe::{LweCiphertext, dot, encrypt_lwe_unchecked};
use crate::params::{DecompositionParams, LweDimension, NoiseDistribution};
use crate::polynomial::{check_len, checked_size};
use crate::rng::Csprng;
use crate::simd::{Vectorized, prefetch, vectorized};

/// A key-switching key (see the module docs for its layout). `Debug` shows the dimensions,
/// not the (large) contents.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyswitchKey {
    data: Vec<u64>,
    input_dimension: LweDimension,
    output_dimension: LweDimension,
    decomposition: DecompositionParams,
}

impl std::fmt::Debug for KeyswitchKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyswitchKey")
            .field("input_dimension", &self.input_dimension)
            .field("output_dimension", &self.output_dimension)
            .field("decomposition", &self.decomposition)
            .finish_non_exhaustive()
    }
}

impl KeyswitchKey {
    /// Generates the key from `input_key` (bits, one word each) to `output_key`: for each
    /// input coefficient, for each level, one LWE encryption ([`crate::LweSecretKey::encrypt`]:
    /// mask words, then one noise sample).
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] for an empty input key; [`Error::InvalidParameter`] for a
    /// noise distribution [`crate::Parameters::new`] would refuse (nothing is drawn then).
    pub fn generate(
        input_key: &[u64],
        output_key: &LweSecretKey,
        decomposition: DecompositionParams,
        noise: NoiseDistribution,
        rng: &mut Csprng,
    ) -> Result<Self, Error> {
        if input_key.is_empty() {
            return Err(Error::DimensionMismatch {
                what: "key-switching input key dimension (at least 1)",
                expected: 1,
                got: 0,
            });
        }
        noise.validate("noise distribution")?;
        Ok(Self::generate_unchecked(
            input_key,
            output_key,
            decomposition,
            noise,
            rng,
        ))
    }

    /// [`KeyswitchKey::generate`] from a non-empty input key with a checked distribution.
    pub(crate) fn generate_unchecked(
        input_key: &[u64],
        output_key: &LweSecretKey,
        decomposition: DecompositionParams,
        noise: NoiseDistribution,
        rng: &mut Csprng,
    ) -> Self {
        let levels = decomposition.level_count().0;
        let b = decomposition.base_log().0;
        let width = output_key.dimension().0 + 1;
        let mut data = Vec::with_capacity(input_key.len() * levels * width);
        for &bit in input_key {
            for level in (1..=levels).rev() {
                let plaintext = bit.wrapping_mul(1u64 << (64 - level * b));
                let ciphertext =
                    encrypt_lwe_unchecked(output_key.as_slice(), plaintext, noise, rng);
                data.extend_from_slice(ciphertext.as_slice());
            }
        }
        Self {
            data,
            input_dimension: LweDimension(input_key.len()),
            output_dimension: output_key.dimension(),
            decomposition,
        }
    }

    /// Wraps raw words in the documented layout.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `data.len()` is not `input * levels * (output + 1)`
    /// or a dimension is 0; [`Error::SizeOverflow`] when that product overflows;
    /// [`Error::InvalidParameter`] for a bad decomposition.
    pub fn from_vec(
        data: Vec<u64>,
        input_dimension: LweDimension,
        output_dimension: LweDimension,
        decomposition: DecompositionParams,
    ) -> Result<Self, Error> {
        if input_dimension.0 == 0 || output_dimension.0 == 0 {
            return Err(Error::DimensionMismatch {
                what: "key-switching key dimensions (both at least 1)",
                expected: 1,
                got: 0,
            });
        }
        let what = "key-switching key length";
        let expected = checked_size(
            what,
            &[
                input_dimension.0,
                decomposition.level_count().0,
                output_dimension.0.saturating_add(1),
            ],
        )?;
        check_len(what, expected, data.len())?;
        Ok(Self {
            data,
            input_dimension,
            output_dimension,
            decomposition,
        })
    }

    /// The words, in the documented layout.
    #[must_use]
    pub fn as_slice(&self) -> &[u64] {
        &self.data
    }

    /// Dimension of the input key (`kN` in `KS_PBS`).
    #[must_use]
    pub fn input_dimension(&self) -> LweDimension {
        self.input_dimension
    }

    /// Dimension of the output key (`n`).
    #[must_use]
    pub fn output_dimension(&self) -> LweDimension {
        self.output_dimension
    }

    /// The decomposition.
    #[must_use]
    pub fn decomposition(&self) -> DecompositionParams {
        self.decomposition
    }

    /// Checks the key against the phase of its own ciphertexts: a test helper that decrypts
    /// ciphertext `(i, j)` with `output_key` and returns its noise (phase minus the expected
    /// plaintext) as a signed integer.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] for out-of-range indices or a key of the wrong dimension.
    pub fn noise_of(
        &self,
        input_key: &[u64],
        output_key: &LweSecretKey,
        i: usize,
        j: usize,
    ) -> Result<i64, Error> {
        check_len(
            "key-switching output key dimension",
            self.output_dimension.0,
            output_key.dimension().0,
        )?;
        check_len(
            "key-switching input key dimension",
            self.input_dimension.0,
            input_key.len(),
        )?;
        let levels = self.decomposition.level_count().0;
        if i >= self.input_dimension.0 || j >= levels {
            return Err(Error::DimensionMismatch {
                what: "key-switching key entry index",
                expected: self.input_dimension.0 * levels,
                got: i.saturating_mul(levels).saturating_add(j),
            });
        }
        let width = self.output_dimension.0 + 1;
        let start = (i * levels + j) * width;
        let ct = &self.data[start..start + width];
        let phase = ct[width - 1].wrapping_sub(dot(&ct[..width - 1], output_key.as_slice()));
        let b = self.decomposition.base_log().0;
        let plaintext = input_key[i].wrapping_mul(1u64 << (64 - (levels - j) * b));
        Ok(phase.wrapping_sub(plaintext) as i64)
    }
}

/// Key-switches `input` (dimension `ksk.input_dimension()`) into a ciphertext of dimension
/// `ksk.output_dimension()`. Integer-exact (see the module docs).
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when the input's dimension is not the key's input dimension.
pub fn keyswitch(ksk: &KeyswitchKey, input: &LweCiphertext) -> Result<LweCiphertext, Error> {
    check_len(
        "key-switch input LWE dimension",
        ksk.input_dimension.0,
        input.dimension().0,
    )?;
    Ok(LweCiphertext::from_vec_unchecked(vectorized(KeySwitch {
        ksk,
        input,
    })))
}

/// Output words per chunk of the key switch's row updates: each chunk first asks for the
/// same range of the next input coefficient's rows ([`prefetch`]). (Measured on a 2-core AMD
/// EPYC VM, one key switch of `PARAM_MESSAGE_2_CARRY_2`: 3.32 ms before; 3.6-3.9 ms with the
/// prefetch alone; 1.83-1.89 ms with it and the loop vectorized.)
const ROW_CHUNK: usize = 64;

/// One key switch (checked arguments), run through [`vectorized`].
struct KeySwitch<'a> {
    ksk: &'a KeyswitchKey,
    input: &'a LweCiphertext,
}

impl Vectorized for KeySwitch<'_> {
    type Output = Vec<u64>;

    #[inline(always)]
    fn run(self) -> Vec<u64> {
        let Self { ksk, input } = self;
        let width = ksk.output_dimension.0 + 1;
        let levels = ksk.decomposition.level_count().0;
        let mut out = vec![0u64; width];
        out[width - 1] = input.body();
        let mut digits = vec![0i64; levels];
        let decomposer = Decomposer::new(ksk.decomposition);
        let block_len = levels * width;
        for (i, (&a, block)) in input
            .mask()
            .iter()
            .zip(ksk.data.chunks_exact(block_len))
            .enumerate()
        {
            let next = ksk
                .data
                .get((i + 1) * block_len..(i + 2) * block_len)
                .unwrap_or(&[]);
            decomposer.decompose(a, &mut digits);
            // Digits come most significant first; the key's rows, least significant first.
            for (j, (&d, row)) in digits
                .iter()
                .rev()
                .zip(block.chunks_exact(width))
                .enumerate()
            {
                let mut ahead = next
                    .get(j * width..(j + 1) * width)
                    .unwrap_or(&[])
                    .chunks(ROW_CHUNK);
                if d == 0 {
                    ahead.for_each(prefetch);
                    continue;
                }
                let d = d as u64;
                for (o, k) in out.chunks_mut(ROW_CHUNK).zip(row.chunks(ROW_CHUNK)) {
                    if let Some(upcoming) = ahead.next() {
                        prefetch(upcoming);
                    }
                    for (o, &k) in o.iter_mut().zip(k) {
                        *o = o.wrapping_sub(d.wrapping_mul(k));
                    }
                }
            }
        }
        out
    }
}
