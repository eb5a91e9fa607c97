//! TFHE key switching and programmable bootstrapping (PBS) on the 64-bit torus.
//!
//! It follows section "fhe-pbs: TFHE on the 64-bit torus" of the workspace's `SPEC.md`, that
//! is tfhe-rs 1.8 `core_crypto` conventions: the torus is `u64` with wrapping arithmetic,
//! secret keys are binary, the pipeline is key switch then bootstrap (`KS_PBS`), with
//! tfhe-rs's modulus switch to `2N` (plain rounding, or its centered-mean variant, per
//! parameter set), its balanced signed gadget decomposition with rounding, blind rotation by
//! CMux (external products), sample extraction, and lookup tables with one bit of padding
//! (`delta = 2^63 / p`). Both of tfhe-rs's bootstraps: classic ([`BootstrapKey`], one CMux per
//! mask word) and multi-bit ([`MultiBitBootstrapKey`], grouping factor 2, 3 or 4: one external
//! product per group of mask words with a key bundle built from the group's `2^g` GGSWs; sets
//! made with [`Parameters::new_multi_bit`], or tfhe-rs's
//! [`PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2`] and its group-3 sibling); the parameters'
//! [`PbsKind`] fixes which, and [`EvaluationKeys`] holds only a key of that kind.
//! `tests/tfhe_rs.rs` checks the decomposition, both modulus switches, the multi-bit monomial
//! degrees, the key-switching key's layout and the key switch bit for bit against tfhe-rs
//! 1.8.2 (a dev-dependency only), and bootstraps keys and ciphertexts across both libraries,
//! classic and multi-bit. On the GPU the multi-bit bootstrap runs on thread-block clusters
//! (sm_90 and newer; the key bundles of all groups built first, off the serial chain), in
//! both engines' place.
//!
//! Every operation goes through the [`Bootstrapper`] trait. [`Cpu`] implements it from the
//! [`EvaluationKeys`] in one of two [`BlindRotationMode`]s: `Exact` (integer products, the
//! oracle) and `Fft` (an f64 negacyclic FFT, the bootstrap key kept in the Fourier domain).
//! [`Cuda`] (feature `cuda`, on by default) implements it on the GPU with both keys resident
//! in device memory and two engines ([`Engine`]: low latency with thread-block clusters, or
//! amortized over large batches; see the `cuda` module docs for the kernels). [`MultiGpu`]
//! (feature `cuda`) spreads batches over several GPUs of one host, a [`Cuda`] on each.
//! [`Backend`] picks the GPU when one is usable and the CPU otherwise.
//!
//! # Example
//!
//! ```
//! use fhe_pbs::{
//!     BlindRotationMode, Bootstrapper, ClientKey, Cpu, Csprng, EvaluationKeys, LookupTable,
//!     PARAM_TEST_INSECURE,
//! };
//!
//! # fn main() -> Result<(), fhe_pbs::Error> {
//! let params = PARAM_TEST_INSECURE; // small and insecure: for tests and examples only
//! let mut rng = Csprng::from_seed([7; 32]);
//! let client_key = ClientKey::generate(params, &mut rng);
//! let keys = EvaluationKeys::generate(&client_key, &mut rng);
//! let server = Cpu::new(keys, BlindRotationMode::Fft)?;
//!
//! // f(m) = m^2 mod 16, applied homomorphically to 3.
//! let square = LookupTable::new(&params, |m| m * m % 16)?;
//! let ciphertext = client_key.encrypt(3, &mut rng)?; // under the big key, as KS_PBS expects
//! let result = server.keyswitch_bootstrap(&ciphertext, &square)?;
//! assert_eq!(client_key.decrypt(&result)?, 9);
//!
//! // Messages must lie in [0, p).
//! assert!(client_key.encrypt(16, &mut rng).is_err());
//! # Ok(()) }
//! ```
//!
//! # Conventions
//!
//! * Keys. The *small* LWE key has dimension `n`; the GLWE key has `k` polynomials of `N`
//!   coefficients, which laid end to end form the *big* LWE key of dimension `kN`. Fresh
//!   ciphertexts ([`ClientKey::encrypt`]) are under the big key with the GLWE noise. The key
//!   switch goes from the big key to the small one; its key ([`KeyswitchKey`]) uses the LWE
//!   noise. The bootstrap goes from the small key back to the big one; its key
//!   ([`BootstrapKey`]: GGSW encryptions of the small key's bits under the GLWE key) uses the
//!   GLWE noise.
//! * Encoding: `m in [0, p)` becomes `m * delta`, `delta = 2^63 / p`; the top bit is padding.
//! * Modulus switch ([`modswitch`]): `round(x 2N / 2^64) mod 2N`, computed as
//!   `((x >> (64 - log2(2N) - 1)) + 1) >> 1`, for every word; with
//!   [`ModulusSwitchType::CenteredMeanNoiseReduction`] (the standard set's) the body is first
//!   corrected by half the mask's rounding errors minus half a step, as tfhe-rs does.
//! * Decomposition ([`decomposition`]): round to the closest multiple of `2^(64 - b l)` (ties
//!   up), balance the whole rounded value into `(-B^l/2, B^l/2]` (`-B^l/2` when rounding
//!   carried it there), then balanced digits in `[-B/2, B/2]`, least significant level first;
//!   a digit equal to `B/2` becomes `-B/2` (with a carry) exactly when bit `b - 1` of the
//!   remaining (signed) state is set. These are tfhe-rs's `init_decomposer_state` and
//!   `decompose_one_level` (`tfhe/src/core_crypto/commons/math/decomposition/`).
//! * Blind rotation: `ACC = X^{-b~} LUT`, then for each `i` the CMux
//!   `ACC += BSK_i ⊡ (X^{a~_i} ACC - ACC)`; sample extraction of coefficient 0
//!   ([`glwe::sample_extract`]).
//! * Lookup tables ([`lut`]): boxes of `N / p` coefficients, box `m` holding `f(m) delta`,
//!   the first half box negated and rotated to the end (tfhe-rs's `generate_lookup_table`).
//! * Noise (`NoiseDistribution`): Gaussian (std as a fraction of the torus, rounded) or
//!   tfhe-rs's `TUniform(b)`: integers in `[-2^b, 2^b]`, the two end points with half the
//!   probability of the others (that is tfhe-rs's definition; the variance is
//!   `(2^(2b+1) + 1) / 6`).
//!
//! # Data layouts
//!
//! Everything is a plain `Vec<u64>` (the Fourier key a `Vec<Complex64>`), ready to upload as
//! it is: LWE = mask then body ([`lwe`]); GLWE = `k` mask polynomials then the body, constant
//! term first ([`glwe`]); key-switching key = input coefficient major, then the levels from
//! the least significant, LWE ciphertexts of dimension `n` ([`keyswitch`]); bootstrap key =
//! `n` GGSW, each with its level matrices from the least significant, `k + 1` rows of GLWE
//! ciphertexts ([`bootstrap_key`]): tfhe-rs's layouts, so their raw words cross as they are.
//! The Fourier key has every polynomial replaced by `N / 2` complex values and the level
//! matrices in the order the blind rotation takes the digits, level 1 first ([`fft`]).
//!
//! # The two blind-rotation modes
//!
//! * `Exact` multiplies polynomials exactly mod `2^64` by Karatsuba ([`polynomial`]). It is
//!   the oracle: its output is a deterministic function of the keys and input, which a GPU
//!   implementation of the same integer algorithm must reproduce bit for bit.
//! * `Fft` uses `rustfft` (MIT/Apache-2.0) for an `N/2`-point complex FFT with the standard
//!   negacyclic twist (`(a_j + i a_{j+N/2}) w^j`, `w = exp(i pi / N)`). We use `rustfft`
//!   rather than our own FFT because it is a mature, fast (SIMD, chosen at run time), pure-Rust
//!   implementation with no `unsafe` needed on our side. Precision follows tfhe-rs's f64
//!   analysis, with no splitting of the key's 64-bit coefficients: products reach about
//!   `2^90` and carry rounding errors near `2^40`; results are rounded and wrapped mod `2^64`
//!   exactly (see [`fft`]). The tests measure the distance to `Exact`: `2^48.5` to `2^50` on
//!   the extracted phase for both parameter sets, against `delta / 2 = 2^58`. Most of it
//!   comes from the mask coefficients, whose errors (about `2^40` each) the phase sums over
//!   the `kN / 2` ones of the key, and then over the `n` CMuxes.
//!
//! The crate is built for baseline x86-64; the key switch's and the blind rotation's own loops
//! (the twist, the decomposition, the pointwise products, the rounding) run compiled for
//! AVX-512 or AVX2 when the processor has them, chosen at run time, and ask for the next key
//! block while they work on the current one (a prefetch hint). The results are the same bit
//! for bit at every level (the same IEEE operations in the same order; a unit test compares
//! them).
//!
//! # Output noise of the bootstrap
//!
//! With binary keys, `l` levels of base `B = 2^b`, bootstrap key noise variance `V_bsk` and
//! the rounding error of the decomposition `V_round = (2^(2(64 - b l)) - 1) / 12` (a uniform
//! error on `2^(64 - b l)` values), each CMux adds `(k + 1) l N (B^2 + 2) / 12 * V_bsk` (the
//! digits, of variance `(B^2 + 2) / 12`, times the key noise) plus, when `s_i = 1`,
//! `V_round (1 + |S|)` (the rounding error times `(1, -S)`, `|S|` the GLWE key's Hamming
//! weight). Over the `n` CMuxes, in units of `2^-128` of the torus squared:
//!
//! ```text
//! V_out = n (k + 1) l N (B^2 + 2) / 12 * V_bsk + |s| (1 + |S|) V_round
//! ```
//!
//! (`|s|` the small key's Hamming weight, about `n / 2`; with `|S|` about `kN / 2` this is
//! the usual `n (q^2 - B^{2l}) / (24 B^{2l}) (1 + kN / 2)` term). `tests/noise.rs` checks it
//! against measured variances.
//!
//! # Cross-checking
//!
//! The integer stages are public functions in small modules so that another backend can be
//! compared with them bit for bit: encryption with given randomness
//! ([`lwe::encrypt_lwe_with_randomness`], [`glwe::encrypt_glwe_with_randomness`],
//! [`bootstrap_key::encrypt_ggsw_with_randomness`]), [`modswitch::modulus_switch`],
//! [`decomposition::decompose`], [`keyswitch::keyswitch`], [`glwe::sample_extract`],
//! [`lut::lut_polynomial`], and the whole exact blind rotation ([`Cpu::blind_rotate`] in
//! `Exact` mode). After an f64 FFT blind rotation, backends compare by decrypted message
//! (equal) and by the phase distance to the exact one, which stays far below `delta / 2`.
//! `tests/` holds known answers, properties (proptest), and full bootstraps on both parameter
//! sets.

