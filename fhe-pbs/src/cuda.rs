//! The CUDA backend: the kernels of `fhe-pbs/cuda/fhe_pbs.cu`, run through `kernels`.
//!
//! # Keys on the device
//!
//! [`Cuda::new`] uploads, once, the key-switching key as it is (`u64`) and the bootstrap key
//! in the Fourier domain: the CPU's [`FourierBootstrapKey`] (computed on the host with
//! `rustfft`, the same twist convention as [`crate::fft`]) with the `N / 2` complex values of
//! every polynomial permuted into bit-reversed order, because the device's forward FFT (a
//! decimation in frequency) leaves its output bit-reversed and the inverse (a decimation in
//! time) takes its input that way: pointwise products need no permutation at run time. The
//! twist and twiddle tables are computed on the host exactly as `fft.rs` computes them and
//! uploaded too; the untwist is `conj(twist) / (N/2)`, applied on the device from the twist
//! (exactly the same values: `N/2` is a power of two). Lookup tables are uploaded as the CPU
//! builds them ([`LookupTable::polynomial`]), so they are bit-exact by construction.
//!
//! # Pipeline
//!
//! Per chunk of a batch (up to 4,096 ciphertexts; fewer when the free device memory or
//! [`Cuda::with_max_chunk`] asks for it): one upload, then key switch (for `KS_PBS`), blind
//! rotation (which switches the modulus of its inputs as it reads them), sample extraction
//! (by the cluster kernel itself as it writes its outputs, else a launch of its own), all on
//! one stream, then one download. No round trip to the host between the stages. The copies
//! go through page-locked buffers and are queued like the kernels, so the host stages the
//! next chunk and unpacks the previous one while the GPU works on this one. A run of at most
//! 16 ciphertexts queues no copy at all: its first kernel reads the inputs, and the blind
//! rotation the table, from the page-locked buffers in place, and the last kernel writes the
//! outputs there (but a key switch alone that sums into device memory with atomics, where
//! the key switch by key columns is not available, ends with a download, and the amortized
//! blind rotation, which reads each ciphertext's words as its CMuxes need them, gets its
//! inputs uploaded). Each copy queued cost about 10 us of host time on an H100 machine,
//! during which a single ciphertext's GPU work could not start.
//!
//! # FFT and key switch on the device
//!
//! The FFTs run in shared memory in passes of up to `log2 E` radix-2 stages held in registers
//! (`E` values per thread-task), one round trip through shared memory and one barrier per pass
//! (only a warp's, in the cluster kernel, between passes that stay within the warp's slots);
//! the polynomials are laid out so that no pass has bank conflicts (padded, one slot per 16
//! values, in the amortized kernel; in the cluster kernel, whose tasks have 8 values, each
//! position's low three bits xored with the next three, which keeps every warp's positions in
//! one contiguous block);
//! the twiddles are copied into shared memory once per block (the cluster kernel then keeps
//! each thread's in registers); the key is uploaded divided by `N/2` (the inverse transform's
//! scale, exactly), bit-reversed and swizzled so that no read of it conflicts on shared-memory
//! banks, each GGSW's polynomials column by column; the inverse transform's last pass
//! untwists, rounds and adds straight into the accumulator; with one decomposition level, the
//! decomposition runs fused with the forward transform's first pass (the digits never go
//! through shared memory), and the cluster kernel keeps each thread's own accumulator
//! coefficients in registers from one CMux to the next. The blind rotations are
//! compiled per parameter set: the host compiles the module with `k + 1`, `N` and the PBS level
//! count and base log defined (`FHE_K1`, `FHE_N`, `FHE_LEVELS`, `FHE_BASE_LOG`), so that the
//! FFT size, the block size, the digit extraction and the number of polynomials are
//! compile-time constants in the kernels (named
//! `fhe_blind_rotate_{cluster,amortized,amortized_shared}_k{K1}_n{N}_l{L}_b{B}`): their
//! loops unroll fully and the index arithmetic folds into constants. NVRTC compiles one such
//! module (a couple of seconds) on the first use of a parameter set; the disk cache of
//! `kernels` keeps it.
//!
//! The key switch of a batch of 64 or more runs on the int8 tensor cores where the digits fit
//! (base log at most 7, as the standard set's 4; compute capability 8.0 and newer): the digits
//! become an int8 matrix, the key is kept a second time split into its eight bytes, and one
//! integer matrix product with exact int32 sums gives every output word, combined mod 2^64 from
//! its eight byte sums (`fhe_keyswitch_digits`, `fhe_keyswitch_mma`). A run of at most 16
//! ciphertexts takes the same digits and key bytes by key columns instead
//! (`fhe_keyswitch_columns_t{1,4,16}`): each block computes whole output words, each from the
//! word's eight byte columns (contiguous in that copy of the key) by `dp4a`, so that every
//! word is written once, with no zeroed output and no atomics (one KS+PBS on an H100:
//! 2,090 -> 2,077 us; the key switch alone 68 -> 52 us). Otherwise the key switch
//! stages the digits of 32 ciphertexts per block (8 for fewer than 32 ciphertexts), so that
//! each key word read serves all of them; digits of at most 31 bits are staged as ints and
//! multiplied with two 32-bit multiply-adds instead of a 64-bit product.
//!
//! # Engines
//!
//! * [`Engine::Amortized`]: one thread block per bootstrap (`(k + 1) N/32` threads, at most
//!   128: FFT tasks of `E = 16` values), many in flight; shared memory holds the `(k + 1) l`
//!   digit polynomials in the Fourier domain, the twiddles and, when it fits, the accumulator
//!   (else it lives in the output buffer).
//! * [`Engine::LowLatency`]: one Hopper thread-block cluster of `k + 1` blocks per bootstrap
//!   (compute capability 9.0 and newer; `N/16` threads per block, one FFT task of `E = 8`
//!   values each); block `c` owns accumulator polynomial `c` in its shared memory and output
//!   column `c`. The forward FFT's last pass and the inverse's first run in registers (the
//!   radix-2 stages of half spans below 8 by lane shuffles), so that the pointwise product
//!   happens in registers too; each warp sends its Fourier digits into the other blocks'
//!   shared memory with the copy engine (`cp.async.bulk` within the cluster), and each warp
//!   waits on its own mbarrier for the bytes it receives: no cluster-wide barrier or memory
//!   fence per CMux. Each block's key rows of a CMux (contiguous in the key) come into shared
//!   memory by one bulk copy, asked for at the start of the CMux (and into L2 one CMux ahead),
//!   so that they land during the decomposition, which leaves shared memory mostly idle, not
//!   during the FFT passes. The prologue switches the `n` mask words to `2N` into shared
//!   memory, so that the CMux loop reads no global memory: the proxy fence before each
//!   digit copy waits for every access a thread has in flight, and a mask word loaded one
//!   CMux ahead was one of them. Clusters rather than a cooperative grid because the
//!   blocks of a cluster are co-scheduled and reach each other's shared memory directly,
//!   while a grid sync goes through global memory atomics over the whole grid, which alone
//!   would take most of the 2 us budget of a CMux. Where clusters are not available (older
//!   GPUs, `k > 3`, or parameters whose cluster shared memory exceeds the device limit, such
//!   as N = 8192, or N = 4096 with two levels) this engine runs the amortized kernel;
//!   [`Cuda::name`](crate::Bootstrapper::name) says which kernel runs.
//! * [`Engine::Auto`]: the cluster kernel while the whole chunk fits one wave of clusters
//!   (`count (k + 1) <= SMs`), the amortized kernel beyond.
//!
//! Supported: `k` from 1 to 3, `N` from 512 to 8192, the amortized kernel's shared memory
//! (about `(k + 1) l N/2 * 17` bytes) within the device's limit (227 KiB on Hopper).

use std::f64::consts::PI;
use std::sync::{Arc, Mutex};

use crate::source;
use kernels::source::Module;
use kernels::{DeviceBuffer, DeviceRepr, Gpu, Grid, Kernel, Launch, PinnedBuffer};
use rayon::prelude::*;

use crate::Bootstrapper;
use crate::error::Error;
use crate::fft::FourierBootstrapKey;
use crate::glwe::GlweCiphertext;
use crate::keys::EvaluationKeys;
use crate::lut::LookupTable;
use crate::lwe::LweCiphertext;
use crate::params::Parameters;
use crate::polynomial::check_len;

