//! The CPU engine: key switch, blind rotation (exact or FFT), sample extraction.

use std::sync::Arc;

use rayon::prelude::*;
use rustfft::num_complex::Complex64;

mod multi_bit;

use crate::Bootstrapper;
use crate::decomposition::Decomposer;
use crate::error::Error;
use crate::fft::{FourierBootstrapKey, NegacyclicFft};
use crate::glwe::{GlweCiphertext, sample_extract};
use crate::keys::{AnyBootstrapKey, EvaluationKeys};
use crate::keyswitch::keyswitch;
use crate::lut::LookupTable;
use crate::lwe::LweCiphertext;
use crate::modswitch::{log2_2n, switch_lwe_unchecked};
use crate::params::Parameters;
use crate::polynomial::{ExactMultiplier, check_len, multiply_by_monomial_unchecked};
use crate::simd::{Vectorized, prefetch, vectorized};

/// How the CPU engine computes the external products of the blind rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlindRotationMode {
    /// Integer negacyclic products mod `2^64` (Karatsuba): bit-exact, the oracle. Slower.
    Exact,
    /// f64 negacyclic FFT products with the bootstrap key kept in the Fourier domain
    /// ([`crate::fft`]): the result differs from [`BlindRotationMode::Exact`] by a small
    /// rounding error, far below `delta / 2`.
    Fft,
}

/// The CPU backend: evaluation keys plus a blind-rotation mode. Cloning is cheap (the keys are
/// shared).
///
/// # Algorithm
///
/// * Key switch: [`crate::keyswitch::keyswitch`].
/// * Bootstrap of an LWE ciphertext `(a, b)` of dimension `n`: modulus switch every word to
///   `2N` ([`crate::modswitch`]); accumulator `ACC = (0, ..., 0, X^{-b~} LUT)`; then for each
///   `i` with `a~_i != 0`, the CMux `ACC += BSK_i ⊡ (X^{a~_i} ACC - ACC)`, where `⊡` is the
///   external product: decompose ([`crate::decomposition`]) each of the `k + 1` polynomials
///   of the difference into `l` digit polynomials, and sum their products with the rows of
///   GGSW `i` ([`crate::bootstrap_key`] layout). Finally extract coefficient 0
///   ([`crate::glwe::sample_extract`]). The result is under the big key with phase about
///   `f(m) delta`.
/// * Multi-bit bootstrap ([`crate::PbsKind::MultiBit`], grouping factor `g`): the same
///   accumulator, then for each group of `g` mask words one external product
///   `ACC = BUNDLE ⊡ ACC` with the group's key bundle `BUNDLE = sum_t X^{d_t} GGSW_t`
///   ([`crate::multi_bit_key`] layout; `d_t` from [`crate::modswitch::multi_bit_degrees`],
///   `d_0 = 0`), as tfhe-rs's multi-bit PBS: the bundle encrypts `X^{sum_j a~_j s_j}` for the
///   group. The bundle is built in the standard domain (exact) and, in FFT mode, transformed
///   before each product.
/// * Batches run one ciphertext per rayon task. In exact mode a single blind rotation also
///   splits its `k + 1` output polynomials across rayon tasks.
#[derive(Debug, Clone)]
pub struct Cpu {
    keys: Arc<EvaluationKeys>,
    mode: BlindRotationMode,
    prepared: Prepared,
}

/// What an engine computes once from the keys for its mode.
#[derive(Debug, Clone)]
enum Prepared {
    /// Exact mode: the standard-domain keys alone.
    Exact,
    /// Classic FFT mode: the bootstrap key in the Fourier domain.
    ClassicFft(Arc<FourierBootstrapKey>),
    /// Multi-bit FFT mode: the transforms (each bundle is built, then transformed).
    MultiBitFft(Arc<NegacyclicFft>),
}