#![deny(unsafe_code)]

use std::sync::Arc;

pub mod bootstrap_key;
mod cpu;
#[cfg(feature = "cuda")]
#[allow(unsafe_code)]
mod cuda;
pub mod decomposition;
mod error;
pub mod fft;
pub mod glwe;
mod keys;
pub mod keyswitch;
pub mod lut;
pub mod lwe;
pub mod modswitch;
pub mod multi_bit_key;
pub mod params;
pub mod polynomial;
mod rng;
#[allow(unsafe_code)]
mod simd;
#[cfg(feature = "cuda")]
pub mod source;

pub use bootstrap_key::BootstrapKey;
pub use cpu::{BlindRotationMode, Cpu};
#[cfg(feature = "cuda")]
pub use cuda::{Cuda, DeviceLweCiphertexts, Engine, MultiGpu, stages};
pub use error::Error;
#[cfg(feature = "cuda")]
pub use error::GpuFailure;
pub use fft::FourierBootstrapKey;
pub use glwe::GlweCiphertext;
pub use keys::{AnyBootstrapKey, ClientKey, EvaluationKeys, GlweSecretKey, LweSecretKey};
pub use keyswitch::KeyswitchKey;
pub use lut::LookupTable;
pub use lwe::LweCiphertext;
pub use multi_bit_key::MultiBitBootstrapKey;
pub use params::{
    DecompositionBaseLog, DecompositionLevelCount, DecompositionParams, GlweDimension,
    GroupingFactor, LweDimension, ModulusSwitchType, NoiseDistribution,
    PARAM_GPU_MULTI_BIT_GROUP_3_MESSAGE_2_CARRY_2, PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2,
    PARAM_MESSAGE_2_CARRY_2, PARAM_TEST_INSECURE, ParameterSpec, Parameters, PbsKind,
    PolynomialSize,
};
pub use rng::Csprng;