/// Output words per block of the key switch (`KS_THREADS` in fhe_pbs.cu).
const KS_THREADS: u32 = 128;
/// Ciphertexts per block of the key switch (the `TILE` of `fhe_keyswitch_t8`) for a few
/// ciphertexts.
const KS_TILE_SMALL: u32 = 8;
/// Ciphertexts per block of the key switch for batches (`fhe_keyswitch_t32`).
const KS_TILE_LARGE: u32 = 32;
/// Input coefficients whose digits a key-switch block stages at once (`KS_CHUNK`).
const KS_CHUNK: u32 = 16;
/// Batches of at least this many ciphertexts key-switch on the tensor cores, where the
/// parameters allow it (see [`tensor_keyswitch`]).
const KS_TENSOR_MIN_COUNT: usize = 64;
/// The ciphertext counts the key switch by key columns is compiled for
/// (`fhe_keyswitch_columns_t{T}`); runs of up to the largest take it where the parameters
/// allow.
const KS_COLUMN_TILES: [usize; 3] = [1, 4, 16];
/// Threads per block of it (`KSC_THREADS` in fhe_pbs.cu).
const KS_COLUMN_THREADS: u32 = 256;
/// Its grid: this many blocks per SM (or one per output word, if fewer), each staging the
/// digits once for the words it computes.
const KS_COLUMN_BLOCKS_PER_SM: u32 = 4;
/// Ciphertexts per block of the tensor-core key switch (`KSM_M` in fhe_pbs.cu).
const KSM_CIPHERTEXTS: usize = 128;
/// Key columns per block of it (`KSM_N`): 16 output words of 8 bytes.
const KSM_COLUMNS: usize = 128;
/// Key rows per shared-memory stage of it (`KSM_K`).
const KSM_ROWS: usize = 64;
/// Threads per block of it (`KSM_THREADS`).
const KSM_THREADS: u32 = 256;
/// At most this many threads per block of the amortized blind rotation
/// (`FHE_AMORTIZED_MAX_THREADS`, so that its registers do not spill); it wants
/// `(k + 1) N/2 / 16`, one per FFT task, and loops over the tasks beyond.
const AMORTIZED_MAX_THREADS: u32 = 128;
/// Ciphertexts per chunk of a batch (see [`Cuda::run`]): enough blocks to keep the amortized
/// blind rotation's waves full, few enough that a batch of 16,384 overlaps host work and
/// transfers with three quarters of its kernels.
const CHUNK_CIPHERTEXTS: usize = 4096;
/// A null `double2*` kernel argument.
const NULL_DEVICE_POINTER: u64 = 0;
/// log2 of the values per FFT task of the amortized kernel (`FHE_AMORTIZED_LOG_E`).
const AMORTIZED_LOG_E: u32 = 4;
/// log2 of the values per FFT task of the cluster kernel (`FHE_CLUSTER_LOG_E`): 8 values,
/// one task per thread, `N/16` threads (measured on an H100 against 4 values: one KS+PBS
/// 4.04 -> 3.53 ms; 16 values spill registers and took 5.79 ms).
const CLUSTER_LOG_E: u32 = 3;
/// Threads per block of the element-wise kernels.
const ELEMENTWISE_THREADS: u32 = 256;
/// Fraction of the free device memory a chunk may use, in percent.
const CHUNK_MEMORY_PERCENT: usize = 70;
/// Runs of at most this many ciphertexts leave their inputs, table and outputs in page-locked
/// host memory, which the kernels read and write in place (see [`Cuda::run`]).
const IN_PLACE_MAX_CIPHERTEXTS: usize = 16;

/// The kernels' `FheShape` parameter, passed by value.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct FheShape {
    lwe_dimension: u32,
    glwe_dimension: u32,
    polynomial_size: u32,
    log2_polynomial_size: u32,
    base_log: u32,
    level_count: u32,
    ks_base_log: u32,
    ks_level_count: u32,
}

// SAFETY: a `#[repr(C)]` struct of eight u32, laid out as `FheShape` in fhe_pbs.cu.
unsafe impl DeviceRepr for FheShape {}

/// Which blind-rotation kernel a [`Cuda`] engine runs (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Engine {
    /// One thread-block cluster per bootstrap: lowest latency for 1 to ~10 ciphertexts.
    LowLatency,
    /// One thread block per bootstrap: highest throughput for large batches.
    Amortized,
    /// The low-latency kernel while a chunk fits one wave of clusters, the amortized beyond.
    #[default]
    Auto,
}

/// The keys and tables resident on the GPU, shared by the engines made from one upload.
#[derive(Debug)]
struct DeviceKeys {
    /// The Fourier bootstrap key, `(re, im)` pairs, each polynomial bit-reversed.
    bsk: DeviceBuffer<f64>,
    /// The key-switching key, as [`crate::KeyswitchKey::as_slice`].
    ksk: DeviceBuffer<u64>,
    /// The same key split into bytes for the tensor-core key switch ([`keyswitch_key_bytes`]),
    /// when it runs.
    ksk_bytes: Option<DeviceBuffer<u8>>,
    /// `w^j`, `j < N/2` (the untwist is `conj(w^j) / (N/2)`, computed from it exactly).
    twist: DeviceBuffer<f64>,
    /// `exp(-2 pi i t / (N/2))`, `t < N/4` (the amortized kernel).
    twiddles: DeviceBuffer<f64>,
    /// The same twiddles stage by stage: `W_{2h}^r` at `h - 1 + r` for `r < h`, `h` from 1 to
    /// `N/4` (the cluster kernel: consecutive threads read consecutive values).
    twiddles_staged: DeviceBuffer<f64>,
}

/// Where the amortized blind rotation keeps its working set: the fastest layout whose shared
/// memory fits the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AmortizedLayout {
    /// Digit polynomials, twiddles and accumulator in shared memory.
    AllShared,
    /// Digits and twiddles in shared memory, the accumulator in the output buffer.
    AccumulatorInGlobal,
    /// Only the twiddles in shared memory: the accumulator in the output buffer and the digit
    /// polynomials in a device scratch area per ciphertext (large `N` with many levels).
    DigitsInGlobal,
}

/// The loaded kernels.
#[derive(Debug, Clone)]
struct Kernels {
    /// The key switch with 8 ciphertexts per block (few ciphertexts).
    keyswitch_small: Kernel,
    /// The key switch with 32 ciphertexts per block (batches), when its shared memory fits.
    keyswitch_large: Option<Kernel>,
    /// The key switch by the key's bytes (the int8 tensor cores for batches, key columns for
    /// a few ciphertexts), when the device and parameters allow it.
    keyswitch_bytes: Option<ByteKeyswitch>,
    modulus_switch: Kernel,
    decompose: Kernel,
    sample_extract: Kernel,
    /// The amortized kernel for `amortized_layout` (`..._shared` for `AllShared`).
    amortized: Kernel,
    /// Where the amortized kernel keeps its working set.
    amortized_layout: AmortizedLayout,
    /// The cluster kernel for this `k`, when the device and parameters allow it.
    cluster: Option<Kernel>,
}

/// The kernels of the key switch by the key's bytes ([`keyswitch_key_bytes`]).
#[derive(Debug, Clone)]
struct ByteKeyswitch {
    /// `fhe_keyswitch_digits`: the digits as an int8 matrix.
    digits: Kernel,
    /// `fhe_keyswitch_mma`: digits times key bytes on the tensor cores, combined into the
    /// output words (batches of at least [`KS_TENSOR_MIN_COUNT`]).
    product: Kernel,
    /// `fhe_keyswitch_columns_t{T}` and its `T`, smallest first: the key switch of at most `T`
    /// ciphertexts by key columns, for each `T` of [`KS_COLUMN_TILES`] whose shared memory
    /// fits the device.
    columns: Vec<(usize, Kernel)>,
}

/// The CUDA backend on one GPU: both keys resident in device memory, one [`Engine`].
/// Cloning is cheap (the device keys are shared); [`Cuda::with_engine`] switches engines
/// without uploading again.
///
/// ```no_run
/// use fhe_pbs::{Bootstrapper, ClientKey, Csprng, Cuda, Engine, EvaluationKeys, LookupTable};
///
/// # fn main() -> Result<(), fhe_pbs::Error> {
/// let params = fhe_pbs::PARAM_MESSAGE_2_CARRY_2;
/// let mut rng = Csprng::from_seed([1; 32]);
/// let client = ClientKey::generate(params, &mut rng);
/// let keys = EvaluationKeys::generate(&client, &mut rng);
/// let gpu = Cuda::new(&keys, Engine::LowLatency)?;
/// let lut = LookupTable::new(&params, |m| (m + 1) % 16)?;
/// let ct = client.encrypt(5, &mut rng)?;
/// assert_eq!(client.decrypt(&gpu.keyswitch_bootstrap(&ct, &lut)?)?, 6);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Cuda {
    gpu: Arc<Gpu>,
    params: Parameters,
    keys: Arc<DeviceKeys>,
    kernels: Kernels,
    engine: Engine,
    max_chunk: usize,
    /// Page-locked staging for ciphertext transfers (allocated at the first batch, shared by
    /// the engines made from one upload).
    staging: Arc<Mutex<Staging>>,
}