impl Cpu {
    /// An engine over `keys`. [`BlindRotationMode::Fft`] transforms a classic bootstrap key
    /// into the Fourier domain here, once.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] when the FFT cannot be planned (the key's `N` is not a
    /// power of two; impossible for keys made from valid [`Parameters`]).
    pub fn new(
        keys: impl Into<Arc<EvaluationKeys>>,
        mode: BlindRotationMode,
    ) -> Result<Self, Error> {
        let keys = keys.into();
        let prepared = match (mode, keys.bootstrap_key()) {
            (BlindRotationMode::Exact, _) => Prepared::Exact,
            (BlindRotationMode::Fft, AnyBootstrapKey::Classic(key)) => {
                Prepared::ClassicFft(Arc::new(FourierBootstrapKey::new(key)?))
            }
            (BlindRotationMode::Fft, AnyBootstrapKey::MultiBit(key)) => {
                Prepared::MultiBitFft(Arc::new(NegacyclicFft::new(key.polynomial_size())?))
            }
        };
        Ok(Self {
            keys,
            mode,
            prepared,
        })
    }

    /// The same keys with another mode (the Fourier key is computed if needed).
    ///
    /// # Errors
    ///
    /// As [`Cpu::new`].
    pub fn with_mode(&self, mode: BlindRotationMode) -> Result<Self, Error> {
        if mode == self.mode {
            return Ok(self.clone());
        }
        Self::new(Arc::clone(&self.keys), mode)
    }

    /// The evaluation keys.
    #[must_use]
    pub fn keys(&self) -> &EvaluationKeys {
        &self.keys
    }

    /// The blind-rotation mode.
    #[must_use]
    pub fn mode(&self) -> BlindRotationMode {
        self.mode
    }

    /// The blind rotation alone: the GLWE accumulator (under the GLWE key) before sample
    /// extraction, whose phase is `X^{-phase~} LUT` plus noise, `phase~` being the
    /// modulus-switched phase of `ciphertext` under the small key.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when the ciphertext's dimension is not `n` or the table's
    /// size is not `N`.
    pub fn blind_rotate(
        &self,
        ciphertext: &LweCiphertext,
        lut: &LookupTable,
    ) -> Result<GlweCiphertext, Error> {
        let params = self.keys.parameters();
        check_len(
            "bootstrap input LWE dimension",
            params.lwe_dimension().0,
            ciphertext.dimension().0,
        )?;
        check_len(
            "lookup table polynomial size",
            params.polynomial_size().0,
            lut.polynomial_size().0,
        )?;
        let rotation = BlindRotation {
            cpu: self,
            words: ciphertext.as_slice(),
            lut: lut.polynomial(),
            log2_2n: log2_2n(params.polynomial_size())?,
        };
        Ok(GlweCiphertext::from_vec_unchecked(
            vectorized(rotation),
            params.glwe_dimension(),
            params.polynomial_size(),
        ))
    }
}

/// One blind rotation (the checked arguments of [`Cpu::blind_rotate`]), run through
/// [`vectorized`] so that the FFT modes' loops use the processor's vector instructions.
#[derive(Clone)]
struct BlindRotation<'a> {
    cpu: &'a Cpu,
    words: &'a [u64],
    lut: &'a [u64],
    log2_2n: u32,
}

impl Vectorized for BlindRotation<'_> {
    type Output = Vec<u64>;

    #[inline(always)]
    fn run(self) -> Vec<u64> {
        let Self {
            cpu,
            words,
            lut,
            log2_2n,
        } = self;
        let params = cpu.keys.parameters();
        match (cpu.keys.bootstrap_key(), &cpu.prepared) {
            (AnyBootstrapKey::Classic(_), Prepared::ClassicFft(fourier)) => {
                let switched = switch_lwe_unchecked(words, log2_2n, params.modulus_switch());
                blind_rotate_fft(params, fourier, &switched, lut)
            }
            (AnyBootstrapKey::Classic(key), _) => {
                let switched = switch_lwe_unchecked(words, log2_2n, params.modulus_switch());
                blind_rotate_exact(params, key.as_slice(), &switched, lut)
            }
            (AnyBootstrapKey::MultiBit(key), Prepared::MultiBitFft(fft)) => {
                multi_bit::blind_rotate(params, key, words, lut, log2_2n, Some(fft))
            }
            (AnyBootstrapKey::MultiBit(key), _) => {
                multi_bit::blind_rotate(params, key, words, lut, log2_2n, None)
            }
        }
    }
}

/// The accumulator's initial value: zero masks, body `X^{-b~} LUT`.
fn initial_accumulator(k: usize, n: usize, b_tilde: usize, lut: &[u64]) -> Vec<u64> {
    let mut acc = vec![0u64; (k + 1) * n];
    multiply_by_monomial_unchecked(&mut acc[k * n..], lut, 2 * n - b_tilde);
    acc
}

