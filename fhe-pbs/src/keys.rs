//! Secret keys, the client key that encrypts and decrypts, and the evaluation keys.
//!
//! Secret keys are binary, stored as one `u64` word (0 or 1) per bit so that they can be used
//! in wrapping arithmetic directly. They are zeroized on drop, and their `Debug` output shows
//! only their dimensions.

use std::fmt;

use zeroize::Zeroize;

use crate::bootstrap_key::BootstrapKey;
use crate::error::Error;
use crate::glwe::{GlweCiphertext, encrypt_glwe_with_randomness, glwe_phase};
use crate::keyswitch::KeyswitchKey;
use crate::lwe::{LweCiphertext, decode, encode, encrypt_lwe, encrypt_lwe_unchecked, lwe_phase};
use crate::multi_bit_key::MultiBitBootstrapKey;
use crate::params::{
    DecompositionParams, GlweDimension, LweDimension, MAX_BIG_LWE_DIMENSION, MAX_LWE_DIMENSION,
    NoiseDistribution, Parameters, PbsKind, PolynomialSize,
};
use crate::rng::Csprng;

/// `bits` if it is a binary key (at least one word, every word 0 or 1); else they are zeroed
/// and the error says why.
fn binary_bits(mut bits: Vec<u64>) -> Result<Vec<u64>, Error> {
    if bits.is_empty() || bits.iter().any(|&b| b > 1) {
        bits.zeroize();
        return Err(Error::InvalidParameter {
            name: "secret key",
            reason: "a binary key needs at least one bit, every word 0 or 1".into(),
        });
    }
    Ok(bits)
}

/// `len` uniform bits of `rng`, one word (the lowest bit of a `next_u64`) each.
fn random_bits(len: usize, rng: &mut Csprng) -> Vec<u64> {
    (0..len).map(|_| rng.next_bit()).collect()
}

/// A binary LWE secret key.
#[derive(Clone)]
pub struct LweSecretKey {
    bits: Vec<u64>,
}

impl fmt::Debug for LweSecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LweSecretKey")
            .field("dimension", &self.bits.len())
            .finish_non_exhaustive()
    }
}

impl Drop for LweSecretKey {
    fn drop(&mut self) {
        self.bits.zeroize();
    }
}

impl LweSecretKey {
    /// A uniform binary key: `dimension` words of `rng`, the lowest bit of each.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless the dimension is from 1 to
    /// [`crate::params::MAX_LWE_DIMENSION`] (nothing is drawn then).
    pub fn generate(dimension: LweDimension, rng: &mut Csprng) -> Result<Self, Error> {
        if !(1..=MAX_LWE_DIMENSION).contains(&dimension.0) {
            return Err(Error::InvalidParameter {
                name: "lwe_dimension",
                reason: format!(
                    "a secret key of dimension {} (from 1 to {MAX_LWE_DIMENSION})",
                    dimension.0
                ),
            });
        }
        Ok(Self::generate_unchecked(dimension, rng))
    }

    /// [`LweSecretKey::generate`] of a dimension already checked.
    fn generate_unchecked(dimension: LweDimension, rng: &mut Csprng) -> Self {
        Self {
            bits: random_bits(dimension.0, rng),
        }
    }

    /// A key with the given bits.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] when a word is neither 0 nor 1 or the key is empty.
    pub fn from_bits(bits: Vec<u64>) -> Result<Self, Error> {
        Ok(Self {
            bits: binary_bits(bits)?,
        })
    }

    /// The dimension.
    #[must_use]
    pub fn dimension(&self) -> LweDimension {
        LweDimension(self.bits.len())
    }

    /// The bits, one word (0 or 1) each.
    #[must_use]
    pub fn as_slice(&self) -> &[u64] {
        &self.bits
    }

    /// Encrypts a plaintext (an already encoded torus value): mask from `dimension` words of
    /// `rng`, then one noise sample.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] for a noise distribution [`Parameters::new`] would refuse.
    pub fn encrypt(
        &self,
        plaintext: u64,
        noise: NoiseDistribution,
        rng: &mut Csprng,
    ) -> Result<LweCiphertext, Error> {
        encrypt_lwe(&self.bits, plaintext, noise, rng)
    }

    /// The phase `b - <a, s>` of a ciphertext under this key.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when the dimensions differ.
    pub fn phase(&self, ciphertext: &LweCiphertext) -> Result<u64, Error> {
        lwe_phase(&self.bits, ciphertext)
    }
}

