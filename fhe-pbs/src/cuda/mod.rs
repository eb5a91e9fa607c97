//! The CUDA backend: the kernels of `cuda/fhe_pbs.cu` (and the headers it is split into),
//! run through `kernels`. Host code by concern: `keyswitch`, `blind_rotation`, `pipeline`
//! (staging and chunks), `stages` (the integer stages alone, for cross-checks).
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
//! [`Cuda::with_max_chunk`] asks for it): key switch (for `KS_PBS`), blind rotation (which
//! switches the modulus of its inputs as it reads them), sample extraction (by the cluster
//! kernel itself as it writes its outputs, else a launch of its own), all on one stream, with
//! no round trip to the host between the stages. The chunk's inputs and outputs stay in
//! page-locked host memory, which the first and last kernels read and write in place over the
//! bus: no copy is queued (each cost about 10 us of host time on an H100 machine, during which
//! a single ciphertext's GPU work could not start), and a large chunk's outputs land in host
//! memory as its bootstraps finish. Two exceptions: a key switch alone that sums into device
//! memory with atomics (where the key switch by key columns or tensor cores is not available)
//! ends with a download, and the amortized blind rotation, which reads each ciphertext's words
//! as its CMuxes need them, gets its inputs uploaded. A run of more than 16 ciphertexts
//! uploads its lookup table once (every bootstrap reads it); a smaller one reads it in place.
//! The chunks alternate between two sets of page-locked buffers, so that the host stages the
//! next chunk and unpacks the previous one while the GPU works on this one.
//!
//! Batches can also stay on the device: [`Cuda::upload`] makes [`DeviceLweCiphertexts`], and
//! [`Cuda::keyswitch_on_device`], [`Cuda::bootstrap_on_device`] and
//! [`Cuda::keyswitch_bootstrap_on_device`] queue the same stages on them and return their
//! outputs on the device, without waiting (chunks of a large batch go through
//! device-to-device copies).
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
//! * [`Engine::Auto`]: the cluster kernel wherever it is available, the amortized kernel
//!   elsewhere. On an H100, 4,096 KS+PBS resident on the GPU ran at 40.1-42.1k/s on
//!   clusters against 36.3-36.9k/s amortized (see docs/journal/fhe-pbs.md).
//!
//! A multi-bit set ([`crate::PbsKind::MultiBit`]) runs on clusters whatever the engine (it
//! needs sm_90; [`Cuda::new`] refuses it elsewhere): `fhe_multi_bit_bundles` first builds the
//! key bundle of every group of every ciphertext of the chunk at once, in the Fourier domain
//! (`sum_t zeta^(d_t) GGSW_t`, as tfhe-rs's GPU backend does; see `multi_bit.rs`), each key
//! value read and each monomial looked up once for a tile of ciphertexts, then the cluster
//! kernel runs the `n / g` external products `ACC = BUNDLE ⊡ ACC` (no rotation, the product
//! replacing the accumulator), one cluster per ciphertext, as many in flight as the GPU
//! holds. The bundles take `n / g (k + 1)^2 l N/2` complex values per ciphertext (15 MB for tfhe-rs's g = 4
//! set), which bounds the chunks (at most 1,024 ciphertexts).
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
use crate::keys::{AnyBootstrapKey, EvaluationKeys};
use crate::lut::LookupTable;
use crate::lwe::LweCiphertext;
use crate::params::{ModulusSwitchType, Parameters};
use crate::polynomial::check_len;

mod blind_rotation;
mod keyswitch;
mod multi_bit;
mod multi_gpu;
mod pipeline;
mod resident;
pub mod stages;

use blind_rotation::{
    AMORTIZED_LOG_E, AmortizedLayout, amortized_shared_bytes, cluster_shared_bytes, device_key,
    fft_tables, polynomial_slots, staged_twiddles,
};
use keyswitch::{
    ByteKeyswitch, KS_COLUMN_TILES, KS_TILE_LARGE, KS_TILE_SMALL, keyswitch_columns_shared_bytes,
    keyswitch_key_bytes, keyswitch_rows, keyswitch_shared_bytes, narrow_keyswitch,
    tensor_keyswitch,
};
use multi_bit::{MultiBitKernels, MultiBitTables, device_multi_bit_key};
pub use multi_gpu::MultiGpu;
use pipeline::{Output, Pipeline, Staging, Target, Words};
pub use resident::DeviceLweCiphertexts;

/// Ciphertexts per chunk of a batch (see [`Cuda::run`]): enough blocks to keep the amortized
/// blind rotation's waves full, few enough that a batch of 16,384 overlaps host work and
/// transfers with three quarters of its kernels.
const CHUNK_CIPHERTEXTS: usize = 4096;
/// Ciphertexts per chunk of a multi-bit batch: their key bundles take 15 MB each with
/// tfhe-rs's g = 4 set, and 1,024 already fill the GPU with clusters.
const MULTI_BIT_CHUNK_CIPHERTEXTS: usize = 1024;
/// A null `double2*` kernel argument.
const NULL_DEVICE_POINTER: u64 = 0;
/// Threads per block of the element-wise kernels.
const ELEMENTWISE_THREADS: u32 = 256;
/// Fraction of the free device memory a chunk may use, in percent.
const CHUNK_MEMORY_PERCENT: usize = 70;
/// The blind rotations of a run of at most this many ciphertexts read the lookup table from
/// page-locked host memory in place; a larger run uploads it (see [`Cuda::run`]).
const TABLE_IN_PLACE_MAX_CIPHERTEXTS: usize = 16;

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
    /// 1 for [`ModulusSwitchType::CenteredMeanNoiseReduction`], else 0.
    centered_switch: u32,
}

