//! The blind rotation on the device: the key and FFT tables as the kernels read them, the
//! amortized and cluster kernels' launches and shared memory, the modulus switch and the
//! sample extraction (see the module docs of [`super`]).

use super::*;

/// At most this many threads per block of the amortized blind rotation
/// (`FHE_AMORTIZED_MAX_THREADS`, so that its registers do not spill); it wants
/// `(k + 1) N/2 / 16`, one per FFT task, and loops over the tasks beyond.
pub(super) const AMORTIZED_MAX_THREADS: u32 = 128;

/// log2 of the values per FFT task of the amortized kernel (`FHE_AMORTIZED_LOG_E`).
pub(super) const AMORTIZED_LOG_E: u32 = 4;

/// log2 of the values per FFT task of the cluster kernel (`FHE_CLUSTER_LOG_E`): 8 values,
/// one task per thread, `N/16` threads (measured on an H100 against 4 values: one KS+PBS
/// 4.04 -> 3.53 ms; 16 values spill registers and took 5.79 ms).
pub(super) const CLUSTER_LOG_E: u32 = 3;

/// Where the amortized blind rotation keeps its working set: the fastest layout whose shared
/// memory fits the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AmortizedLayout {
    /// Digit polynomials, twiddles and accumulator in shared memory.
    AllShared,
    /// Digits and twiddles in shared memory, the accumulator in the output buffer.
    AccumulatorInGlobal,
    /// Only the twiddles in shared memory: the accumulator in the output buffer and the digit
    /// polynomials in a device scratch area per ciphertext (large `N` with many levels).
    DigitsInGlobal,
}

/// The key as the kernels read it: complex values as `(re, im)` pairs, divided by `half`
/// (the inverse transform's `1 / M`, exactly: a power of two), each polynomial of `half`
/// values bit-reversed, the value of position `p` stored at `key_position(p)`, and each
/// GGSW's `rows` x `columns` polynomials (row-major in `fourier`) stored column by column, so
/// that the cluster kernel's block for a column copies its rows of a CMux in one piece.
pub(super) fn device_key(
    fourier: &FourierBootstrapKey,
    half: usize,
    rows: usize,
    columns: usize,
) -> Vec<f64> {
    let data = fourier.as_slice();
    let log = half.trailing_zeros();
    let mut out = vec![0.0; 2 * data.len()];
    let ggsw = rows * columns * half;
    for (ggsw_out, ggsw_in) in out.chunks_exact_mut(2 * ggsw).zip(data.chunks_exact(ggsw)) {
        for (index, poly_in) in ggsw_in.chunks_exact(half).enumerate() {
            let (row, column) = (index / columns, index % columns);
            let poly_out = &mut ggsw_out[2 * half * (column * rows + row)..][..2 * half];
            for (stored, pair) in poly_out.chunks_exact_mut(2).enumerate() {
                // key_position is its own inverse.
                let source = key_position(stored).reverse_bits() >> (usize::BITS - log);
                pair[0] = poly_in[source].re / half as f64;
                pair[1] = poly_in[source].im / half as f64;
            }
        }
    }
    out
}

/// Where the kernels read the key value of bit-reversed position `p` in its polynomial
/// (`key_position` in fhe_pbs.cu): `p` with its low three bits xored with the next three, so
/// that the cluster kernel's reads of 8 consecutive positions per thread fall in different
/// shared-memory banks. Needs polynomials of at least 64 values (`N >= 128`).
pub(super) fn key_position(p: usize) -> usize {
    p ^ ((p >> 3) & 7)
}

/// The twist and twiddle tables (as `fft.rs` computes them), as `(re, im)` pairs.
pub(super) fn fft_tables(n: usize) -> (Vec<f64>, Vec<f64>) {
    let half = n / 2;
    let mut twist = Vec::with_capacity(n);
    for j in 0..half {
        let (sin, cos) = (PI * j as f64 / n as f64).sin_cos();
        twist.extend_from_slice(&[cos, sin]);
    }
    let mut twiddles = Vec::with_capacity(half);
    for t in 0..half / 2 {
        let (sin, cos) = (2.0 * PI * t as f64 / half as f64).sin_cos();
        twiddles.extend_from_slice(&[cos, -sin]);
    }
    (twist, twiddles)
}

/// The twiddles stage by stage (`W_{2h}^r = twiddles[r N/2 / 2h]` at `h - 1 + r`), the same
/// values as `twiddles`.
pub(super) fn staged_twiddles(twiddles: &[f64], n: usize) -> Vec<f64> {
    let half = n / 2;
    let mut out = Vec::with_capacity(2 * half);
    let mut h = 1;
    while h < half {
        for r in 0..h {
            let t = r * (half / (2 * h));
            out.extend_from_slice(&twiddles[2 * t..2 * t + 2]);
        }
        h *= 2;
    }
    out
}