/// Key switching and programmable bootstrapping: the operations every backend provides.
///
/// Inputs: ciphertexts under the big key (dimension `kN`) for [`Bootstrapper::keyswitch`] and
/// [`Bootstrapper::keyswitch_bootstrap`], under the small key (dimension `n`) for
/// [`Bootstrapper::bootstrap`]. Bootstrap outputs are under the big key.
pub trait Bootstrapper {
    /// A human-readable name ("cpu (fft, 2 threads)", later "cuda: NVIDIA H100 ...").
    fn name(&self) -> String;

    /// The parameters of the keys this backend holds.
    fn parameters(&self) -> &Parameters;

    /// Key switch from the big key to the small key.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] unless the ciphertext's dimension is `kN`.
    fn keyswitch(&self, ciphertext: &LweCiphertext) -> Result<LweCiphertext, Error>;

    /// Programmable bootstrap: from the small key to the big key, applying `lut`.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] unless the ciphertext's dimension is `n` and the table's
    /// size `N`.
    fn bootstrap(
        &self,
        ciphertext: &LweCiphertext,
        lut: &LookupTable,
    ) -> Result<LweCiphertext, Error>;

    /// Key switch then bootstrap (`KS_PBS`): big key to big key, applying `lut`.
    ///
    /// # Errors
    ///
    /// As [`Bootstrapper::keyswitch`] and [`Bootstrapper::bootstrap`].
    fn keyswitch_bootstrap(
        &self,
        ciphertext: &LweCiphertext,
        lut: &LookupTable,
    ) -> Result<LweCiphertext, Error> {
        let small = self.keyswitch(ciphertext)?;
        self.bootstrap(&small, lut)
    }