/// The page-locked buffers of [`Cuda::run`]: one chunk of inputs, one of outputs, and the
/// lookup table.
#[derive(Debug, Default)]
struct Staging {
    inputs: Option<PinnedBuffer<u64>>,
    outputs: Option<PinnedBuffer<u64>>,
    table: Option<PinnedBuffer<u64>>,
}

/// The device-side representation of the `N` words of an element-wise stage.
fn shape_of(params: &Parameters) -> FheShape {
    let pbs = params.pbs_decomposition();
    let ks = params.ks_decomposition();
    let n = params.polynomial_size().0;
    FheShape {
        lwe_dimension: to_u32(params.lwe_dimension().0),
        glwe_dimension: to_u32(params.glwe_dimension().0),
        polynomial_size: to_u32(n),
        log2_polynomial_size: n.trailing_zeros(),
        base_log: to_u32(pbs.base_log.0),
        level_count: to_u32(pbs.level_count.0),
        ks_base_log: to_u32(ks.base_log.0),
        ks_level_count: to_u32(ks.level_count.0),
    }
}

/// Dimensions are bounded by [`Parameters`] (at most `2^13` for `N`, and LWE dimensions far
/// below `2^32`); saturate rather than wrap if a caller ever passes more.
fn to_u32(x: usize) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

/// The key as the kernels read it: complex values as `(re, im)` pairs, divided by `half`
/// (the inverse transform's `1 / M`, exactly: a power of two), each polynomial of `half`
/// values bit-reversed, the value of position `p` stored at `key_position(p)`, and each
/// GGSW's `rows` x `columns` polynomials (row-major in `fourier`) stored column by column, so
/// that the cluster kernel's block for a column copies its rows of a CMux in one piece.
fn device_key(fourier: &FourierBootstrapKey, half: usize, rows: usize, columns: usize) -> Vec<f64> {
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
fn key_position(p: usize) -> usize {
    p ^ ((p >> 3) & 7)
}

/// The twist and twiddle tables (as `fft.rs` computes them), as `(re, im)` pairs.
fn fft_tables(n: usize) -> (Vec<f64>, Vec<f64>) {
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
fn staged_twiddles(twiddles: &[f64], n: usize) -> Vec<f64> {
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

/// What a pipeline run starts from and returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pipeline {
    /// Big-key LWE in, small-key LWE out.
    Keyswitch,
    /// Small-key LWE in, big-key LWE out.
    Bootstrap,
    /// Big-key LWE in, big-key LWE out.
    KeyswitchBootstrap,
    /// Small-key LWE in, GLWE accumulator out.
    BlindRotate,
}

impl Pipeline {
    fn keyswitches(self) -> bool {
        matches!(self, Pipeline::Keyswitch | Pipeline::KeyswitchBootstrap)
    }

    fn rotates(self) -> bool {
        self != Pipeline::Keyswitch
    }
}

/// Words a kernel reads: in device memory, or in page-locked host memory read in place.
enum Words<'a> {
    Device(&'a DeviceBuffer<u64>),
    Pinned(&'a mut PinnedBuffer<u64>),
}

impl<'a> Words<'a> {
    /// The same words, for one more kernel.
    fn reborrow(&mut self) -> Words<'_> {
        match self {
            Words::Device(buffer) => Words::Device(buffer),
            Words::Pinned(buffer) => Words::Pinned(buffer),
        }
    }

    /// Passes the words to `launch` (as `const u64*`).
    fn pass(self, launch: Launch<'a>) -> Launch<'a> {
        match self {
            Words::Device(buffer) => launch.buffer(buffer),
            Words::Pinned(buffer) => launch.pinned(buffer),
        }
    }
}

/// Where the last kernel of a pipeline writes: a new device buffer, or page-locked host memory
/// in place.
enum Output<'a> {
    Device,
    Pinned(&'a mut PinnedBuffer<u64>),
}

impl<'a> Output<'a> {
    /// The `len` words a kernel writes.
    ///
    /// # Safety
    ///
    /// As [`Gpu::alloc_uninit`]: the kernels queued next write every word before anything
    /// reads it.
    unsafe fn allocate(self, gpu: &Gpu, len: usize) -> Result<Target<'a>, Error> {
        Ok(match self {
            // SAFETY: the caller's contract.
            Output::Device => Target::Device(unsafe { gpu.alloc_uninit::<u64>(len)? }),
            Output::Pinned(buffer) if buffer.len() >= len => Target::Pinned(buffer),
            Output::Pinned(buffer) => {
                return Err(Error::DimensionMismatch {
                    what: "page-locked output words",
                    expected: len,
                    got: buffer.len(),
                });
            }
        })
    }
}

/// The words a kernel writes ([`Output::allocate`]).
enum Target<'a> {
    Device(DeviceBuffer<u64>),
    Pinned(&'a mut PinnedBuffer<u64>),
}

impl Target<'_> {
    /// Passes the words to `launch` (as `u64*`).
    fn pass<'b>(&'b mut self, launch: Launch<'b>) -> Launch<'b> {
        match self {
            Target::Device(buffer) => launch.buffer_mut(buffer),
            Target::Pinned(buffer) => launch.pinned(buffer),
        }
    }

    /// The words written, for the next kernel to read.
    fn words(&mut self) -> Words<'_> {
        match self {
            Target::Device(buffer) => Words::Device(buffer),
            Target::Pinned(buffer) => Words::Pinned(buffer),
        }
    }

    /// The device buffer written, if the words are not in host memory.
    fn into_device(self) -> Option<DeviceBuffer<u64>> {
        match self {
            Target::Device(buffer) => Some(buffer),
            Target::Pinned(_) => None,
        }
    }
}

impl Cuda {
    /// The backend on the first visible GPU, uploading `keys` (the bootstrap key transformed
    /// to the Fourier domain on the CPU first).
    ///
    /// # Errors
    ///
    /// [`Error::Gpu`] without a usable GPU, driver or NVRTC, or when the keys do not fit;
    /// [`Error::InvalidParameter`] for `k > 3` or a decomposition whose shared memory exceeds
    /// the device's limit.
    pub fn new(keys: &EvaluationKeys, engine: Engine) -> Result<Self, Error> {
        Self::on(Gpu::first()?, keys, engine)
    }

    /// As [`Cuda::new`], on a GPU handle the caller opened.
    ///
    /// # Errors
    ///
    /// As [`Cuda::new`].
    pub fn on(gpu: Arc<Gpu>, keys: &EvaluationKeys, engine: Engine) -> Result<Self, Error> {
        let params = *keys.parameters();
        let k1 = params.glwe_dimension().0 + 1;
        let n = params.polynomial_size().0;
        if !(2..=4).contains(&k1) {
            return Err(Error::InvalidParameter {
                name: "glwe_dimension",
                reason: format!("the CUDA backend supports k from 1 to 3, not {}", k1 - 1),
            });
        }
        if !n.is_power_of_two() || !(512..=8192).contains(&n) {
            return Err(Error::InvalidParameter {
                name: "polynomial_size",
                reason: format!("the CUDA backend supports N from 512 to 8192, not {n}"),
            });
        }
        let kernels = Self::load_kernels(&gpu, &params)?;
        let fourier = FourierBootstrapKey::new(keys.bootstrap_key())?;
        let pbs_levels = params.pbs_decomposition().level_count.0;
        let (twist, twiddles) = fft_tables(n);
        let ksk = keys.keyswitch_key().as_slice();
        let ksk_bytes = match kernels.keyswitch_bytes {
            Some(_) => Some(gpu.upload(&keyswitch_key_bytes(ksk, params.lwe_dimension().0 + 1))?),
            None => None,
        };
        let device_keys = DeviceKeys {
            bsk: gpu.upload(&device_key(&fourier, n / 2, k1 * pbs_levels, k1))?,
            ksk: gpu.upload(ksk)?,
            ksk_bytes,
            twist: gpu.upload(&twist)?,
            twiddles_staged: gpu.upload(&staged_twiddles(&twiddles, n))?,
            twiddles: gpu.upload(&twiddles)?,
        };
        Ok(Self {
            gpu,
            params,
            keys: Arc::new(device_keys),
            kernels,
            engine,
            max_chunk: usize::MAX,
            staging: Arc::new(Mutex::new(Staging::default())),
        })
    }