/// A binary GLWE secret key: `k` polynomials of `N` coefficients, laid end to end (which is
/// also the big LWE key of dimension `kN`).
#[derive(Clone)]
pub struct GlweSecretKey {
    bits: Vec<u64>,
    glwe_dimension: GlweDimension,
    polynomial_size: PolynomialSize,
}

impl fmt::Debug for GlweSecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlweSecretKey")
            .field("glwe_dimension", &self.glwe_dimension.0)
            .field("polynomial_size", &self.polynomial_size.0)
            .finish_non_exhaustive()
    }
}

impl Drop for GlweSecretKey {
    fn drop(&mut self) {
        self.bits.zeroize();
    }
}

impl GlweSecretKey {
    /// A uniform binary key: `k N` words of `rng`, the lowest bit of each, `S_0` first.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `k` and `N` are at least 1 and `k N` at most
    /// [`crate::params::MAX_BIG_LWE_DIMENSION`] (nothing is drawn then).
    pub fn generate(
        glwe_dimension: GlweDimension,
        polynomial_size: PolynomialSize,
        rng: &mut Csprng,
    ) -> Result<Self, Error> {
        let (k, n) = (glwe_dimension.0, polynomial_size.0);
        if k == 0 || n == 0 || k.checked_mul(n).is_none_or(|kn| kn > MAX_BIG_LWE_DIMENSION) {
            return Err(Error::InvalidParameter {
                name: "glwe_dimension",
                reason: format!(
                    "a GLWE secret key with k = {k}, N = {n} (both at least 1, k N at most \
                     {MAX_BIG_LWE_DIMENSION})"
                ),
            });
        }
        Ok(Self::generate_unchecked(
            glwe_dimension,
            polynomial_size,
            rng,
        ))
    }

    /// [`GlweSecretKey::generate`] of dimensions already checked.
    fn generate_unchecked(
        glwe_dimension: GlweDimension,
        polynomial_size: PolynomialSize,
        rng: &mut Csprng,
    ) -> Self {
        Self {
            bits: random_bits(glwe_dimension.0 * polynomial_size.0, rng),
            glwe_dimension,
            polynomial_size,
        }
    }

    /// A key with the given bits, `S_0` first (tfhe-rs's `GlweSecretKey` container: its `k N`
    /// words as they are).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] when a word is neither 0 nor 1, or `k` or `N` is 0;
    /// [`Error::DimensionMismatch`] unless there are `k N` bits.
    pub fn from_bits(
        bits: Vec<u64>,
        glwe_dimension: GlweDimension,
        polynomial_size: PolynomialSize,
    ) -> Result<Self, Error> {
        let expected = glwe_dimension.0.checked_mul(polynomial_size.0);
        let mut bits = binary_bits(bits)?;
        if expected != Some(bits.len()) {
            let got = bits.len();
            bits.zeroize();
            return Err(Error::DimensionMismatch {
                what: "GLWE secret key bits (k N)",
                expected: expected.unwrap_or(usize::MAX),
                got,
            });
        }
        Ok(Self {
            bits,
            glwe_dimension,
            polynomial_size,
        })
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

    /// The `k N` bits, `S_0` first: the big LWE key.
    #[must_use]
    pub fn as_slice(&self) -> &[u64] {
        &self.bits
    }

    /// The big LWE key (a copy of the bits, dimension `kN`).
    #[must_use]
    pub fn to_lwe_key(&self) -> LweSecretKey {
        LweSecretKey {
            bits: self.bits.clone(),
        }
    }

    /// Encrypts a plaintext polynomial: masks from `k N` words of `rng`, then `N` noise
    /// samples.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] unless `plaintext` has `N` coefficients;
    /// [`Error::InvalidParameter`] for a noise distribution [`Parameters::new`] would refuse.
    pub fn encrypt(
        &self,
        plaintext: &[u64],
        noise: NoiseDistribution,
        rng: &mut Csprng,
    ) -> Result<GlweCiphertext, Error> {
        crate::polynomial::check_len(
            "GLWE plaintext length",
            self.polynomial_size.0,
            plaintext.len(),
        )?;
        noise.validate("noise distribution")?;
        let mut mask = vec![0u64; self.bits.len()];
        rng.fill_uniform(&mut mask);
        let mut e = vec![0u64; self.polynomial_size.0];
        rng.fill_noise_unchecked(&mut e, noise);
        encrypt_glwe_with_randomness(&self.bits, plaintext, &mask, &e)
    }

    /// The phase polynomial of a ciphertext under this key.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when the dimensions differ.
    pub fn phase(&self, ciphertext: &GlweCiphertext) -> Result<Vec<u64>, Error> {
        if ciphertext.polynomial_size() != self.polynomial_size {
            return Err(Error::DimensionMismatch {
                what: "GLWE polynomial size",
                expected: self.polynomial_size.0,
                got: ciphertext.polynomial_size().0,
            });
        }
        glwe_phase(&self.bits, ciphertext)
    }
}

/// The client's keys: the small LWE key (`n`) and the GLWE key (`k`, `N`), with the
/// parameters. It encrypts messages under the big key (as `KS_PBS` expects) and decrypts.
#[derive(Clone)]
pub struct ClientKey {
    params: Parameters,
    lwe_key: LweSecretKey,
    glwe_key: GlweSecretKey,
}

impl fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientKey")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl ClientKey {
    /// Generates both keys: the small key's `n` bits first, then the GLWE key's `k N`.
    #[must_use]
    pub fn generate(params: Parameters, rng: &mut Csprng) -> Self {
        // Parameters::new checked the dimensions.
        let lwe_key = LweSecretKey::generate_unchecked(params.lwe_dimension(), rng);
        let glwe_key = GlweSecretKey::generate_unchecked(
            params.glwe_dimension(),
            params.polynomial_size(),
            rng,
        );
        Self {
            params,
            lwe_key,
            glwe_key,
        }
    }