    /// [`Bootstrapper::keyswitch`] on each ciphertext.
    ///
    /// # Errors
    ///
    /// The first error of any element.
    fn keyswitch_batch(&self, ciphertexts: &[LweCiphertext]) -> Result<Vec<LweCiphertext>, Error> {
        ciphertexts.iter().map(|c| self.keyswitch(c)).collect()
    }

    /// [`Bootstrapper::bootstrap`] on each ciphertext, all with the same table.
    ///
    /// # Errors
    ///
    /// The first error of any element.
    fn bootstrap_batch(
        &self,
        ciphertexts: &[LweCiphertext],
        lut: &LookupTable,
    ) -> Result<Vec<LweCiphertext>, Error> {
        ciphertexts.iter().map(|c| self.bootstrap(c, lut)).collect()
    }

    /// [`Bootstrapper::keyswitch_bootstrap`] on each ciphertext, all with the same table.
    ///
    /// # Errors
    ///
    /// The first error of any element.
    fn keyswitch_bootstrap_batch(
        &self,
        ciphertexts: &[LweCiphertext],
        lut: &LookupTable,
    ) -> Result<Vec<LweCiphertext>, Error> {
        ciphertexts
            .iter()
            .map(|c| self.keyswitch_bootstrap(c, lut))
            .collect()
    }
}

/// A backend chosen at run time: the GPU when one is usable, the CPU otherwise.
#[derive(Debug, Clone)]
pub enum Backend {
    /// The CPU reference.
    Cpu(Cpu),
    /// The CUDA backend (boxed: it is much larger than the CPU handle).
    #[cfg(feature = "cuda")]
    Cuda(Box<Cuda>),
}

impl Backend {
    /// The CUDA backend ([`Engine::Auto`]) if a GPU, its driver and NVRTC are present;
    /// otherwise the CPU in [`BlindRotationMode::Fft`], saying why on standard error.
    ///
    /// # Errors
    ///
    /// As [`Cpu::new`] when falling back to the CPU.
    pub fn best(keys: impl Into<Arc<EvaluationKeys>>) -> Result<Self, Error> {
        let keys = keys.into();
        #[cfg(feature = "cuda")]
        match Cuda::new(&keys, Engine::Auto) {
            Ok(cuda) => return Ok(Backend::Cuda(Box::new(cuda))),
            Err(why) => eprintln!("fhe-pbs: using the CPU backend: {why}"),
        }
        Ok(Backend::Cpu(Cpu::new(keys, BlindRotationMode::Fft)?))
    }

    fn as_dyn(&self) -> &dyn Bootstrapper {
        match self {
            Backend::Cpu(cpu) => cpu,
            #[cfg(feature = "cuda")]
            Backend::Cuda(cuda) => cuda.as_ref(),
        }
    }
}

impl Bootstrapper for Backend {
    fn name(&self) -> String {
        self.as_dyn().name()
    }

    fn parameters(&self) -> &Parameters {
        self.as_dyn().parameters()
    }

    fn keyswitch(&self, ciphertext: &LweCiphertext) -> Result<LweCiphertext, Error> {
        self.as_dyn().keyswitch(ciphertext)
    }

    fn bootstrap(
        &self,
        ciphertext: &LweCiphertext,
        lut: &LookupTable,
    ) -> Result<LweCiphertext, Error> {
        self.as_dyn().bootstrap(ciphertext, lut)
    }

    fn keyswitch_bootstrap(
        &self,
        ciphertext: &LweCiphertext,
        lut: &LookupTable,
    ) -> Result<LweCiphertext, Error> {
        self.as_dyn().keyswitch_bootstrap(ciphertext, lut)
    }

    fn keyswitch_batch(&self, ciphertexts: &[LweCiphertext]) -> Result<Vec<LweCiphertext>, Error> {
        self.as_dyn().keyswitch_batch(ciphertexts)
    }

    fn bootstrap_batch(
        &self,
        ciphertexts: &[LweCiphertext],
        lut: &LookupTable,
    ) -> Result<Vec<LweCiphertext>, Error> {
        self.as_dyn().bootstrap_batch(ciphertexts, lut)
    }

    fn keyswitch_bootstrap_batch(
        &self,
        ciphertexts: &[LweCiphertext],
        lut: &LookupTable,
    ) -> Result<Vec<LweCiphertext>, Error> {
        self.as_dyn().keyswitch_bootstrap_batch(ciphertexts, lut)
    }
}