    fn load_kernels(gpu: &Gpu, params: &Parameters) -> Result<Kernels, Error> {
        let k1 = params.glwe_dimension().0 + 1;
        let n = params.polynomial_size().0;
        let levels = params.pbs_decomposition().level_count.0;
        let base_log = params.pbs_decomposition().base_log.0;
        let module = specialized_module(k1, n, levels, base_log);
        let load = |name: &str| gpu.kernel(&module, name);
        // Key-switch digits of at most 31 bits: the narrow kernels (int digits, two 32-bit
        // multiplies per product instead of a 64-bit one).
        let variant = if narrow_keyswitch(params) {
            "narrow_"
        } else {
            ""
        };
        let keyswitch_small = load(&format!("fhe_keyswitch_{variant}t8"))?;
        let keyswitch_large = load(&format!("fhe_keyswitch_{variant}t32"))?;
        allow_shared(
            &keyswitch_small,
            keyswitch_shared_bytes(params, KS_TILE_SMALL),
            "key-switch decomposition",
        )?;
        // With very many key-switch levels the large tile's digits do not fit: the small one
        // serves every batch.
        let keyswitch_large = keyswitch_large
            .allow_shared_bytes(to_u32(keyswitch_shared_bytes(params, KS_TILE_LARGE)))
            .ok()
            .map(|()| keyswitch_large);
        let keyswitch_bytes =
            if gpu.info().compute_capability.major >= 8 && tensor_keyswitch(params) {
                let mut columns = Vec::new();
                for tile in KS_COLUMN_TILES {
                    let kernel = load(&format!("fhe_keyswitch_columns_t{tile}"))?;
                    let bytes = keyswitch_columns_shared_bytes(params, tile, tile);
                    if kernel.allow_shared_bytes(to_u32(bytes)).is_ok() {
                        columns.push((tile, kernel));
                    }
                }
                Some(ByteKeyswitch {
                    digits: load("fhe_keyswitch_digits")?,
                    product: load("fhe_keyswitch_mma")?,
                    columns,
                })
            } else {
                None
            };
        let suffix = format!("k{k1}_n{n}_l{levels}_b{base_log}");
        let amortized = load(&format!("fhe_blind_rotate_amortized_{suffix}"))?;
        let amortized_shared = load(&format!("fhe_blind_rotate_amortized_shared_{suffix}"))?;
        let (amortized, amortized_layout) = if amortized_shared
            .allow_shared_bytes(to_u32(amortized_shared_bytes(
                params,
                AmortizedLayout::AllShared,
            )))
            .is_ok()
        {
            (amortized_shared, AmortizedLayout::AllShared)
        } else if amortized
            .allow_shared_bytes(to_u32(amortized_shared_bytes(
                params,
                AmortizedLayout::AccumulatorInGlobal,
            )))
            .is_ok()
        {
            (amortized, AmortizedLayout::AccumulatorInGlobal)
        } else {
            let layout = AmortizedLayout::DigitsInGlobal;
            allow_shared(
                &amortized,
                amortized_shared_bytes(params, layout),
                "twiddles of the amortized blind rotation",
            )?;
            (amortized, layout)
        };
        let cluster = if gpu.info().compute_capability.major >= 9 {
            let kernel = load(&format!("fhe_blind_rotate_cluster_{suffix}"))?;
            // Too much shared memory for a cluster block: the amortized kernel serves.
            kernel
                .allow_shared_bytes(to_u32(cluster_shared_bytes(params)))
                .ok()
                .map(|()| kernel)
        } else {
            None
        };
        Ok(Kernels {
            keyswitch_small,
            keyswitch_large,
            keyswitch_bytes,
            modulus_switch: load("fhe_modulus_switch")?,
            decompose: load("fhe_decompose")?,
            sample_extract: load("fhe_sample_extract")?,
            amortized,
            amortized_layout,
            cluster,
        })
    }

    /// The same device keys with another engine (no upload).
    #[must_use]
    pub fn with_engine(&self, engine: Engine) -> Self {
        Self {
            engine,
            ..self.clone()
        }
    }

    /// At most `max_chunk` ciphertexts per upload/launch/download round (at least 1; chunks
    /// never exceed 4,096 ciphertexts, nor what the free device memory allows). For tests of
    /// the chunking path and to bound device memory. Runs of at most 16 ciphertexts, which
    /// stay in page-locked host memory and take little device memory, go in one round
    /// whatever the limit.
    #[must_use]
    pub fn with_max_chunk(&self, max_chunk: usize) -> Self {
        Self {
            max_chunk: max_chunk.max(1),
            ..self.clone()
        }
    }

    /// The engine.
    #[must_use]
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// The GPU handle.
    #[must_use]
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Whether the thread-block-cluster kernel is available on this device for these
    /// parameters (else [`Engine::LowLatency`] runs the amortized kernel).
    #[must_use]
    pub fn has_cluster_kernel(&self) -> bool {
        self.kernels.cluster.is_some()
    }

    /// The blind rotation alone, as [`crate::Cpu::blind_rotate`]: the GLWE accumulator
    /// before sample extraction.
    ///
    /// # Errors
    ///
    /// As [`Bootstrapper::bootstrap`].
    pub fn blind_rotate(
        &self,
        ciphertext: &LweCiphertext,
        lut: &LookupTable,
    ) -> Result<GlweCiphertext, Error> {
        let mut out = self.blind_rotate_batch(std::slice::from_ref(ciphertext), lut)?;
        out.pop().ok_or(Error::DimensionMismatch {
            what: "blind rotation outputs",
            expected: 1,
            got: 0,
        })
    }

    /// [`Cuda::blind_rotate`] of a batch, all with the same table.
    ///
    /// # Errors
    ///
    /// As [`Bootstrapper::bootstrap_batch`].
    pub fn blind_rotate_batch(
        &self,
        ciphertexts: &[LweCiphertext],
        lut: &LookupTable,
    ) -> Result<Vec<GlweCiphertext>, Error> {
        let words = self.run(ciphertexts, Some(lut), Pipeline::BlindRotate)?;
        let k = self.params.glwe_dimension();
        let n = self.params.polynomial_size();
        Ok(words
            .into_iter()
            .map(|w| GlweCiphertext::from_vec_unchecked(w, k, n))
            .collect())
    }

    /// Checks every input of a pipeline run.
    fn check(
        &self,
        ciphertexts: &[LweCiphertext],
        lut: Option<&LookupTable>,
        pipeline: Pipeline,
    ) -> Result<(), Error> {
        let params = &self.params;
        for ct in ciphertexts {
            if pipeline.keyswitches() {
                check_len(
                    "key-switch input LWE dimension",
                    params.big_lwe_dimension().0,
                    ct.dimension().0,
                )?;
            } else {
                check_len(
                    "bootstrap input LWE dimension",
                    params.lwe_dimension().0,
                    ct.dimension().0,
                )?;
            }
        }
        if let Some(lut) = lut {
            check_len(
                "lookup table polynomial size",
                params.polynomial_size().0,
                lut.polynomial_size().0,
            )?;
        }
        Ok(())
    }

    /// Device bytes per ciphertext of a chunk.
    fn bytes_per_ciphertext(&self) -> usize {
        let big = self.params.big_lwe_dimension().0 + 1;
        let small = self.params.lwe_dimension().0 + 1;
        let glwe = (self.params.glwe_dimension().0 + 1) * self.params.polynomial_size().0;
        let keyswitch_digits = keyswitch_rows(&self.params);
        8 * (2 * big + small + glwe) + 16 * self.global_digit_slots() + keyswitch_digits
    }

    /// Complex values of device scratch per ciphertext for the amortized kernel's digit
    /// polynomials (none unless they live in global memory).
    fn global_digit_slots(&self) -> usize {
        if self.kernels.amortized_layout == AmortizedLayout::DigitsInGlobal {
            let k1 = self.params.glwe_dimension().0 + 1;
            let levels = self.params.pbs_decomposition().level_count.0;
            k1 * levels * polynomial_slots(&self.params, AMORTIZED_LOG_E)
        } else {
            0
        }
    }

    /// Words of each output of `pipeline`.
    fn output_width(&self, pipeline: Pipeline) -> usize {
        match pipeline {
            Pipeline::Keyswitch => self.params.lwe_dimension().0 + 1,
            Pipeline::Bootstrap | Pipeline::KeyswitchBootstrap => {
                self.params.big_lwe_dimension().0 + 1
            }
            Pipeline::BlindRotate => {
                (self.params.glwe_dimension().0 + 1) * self.params.polynomial_size().0
            }
        }
    }