    /// A client key from secret keys made elsewhere (tfhe-rs's, through their raw bits: see
    /// [`LweSecretKey::from_bits`] and [`GlweSecretKey::from_bits`]).
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when a key's dimensions disagree with `params`.
    pub fn from_parts(
        params: Parameters,
        lwe_key: LweSecretKey,
        glwe_key: GlweSecretKey,
    ) -> Result<Self, Error> {
        use crate::polynomial::check_len;
        check_len(
            "client key LWE dimension",
            params.lwe_dimension().0,
            lwe_key.dimension().0,
        )?;
        check_len(
            "client key GLWE dimension",
            params.glwe_dimension().0,
            glwe_key.glwe_dimension().0,
        )?;
        check_len(
            "client key polynomial size",
            params.polynomial_size().0,
            glwe_key.polynomial_size().0,
        )?;
        Ok(Self {
            params,
            lwe_key,
            glwe_key,
        })
    }

    /// The parameters.
    #[must_use]
    pub fn parameters(&self) -> &Parameters {
        &self.params
    }

    /// The small LWE key (dimension `n`).
    #[must_use]
    pub fn lwe_secret_key(&self) -> &LweSecretKey {
        &self.lwe_key
    }

    /// The GLWE key (its bits are the big LWE key of dimension `kN`).
    #[must_use]
    pub fn glwe_secret_key(&self) -> &GlweSecretKey {
        &self.glwe_key
    }

    /// Encrypts `m < p` under the big key with the GLWE noise: the input of
    /// [`crate::Bootstrapper::keyswitch_bootstrap`].
    ///
    /// # Errors
    ///
    /// [`Error::MessageOutOfRange`] unless `m < p`.
    pub fn encrypt(&self, message: u64, rng: &mut Csprng) -> Result<LweCiphertext, Error> {
        let plaintext = encode(message, self.params.plaintext_modulus())?;
        Ok(encrypt_lwe_unchecked(
            self.glwe_key.as_slice(),
            plaintext,
            self.params.glwe_noise(),
            rng,
        ))
    }

    /// Encrypts `m < p` under the small key with the LWE noise: the input of
    /// [`crate::Bootstrapper::bootstrap`].
    ///
    /// # Errors
    ///
    /// [`Error::MessageOutOfRange`] unless `m < p`.
    pub fn encrypt_small(&self, message: u64, rng: &mut Csprng) -> Result<LweCiphertext, Error> {
        let plaintext = encode(message, self.params.plaintext_modulus())?;
        Ok(encrypt_lwe_unchecked(
            self.lwe_key.as_slice(),
            plaintext,
            self.params.lwe_noise(),
            rng,
        ))
    }