/// `diff = X^a acc - acc`, polynomial by polynomial.
#[inline(always)]
fn rotate_difference(diff: &mut [u64], acc: &[u64], a: usize, n: usize) {
    for (d, p) in diff.chunks_exact_mut(n).zip(acc.chunks_exact(n)) {
        multiply_by_monomial_unchecked(d, p, a);
        for (x, &y) in d.iter_mut().zip(p) {
            *x = x.wrapping_sub(y);
        }
    }
}

/// Decomposes the `k + 1` polynomials of `diff` (or of any GLWE) into `digits`, row order of the GGSW layout:
/// digit polynomial `(level j, polynomial r)` at `(j (k + 1) + r) N`.
#[inline(always)]
fn decompose_difference(
    diff: &[u64],
    digits: &mut [i64],
    states: &mut [u64],
    n: usize,
    k1: usize,
    decomposer: &Decomposer,
    levels: usize,
) {
    for (r, poly) in diff.chunks_exact(n).enumerate() {
        decomposer.decompose_levels(poly, states, &mut digits[r * n..], k1 * n, levels);
    }
}

/// What both blind rotations share: the accumulator (starting at `X^{-b~} LUT`), the
/// decomposer, and the buffers of each CMux's rotated difference.
struct Rotation<'a> {
    n: usize,
    k1: usize,
    levels: usize,
    /// Digit polynomials per CMux: `levels (k + 1)`.
    rows: usize,
    /// The switched mask `a~_i`.
    mask: &'a [usize],
    decomposer: Decomposer,
    acc: Vec<u64>,
    diff: Vec<u64>,
    states: Vec<u64>,
}

impl<'a> Rotation<'a> {
    fn start(params: &Parameters, switched: &'a [usize], lut: &[u64]) -> Self {
        let n = params.polynomial_size().0;
        let k1 = params.glwe_dimension().0 + 1;
        let decomposition = params.pbs_decomposition();
        let levels = decomposition.level_count().0;
        let (mask, b_tilde) = match switched.split_last() {
            Some((&b, mask)) => (mask, b),
            None => (switched, 0),
        };
        Self {
            n,
            k1,
            levels,
            rows: levels * k1,
            mask,
            decomposer: Decomposer::new(decomposition),
            acc: initial_accumulator(k1 - 1, n, b_tilde, lut),
            diff: vec![0u64; k1 * n],
            states: vec![0u64; n],
        }
    }

    /// The digits of `X^a ACC - ACC` into `digits` (`rows` polynomials, GGSW row order).
    #[inline(always)]
    fn decompose_step(&mut self, a: usize, digits: &mut [i64]) {
        rotate_difference(&mut self.diff, &self.acc, a, self.n);
        decompose_difference(
            &self.diff,
            digits,
            &mut self.states,
            self.n,
            self.k1,
            &self.decomposer,
            self.levels,
        );
    }

    /// The digits of `ACC` itself into `digits` (`rows` polynomials, GGSW row order).
    #[inline(always)]
    fn decompose_accumulator(&mut self, digits: &mut [i64]) {
        decompose_difference(
            &self.acc,
            digits,
            &mut self.states,
            self.n,
            self.k1,
            &self.decomposer,
            self.levels,
        );
    }
}

/// `out += digits ⊡ ggsw` exactly: each of the `k + 1` output polynomials gets the products of
/// the `rows` digit polynomials (GGSW row order, level 1 first) with the matching key
/// polynomials of `ggsw` (standard layout, least significant level first). In parallel over the
/// output polynomials.
fn external_product_exact(out: &mut [u64], digits: &[u64], ggsw: &[u64], n: usize, k1: usize) {
    let rows = digits.len() / n;
    out.par_chunks_exact_mut(n).enumerate().for_each_init(
        || ExactMultiplier::new(n),
        |multiplier, (c, out)| {
            for (row, digit_poly) in digits.chunks_exact(n).enumerate() {
                // Digit row (level j, polynomial r) meets the key's row r of level j, whose
                // level matrix is stored least significant first.
                let (j, r) = (row / k1, row % k1);
                let key_row = (rows / k1 - 1 - j) * k1 + r;
                let key_poly = &ggsw[(key_row * k1 + c) * n..(key_row * k1 + c + 1) * n];
                multiplier.mul_add(out, digit_poly, key_poly);
            }
        },
    );
}