    /// Runs `pipeline` on every ciphertext; returns each output's words.
    ///
    /// A run of at most [`IN_PLACE_MAX_CIPHERTEXTS`] stays in page-locked host memory: the
    /// first kernel reads the inputs there (unless it is the amortized blind rotation, which
    /// reads them one CMux at a time: they are uploaded), the blind rotation the table, and
    /// the last kernel writes the outputs there (except a key switch's summed with device
    /// atomics, see [`Cuda::keyswitch_device`]), so that no copy is queued. On an H100
    /// machine, each small copy cost about 10 us of the host's time before the GPU could
    /// start (see BENCHMARKS.md).
    ///
    /// A larger batch goes through in chunks of at most [`CHUNK_CIPHERTEXTS`] (fewer when the
    /// free device memory or [`Cuda::with_max_chunk`] says so), all queued on the one stream:
    /// while the GPU works on chunk `i`, the host unpacks the outputs of chunk `i - 1` and
    /// stages the inputs of chunk `i + 1`, through one page-locked buffer each way.
    fn run(
        &self,
        ciphertexts: &[LweCiphertext],
        lut: Option<&LookupTable>,
        pipeline: Pipeline,
    ) -> Result<Vec<Vec<u64>>, Error> {
        self.check(ciphertexts, lut, pipeline)?;
        if ciphertexts.is_empty() {
            return Ok(Vec::new());
        }
        let mut staging = self
            .staging
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if ciphertexts.len() <= IN_PLACE_MAX_CIPHERTEXTS {
            self.run_in_place(&mut staging, ciphertexts, lut, pipeline)
        } else {
            self.run_chunked(&mut staging, ciphertexts, lut, pipeline)
        }
    }

    /// [`Cuda::run`] of a small batch in page-locked host memory.
    fn run_in_place(
        &self,
        staging: &mut Staging,
        ciphertexts: &[LweCiphertext],
        lut: Option<&LookupTable>,
        pipeline: Pipeline,
    ) -> Result<Vec<Vec<u64>>, Error> {
        let in_width = ciphertexts[0].as_slice().len();
        let out_width = self.output_width(pipeline);
        let count = ciphertexts.len();
        let Staging {
            inputs,
            outputs,
            table,
        } = staging;
        let lut = match lut {
            Some(lut) => Some(Words::Pinned(stage_table(&self.gpu, table, lut)?)),
            None => None,
        };
        let inputs = stage_inputs(&self.gpu, inputs, ciphertexts, count * in_width)?;
        // The amortized blind rotation reads its ciphertexts' words as each CMux needs them,
        // not ahead as the cluster kernel does: over the bus, that cost 0.4 ms per bootstrap.
        let uploaded;
        let input = if pipeline.keyswitches() || self.rotates_in_clusters(count) {
            Words::Pinned(inputs)
        } else {
            uploaded = self.gpu.upload_pinned_async(inputs, count * in_width)?;
            Words::Device(&uploaded)
        };
        let outputs = pinned(&self.gpu, outputs, count * out_width)?;
        let written = self.launch_pipeline(input, count, lut, pipeline, Output::Pinned(outputs))?;
        if let Some(result) = written {
            result.copy_to_pinned_async(result.len(), outputs)?;
        }
        let mut out = Vec::with_capacity(count);
        unpack(outputs, count * out_width, out_width, &mut out)?;
        Ok(out)
    }

    /// [`Cuda::run`] of a batch in chunks through device memory.
    fn run_chunked(
        &self,
        staging: &mut Staging,
        ciphertexts: &[LweCiphertext],
        lut: Option<&LookupTable>,
        pipeline: Pipeline,
    ) -> Result<Vec<Vec<u64>>, Error> {
        let most = self.max_chunk.min(CHUNK_CIPHERTEXTS).min(ciphertexts.len());
        let per_ciphertext = self.bytes_per_ciphertext();
        // Reading the free memory costs several microseconds: a chunk that needs less than
        // 1% of the device's memory goes ahead (its allocations still fail cleanly).
        let most = if most * per_ciphertext <= self.gpu.info().total_memory / 100 {
            most
        } else {
            let free = self.gpu.free_memory()?;
            most.min((free / 100 * CHUNK_MEMORY_PERCENT / per_ciphertext).max(1))
        };
        // Chunks of even size: a remainder of a few ciphertexts would cost a whole launch.
        let chunk = ciphertexts.len().div_ceil(ciphertexts.len().div_ceil(most));
        let in_width = ciphertexts[0].as_slice().len();
        let out_width = self.output_width(pipeline);
        let Staging {
            inputs,
            outputs,
            table,
        } = staging;
        // The table goes up through page-locked memory too, queued before the first chunk.
        let lut_buffer = match lut {
            Some(lut) => {
                let staged = stage_table(&self.gpu, table, lut)?;
                Some(
                    self.gpu
                        .upload_pinned_async(staged, lut.polynomial().len())?,
                )
            }
            None => None,
        };
        let outputs = pinned(&self.gpu, outputs, chunk * out_width)?;
        let mut out = Vec::with_capacity(ciphertexts.len());
        // Stream order: upload i, download i - 1, kernels i. The host fills the input buffer
        // (once upload i - 1 has left it) and reads the output buffer (once download i - 1
        // has landed) while the kernels of chunk i run.
        let mut previous: Option<DeviceBuffer<u64>> = None;
        for part in ciphertexts.chunks(chunk) {
            let staged = stage_inputs(&self.gpu, inputs, part, chunk * in_width)?;
            let input = self
                .gpu
                .upload_pinned_async(staged, part.len() * in_width)?;
            let downloaded = match previous.take() {
                Some(result) => {
                    result.copy_to_pinned_async(result.len(), outputs)?;
                    result.len()
                }
                None => 0,
            };
            previous = self.launch_pipeline(
                Words::Device(&input),
                part.len(),
                lut_buffer.as_ref().map(Words::Device),
                pipeline,
                Output::Device,
            )?;
            unpack(outputs, downloaded, out_width, &mut out)?;
        }
        if let Some(last) = previous {
            last.copy_to_pinned_async(last.len(), outputs)?;
            unpack(outputs, last.len(), out_width, &mut out)?;
        }
        Ok(out)
    }

    /// Queues the launches of `pipeline` on `count` ciphertexts in `input`; returns the
    /// device buffer of their outputs, or `None` when the last kernel wrote them into
    /// `output` (every rotating pipeline given [`Output::Pinned`]).
    fn launch_pipeline(
        &self,
        input: Words<'_>,
        count: usize,
        lut: Option<Words<'_>>,
        pipeline: Pipeline,
        output: Output<'_>,
    ) -> Result<Option<DeviceBuffer<u64>>, Error> {
        if !pipeline.rotates() {
            return Ok(self.keyswitch_device(input, count, output)?.into_device());
        }
        let lut = lut.ok_or(Error::DimensionMismatch {
            what: "lookup tables of a bootstrap",
            expected: 1,
            got: 0,
        })?;
        let mut switched;
        let small = if pipeline.keyswitches() {
            switched = self.keyswitch_device(input, count, Output::Device)?;
            switched.words()
        } else {
            input
        };
        let extract = pipeline != Pipeline::BlindRotate;
        self.blind_rotate_device(small, lut, count, output, extract)
    }