    /// The message of a ciphertext under the big key (dimension `kN`).
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when the ciphertext's dimension is not `kN`.
    pub fn decrypt(&self, ciphertext: &LweCiphertext) -> Result<u64, Error> {
        decode(self.phase(ciphertext)?, self.params.plaintext_modulus())
    }

    /// The message of a ciphertext under the small key (dimension `n`).
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when the ciphertext's dimension is not `n`.
    pub fn decrypt_small(&self, ciphertext: &LweCiphertext) -> Result<u64, Error> {
        decode(
            self.phase_small(ciphertext)?,
            self.params.plaintext_modulus(),
        )
    }

    /// The raw phase (message times delta plus noise) under the big key.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when the ciphertext's dimension is not `kN`.
    pub fn phase(&self, ciphertext: &LweCiphertext) -> Result<u64, Error> {
        lwe_phase(self.glwe_key.as_slice(), ciphertext)
    }

    /// The raw phase under the small key.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when the ciphertext's dimension is not `n`.
    pub fn phase_small(&self, ciphertext: &LweCiphertext) -> Result<u64, Error> {
        self.lwe_key.phase(ciphertext)
    }
}

/// The bootstrap key of a set of evaluation keys: classic or multi-bit, as its parameters'
/// [`PbsKind`] says ([`EvaluationKeys::from_parts`] refuses any other pairing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnyBootstrapKey {
    /// For a [`PbsKind::Classic`] set.
    Classic(BootstrapKey),
    /// For a [`PbsKind::MultiBit`] set.
    MultiBit(MultiBitBootstrapKey),
}

impl From<BootstrapKey> for AnyBootstrapKey {
    fn from(key: BootstrapKey) -> Self {
        Self::Classic(key)
    }
}

impl From<MultiBitBootstrapKey> for AnyBootstrapKey {
    fn from(key: MultiBitBootstrapKey) -> Self {
        Self::MultiBit(key)
    }
}

impl AnyBootstrapKey {
    /// Classic, or multi-bit with the key's grouping factor.
    #[must_use]
    pub fn pbs_kind(&self) -> PbsKind {
        match self {
            Self::Classic(_) => PbsKind::Classic,
            Self::MultiBit(key) => PbsKind::MultiBit(key.grouping_factor()),
        }
    }

    /// `n`, the dimension of the small key it encrypts.
    #[must_use]
    pub fn lwe_dimension(&self) -> LweDimension {
        match self {
            Self::Classic(key) => key.lwe_dimension(),
            Self::MultiBit(key) => key.lwe_dimension(),
        }
    }

    /// `k`.
    #[must_use]
    pub fn glwe_dimension(&self) -> GlweDimension {
        match self {
            Self::Classic(key) => key.glwe_dimension(),
            Self::MultiBit(key) => key.glwe_dimension(),
        }
    }

    /// `N`.
    #[must_use]
    pub fn polynomial_size(&self) -> PolynomialSize {
        match self {
            Self::Classic(key) => key.polynomial_size(),
            Self::MultiBit(key) => key.polynomial_size(),
        }
    }

    /// The decomposition of its GGSWs.
    #[must_use]
    pub fn decomposition(&self) -> DecompositionParams {
        match self {
            Self::Classic(key) => key.decomposition(),
            Self::MultiBit(key) => key.decomposition(),
        }
    }

    /// The words, in the layout of its kind.
    #[must_use]
    pub fn as_slice(&self) -> &[u64] {
        match self {
            Self::Classic(key) => key.as_slice(),
            Self::MultiBit(key) => key.as_slice(),
        }
    }
}

/// What the server needs: the bootstrap key, the key-switching key and the parameters. No
/// secret in it; `Debug` shows dimensions only (the keys are large).
#[derive(Clone)]
pub struct EvaluationKeys {
    params: Parameters,
    bootstrap_key: AnyBootstrapKey,
    keyswitch_key: KeyswitchKey,
}

impl fmt::Debug for EvaluationKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EvaluationKeys")
            .field("params", &self.params)
            .field("bootstrap_key_words", &self.bootstrap_key.as_slice().len())
            .field("keyswitch_key_words", &self.keyswitch_key.as_slice().len())
            .finish()
    }
}