/// Complex values per chunk of the pointwise products: each chunk first asks for the same
/// range of the next GGSW ([`prefetch`]), so that the key streams in one CMux ahead of its use.
/// (Measured on a 2-core AMD EPYC VM, one classic PBS, alternated: 20.0-20.9 ms without,
/// 16.9-17.3 ms with; the whole next GGSW asked for at the start of each CMux gained 2-3%.)
const PRODUCT_CHUNK: usize = 32;

/// `out += digits ⊡ ggsw` through the FFT: `digits_f` are the digit polynomials' transforms (GGSW
/// row order, level 1 first), `ggsw` a GGSW in the Fourier layout of [`FourierBootstrapKey`],
/// `next` the GGSW of the next CMux (prefetched as the products go; empty for none).
#[inline(always)]
fn external_product_fft(
    out: &mut [u64],
    digits_f: &[Complex64],
    ggsw: &[Complex64],
    next: &[Complex64],
    fft: &NegacyclicFft,
    buffers: &mut FftBuffers,
) {
    let n = fft.polynomial_size().0;
    let half = n / 2;
    let k1 = out.len() / n;
    for (c, out) in out.chunks_exact_mut(n).enumerate() {
        buffers.out_f.fill(Complex64::default());
        for (row, d) in digits_f.chunks_exact(half).enumerate() {
            let at = (row * k1 + c) * half;
            let key = &ggsw[at..at + half];
            let mut ahead = next.get(at..at + half).unwrap_or(&[]).chunks(PRODUCT_CHUNK);
            let chunks = buffers.out_f.chunks_mut(PRODUCT_CHUNK);
            for ((o, x), y) in chunks
                .zip(d.chunks(PRODUCT_CHUNK))
                .zip(key.chunks(PRODUCT_CHUNK))
            {
                if let Some(upcoming) = ahead.next() {
                    prefetch(upcoming);
                }
                for ((o, x), y) in o.iter_mut().zip(x).zip(y) {
                    *o += x * y;
                }
            }
        }
        fft.backward_add(&mut buffers.out_f, out, &mut buffers.scratch);
    }
}

/// The FFT work buffers of one blind rotation.
struct FftBuffers {
    /// One output polynomial's transform.
    out_f: Vec<Complex64>,
    /// The transforms' scratch.
    scratch: Vec<Complex64>,
}

impl FftBuffers {
    fn new(fft: &NegacyclicFft) -> Self {
        Self {
            out_f: vec![Complex64::default(); fft.polynomial_size().0 / 2],
            scratch: fft.make_scratch(),
        }
    }

    /// The transforms of the digit polynomials `digits` into `digits_f`.
    #[inline(always)]
    fn forward_digits(&mut self, fft: &NegacyclicFft, digits: &[i64], digits_f: &mut [Complex64]) {
        let n = fft.polynomial_size().0;
        for (d, f) in digits.chunks_exact(n).zip(digits_f.chunks_exact_mut(n / 2)) {
            fft.forward_i64(d, f, &mut self.scratch);
        }
    }
}

/// The exact blind rotation (integer products), returning the accumulator words.
pub(crate) fn blind_rotate_exact(
    params: &Parameters,
    bsk: &[u64],
    switched: &[usize],
    lut: &[u64],
) -> Vec<u64> {
    let mut rotation = Rotation::start(params, switched, lut);
    let (n, k1, rows, mask) = (rotation.n, rotation.k1, rotation.rows, rotation.mask);
    let ggsw_len = rows * k1 * n;
    let mut signed_digits = vec![0i64; rows * n];
    let mut digits = vec![0u64; rows * n];
    for (i, &a) in mask.iter().enumerate() {
        if a == 0 {
            continue;
        }
        rotation.decompose_step(a, &mut signed_digits);
        for (u, &d) in digits.iter_mut().zip(&signed_digits) {
            *u = d as u64;
        }
        let ggsw = &bsk[i * ggsw_len..(i + 1) * ggsw_len];
        external_product_exact(&mut rotation.acc, &digits, ggsw, n, k1);
    }
    rotation.acc
}