    /// Key switch of `count` big-key ciphertexts on the device: by the key's bytes (by key
    /// columns for a few, on the tensor cores for batches) into `output`, each word written
    /// once; else into a new zeroed device buffer, which the other kernels sum into with
    /// atomics.
    fn keyswitch_device<'a>(
        &self,
        mut input: Words<'_>,
        count: usize,
        output: Output<'a>,
    ) -> Result<Target<'a>, Error> {
        let shape = shape_of(&self.params);
        let out_width = self.params.lwe_dimension().0 + 1;
        if let (Some(bytes), Some(key_bytes)) =
            (&self.kernels.keyswitch_bytes, &self.keys.ksk_bytes)
        {
            let columns = bytes.columns.iter().find(|(tile, _)| count <= *tile);
            if columns.is_some() || count >= KS_TENSOR_MIN_COUNT {
                // SAFETY: both key switches by the key's bytes write every word.
                let mut target = unsafe { output.allocate(&self.gpu, count * out_width)? };
                let padded_count = match columns {
                    Some(_) => count,
                    None => count.next_multiple_of(KSM_CIPHERTEXTS),
                };
                let digits =
                    self.keyswitch_digits(&bytes.digits, input.reborrow(), count, padded_count)?;
                match columns {
                    Some((tile, kernel)) => self.keyswitch_by_columns(
                        (*tile, kernel),
                        key_bytes,
                        &digits,
                        input,
                        count,
                        &mut target,
                    )?,
                    None => self.keyswitch_on_tensor_cores(
                        &bytes.product,
                        key_bytes,
                        &digits,
                        input,
                        count,
                        &mut target,
                    )?,
                }
                return Ok(target);
            }
        }
        let mut output = self.gpu.alloc_zeroed::<u64>(count * out_width)?;
        let in_dim = self.params.big_lwe_dimension().0 as u32;
        let word_blocks = to_u32(out_width).div_ceil(KS_THREADS);
        let (kernel, tile) = match &self.kernels.keyswitch_large {
            Some(large) if count >= KS_TILE_LARGE as usize => (large, KS_TILE_LARGE),
            _ => (&self.kernels.keyswitch_small, KS_TILE_SMALL),
        };
        let ct_blocks = to_u32(count).div_ceil(tile);
        // Split the input coefficients until the grid fills the GPU about four times over.
        let target = 4 * self.gpu.info().sm_count;
        let max_splits = in_dim.div_ceil(KS_CHUNK);
        let splits = target
            .div_ceil(word_blocks * ct_blocks)
            .clamp(1, max_splits);
        let inputs_per_split = in_dim.div_ceil(splits).div_ceil(KS_CHUNK) * KS_CHUNK;
        let splits = in_dim.div_ceil(inputs_per_split);
        let count_u32 = to_u32(count);
        let grid = Grid {
            blocks: word_blocks * ct_blocks * splits,
            threads: KS_THREADS,
            shared_bytes: to_u32(keyswitch_shared_bytes(&self.params, tile)),
        };
        // SAFETY: the arguments match `fhe_keyswitch_[narrow_]t{TILE}(FheShape, const u64*,
        // const u64*, u64*, u32, u32, u32, u32)`, TILE = `tile`; `input` holds `count`
        // ciphertexts of kN + 1 words, the key kN l (n + 1) words, `output` count (n + 1)
        // zeroed words; the kernel reads inputs only for ct < count and coefficients < kN, and
        // writes words < n + 1 of ciphertexts < count; the shared memory is KS_CHUNK l TILE
        // digits (4 bytes each in the narrow kernels, else 8) as it indexes.
        unsafe {
            input
                .pass(self.gpu.launch(kernel, grid).value(&shape))
                .buffer(&self.keys.ksk)
                .buffer_mut(&mut output)
                .value(&count_u32)
                .value(&word_blocks)
                .value(&ct_blocks)
                .value(&inputs_per_split)
                .run()?;
        }
        Ok(Target::Device(output))
    }

    /// The key-switch digits of `count` ciphertexts in `input` as an int8 matrix (`count` rows
    /// of `k N l` bytes, [`keyswitch_rows`], in the key's row order), then zero rows up to
    /// `padded_count >= count`.
    fn keyswitch_digits(
        &self,
        kernel: &Kernel,
        input: Words<'_>,
        count: usize,
        padded_count: usize,
    ) -> Result<DeviceBuffer<i8>, Error> {
        let shape = shape_of(&self.params);
        let rows = keyswitch_rows(&self.params);
        let in_dim = self.params.big_lwe_dimension().0;
        let mut digits = if padded_count > count {
            self.gpu.alloc_zeroed::<i8>(padded_count * rows)?
        } else {
            // SAFETY: the kernel below writes all count rows.
            unsafe { self.gpu.alloc_uninit::<i8>(count * rows)? }
        };
        let count_u32 = to_u32(count);
        // SAFETY: the arguments match `fhe_keyswitch_digits(FheShape, const u64*, signed
        // char*, u32)`; `input` holds `count` ciphertexts of kN + 1 words and `digits` at least
        // count kN l bytes, the bounds of the kernel's grid-stride loop.
        unsafe {
            input
                .pass(
                    self.gpu
                        .launch(
                            kernel,
                            Grid::cover((count * in_dim) as u64, ELEMENTWISE_THREADS),
                        )
                        .value(&shape),
                )
                .buffer_mut(&mut digits)
                .value(&count_u32)
                .run()?;
        }
        Ok(digits)
    }

    /// The key switch of `count` ciphertexts by key columns (`fhe_keyswitch_columns_t{tile}`,
    /// `count <= tile`) from their `digits` ([`Cuda::keyswitch_digits`]) into `output`.
    fn keyswitch_by_columns(
        &self,
        (tile, kernel): (usize, &Kernel),
        key_bytes: &DeviceBuffer<u8>,
        digits: &DeviceBuffer<i8>,
        input: Words<'_>,
        count: usize,
        output: &mut Target<'_>,
    ) -> Result<(), Error> {
        let rows = keyswitch_rows(&self.params);
        let in_dim = self.params.big_lwe_dimension().0;
        let out_width = self.params.lwe_dimension().0 + 1;
        let grid = Grid {
            blocks: to_u32(out_width).min(KS_COLUMN_BLOCKS_PER_SM * self.gpu.info().sm_count),
            threads: KS_COLUMN_THREADS,
            shared_bytes: to_u32(keyswitch_columns_shared_bytes(&self.params, tile, count)),
        };
        let (count, in_dim, out_width, rows) = (
            to_u32(count),
            to_u32(in_dim),
            to_u32(out_width),
            to_u32(rows),
        );
        // SAFETY: the arguments match `fhe_keyswitch_columns_t{tile}(const u64*, const signed
        // char*, const unsigned char*, u64*, u32, u32, u32, u32)`, with `count <= tile`;
        // `input` holds `count` ciphertexts of kN + 1 words (the kernel reads their bodies),
        // `digits` count rows of `rows` bytes (a multiple of 16, as `tensor_keyswitch`
        // checked), `key_bytes` 8 columns of `rows` bytes per output word, `output` count
        // (n + 1) words, all of which the kernel writes; the shared memory is the count rows of
        // digits and tile partial sums per thread, as it indexes (allowed at load for
        // count = tile).
        unsafe {
            let launch = input
                .pass(self.gpu.launch(kernel, grid))
                .buffer(digits)
                .buffer(key_bytes);
            output
                .pass(launch)
                .value(&count)
                .value(&in_dim)
                .value(&out_width)
                .value(&rows)
                .run()?;
        }
        Ok(())
    }

    /// The key switch of `count` ciphertexts on the tensor cores (`fhe_keyswitch_mma`) from
    /// their `digits` ([`Cuda::keyswitch_digits`], padded to whole tiles of
    /// [`KSM_CIPHERTEXTS`]) into `output`.
    fn keyswitch_on_tensor_cores(
        &self,
        kernel: &Kernel,
        key_bytes: &DeviceBuffer<u8>,
        digits: &DeviceBuffer<i8>,
        input: Words<'_>,
        count: usize,
        output: &mut Target<'_>,
    ) -> Result<(), Error> {
        let rows = keyswitch_rows(&self.params);
        let in_dim = self.params.big_lwe_dimension().0;
        let out_width = self.params.lwe_dimension().0 + 1;
        let padded_count = digits.len() / rows;
        let count_u32 = to_u32(count);
        let column_blocks = to_u32(key_bytes.len() / rows / KSM_COLUMNS);
        let grid = Grid {
            blocks: column_blocks * to_u32(padded_count / KSM_CIPHERTEXTS),
            threads: KSM_THREADS,
            shared_bytes: 0,
        };
        let (in_dim, out_width, rows) = (to_u32(in_dim), to_u32(out_width), to_u32(rows));
        // SAFETY: the arguments match `fhe_keyswitch_mma(const signed char*, const unsigned
        // char*, const u64*, u64*, u32, u32, u32, u32, u32)`; `digits` holds `padded_count`
        // rows and `key_bytes` `column_blocks` KSM_N columns of `rows` bytes (a multiple of
        // KSM_K, checked by `tensor_keyswitch`), which the grid's tiles cover exactly; the
        // kernel reads body words of `input` and writes every `output` word (ciphertexts
        // below `count`, words below `out_width`) once.
        unsafe {
            let launch = self
                .gpu
                .launch(kernel, grid)
                .buffer(digits)
                .buffer(key_bytes);
            output
                .pass(input.pass(launch))
                .value(&count_u32)
                .value(&in_dim)
                .value(&out_width)
                .value(&rows)
                .value(&column_blocks)
                .run()?;
        }
        Ok(())
    }

    /// Blind rotation (the kernels switch the `count` ciphertexts in `small` to `2N` as they
    /// read them), then with `extract` sample extraction; returns the `count` GLWE
    /// accumulators (or with `extract` LWE samples), or `None` when written to `output`. The
    /// cluster kernel extracts the samples itself, as it writes its outputs: one launch fewer.
    fn blind_rotate_device(
        &self,
        small: Words<'_>,
        lut: Words<'_>,
        count: usize,
        output: Output<'_>,
        extract: bool,
    ) -> Result<Option<DeviceBuffer<u64>>, Error> {
        let k1 = self.params.glwe_dimension().0 + 1;
        let n = self.params.polynomial_size().0;
        let shape = shape_of(&self.params);
        match (&self.kernels.cluster, self.rotates_in_clusters(count)) {
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

    /// Whether the blind rotation of `count` ciphertexts runs on the cluster kernel rather
    /// than the amortized one.
    fn rotates_in_clusters(&self, count: usize) -> bool {
        let k1 = self.params.glwe_dimension().0 + 1;
        self.kernels.cluster.is_some()
            && match self.engine {
                Engine::Amortized => false,
                Engine::LowLatency => true,
                Engine::Auto => count * k1 <= self.gpu.info().sm_count as usize,
            }
    }

    /// Every word of `input` switched to `2N`.
    fn modulus_switch_device(&self, input: &DeviceBuffer<u64>) -> Result<DeviceBuffer<u32>, Error> {
        let mut switched = self.gpu.alloc_zeroed::<u32>(input.len())?;
        let words = input.len() as u64;
        let log2_2n = self.params.polynomial_size().0.trailing_zeros() + 1;
        let grid = Grid::cover(words, ELEMENTWISE_THREADS);
        // SAFETY: the arguments match `fhe_modulus_switch(const u64*, u32*, u64, u32)`; both
        // buffers hold `words` elements and the kernel's grid-stride loop stays below it.
        unsafe {
            self.gpu
                .launch(&self.kernels.modulus_switch, grid)
                .buffer(input)
                .buffer_mut(&mut switched)
                .value(&words)
                .value(&log2_2n)
                .run()?;
        }
        Ok(switched)
    }

    /// Sample extraction of `count` GLWE ciphertexts; returns the LWE ciphertexts, or `None`
    /// when written to `output`.
    fn sample_extract_device(
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

/// The page-locked buffer in `slot`, at least `words` long (allocated or grown on demand).
fn pinned<'a>(
    gpu: &Gpu,
    slot: &'a mut Option<PinnedBuffer<u64>>,
    words: usize,
) -> Result<&'a mut PinnedBuffer<u64>, Error> {
    let buffer = match slot.take() {
        Some(buffer) if buffer.len() >= words => buffer,
        _ => gpu.alloc_pinned(words)?,
    };
    Ok(slot.insert(buffer))
}

/// The page-locked buffer in `slot` holding the words of `lut` (at its start).
fn stage_table<'a>(
    gpu: &Gpu,
    slot: &'a mut Option<PinnedBuffer<u64>>,
    lut: &LookupTable,
) -> Result<&'a mut PinnedBuffer<u64>, Error> {
    let words = lut.polynomial();
    let staged = pinned(gpu, slot, words.len())?;
    staged.as_mut_slice()?[..words.len()].copy_from_slice(words);
    Ok(staged)
}