impl EvaluationKeys {
    /// Generates the key-switching key (big key to small key, LWE noise) and then the bootstrap
    /// key of the set's [`PbsKind`] (the small key's bits, or their group patterns, under the
    /// GLWE key, GLWE noise), in that order from `rng`.
    #[must_use]
    pub fn generate(client_key: &ClientKey, rng: &mut Csprng) -> Self {
        let params = client_key.params;
        // Parameters::new checked the noise distributions; the keys' dimensions are its.
        let keyswitch_key = KeyswitchKey::generate_unchecked(
            client_key.glwe_key.as_slice(),
            &client_key.lwe_key,
            params.ks_decomposition(),
            params.lwe_noise(),
            rng,
        );
        let bootstrap_key = match params.pbs_kind() {
            PbsKind::Classic => AnyBootstrapKey::Classic(BootstrapKey::generate_unchecked(
                &client_key.lwe_key,
                &client_key.glwe_key,
                params.pbs_decomposition(),
                params.glwe_noise(),
                rng,
            )),
            PbsKind::MultiBit(grouping_factor) => {
                match MultiBitBootstrapKey::generate(
                    &client_key.lwe_key,
                    &client_key.glwe_key,
                    grouping_factor,
                    params.pbs_decomposition(),
                    params.glwe_noise(),
                    rng,
                ) {
                    Ok(key) => AnyBootstrapKey::MultiBit(key),
                    // Parameters::new_multi_bit checked g and n, and the client key's
                    // dimensions are the parameters'.
                    Err(_) => unreachable!("a multi-bit set's g divides its n"),
                }
            }
        };
        Self {
            params,
            bootstrap_key,
            keyswitch_key,
        }
    }

    /// Assembles evaluation keys from parts (for keys made elsewhere).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] when the bootstrap key's kind (classic, or multi-bit with
    /// its grouping factor) is not the set's; [`Error::DimensionMismatch`] when a key's
    /// dimensions or decomposition disagree with `params`.
    pub fn from_parts(
        params: Parameters,
        bootstrap_key: impl Into<AnyBootstrapKey>,
        keyswitch_key: KeyswitchKey,
    ) -> Result<Self, Error> {
        let bootstrap_key = bootstrap_key.into();
        if bootstrap_key.pbs_kind() != params.pbs_kind() {
            return Err(Error::InvalidParameter {
                name: "bootstrap key",
                reason: format!(
                    "a {:?} key for a {:?} parameter set",
                    bootstrap_key.pbs_kind(),
                    params.pbs_kind()
                ),
            });
        }
        let checks = [
            (
                "bootstrap key LWE dimension",
                params.lwe_dimension().0,
                bootstrap_key.lwe_dimension().0,
            ),
            (
                "bootstrap key GLWE dimension",
                params.glwe_dimension().0,
                bootstrap_key.glwe_dimension().0,
            ),
            (
                "bootstrap key polynomial size",
                params.polynomial_size().0,
                bootstrap_key.polynomial_size().0,
            ),
            (
                "bootstrap key base log",
                params.pbs_decomposition().base_log().0,
                bootstrap_key.decomposition().base_log().0,
            ),
            (
                "bootstrap key level count",
                params.pbs_decomposition().level_count().0,
                bootstrap_key.decomposition().level_count().0,
            ),
            (
                "key-switching key input dimension",
                params.big_lwe_dimension().0,
                keyswitch_key.input_dimension().0,
            ),
            (
                "key-switching key output dimension",
                params.lwe_dimension().0,
                keyswitch_key.output_dimension().0,
            ),
            (
                "key-switching key base log",
                params.ks_decomposition().base_log().0,
                keyswitch_key.decomposition().base_log().0,
            ),
            (
                "key-switching key level count",
                params.ks_decomposition().level_count().0,
                keyswitch_key.decomposition().level_count().0,
            ),
        ];
        for (what, expected, got) in checks {
            crate::polynomial::check_len(what, expected, got)?;
        }
        Ok(Self {
            params,
            bootstrap_key,
            keyswitch_key,
        })
    }

    /// The parameters.
    #[must_use]
    pub fn parameters(&self) -> &Parameters {
        &self.params
    }

    /// The bootstrap key (standard domain), classic or multi-bit as the parameters say.
    #[must_use]
    pub fn bootstrap_key(&self) -> &AnyBootstrapKey {
        &self.bootstrap_key
    }

    /// The key-switching key.
    #[must_use]
    pub fn keyswitch_key(&self) -> &KeyswitchKey {
        &self.keyswitch_key
    }
}