/// Complex slots of one Fourier polynomial in shared memory for passes of `2^log_e`-value
/// tasks (`polynomial_slots` in fhe_pbs.cu): the `N/2` values, permuted for tasks of 8, plus
/// one pad slot per 16 values for tasks of 16.
pub(super) fn polynomial_slots(params: &Parameters, log_e: u32) -> usize {
    let m = params.polynomial_size().0 / 2;
    if log_e == 3 { m } else { m + (m >> log_e) }
}

/// Dynamic shared memory of the amortized blind rotation in `layout`: the `N/4` twiddles,
/// the `(k + 1) l` padded Fourier polynomials unless they live in global memory, and the
/// `(k + 1) N` accumulator words when they live there.
pub(super) fn amortized_shared_bytes(params: &Parameters, layout: AmortizedLayout) -> usize {
    let k1 = params.glwe_dimension().0 + 1;
    let n = params.polynomial_size().0;
    let levels = params.pbs_decomposition().level_count().0;
    let digits = match layout {
        AmortizedLayout::DigitsInGlobal => 0,
        _ => k1 * levels * polynomial_slots(params, AMORTIZED_LOG_E),
    };
    let acc = match layout {
        AmortizedLayout::AllShared => k1 * n * 8,
        _ => 0,
    };
    (digits + n / 4) * 16 + acc
}

/// Dynamic shared memory of a cluster block: two parities of `k` receive slots of `l`
/// Fourier polynomials (one slot per other block), one polynomial for the FFT passes, one
/// accumulator polynomial of `N` words, the block's `(k + 1) l` key rows of one CMux (`N/2`
/// complex values each), the mbarriers: one for the key rows, two (the parities) per warp
/// for the digits (`N/16` threads, `N/512` warps), and the `n` mask words switched to `2N`
/// (4 bytes each).
pub(super) fn cluster_shared_bytes(params: &Parameters) -> usize {
    let k1 = params.glwe_dimension().0 + 1;
    let n = params.polynomial_size().0;
    let levels = params.pbs_decomposition().level_count().0;
    let slots = polynomial_slots(params, CLUSTER_LOG_E);
    let received = 2 * (k1 - 1) * levels * slots;
    let key_rows = k1 * levels * n / 2;
    let mbarriers = 1 + 2 * (n / 512);
    let mask_words = params.lwe_dimension().0;
    (received + slots + key_rows) * 16 + n * 8 + mbarriers * 8 + mask_words * 4
}

impl Cuda {
    /// Blind rotation (the kernels switch the `count` ciphertexts in `small` to `2N` as they
    /// read them), then with `extract` sample extraction; returns the `count` GLWE
    /// accumulators (or with `extract` LWE samples), or `None` when written to `output`. The
    /// cluster kernel extracts the samples itself, as it writes its outputs: one launch fewer.
    pub(super) fn blind_rotate_device(
        &self,
        small: Words<'_>,
        lut: Words<'_>,
        count: usize,
        output: Output<'_>,
        extract: bool,
    ) -> Result<Option<DeviceBuffer<u64>>, Error> {
        if self.kernels.multi_bit.is_some() {
            return self.multi_bit_rotate_device(small, lut, count, output, extract);
        }
        let k1 = self.params.glwe_dimension().0 + 1;
        let n = self.params.polynomial_size().0;
        let shape = shape_of(&self.params);
        match (&self.kernels.cluster, self.rotates_in_clusters()) {
            (Some(kernel), true) => {
                let width = if extract { (k1 - 1) * n + 1 } else { k1 * n };
                // SAFETY: the cluster kernel writes every word of every output.
                let mut out = unsafe { output.allocate(&self.gpu, count * width)? };
                let extract = u32::from(extract);
                let grid = Grid {
                    blocks: to_u32(count * k1),
                    threads: to_u32(n / 2) >> CLUSTER_LOG_E,
                    shared_bytes: to_u32(cluster_shared_bytes(&self.params)),
                };
                // SAFETY: the arguments match
                // `fhe_blind_rotate_cluster_k{K1}_n{N}_l{L}_b{B}(FheShape, const u64*,
                // const u64*, const double2*, const double2*, const double2*, u64*, u32)`
                // with K1 = k + 1, N, L = l and B the base log of these parameters (the kernel
                // was loaded for them, and its block is the `N/16` threads launched);
                // `small` holds count (n + 1) words, `lut` N words, the key n (k + 1)^2 l N/2
                // complex values, the twist N/2 and the staged twiddles N/2 - 1 complex values,
                // `out` count kN + 1 words when `extract` is set, else count (k + 1) N; the
                // grid has one cluster of k + 1 blocks per ciphertext, with the shared memory
                // the kernel indexes (allowed at load).
                unsafe {
                    let launch = small.pass(self.gpu.launch(kernel, grid).value(&shape));
                    let launch = lut
                        .pass(launch)
                        .buffer(&self.keys.bsk)
                        .buffer(&self.keys.twist)
                        .buffer(&self.keys.twiddles_staged);
                    out.pass(launch).value(&extract).run()?;
                }
                Ok(out.into_device())
            }
            _ => {
                let (accumulators, samples) = if extract {
                    (Output::Device, Some(output))
                } else {
                    (output, None)
                };
                // SAFETY: the amortized kernel writes every word of every accumulator.
                let mut glwe = unsafe { accumulators.allocate(&self.gpu, count * k1 * n)? };
                let layout = self.kernels.amortized_layout;
                let acc_in_shared = u32::from(layout == AmortizedLayout::AllShared);
                let mut global_digits = match self.global_digit_slots() {
                    0 => None,
                    slots => Some(self.gpu.alloc_zeroed::<f64>(2 * slots * count)?),
                };
                let grid = Grid {
                    blocks: to_u32(count),
                    threads: AMORTIZED_MAX_THREADS.min(to_u32(k1 * n / 2) >> AMORTIZED_LOG_E),
                    shared_bytes: to_u32(amortized_shared_bytes(&self.params, layout)),
                };
                // SAFETY: as for the cluster kernel, with
                // `fhe_blind_rotate_amortized[_shared]_k{K1}_n{N}_l{L}_b{B}` (block: the
                // `min(128, (k + 1) N/32)` threads launched), whose last parameters are the u32
                // `acc_in_shared` and `double2* global_digits`; one block per ciphertext, with
                // the shared memory of `layout` (allowed at load): (k + 1) N words more exactly
                // when `acc_in_shared` is set, no digit polynomials when `global_digits` is
                // given, which then holds (k + 1) l padded polynomials per block.
                unsafe {
                    let launch =
                        small.pass(self.gpu.launch(&self.kernels.amortized, grid).value(&shape));
                    let launch = lut
                        .pass(launch)
                        .buffer(&self.keys.bsk)
                        .buffer(&self.keys.twist)
                        .buffer(&self.keys.twiddles);
                    let launch = glwe.pass(launch).value(&acc_in_shared);
                    match global_digits.as_mut() {
                        Some(digits) => launch.buffer_mut(digits),
                        None => launch.value(&NULL_DEVICE_POINTER),
                    }
                    .run()?;
                }
                match (glwe.into_device(), samples) {
                    (Some(glwe), Some(samples)) => {
                        self.sample_extract_device(&glwe, count, samples)
                    }
                    (glwe, _) => Ok(glwe),
                }
            }
        }
    }