/// Below this many words, [`stage_inputs`] and [`unpack`] copy on the calling thread: handing
/// a small copy to rayon's pool (waking a worker thread) can cost more than the copy.
const PARALLEL_COPY_MIN_WORDS: usize = 1 << 16;

/// The page-locked buffer in `slot` (at least `capacity` words) holding the words of
/// `ciphertexts` (all of one width, checked by [`Cuda::check`]) one after the other.
fn stage_inputs<'a>(
    gpu: &Gpu,
    slot: &'a mut Option<PinnedBuffer<u64>>,
    ciphertexts: &[LweCiphertext],
    capacity: usize,
) -> Result<&'a mut PinnedBuffer<u64>, Error> {
    let staged = pinned(gpu, slot, capacity)?;
    let width = ciphertexts.first().map_or(1, |ct| ct.as_slice().len());
    let words = &mut staged.as_mut_slice()?[..ciphertexts.len() * width];
    if words.len() < PARALLEL_COPY_MIN_WORDS {
        for (dst, ct) in words.chunks_mut(width).zip(ciphertexts) {
            dst.copy_from_slice(ct.as_slice());
        }
    } else {
        words
            .par_chunks_mut(width)
            .zip(ciphertexts.par_iter())
            .for_each(|(dst, ct)| dst.copy_from_slice(ct.as_slice()));
    }
    Ok(staged)
}

/// Appends the first `len` words of `outputs` (once their copy has landed) to `out`, as
/// vectors of `width` words.
fn unpack(
    outputs: &PinnedBuffer<u64>,
    len: usize,
    width: usize,
    out: &mut Vec<Vec<u64>>,
) -> Result<(), Error> {
    let words = &outputs.as_slice()?[..len];
    if len < PARALLEL_COPY_MIN_WORDS {
        out.extend(words.chunks(width).map(<[u64]>::to_vec));
    } else {
        out.par_extend(words.par_chunks(width).map(<[u64]>::to_vec));
    }
    Ok(())
}

/// The fhe_pbs module compiled for one parameter set: the source with `FHE_K1`, `FHE_N` and
/// `FHE_LEVELS` and `FHE_BASE_LOG` defined, so that the blind rotations' FFT size, polynomial
/// count, levels and digit base are compile-time constants (their kernels are named
/// `..._k{K1}_n{N}_l{L}_b{B}`). One module per parameter set and process (NVRTC compiles it on
/// first use, the disk cache keeps it).
fn specialized_module(k1: usize, n: usize, levels: usize, base_log: usize) -> Module {
    static MODULES: Mutex<Vec<Module>> = Mutex::new(Vec::new());
    let name = format!("{}_k{k1}_n{n}_l{levels}_b{base_log}", source::FHE_PBS.name);
    let mut modules = MODULES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(module) = modules.iter().find(|m| m.name == name) {
        return *module;
    }
    let text = format!(
        "#define FHE_K1 {k1}\n#define FHE_N {n}\n#define FHE_LEVELS {levels}\n\
         #define FHE_BASE_LOG {base_log}\n{}",
        source::FHE_PBS.source
    );
    // Leaked once per parameter set: the GPU handle keys its loaded modules by a static name.
    let module = Module {
        name: Box::leak(name.into_boxed_str()),
        source: Box::leak(text.into_boxed_str()),
        headers: source::FHE_PBS.headers,
    };
    modules.push(module);
    module
}

/// Dynamic shared memory of the key switch with `tile` ciphertexts per block: the digits of
/// `KS_CHUNK` coefficients (ints in the narrow kernels, else i64).
fn keyswitch_shared_bytes(params: &Parameters, tile: u32) -> usize {
    let ks_levels = params.ks_decomposition().level_count.0;
    let digit_bytes = if narrow_keyswitch(params) { 4 } else { 8 };
    KS_CHUNK as usize * ks_levels * tile as usize * digit_bytes
}

/// Key-switching key rows: `k N l`, one per input coefficient and level.
fn keyswitch_rows(params: &Parameters) -> usize {
    params.big_lwe_dimension().0 * params.ks_decomposition().level_count.0
}

/// Dynamic shared memory of `fhe_keyswitch_columns_t{tile}` on `count` ciphertexts: their
/// digits (one byte per key row), then `tile` partial sums per thread.
fn keyswitch_columns_shared_bytes(params: &Parameters, tile: usize, count: usize) -> usize {
    count * keyswitch_rows(params) + tile * KS_COLUMN_THREADS as usize * 8
}

/// Whether batches can key-switch on the int8 tensor cores (`fhe_keyswitch_mma`): digits of a
/// base log `b <= 7` fit an int8 (`|d| <= 2^(b-1)`), every inner sum over the key rows of
/// digit times key byte (each at most `2^(b-1) 255`) fits an int32, and the rows fill whole
/// shared-memory stages.
fn tensor_keyswitch(params: &Parameters) -> bool {
    let base_log = params.ks_decomposition().base_log.0;
    let rows = keyswitch_rows(params);
    (1..=7).contains(&base_log) && (rows << (base_log - 1)) * 255 < 1 << 31 && rows % KSM_ROWS == 0
}

/// The key-switching key `ksk` (rows of `out_width` words) split into bytes for the
/// tensor-core key switch: byte `t` of row `f`'s word `w` at `(8 w + t) rows + f`, so each of
/// the `8 out_width` columns holds its rows contiguously; zero columns pad the words to whole
/// blocks of `KSM_COLUMNS / 8`.
fn keyswitch_key_bytes(ksk: &[u64], out_width: usize) -> Vec<u8> {
    let rows = ksk.len() / out_width;
    let words = out_width.next_multiple_of(KSM_COLUMNS / 8);
    let mut bytes = vec![0u8; words * 8 * rows];
    bytes
        .par_chunks_mut(8 * rows)
        .take(out_width)
        .enumerate()
        .for_each(|(w, columns)| {
            for f in 0..rows {
                for (t, byte) in ksk[f * out_width + w].to_le_bytes().into_iter().enumerate() {
                    columns[t * rows + f] = byte;
                }
            }
        });
    bytes
}

/// Whether the key switch runs its narrow kernels (`fhe_keyswitch_narrow_t*`): digits of a
/// base log of at most 31 bits fit an int.
fn narrow_keyswitch(params: &Parameters) -> bool {
    params.ks_decomposition().base_log.0 <= 31
}

/// Complex slots of one Fourier polynomial in shared memory for passes of `2^log_e`-value
/// tasks (`polynomial_slots` in fhe_pbs.cu): the `N/2` values, permuted for tasks of 8, plus
/// one pad slot per 16 values for tasks of 16.
fn polynomial_slots(params: &Parameters, log_e: u32) -> usize {
    let m = params.polynomial_size().0 / 2;
    if log_e == 3 { m } else { m + (m >> log_e) }
}