// SAFETY: a `#[repr(C)]` struct of nine u32, laid out as `FheShape` in fhe_pbs.cu.
unsafe impl DeviceRepr for FheShape {}

/// Which blind-rotation kernel a [`Cuda`] engine runs (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Engine {
    /// One thread-block cluster per bootstrap (sm_90 and newer; else the amortized kernel):
    /// the lowest latency, and on an H100 also the higher throughput for a batch of 4,096.
    LowLatency,
    /// One thread block per bootstrap, many in flight: for GPUs without clusters.
    Amortized,
    /// The cluster kernel where available, else the amortized one (today the same as
    /// [`Engine::LowLatency`]; the choice may follow measurements on other GPUs).
    #[default]
    Auto,
}

/// The keys and tables resident on the GPU, shared by the engines made from one upload.
#[derive(Debug)]
struct DeviceKeys {
    /// The Fourier bootstrap key, `(re, im)` pairs, each polynomial bit-reversed.
    bsk: DeviceBuffer<f64>,
    /// For a multi-bit set, the tables of the key bundles.
    multi_bit: Option<MultiBitTables>,
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
    /// The PBS decomposition as the blind rotations compute it (`fhe_pbs_decompose_*`).
    pbs_decompose: Kernel,
    sample_extract: Kernel,
    /// The amortized kernel for `amortized_layout` (`..._shared` for `AllShared`).
    amortized: Kernel,
    /// Where the amortized kernel keeps its working set.
    amortized_layout: AmortizedLayout,
    /// The cluster kernel for this `k`, when the device and parameters allow it.
    cluster: Option<Kernel>,
    /// The multi-bit kernels, for a multi-bit set (which needs clusters).
    multi_bit: Option<MultiBitKernels>,
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
        base_log: to_u32(pbs.base_log().0),
        level_count: to_u32(pbs.level_count().0),
        ks_base_log: to_u32(ks.base_log().0),
        ks_level_count: to_u32(ks.level_count().0),
        centered_switch: u32::from(
            params.modulus_switch() == ModulusSwitchType::CenteredMeanNoiseReduction,
        ),
    }
}

/// Dimensions are bounded by [`Parameters`] (at most `2^13` for `N`, and LWE dimensions far
/// below `2^32`); saturate rather than wrap if a caller ever passes more.
fn to_u32(x: usize) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
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
        let pbs_levels = params.pbs_decomposition().level_count().0;
        let (bsk, multi_bit) = match keys.bootstrap_key() {
            AnyBootstrapKey::Classic(key) => {
                let fourier = FourierBootstrapKey::new(key)?;
                (device_key(&fourier, n / 2, k1 * pbs_levels, k1), None)
            }
            AnyBootstrapKey::MultiBit(key) if kernels.multi_bit.is_some() => (
                device_multi_bit_key(key, &params)?,
                Some(MultiBitTables::upload(&gpu, params.polynomial_size())?),
            ),
            AnyBootstrapKey::MultiBit(_) => {
                return Err(Error::InvalidParameter {
                    name: "bootstrap key",
                    reason: "the multi-bit bootstrap on CUDA needs thread-block clusters (sm_90 \
                             or newer) whose shared memory fits these parameters"
                        .into(),
                });
            }
        };
        let (twist, twiddles) = fft_tables(n);
        let ksk = keys.keyswitch_key().as_slice();
        let ksk_bytes = match kernels.keyswitch_bytes {
            Some(_) => Some(gpu.upload(&keyswitch_key_bytes(ksk, params.lwe_dimension().0 + 1))?),
            None => None,
        };
        let device_keys = DeviceKeys {
            bsk: gpu.upload(&bsk)?,
            multi_bit,
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
        let levels = params.pbs_decomposition().level_count().0;
        let base_log = params.pbs_decomposition().base_log().0;
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
        let multi_bit = match (params.pbs_kind(), &cluster) {
            (crate::PbsKind::MultiBit(g), Some(_)) => {
                Some(MultiBitKernels::load(gpu, &module, &suffix, params, g.0)?)
            }
            _ => None,
        };
        Ok(Kernels {
            multi_bit,
            keyswitch_small,
            keyswitch_large,
            keyswitch_bytes,
            modulus_switch: load("fhe_modulus_switch")?,
            decompose: load("fhe_decompose")?,
            pbs_decompose: load(&format!("fhe_pbs_decompose_{suffix}"))?,
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

    /// At most `max_chunk` ciphertexts per chunk of a batch (at least 1; chunks never exceed
    /// 4,096 ciphertexts, nor what the free device memory allows). For tests of the chunking
    /// path and to bound device and page-locked memory.
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
            (Engine::Auto, true) => "auto (clusters)",
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