    /// Whether the blind rotations run on the cluster kernel rather than the amortized one.
    pub(super) fn rotates_in_clusters(&self) -> bool {
        self.kernels.multi_bit.is_some()
            || self.kernels.cluster.is_some() && self.engine != Engine::Amortized
    }

    /// The ciphertexts of `input` (`count` of `width` words) switched to `2N` as the blind
    /// rotations switch them (the engine's [`ModulusSwitchType`]).
    pub(super) fn modulus_switch_device(
        &self,
        input: &DeviceBuffer<u64>,
        count: usize,
        width: usize,
    ) -> Result<DeviceBuffer<u32>, Error> {
        check_len("modulus switch input words", count * width, input.len())?;
        let mut switched = self.gpu.alloc_zeroed::<u32>(input.len())?;
        let mask_len = to_u32(width.saturating_sub(1));
        let log2_2n = self.params.polynomial_size().0.trailing_zeros() + 1;
        let centered = shape_of(&self.params).centered_switch;
        let grid = Grid {
            blocks: to_u32(count),
            ..Grid::cover(1, ELEMENTWISE_THREADS)
        };
        // SAFETY: the arguments match `fhe_modulus_switch(const u64*, u32*, u32, u32, u32)`;
        // both buffers hold `count` ciphertexts of `mask_len + 1` words, one block each.
        unsafe {
            self.gpu
                .launch(&self.kernels.modulus_switch, grid)
                .buffer(input)
                .buffer_mut(&mut switched)
                .value(&mask_len)
                .value(&log2_2n)
                .value(&centered)
                .run()?;
        }
        Ok(switched)
    }

    /// Sample extraction of `count` GLWE ciphertexts; returns the LWE ciphertexts, or `None`
    /// when written to `output`.
    pub(super) fn sample_extract_device(
        &self,
        glwe: &DeviceBuffer<u64>,
        count: usize,
        output: Output<'_>,
    ) -> Result<Option<DeviceBuffer<u64>>, Error> {
        let k = to_u32(self.params.glwe_dimension().0);
        let n = to_u32(self.params.polynomial_size().0);
        let width = self.params.big_lwe_dimension().0 + 1;
        // SAFETY: the extraction writes every word of every output.
        let mut lwe = unsafe { output.allocate(&self.gpu, count * width)? };
        let count_u32 = to_u32(count);
        let grid = Grid::cover((count * width) as u64, ELEMENTWISE_THREADS);
        // SAFETY: the arguments match `fhe_sample_extract(const u64*, u64*, u32, u32, u32)`;
        // `glwe` holds count (k + 1) N words and `lwe` count (kN + 1), the bounds the kernel
        // indexes within.
        unsafe {
            lwe.pass(
                self.gpu
                    .launch(&self.kernels.sample_extract, grid)
                    .buffer(glwe),
            )
            .value(&count_u32)
            .value(&k)
            .value(&n)
            .run()?;
        }
        Ok(lwe.into_device())
    }
}