/// Dynamic shared memory of the amortized blind rotation in `layout`: the `N/4` twiddles,
/// the `(k + 1) l` padded Fourier polynomials unless they live in global memory, and the
/// `(k + 1) N` accumulator words when they live there.
fn amortized_shared_bytes(params: &Parameters, layout: AmortizedLayout) -> usize {
    let k1 = params.glwe_dimension().0 + 1;
    let n = params.polynomial_size().0;
    let levels = params.pbs_decomposition().level_count.0;
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
fn cluster_shared_bytes(params: &Parameters) -> usize {
    let k1 = params.glwe_dimension().0 + 1;
    let n = params.polynomial_size().0;
    let levels = params.pbs_decomposition().level_count.0;
    let slots = polynomial_slots(params, CLUSTER_LOG_E);
    let received = 2 * (k1 - 1) * levels * slots;
    let key_rows = k1 * levels * n / 2;
    let mbarriers = 1 + 2 * (n / 512);
    let mask_words = params.lwe_dimension().0;
    (received + slots + key_rows) * 16 + n * 8 + mbarriers * 8 + mask_words * 4
}

/// Lets `kernel` use `bytes` of dynamic shared memory, or explains why it cannot.
fn allow_shared(kernel: &Kernel, bytes: usize, what: &str) -> Result<(), Error> {
    kernel
        .allow_shared_bytes(to_u32(bytes))
        .map_err(|e| Error::InvalidParameter {
            name: "parameters",
            reason: format!("the {what} needs {bytes} bytes of shared memory per block: {e}"),
        })
}

impl Bootstrapper for Cuda {
    fn name(&self) -> String {
        let kernel = match (self.engine, self.has_cluster_kernel()) {
            (Engine::Amortized, _) | (_, false) => "amortized",
            (Engine::LowLatency, true) => "low latency (clusters)",
            (Engine::Auto, true) => "auto (clusters for small batches)",
        };
        format!("cuda: {} ({kernel})", self.gpu.info().name)
    }

    fn parameters(&self) -> &Parameters {
        &self.params
    }

    fn keyswitch(&self, ciphertext: &LweCiphertext) -> Result<LweCiphertext, Error> {
        first(self.keyswitch_batch(std::slice::from_ref(ciphertext))?)
    }

    fn bootstrap(
        &self,
        ciphertext: &LweCiphertext,
        lut: &LookupTable,
    ) -> Result<LweCiphertext, Error> {
        first(self.bootstrap_batch(std::slice::from_ref(ciphertext), lut)?)
    }

    fn keyswitch_bootstrap(
        &self,
        ciphertext: &LweCiphertext,
        lut: &LookupTable,
    ) -> Result<LweCiphertext, Error> {
        first(self.keyswitch_bootstrap_batch(std::slice::from_ref(ciphertext), lut)?)
    }

    fn keyswitch_batch(&self, ciphertexts: &[LweCiphertext]) -> Result<Vec<LweCiphertext>, Error> {
        wrap_lwe(self.run(ciphertexts, None, Pipeline::Keyswitch)?)
    }

    fn bootstrap_batch(
        &self,
        ciphertexts: &[LweCiphertext],
        lut: &LookupTable,
    ) -> Result<Vec<LweCiphertext>, Error> {
        wrap_lwe(self.run(ciphertexts, Some(lut), Pipeline::Bootstrap)?)
    }

    fn keyswitch_bootstrap_batch(
        &self,
        ciphertexts: &[LweCiphertext],
        lut: &LookupTable,
    ) -> Result<Vec<LweCiphertext>, Error> {
        wrap_lwe(self.run(ciphertexts, Some(lut), Pipeline::KeyswitchBootstrap)?)
    }
}

fn wrap_lwe(words: Vec<Vec<u64>>) -> Result<Vec<LweCiphertext>, Error> {
    words.into_iter().map(LweCiphertext::from_vec).collect()
}

fn first(mut outputs: Vec<LweCiphertext>) -> Result<LweCiphertext, Error> {
    outputs.pop().ok_or(Error::DimensionMismatch {
        what: "GPU outputs",
        expected: 1,
        got: 0,
    })
}

/// The integer stages on the device, for bit-exact comparison with the CPU functions of the
/// same names ([`crate::modswitch::modulus_switch_lwe`], [`crate::decomposition::decompose_slice`],
/// [`crate::glwe::sample_extract`]); the key switch is [`Bootstrapper::keyswitch_batch`].
/// They run the device functions the pipeline runs: the blind rotations switch their inputs'
/// modulus with the function of the modulus-switch kernel, and the decomposition kernel's
/// function is the one the key switch and, fused with the FFT, the blind rotations use.
/// Lookup tables are not built on the device: the CPU's polynomial is uploaded as is.
pub mod stages {
    use super::{Cuda, ELEMENTWISE_THREADS, Output, to_u32};
    use crate::error::Error;
    use crate::glwe::GlweCiphertext;
    use crate::lwe::LweCiphertext;
    use crate::params::DecompositionParams;
    use crate::polynomial::check_len;
    use kernels::Grid;

    /// [`crate::modswitch::modulus_switch_lwe`] of every ciphertext (to `2N` of the engine's
    /// parameters), on the device.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when the ciphertexts differ in dimension; [`Error::Gpu`].
    pub fn modulus_switch(
        cuda: &Cuda,
        ciphertexts: &[LweCiphertext],
    ) -> Result<Vec<Vec<usize>>, Error> {
        let Some(width) = ciphertexts.first().map(|c| c.as_slice().len()) else {
            return Ok(Vec::new());
        };
        let mut words = Vec::with_capacity(width * ciphertexts.len());
        for ct in ciphertexts {
            check_len("LWE ciphertext length", width, ct.as_slice().len())?;
            words.extend_from_slice(ct.as_slice());
        }
        let input = cuda.gpu.upload(&words)?;
        let switched = cuda.modulus_switch_device(&input)?.to_host()?;
        Ok(switched
            .chunks_exact(width)
            .map(|c| c.iter().map(|&x| x as usize).collect())
            .collect())
    }

    /// [`crate::decomposition::decompose_slice`] on the device: digit `j` of `input[i]` at
    /// `out[j * input.len() + i]`.
    ///
    /// # Errors
    ///
    /// [`Error::Gpu`].
    pub fn decompose(
        cuda: &Cuda,
        input: &[u64],
        params: DecompositionParams,
    ) -> Result<Vec<i64>, Error> {
        let levels = params.level_count.0;
        if input.is_empty() {
            return Ok(Vec::new());
        }
        let device_input = cuda.gpu.upload(input)?;
        let mut output = cuda.gpu.alloc_zeroed::<i64>(input.len() * levels)?;
        let len = input.len() as u64;
        let base_log = to_u32(params.base_log.0);
        let level_count = to_u32(levels);
        let grid = Grid::cover(len, ELEMENTWISE_THREADS);
        // SAFETY: the arguments match `fhe_decompose(const u64*, i64*, u64, u32, u32)`; the
        // input holds `len` words and the output `len * level_count`, which the kernel's
        // grid-stride loop stays within; `params` is a valid decomposition (b l <= 64).
        unsafe {
            cuda.gpu
                .launch(&cuda.kernels.decompose, grid)
                .buffer(&device_input)
                .buffer_mut(&mut output)
                .value(&len)
                .value(&base_log)
                .value(&level_count)
                .run()?;
        }
        Ok(output.to_host()?)
    }

    /// [`crate::glwe::sample_extract`] of every GLWE ciphertext, on the device.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] unless each has the engine's `k` and `N`; [`Error::Gpu`].
    pub fn sample_extract(
        cuda: &Cuda,
        ciphertexts: &[GlweCiphertext],
    ) -> Result<Vec<LweCiphertext>, Error> {
        let params = &cuda.params;
        let width = (params.glwe_dimension().0 + 1) * params.polynomial_size().0;
        if ciphertexts.is_empty() {
            return Ok(Vec::new());
        }
        let mut words = Vec::with_capacity(width * ciphertexts.len());
        for ct in ciphertexts {
            check_len("GLWE ciphertext length", width, ct.as_slice().len())?;
            check_len(
                "GLWE polynomial size",
                params.polynomial_size().0,
                ct.polynomial_size().0,
            )?;
            words.extend_from_slice(ct.as_slice());
        }
        let glwe = cuda.gpu.upload(&words)?;
        let lwe = cuda
            .sample_extract_device(&glwe, ciphertexts.len(), Output::Device)?
            .ok_or(Error::DimensionMismatch {
                what: "sample extraction outputs in device memory",
                expected: 1,
                got: 0,
            })?
            .to_host()?;
        let out_width = params.big_lwe_dimension().0 + 1;
        lwe.chunks_exact(out_width)
            .map(|c| LweCiphertext::from_vec(c.to_vec()))
            .collect()
    }
}