/// The FFT blind rotation, returning the accumulator words.
#[inline(always)]
pub(crate) fn blind_rotate_fft(
    params: &Parameters,
    fourier: &FourierBootstrapKey,
    switched: &[usize],
    lut: &[u64],
) -> Vec<u64> {
    let mut rotation = Rotation::start(params, switched, lut);
    let (n, rows, mask) = (rotation.n, rotation.rows, rotation.mask);
    let fft = fourier.fft();
    let mut digits = vec![0i64; rows * n];
    let mut digits_f = vec![Complex64::default(); rows * n / 2];
    let mut buffers = FftBuffers::new(fft);
    for (i, &a) in mask.iter().enumerate() {
        if a == 0 {
            continue;
        }
        rotation.decompose_step(a, &mut digits);
        buffers.forward_digits(fft, &digits, &mut digits_f);
        external_product_fft(
            &mut rotation.acc,
            &digits_f,
            fourier.ggsw(i),
            fourier.ggsw(i + 1),
            fft,
            &mut buffers,
        );
    }
    rotation.acc
}

impl Bootstrapper for Cpu {
    fn name(&self) -> String {
        let mode = match self.mode {
            BlindRotationMode::Exact => "exact",
            BlindRotationMode::Fft => "fft",
        };
        format!("cpu ({mode}, {} threads)", rayon::current_num_threads())
    }

    fn parameters(&self) -> &Parameters {
        self.keys.parameters()
    }

    fn keyswitch(&self, ciphertext: &LweCiphertext) -> Result<LweCiphertext, Error> {
        keyswitch(self.keys.keyswitch_key(), ciphertext)
    }

    fn bootstrap(
        &self,
        ciphertext: &LweCiphertext,
        lut: &LookupTable,
    ) -> Result<LweCiphertext, Error> {
        Ok(sample_extract(&self.blind_rotate(ciphertext, lut)?))
    }

    fn keyswitch_batch(&self, ciphertexts: &[LweCiphertext]) -> Result<Vec<LweCiphertext>, Error> {
        ciphertexts.par_iter().map(|c| self.keyswitch(c)).collect()
    }

    fn bootstrap_batch(
        &self,
        ciphertexts: &[LweCiphertext],
        lut: &LookupTable,
    ) -> Result<Vec<LweCiphertext>, Error> {
        ciphertexts
            .par_iter()
            .map(|c| self.bootstrap(c, lut))
            .collect()
    }

    fn keyswitch_bootstrap_batch(
        &self,
        ciphertexts: &[LweCiphertext],
        lut: &LookupTable,
    ) -> Result<Vec<LweCiphertext>, Error> {
        ciphertexts
            .par_iter()
            .map(|c| self.keyswitch_bootstrap(c, lut))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{GroupingFactor, ModulusSwitchType, ParameterSpec};
    use crate::{ClientKey, Csprng, LweDimension, PARAM_TEST_INSECURE};

    /// The FFT blind rotations (classic, and multi-bit with g = 3) give the same words at
    /// every vector-instruction level the processor has (keys and inputs from fixed seeds).
    #[test]
    fn blind_rotations_do_not_depend_on_the_vector_level() {
        let multi_bit = Parameters::new_multi_bit(
            ParameterSpec {
                lwe_dimension: LweDimension(252),
                modulus_switch: ModulusSwitchType::Standard,
                ..*PARAM_TEST_INSECURE.spec()
            },
            GroupingFactor(3),
        )
        .unwrap();
        for (params, seed) in [(PARAM_TEST_INSECURE, 11u8), (multi_bit, 12)] {
            let mut rng = Csprng::from_seed([seed; 32]);
            let client = ClientKey::generate(params, &mut rng);
            let keys = EvaluationKeys::generate(&client, &mut rng);
            let cpu = Cpu::new(keys, BlindRotationMode::Fft).unwrap();
            let lut = LookupTable::new(&params, |m| (3 * m + 1) % 16).unwrap();
            for m in [0, 5, 15] {
                let ct = client.encrypt_small(m, &mut rng).unwrap();
                let rotation = BlindRotation {
                    cpu: &cpu,
                    words: ct.as_slice(),
                    lut: lut.polynomial(),
                    log2_2n: log2_2n(params.polynomial_size()).unwrap(),
                };
                let outputs = crate::simd::at_every_level(&rotation);
                for other in &outputs[1..] {
                    assert!(other == &outputs[0], "a level differs from the baseline");
                }
            }
        }
    }
}
