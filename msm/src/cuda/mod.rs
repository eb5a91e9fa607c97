//! The CUDA backend in every group of [`MsmCurve`]: the kernels of `msm/cuda/msm.cu`, compiled
//! once per group (field arithmetic in `field.cuh` and `fp2.cuh`, point arithmetic in
//! `curve.cuh`, the curves' constants in `bls12_381.cuh` and `bn254.cuh`), run through
//! `kernels`. Every group has the same features: contexts with resident bases, shifted bases,
//! batches, device scalars and chunking.
//!
//! Everything from the scalars to the sum runs on the device, per scalar vector:
//!
//! 1. arkworks' Montgomery-form scalars become plain integers;
//! 2. each scalar is cut into signed `c`-bit digits (in `[-2^(c-1), 2^(c-1)]`);
//! 3. the nonzero digits are sorted by bucket (window and `|digit|`) in three passes that each
//!    write whole runs of entries: by coarse partition of the bucket keys, by fine partition
//!    (each about 10^4 digits), then within each fine partition in shared memory. A direct
//!    scatter to per-bucket cursors, as before, wrote each 8-byte entry at a random place of a
//!    gigabyte-sized list (a partial-sector write to DRAM each) and took three times as long;
//! 4. a segmented reduction sums each bucket: every thread adds a fixed number of sorted
//!    entries with XYZZ + affine additions, so a bucket holding every point costs no more
//!    than even buckets; sums that cross thread boundaries are combined in further passes;
//! 5. each window's buckets are reduced to `sum_b (b + 1) B_b` by running sums over groups of
//!    buckets, in parallel, and a tree over the groups adds each group's offset weight;
//! 6. the windows are combined as `sum_j 2^(c j) W_j`.
//!
//! Step 6 disappears with shifted bases ([`ContextOptions::shifted_bases`]): the context then
//! keeps `2^(c j) P_i` for every window `j` on the device, so every digit of every window
//! lands in one shared set of `2^(c-1)` buckets. That buys wide windows (fewer additions)
//! for memory (one copy of the bases per window), computed once on the device when the
//! context is made: window by window, c Jacobian doublings per point, then the affine form
//! with one inversion per batch of up to 16 points (Montgomery's trick). On an H200, 2^24
//! BLS12-381 G1 bases and their 11 copies take about 1.8 s, upload included.
//!
//! Bases are stored as arkworks stores them (Montgomery form; `Fq2` as its two halves), so they
//! cross to the device without conversion; the point at infinity is stored as `(0, 0)`. A
//! group's kernels are compiled (or read from the cache) at its first use on a [`Cuda`].

#![allow(unsafe_code)]

mod multi_gpu;
mod repr;

use std::marker::PhantomData;
use std::sync::{Arc, Mutex, PoisonError};

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ff::{Field, Zero};
use kernels::source::Module;
use kernels::{CopyQueue, DeviceBuffer, DeviceRepr, Gpu, Grid, Kernel, Mark, PinnedBuffer};
use rayon::prelude::*;

use crate::error::Error;
use crate::{MsmBackend, MsmCurve, check_batch, check_lengths};
pub use multi_gpu::{MultiGpu, MultiGpuContext};
pub use repr::{Coordinate, DeviceField};
use repr::{DeviceAffine, DeviceXyzz};

/// The device's affine points of group `C`.
type AffineOf<C> = DeviceAffine<<C as crate::curve::sealed::Curve>::Coordinate>;
/// The device's XYZZ points of group `C`.
type XyzzOf<C> = DeviceXyzz<<C as crate::curve::sealed::Curve>::Coordinate>;

/// The widest window the GPU path takes: digit keys and the bucket count stay in range.
pub const MAX_GPU_WINDOW_BITS: u32 = 24;
/// Threads per block of the scan kernels and counts each scans (`SCAN_THREADS`,
/// `SCAN_TILE` in msm.cu).
const SCAN_THREADS: u32 = 1024;
const SCAN_TILE: u64 = 4096;
/// Threads per block of the per-point kernels (`ACCUMULATE_THREADS` in msm.cu, whose register
/// cap assumes it).
const THREADS: u32 = 128;
/// The first reduction pass gives each thread about `entries >> FIRST_PASS_THREADS_LOG`
/// entries, within [2, FIRST_SEGMENT_MAX]: about 2^17 threads (a few waves on an H100) and no
/// more, since every thread leaves two partial sums for the next pass. Measured on an H100
/// against 2^18 threads and at most 64 entries: 2^20 9.60 -> 9.42 ms, 2^24 115.3 -> 113.1 ms.
/// Then a little fewer, so that the threads fill whole waves (`first_segment`).
const FIRST_PASS_THREADS_LOG: u32 = 17;
const FIRST_SEGMENT_MAX: u64 = 256;
/// Entries summed by one thread in the reduction passes after the first.
const LATER_PASS_SEGMENT: u32 = 8;
/// The sort of the digits by bucket key, as msm.cu's constants of the same names (see
/// `msm_count_partitions` there): at most `MAX_FINE` fine partitions of keys, `FINE_PER_COARSE`
/// of them to a coarse partition; the threads of each pass's blocks and what each block takes:
/// scalars (the counting), digits (the coarse pass: a tile of scalars whose digits fit), entries
/// (the fine pass), one fine partition (the last pass, in shared memory up to `SORT_CAP`).
const MAX_FINE: u64 = 32768;
const FINE_PER_COARSE: u64 = 128;
const COUNT_THREADS: u32 = 256;
const COUNT_TILE: u64 = 64 * COUNT_THREADS as u64;
const TILE_THREADS: u32 = 256;
const TILE_ENTRIES: u64 = 12288;
const FINE_THREADS: u32 = 512;
const FINE_TILE: u64 = 16 * FINE_THREADS as u64;
const SORT_THREADS: u32 = 1024;
const SORT_CAP: u64 = 16 * SORT_THREADS as u64;
/// Digits a fine partition should hold, at least: three eighths of `SORT_CAP`, since the
/// partitions come in powers of two of keys (so up to twice as many digits each) and need not be
/// even. And the most keys one may have (`2^MAX_FINE_SHIFT`: their counters take 32 KiB of
/// shared memory, 160 KiB with the entries, within the 163 KiB an A100 allows a block;
/// `MAX_FINE` partitions of that cover any key count the window widths allow).
const FINE_ENTRIES: u64 = 3 * SORT_CAP / 8;
const MAX_FINE_SHIFT: u32 = 12;
/// Blocks each pass of the sort spreads a chunk over, at least, where its items allow: a small
/// chunk gets smaller tiles (and fine partitions) rather than a handful of blocks (on an H100,
/// BLS12-381 G1 resident: 2^14 scalars 1.40 -> 1.20 ms, 2^16 1.65 -> 1.50 ms).
const SORT_SPREAD: u64 = 256;
/// Bytes of a digit entry (key, point reference).
const ENTRY_BYTES: u64 = 8;
/// About this many threads reduce the buckets (enough to fill the GPU a few times).
const REDUCE_THREADS: u64 = 1 << 15;
/// Device memory left free for the driver and other work.
const RESERVED_BYTES: usize = 256 << 20;
/// The fewest scalars in the first chunk of a call that [`upload_pieces`] splits in two.
const LEAD_SPLIT_MIN: usize = 1 << 22;
/// The largest number of digit entries one chunk may hold (point references are 31-bit).
const MAX_ENTRIES: u64 = 1 << 31;
/// Shifted copies are made for at most this many points per launch (bounding the scratch),
/// each thread converting a batch of up to `PRECOMPUTE_BATCH` points with one inversion; a
/// smaller launch takes shorter batches, so that about `2^PRECOMPUTE_THREADS_LOG` threads (a
/// wave on an H100) still run.
const PRECOMPUTE_SLICE: usize = 1 << 20;
const PRECOMPUTE_BATCH: u32 = 16;
const PRECOMPUTE_THREADS_LOG: u32 = 16;

/// How scalars are cut into digits and where the digits go (`struct DigitLayout` in msm.cu).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct DigitLayout {
    n: u64,
    first: u64,
    window_bits: u32,
    windows: u32,
    key_stride: u32,
    point_stride: u32,
}

// SAFETY: a `#[repr(C)]` struct of integers laid out as `DigitLayout` in msm.cu.
unsafe impl DeviceRepr for DigitLayout {}

/// How a context runs its MSMs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContextOptions {
    /// Window width in bits; `None` picks one for the number of points.
    pub window_bits: Option<u32>,
    /// Keep `2^(c j) P_i` for every window `j` on the device (one copy of the bases per
    /// window), so that all windows share one set of buckets and need no combining. Costs
    /// `ceil(256 / c)` times the memory of the bases and a one-time precomputation.
    pub shifted_bases: bool,
    /// The most scalars one pass through the device scratch memory takes (the sort and the
    /// partial sums need about 400 bytes per scalar); `None` takes as many as fit. Larger
    /// MSMs run in several passes whose sums are added.
    pub scratch_points: Option<usize>,
}

/// The window width the GPU path uses for `points` points: the one that minimizes bucket
/// additions plus about three additions per bucket for the reduction.
pub fn default_gpu_window_bits(points: usize, shifted_bases: bool) -> u32 {
    let n = points as f64;
    (4..=22u32)
        .min_by(|&a, &b| {
            let cost = |c: u32| {
                let windows = f64::from(window_count(c));
                let bucket_sets = if shifted_bases { 1.0 } else { windows };
                n * windows + 3.0 * bucket_sets * f64::from(1u32 << (c - 1))
            };
            cost(a).total_cmp(&cost(b))
        })
        .unwrap_or(16)
}

/// Windows of `c` bits that cover a 255-bit (or 254-bit) scalar in signed digits (the top digit absorbs
/// the last carry).
fn window_count(c: u32) -> u32 {
    256u32.div_ceil(c)
}

/// The kernels of the groups a [`Cuda`] has run in, by module name.
type LoadedKernels = Vec<(&'static str, Arc<Kernels>)>;

/// One group's MSM kernels, loaded on one GPU.
#[derive(Debug, Clone)]
struct Kernels {
    scalars_canonical: Kernel,
    count_partitions: Kernel,
    scan_tiles: Kernel,
    scan_tile_sums: Kernel,
    scan_apply: Kernel,
    partition_coarse: Kernel,
    partition_fine: Kernel,
    sort_partitions: Kernel,
    accumulate_affine: Kernel,
    accumulate_xyzz: Kernel,
    bucket_reduce: Kernel,
    sum_groups: Kernel,
    combine_windows: Kernel,
    precompute_window: Kernel,
}

impl Kernels {
    fn load(gpu: &Gpu, module: &Module) -> Result<Self, Error> {
        let kernel = |name: &str| gpu.kernel(module, name);
        Ok(Self {
            scalars_canonical: kernel("msm_scalars_canonical")?,
            count_partitions: kernel("msm_count_partitions")?,
            scan_tiles: kernel("msm_scan_tiles")?,
            scan_tile_sums: kernel("msm_scan_tile_sums")?,
            scan_apply: kernel("msm_scan_apply")?,
            partition_coarse: kernel("msm_partition_coarse")?,
            partition_fine: kernel("msm_partition_fine")?,
            sort_partitions: kernel("msm_sort_partitions")?,
            accumulate_affine: kernel("msm_accumulate_affine")?,
            accumulate_xyzz: kernel("msm_accumulate_xyzz")?,
            bucket_reduce: kernel("msm_bucket_reduce")?,
            sum_groups: kernel("msm_sum_groups")?,
            combine_windows: kernel("msm_combine_windows")?,
            precompute_window: kernel("msm_precompute_window")?,
        })
    }
}

/// The CUDA backend on one GPU, in every group of [`MsmCurve`]. BLS12-381 G1's kernels are
/// compiled (or read from the cache) when it is made, another group's at its first use.
///
/// [`MsmBackend::msm`] uploads the bases for each call; to serve many MSMs over the same
/// bases, make an [`MsmContext`] with [`Cuda::context`]. The group follows from the bases'
/// type, as with [`Cpu`](crate::Cpu).
///
/// ```no_run
/// use ark_ec::{CurveGroup, PrimeGroup};
/// use msm::{ContextOptions, Cuda, Fr, G1Affine, G1Projective, MsmBackend};
///
/// # fn main() -> Result<(), msm::Error> {
/// let g = G1Projective::generator();
/// let bases: Vec<G1Affine> = (1..=1000u64).map(|k| (g * Fr::from(k)).into_affine()).collect();
/// let scalars: Vec<Fr> = (1..=1000u64).map(Fr::from).collect();
///
/// let gpu = Cuda::new()?;
/// let once = gpu.msm(&bases, &scalars)?;
///
/// // Bases resident on the GPU, with one shifted copy per window.
/// let options = ContextOptions { shifted_bases: true, ..ContextOptions::default() };
/// let context = gpu.context(&bases, options)?;
/// assert_eq!(context.msm(&scalars)?, once);
///
/// // BN254 G2 on the same GPU.
/// let h = ark_bn254::G2Projective::generator();
/// let g2_bases = vec![h.into_affine(); 3];
/// let g2_scalars = vec![ark_bn254::Fr::from(5u64); 3];
/// assert_eq!(gpu.msm(&g2_bases, &g2_scalars)?, h * ark_bn254::Fr::from(15u64));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Cuda {
    gpu: Arc<Gpu>,
    /// The groups' kernels loaded so far.
    kernels: Arc<Mutex<LoadedKernels>>,
    upload_limit: Option<usize>,
}

impl Cuda {
    /// The backend on the first visible GPU.
    pub fn new() -> Result<Self, Error> {
        Self::on(Gpu::first()?)
    }

    /// The backend on a GPU handle the caller opened (to pick a device or share one).
    pub fn on(gpu: Arc<Gpu>) -> Result<Self, Error> {
        let cuda = Self {
            gpu,
            kernels: Arc::default(),
            upload_limit: None,
        };
        // The default group's kernels now, so that a missing or broken NVRTC shows here.
        cuda.kernels::<ark_bls12_381::g1::Config>()?;
        Ok(cuda)
    }

    /// Group `C`'s kernels, loaded at the first call.
    fn kernels<C: MsmCurve>(&self) -> Result<Arc<Kernels>, Error> {
        let mut loaded = self.kernels.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, kernels)) = loaded.iter().find(|(name, _)| *name == C::MODULE.name) {
            return Ok(kernels.clone());
        }
        let kernels = Arc::new(Kernels::load(&self.gpu, &C::MODULE)?);
        loaded.push((C::MODULE.name, kernels.clone()));
        Ok(kernels)
    }

    /// The same backend, uploading at most `points` bases at a time in
    /// [`MsmBackend::msm`] and [`MsmBackend::msm_batch`] (by default as many as fit in the
    /// free GPU memory); the sums of the chunks are added on the host.
    pub fn with_upload_limit(mut self, points: usize) -> Self {
        self.upload_limit = Some(points.max(1));
        self
    }

    /// The GPU this backend runs on.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// A human-readable name, "cuda: " and the GPU's name (as [`MsmBackend::name`] in every
    /// group; this one needs no group named).
    pub fn name(&self) -> String {
        format!("cuda: {}", self.gpu.info().name)
    }

    /// Uploads `bases` once (and computes their shifted copies if asked) for many MSMs.
    ///
    /// # Errors
    ///
    /// [`Error::Empty`] for no bases, [`Error::InvalidWindow`] for a window outside
    /// `1..=MAX_GPU_WINDOW_BITS`, [`Error::BasesTooLarge`] when the bases (with their copies)
    /// do not fit in the GPU's free memory, [`Error::Gpu`] when the GPU fails.
    pub fn context<C: MsmCurve>(
        &self,
        bases: &[Affine<C>],
        options: ContextOptions,
    ) -> Result<MsmContext<C>, Error> {
        MsmContext::new(self.clone(), bases, options)
    }

    /// The most bases of group `C` a context without shifted copies can hold in the free
    /// memory now, leaving room for the scratch of its MSMs (or the upload limit, if lower).
    fn bases_that_fit<C: MsmCurve>(&self) -> Result<usize, Error> {
        let free = self.gpu.free_memory()?.saturating_sub(RESERVED_BYTES);
        // Bases plus, with c = 16, scratch of about 1.6 XYZZ points per point, and its 16
        // digits once more (8 bytes each) for their partitioning: 428 bytes in BLS12-381 G1.
        let scratch = (size_of::<XyzzOf<C>>() * 25).div_ceil(16) + 16 * 8;
        let fit = (free / (size_of::<AffineOf<C>>() + scratch)).max(1);
        Ok(fit.min(self.upload_limit.unwrap_or(usize::MAX)))
    }
}

impl<C: MsmCurve> MsmBackend<C> for Cuda {
    fn name(&self) -> String {
        Cuda::name(self)
    }

    fn msm(&self, bases: &[Affine<C>], scalars: &[C::ScalarField]) -> Result<Projective<C>, Error> {
        check_lengths(bases.len(), scalars.len())?;
        Ok(self.msm_batch(bases, &[scalars])?[0])
    }

    /// Uploads the bases once for the whole batch (in chunks when they do not fit).
    fn msm_batch(
        &self,
        bases: &[Affine<C>],
        scalar_sets: &[&[C::ScalarField]],
    ) -> Result<Vec<Projective<C>>, Error> {
        check_batch(bases.len(), scalar_sets)?;
        let mut sums = vec![Projective::<C>::zero(); scalar_sets.len()];
        if scalar_sets.is_empty() {
            return Ok(sums);
        }
        let chunk = self.bases_that_fit::<C>()?;
        for start in (0..bases.len()).step_by(chunk) {
            let end = (start + chunk).min(bases.len());
            let context = self.context(&bases[start..end], ContextOptions::default())?;
            let parts: Vec<_> = scalar_sets.iter().map(|set| &set[start..end]).collect();
            for (sum, part) in sums.iter_mut().zip(context.msm_batch(&parts)?) {
                *sum += part;
            }
        }
        Ok(sums)
    }
}

/// Bases of group `C` (by default BLS12-381 G1) resident on one GPU, serving many MSMs over
/// them. Made by [`Cuda::context`].
///
/// Scratch memory for the digit sort and the buckets is allocated at the first MSM and kept;
/// MSMs on one context run one at a time.
pub struct MsmContext<C: MsmCurve = ark_bls12_381::g1::Config> {
    cuda: Cuda,
    kernels: Arc<Kernels>,
    /// The bases, then (with shifted bases) `2^(c j)` times them for each window `j >= 1`.
    bases: DeviceBuffer<AffineOf<C>>,
    points: usize,
    window_bits: u32,
    windows: u32,
    shifted_bases: bool,
    scratch_points: Option<usize>,
    scratch: Mutex<Option<Scratch<C>>>,
}

impl<C: MsmCurve> std::fmt::Debug for MsmContext<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MsmContext")
            .field("group", &C::NAME)
            .field("cuda", &self.cuda)
            .field("points", &self.points)
            .field("window_bits", &self.window_bits)
            .field("windows", &self.windows)
            .field("shifted_bases", &self.shifted_bases)
            .field("scratch_points", &self.scratch_points)
            .finish_non_exhaustive()
    }
}

/// Scalars of the field `F` (by default BLS12-381's `Fr`) that are already on the device,
/// ready for [`MsmContext::msm_device`] in a group whose scalar field is `F`.
#[derive(Debug)]
pub struct DeviceScalars<F = crate::Fr> {
    /// Four u64 limbs per scalar, arkworks' Montgomery form.
    limbs: DeviceBuffer<u64>,
    field: PhantomData<F>,
}

impl<F> DeviceScalars<F> {
    /// Number of scalars.
    pub fn len(&self) -> usize {
        self.limbs.len() / 4
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.limbs.is_empty()
    }
}

impl<C: MsmCurve> MsmContext<C> {
    fn new(cuda: Cuda, bases: &[Affine<C>], options: ContextOptions) -> Result<Self, Error> {
        if bases.is_empty() {
            return Err(Error::Empty);
        }
        let window_bits = options
            .window_bits
            .unwrap_or_else(|| default_gpu_window_bits(bases.len(), options.shifted_bases));
        if !(1..=MAX_GPU_WINDOW_BITS).contains(&window_bits) {
            return Err(Error::InvalidWindow {
                bits: window_bits,
                max: MAX_GPU_WINDOW_BITS,
            });
        }
        let windows = window_count(window_bits);
        let copies = if options.shifted_bases { windows } else { 1 } as usize;
        let len = bases.len() * copies;
        let bytes = len * size_of::<AffineOf<C>>();
        // Making the shifted copies needs a slot of scratch per point of a slice.
        let precompute_scratch = if options.shifted_bases {
            bases.len().min(PRECOMPUTE_SLICE) * size_of::<AffineOf<C>>()
        } else {
            0
        };
        let free = cuda.gpu.free_memory()?;
        if bytes
            .saturating_add(precompute_scratch)
            .saturating_add(RESERVED_BYTES)
            > free
            || (options.shifted_bases && len as u64 >= MAX_ENTRIES)
        {
            return Err(Error::BasesTooLarge {
                points: bases.len(),
                copies,
                bytes,
                free,
            });
        }
        let kernels = cuda.kernels::<C>()?;
        let host: Vec<AffineOf<C>> = bases.par_iter().map(DeviceAffine::from_arkworks).collect();
        let mut device = cuda.gpu.alloc_zeroed(len)?;
        device.copy_from_host(&host)?;
        if options.shifted_bases {
            let shape = (bases.len(), window_bits, windows);
            precompute_shifted(&cuda.gpu, &kernels, &mut device, shape)?;
        }
        Ok(Self {
            cuda,
            kernels,
            bases: device,
            points: bases.len(),
            window_bits,
            windows,
            shifted_bases: options.shifted_bases,
            scratch_points: options.scratch_points.map(|points| points.max(1)),
            scratch: Mutex::new(None),
        })
    }

    /// Number of bases.
    pub fn len(&self) -> usize {
        self.points
    }

    /// Whether there are no bases (never: a context holds at least one).
    pub fn is_empty(&self) -> bool {
        self.points == 0
    }

    /// The window width in bits.
    pub fn window_bits(&self) -> u32 {
        self.window_bits
    }

    /// Whether the context keeps shifted copies of the bases.
    pub fn has_shifted_bases(&self) -> bool {
        self.shifted_bases
    }

    /// The backend this context runs on.
    pub fn cuda(&self) -> &Cuda {
        &self.cuda
    }

    /// `sum_i scalars[i] * bases[i]`, uploading the scalars.
    ///
    /// The scalars go to the GPU in pieces, each copied while the GPU reduces the one before
    /// (see [`MsmContext::msm_batch`]).
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] when `scalars` and the bases differ in length,
    /// [`Error::Gpu`] when the GPU fails.
    pub fn msm(&self, scalars: &[C::ScalarField]) -> Result<Projective<C>, Error> {
        check_lengths(self.points, scalars.len())?;
        Ok(self.msm_uploaded(&[scalars])?[0])
    }

    /// One MSM per scalar set over the context's bases.
    ///
    /// The scalars go to the GPU in pieces: a set in chunks of the scratch's size, and in G1
    /// the first chunk of a call, when it has 2^22 scalars or more, in a quarter and the rest.
    /// While the GPU reduces one piece, the host writes the next into page-locked memory and
    /// a second stream copies it to the GPU, so only the first piece's upload adds to the
    /// kernels' time.
    ///
    /// # Errors
    ///
    /// [`Error::BatchLengthMismatch`] when a set's length differs from the bases', otherwise
    /// as [`MsmContext::msm`].
    pub fn msm_batch(
        &self,
        scalar_sets: &[&[C::ScalarField]],
    ) -> Result<Vec<Projective<C>>, Error> {
        check_batch(self.points, scalar_sets)?;
        self.msm_uploaded(scalar_sets)
    }

    /// The sums of [`MsmContext::msm_batch`], for sets of the bases' length.
    fn msm_uploaded(&self, sets: &[&[C::ScalarField]]) -> Result<Vec<Projective<C>>, Error> {
        if sets.is_empty() {
            return Ok(Vec::new());
        }
        let gpu = &self.cuda.gpu;
        let mut guard = self.scratch()?;
        let Some(scratch) = guard.as_mut() else {
            unreachable!("MsmContext::scratch allocates the scratch")
        };
        // G1 (coordinates in the prime field) has its first upload split; see upload_pieces.
        let split_first = C::BaseField::extension_degree() == 1;
        let pieces = upload_pieces(self.points, scratch.chunk, sets.len(), split_first);
        let mut staged = match scratch.staged.take() {
            Some(staged) => staged,
            None => Staged::new(gpu, scratch.chunk)?,
        };
        let mut sums = gpu.alloc_zeroed::<XyzzOf<C>>(pieces.len())?;
        // The staged device buffer is free once the work queued so far is done.
        let mut consumed = gpu.mark()?;
        staged.upload::<C>(&sets[pieces[0].set][pieces[0].range()], &consumed)?;
        for (slot, piece) in pieces.iter().enumerate() {
            gpu.wait_for(&staged.queue.mark()?)?;
            self.load_scalars(scratch, &staged.device, 0, piece.n)?;
            consumed = gpu.mark()?;
            self.reduce_chunk(scratch, piece.first, piece.n, &mut sums, slot)?;
            if let Some(next) = pieces.get(slot + 1) {
                staged.upload::<C>(&sets[next.set][next.range()], &consumed)?;
            }
        }
        let mut totals = vec![Projective::<C>::zero(); sets.len()];
        for (piece, sum) in pieces.iter().zip(sums.to_host()?) {
            totals[piece.set] += sum.to_arkworks();
        }
        scratch.staged = Some(staged);
        Ok(totals)
    }

    /// Copies scalars to the device for [`MsmContext::msm_device`] (to time the MSM without
    /// the transfer, or to reuse scalars).
    ///
    /// # Errors
    ///
    /// [`Error::Gpu`] when the GPU memory or the copy fails.
    pub fn upload_scalars(
        &self,
        scalars: &[C::ScalarField],
    ) -> Result<DeviceScalars<C::ScalarField>, Error> {
        let mut limbs = vec![0; 4 * scalars.len()];
        fill_limbs::<C>(&mut limbs, scalars);
        Ok(DeviceScalars {
            limbs: self.cuda.gpu.upload(&limbs)?,
            field: PhantomData,
        })
    }

    /// `sum_i scalars[i] * bases[i]` for scalars already on the device.
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] when the scalars and the bases differ in length,
    /// [`Error::Gpu`] when the GPU fails.
    pub fn msm_device(
        &self,
        scalars: &DeviceScalars<C::ScalarField>,
    ) -> Result<Projective<C>, Error> {
        check_lengths(self.points, scalars.len())?;
        let mut guard = self.scratch()?;
        let Some(scratch) = guard.as_mut() else {
            unreachable!("MsmContext::scratch allocates the scratch")
        };
        let chunks: Vec<usize> = (0..self.points).step_by(scratch.chunk).collect();
        let mut sums = self.cuda.gpu.alloc_zeroed::<XyzzOf<C>>(chunks.len())?;
        for (slot, &first) in chunks.iter().enumerate() {
            let n = scratch.chunk.min(self.points - first);
            self.load_scalars(scratch, &scalars.limbs, first, n)?;
            self.reduce_chunk(scratch, first, n, &mut sums, slot)?;
        }
        Ok(sums.to_host()?.iter().map(|sum| sum.to_arkworks()).sum())
    }

    /// The scratch memory, allocated at the first MSM.
    fn scratch(&self) -> Result<std::sync::MutexGuard<'_, Option<Scratch<C>>>, Error> {
        let mut guard = self.scratch.lock().unwrap_or_else(PoisonError::into_inner);
        if guard.is_none() {
            *guard = Some(Scratch::new(self)?);
        }
        Ok(guard)
    }

    /// Queues the conversion of `n` scalars of `scalars` (on the device, four Montgomery-form
    /// limbs each), from scalar `offset` on, into the scratch's plain integers: the only read
    /// of `scalars` for a chunk.
    fn load_scalars(
        &self,
        s: &mut Scratch<C>,
        scalars: &DeviceBuffer<u64>,
        offset: usize,
        n: usize,
    ) -> Result<(), Error> {
        let (offset64, n64) = (offset as u64, n as u64);
        // SAFETY: the arguments match msm_scalars_canonical in msm.cu in number, order and
        // layout; `scalars` holds at least offset + n scalars (the callers' chunks) and
        // `s.scalars` holds `chunk >= n`.
        unsafe {
            self.cuda
                .gpu
                .launch(&self.kernels.scalars_canonical, Grid::cover(n64, THREADS))
                .buffer(scalars)
                .value(&offset64)
                .value(&n64)
                .buffer_mut(&mut s.scalars)
                .run()?;
        }
        Ok(())
    }

    /// Queues the sum over bases `first .. first + n` with the scalars that
    /// [`MsmContext::load_scalars`] put in the scratch, into `sums[slot]`.
    fn reduce_chunk(
        &self,
        s: &mut Scratch<C>,
        first: usize,
        n: usize,
        sums: &mut DeviceBuffer<XyzzOf<C>>,
        slot: usize,
    ) -> Result<(), Error> {
        let gpu = &self.cuda.gpu;
        let kernels = &self.kernels;
        let (first64, n64) = (first as u64, n as u64);
        let buckets_per_window = 1u32 << (self.window_bits - 1);
        let layout = DigitLayout {
            n: n64,
            first: first64,
            window_bits: self.window_bits,
            windows: self.windows,
            key_stride: if self.shifted_bases {
                0
            } else {
                buckets_per_window
            },
            point_stride: if self.shifted_bases {
                self.points as u32
            } else {
                0
            },
        };
        // At most this many digits, the first pass's threads each taking `per_segment`.
        let entries = n64 * u64::from(self.windows);
        let per_segment = chunk_segment(entries, s.wave, s.segments[0]) as u32;
        s.counts.zero()?;
        s.buckets.zero()?;
        s.pieces.zero()?;
        // SAFETY: for every launch below, the arguments match the kernel's parameters in
        // msm.cu in number, order and layout. Bounds: first + n <= points; `s.scalars` holds
        // `chunk >= n` scalars; digit keys are below the length of buckets (bucket sets times
        // 2^(c - 1)), their fine partitions below `s.fine` (the length of counts and cursors; the sort's
        // blocks get a counter of dynamic shared memory for each of a partition's keys) and
        // their coarse ones below the length of coarse_cursors; at most n * windows <=
        // `s.entries` digits are partitioned and sorted; pass p writes at most
        // 2 * `s.segments[p]` partials, which fit its output buffer (sized in Scratch::new);
        // the group sums hold (W, P) for windows * groups nodes, and each tree level writes
        // half of what it reads.
        let current = unsafe {
            let count = &kernels.count_partitions;
            let tile_scalars = spread_tile(n64, COUNT_TILE);
            let blocks = n64.div_ceil(tile_scalars) as u32;
            gpu.launch(
                count,
                shared_grid(count, blocks, COUNT_THREADS, 4 * s.fine)?,
            )
            .buffer(&s.scalars)
            .value(&layout)
            .value(&(tile_scalars as u32))
            .value(&s.fine_shift)
            .value(&s.fine)
            .buffer_mut(&mut s.counts)
            .run()?;
            let tiles = s.tile_sums.len() as u32;
            let scan = Grid {
                blocks: tiles,
                threads: SCAN_THREADS,
                shared_bytes: 0,
            };
            gpu.launch(&kernels.scan_tiles, scan)
                .buffer(&s.counts)
                .value(&s.fine)
                .buffer_mut(&mut s.tile_sums)
                .run()?;
            gpu.launch(&kernels.scan_tile_sums, Grid { blocks: 1, ..scan })
                .buffer_mut(&mut s.tile_sums)
                .value(&tiles)
                .buffer_mut(&mut s.counters)
                .run()?;
            gpu.launch(&kernels.scan_apply, scan)
                .buffer(&s.counts)
                .value(&s.fine)
                .buffer(&s.tile_sums)
                .buffer_mut(&mut s.cursors)
                .buffer_mut(&mut s.coarse_cursors)
                .run()?;
            let windows = u64::from(self.windows);
            let tile_scalars = spread_tile(n64, (TILE_ENTRIES / windows).max(1));
            let coarse = s.fine.div_ceil(FINE_PER_COARSE as u32);
            let by_coarse = &kernels.partition_coarse;
            let blocks = n64.div_ceil(tile_scalars) as u32;
            let tile_bytes = (tile_scalars * windows * ENTRY_BYTES) as u32;
            gpu.launch(
                by_coarse,
                shared_grid(by_coarse, blocks, TILE_THREADS, tile_bytes)?,
            )
            .buffer(&s.scalars)
            .value(&layout)
            .value(&(tile_scalars as u32))
            .value(&s.fine_shift)
            .value(&coarse)
            .buffer_mut(&mut s.coarse_cursors)
            .buffer_mut(&mut s.sorted)
            .run()?;
            let by_fine = &kernels.partition_fine;
            let tile_entries = spread_tile(n64 * windows, FINE_TILE);
            let blocks = (n64 * windows).div_ceil(tile_entries) as u32;
            let tile_bytes = (tile_entries * ENTRY_BYTES) as u32;
            gpu.launch(
                by_fine,
                shared_grid(by_fine, blocks, FINE_THREADS, tile_bytes)?,
            )
            .buffer(&s.sorted)
            .buffer(&s.counters)
            .value(&(tile_entries as u32))
            .value(&s.fine_shift)
            .buffer_mut(&mut s.cursors)
            .buffer_mut(&mut s.partitioned)
            .run()?;
            let sort = &kernels.sort_partitions;
            let sort_bytes = (SORT_CAP * ENTRY_BYTES + (8 << s.fine_shift)) as u32;
            gpu.launch(sort, shared_grid(sort, s.fine, SORT_THREADS, sort_bytes)?)
                .buffer(&s.partitioned)
                .buffer(&s.cursors)
                .value(&s.fine_shift)
                .buffer_mut(&mut s.sorted)
                .run()?;
            gpu.launch(
                &kernels.accumulate_affine,
                Grid::cover(entries.div_ceil(u64::from(per_segment)), THREADS),
            )
            .buffer(&self.bases)
            .buffer(&s.sorted)
            .buffer_mut(&mut s.counters)
            .buffer_mut(&mut s.pieces)
            .value(&per_segment)
            .buffer_mut(&mut s.buckets)
            .buffer_mut(&mut s.partial_keys[0])
            .buffer_mut(&mut s.partial_points[0])
            .run()?;
            for pass in 1..s.segments.len() {
                let pass32 = pass as u32;
                let (input, output) =
                    partials_for_pass(&mut s.partial_keys, &mut s.partial_points, pass);
                // A quad of lanes per segment (`PartialEntries` in msm.cu).
                gpu.launch(
                    &kernels.accumulate_xyzz,
                    Grid::cover(4 * s.segments[pass], THREADS),
                )
                .buffer(input.1)
                .buffer(input.0)
                .buffer_mut(&mut s.counters)
                .buffer_mut(&mut s.pieces)
                .value(&pass32)
                .value(&LATER_PASS_SEGMENT)
                .buffer_mut(&mut s.buckets)
                .buffer_mut(output.0)
                .buffer_mut(output.1)
                .run()?;
            }
            let sets = s.bucket_sets;
            gpu.launch(
                &kernels.bucket_reduce,
                Grid::cover(u64::from(sets) * u64::from(s.groups), THREADS),
            )
            .buffer(&s.buckets)
            .value(&buckets_per_window)
            .value(&sets)
            .value(&s.groups)
            .buffer_mut(&mut s.group_sums[0])
            .run()?;
            let mut groups = s.groups;
            let mut current = 0;
            while groups > 1 {
                let with_p = u32::from(groups > 2);
                let (input, output) = s.group_sums.split_at_mut(1);
                let (input, output) = if current == 0 {
                    (&input[0], &mut output[0])
                } else {
                    (&output[0], &mut input[0])
                };
                gpu.launch(
                    &kernels.sum_groups,
                    Grid::cover(
                        4 * u64::from(1 + with_p)
                            * u64::from(sets * (groups / 2)).next_multiple_of(8),
                        THREADS,
                    ),
                )
                .buffer(input)
                .value(&sets)
                .value(&groups)
                .value(&with_p)
                .buffer_mut(output)
                .run()?;
                groups /= 2;
                current = 1 - current;
            }
            if !self.shifted_bases {
                gpu.launch(&kernels.combine_windows, Grid::cover(4, 32))
                    .buffer(&s.group_sums[current])
                    .value(&self.windows)
                    .value(&self.window_bits)
                    .buffer_mut(&mut s.result)
                    .run()?;
            }
            current
        };
        let sum = if self.shifted_bases {
            &s.group_sums[current]
        } else {
            &s.result
        };
        sums.copy_from_device(slot, sum, 0, 1)?;
        Ok(())
    }
}

/// A chunk of one scalar set that [`MsmContext::msm_batch`] uploads and reduces at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    /// The set's index in the batch.
    set: usize,
    /// The first base (and scalar) of the chunk.
    first: usize,
    /// The number of scalars.
    n: usize,
}

impl Piece {
    /// The chunk's scalars within the set.
    fn range(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.n
    }
}

/// The pieces of a batch of `sets` sets over `points` bases, with chunks of at most `chunk`
/// scalars: each set in chunks, in order, and with `split_first`, the batch's first chunk in a
/// quarter and the rest when it has at least `LEAD_SPLIT_MIN` scalars.
///
/// Only the first piece's upload is waited for (the others are copied while the GPU reduces
/// the piece before them), at the cost of one more bucket reduction. On an H200, a quarter
/// gave the most of that in G1 (whose MSM from uploaded scalars takes 1.25-1.5 times the
/// resident one); G2's additions cost so much more that there the upload is 7-15% of an MSM
/// and the extra reduction costs about what the split saves.
fn upload_pieces(points: usize, chunk: usize, sets: usize, split_first: bool) -> Vec<Piece> {
    let mut pieces = Vec::new();
    for set in 0..sets {
        for first in (0..points).step_by(chunk.max(1)) {
            let n = chunk.min(points - first);
            if split_first && pieces.is_empty() && n >= LEAD_SPLIT_MIN {
                let lead = n / 4;
                pieces.push(Piece {
                    set,
                    first,
                    n: lead,
                });
                pieces.push(Piece {
                    set,
                    first: first + lead,
                    n: n - lead,
                });
            } else {
                pieces.push(Piece { set, first, n });
            }
        }
    }
    pieces
}

/// What [`MsmContext::msm_batch`] uploads scalars through, kept between calls: page-locked
/// memory the host writes a piece's limbs into, the device buffer they are copied to, and the
/// queue that copies them while the GPU works on the piece before.
#[derive(Debug)]
struct Staged {
    /// Declared (so dropped) before `device`: its drop waits for the last copy, which writes
    /// `device`, so that the device buffer is never freed under a copy (after an error, say).
    pinned: PinnedBuffer<u64>,
    device: DeviceBuffer<u64>,
    queue: CopyQueue,
}

impl Staged {
    /// Room for `chunk` scalars.
    fn new(gpu: &Gpu, chunk: usize) -> Result<Self, Error> {
        Ok(Self {
            pinned: gpu.alloc_pinned(4 * chunk)?,
            device: gpu.alloc_zeroed(4 * chunk)?,
            queue: gpu.copy_queue()?,
        })
    }

    /// Writes the limbs of `scalars` into the page-locked memory (once its last copy is done)
    /// and queues their copy to the device buffer after `consumed`, the mark after which no
    /// kernel reads the device buffer any more.
    fn upload<C: MsmCurve>(
        &mut self,
        scalars: &[C::ScalarField],
        consumed: &Mark,
    ) -> Result<(), Error> {
        let len = 4 * scalars.len();
        fill_limbs::<C>(&mut self.pinned.as_mut_slice()?[..len], scalars);
        self.queue.wait_for(consumed)?;
        self.queue
            .upload(&mut self.device, 0, &mut self.pinned, len)?;
        Ok(())
    }
}

/// Writes each scalar's Montgomery-form limbs (arkworks' `Fr` representation) into `limbs`.
fn fill_limbs<C: MsmCurve>(limbs: &mut [u64], scalars: &[C::ScalarField]) {
    limbs
        .par_chunks_mut(4)
        .zip(scalars.par_iter())
        .for_each(|(out, scalar)| out.copy_from_slice(&C::scalar_montgomery_limbs(scalar)));
}

/// Computes `2^(c j) P_i` for every window `j >= 1` into the copies after the `n` bases;
/// `shape` is `(n, c, windows)`. Window by window, in slices of at most `PRECOMPUTE_SLICE`
/// points, each thread converting a batch of up to `PRECOMPUTE_BATCH` points to affine form
/// with one inversion (see `msm_precompute_window`).
fn precompute_shifted<L: Coordinate>(
    gpu: &Gpu,
    kernels: &Kernels,
    bases: &mut DeviceBuffer<DeviceAffine<L>>,
    (n, window_bits, windows): (usize, u32, u32),
) -> Result<(), Error> {
    // Each slot holds a point's Z and the product of its batch's Zs before it.
    let mut scratch = gpu.alloc_zeroed::<DeviceAffine<L>>(n.min(PRECOMPUTE_SLICE))?;
    let n = n as u64;
    for window in 1..windows {
        for first in (0..n).step_by(PRECOMPUTE_SLICE) {
            let count = (n - first).min(PRECOMPUTE_SLICE as u64) as u32;
            let batch = (count >> PRECOMPUTE_THREADS_LOG).clamp(1, PRECOMPUTE_BATCH);
            let grid = Grid::cover(count.div_ceil(batch).into(), THREADS);
            // SAFETY: arguments match `msm_precompute_window(Affine*, u64, u32, u32, u64, u32,
            // u32, Field*)`; the threads read points (window - 1) n + first + i and write
            // window n + first + i for i < count <= n - first, inside `bases` (windows n
            // points), and `scratch`'s first 2 count field elements (count slots of two).
            unsafe {
                gpu.launch(&kernels.precompute_window, grid)
                    .buffer_mut(bases)
                    .value(&n)
                    .value(&window)
                    .value(&window_bits)
                    .value(&first)
                    .value(&count)
                    .value(&batch)
                    .buffer_mut(&mut scratch)
                    .run()?;
            }
        }
    }
    gpu.synchronize()?;
    Ok(())
}

/// Device scratch memory for the MSMs of one context, sized for `chunk` scalars at a time.
struct Scratch<C: MsmCurve> {
    /// Scalars per chunk.
    chunk: usize,
    /// Bucket sets: the windows, or one with shifted bases.
    bucket_sets: u32,
    /// Groups of buckets per set in the bucket reduction.
    groups: u32,
    /// Threads of the first reduction pass that run at once.
    wave: u64,
    /// The most segments (threads) of each reduction pass.
    segments: Vec<u64>,
    scalars: DeviceBuffer<u64>,
    /// Digits per fine partition.
    counts: DeviceBuffer<u32>,
    /// Where each fine partition's next digit goes, then where it ends.
    cursors: DeviceBuffer<u32>,
    /// Keys of a fine partition: `2^fine_shift`.
    fine_shift: u32,
    /// Fine partitions: `keys` over `2^fine_shift`, at most `MAX_FINE`.
    fine: u32,
    /// Where each coarse partition's next run of digits goes.
    coarse_cursors: DeviceBuffer<u32>,
    /// Sums of tiles of `SCAN_TILE` counts, then their offsets.
    tile_sums: DeviceBuffer<u32>,
    /// Entries of each reduction pass (`counters[p]`), written by the device.
    counters: DeviceBuffer<u32>,
    /// Whether reduction pass p left pieces of runs for the next (`pieces[p]`, nonzero if so).
    pieces: DeviceBuffer<u32>,
    /// The nonzero digits as (key, point reference) pairs: in `sorted` by coarse partition, then
    /// in `partitioned` by fine partition, then in `sorted` by key.
    partitioned: DeviceBuffer<[u32; 2]>,
    sorted: DeviceBuffer<[u32; 2]>,
    /// Partial sums of the reduction passes: pass p writes set p % 2.
    partial_keys: [DeviceBuffer<u32>; 2],
    partial_points: [DeviceBuffer<XyzzOf<C>>; 2],
    buckets: DeviceBuffer<XyzzOf<C>>,
    group_sums: [DeviceBuffer<XyzzOf<C>>; 2],
    result: DeviceBuffer<XyzzOf<C>>,
    /// What [`MsmContext::msm_batch`] (and `msm`) upload scalars through: the page-locked
    /// buffer, its device buffer and the copy queue (made at the first call).
    staged: Option<Staged>,
}

/// A pass's input (keys, points) and output (keys, points) partial buffers.
type PassBuffers<'a, P> = (
    (&'a DeviceBuffer<u32>, &'a DeviceBuffer<P>),
    (&'a mut DeviceBuffer<u32>, &'a mut DeviceBuffer<P>),
);

impl<C: MsmCurve> Scratch<C> {
    fn new(context: &MsmContext<C>) -> Result<Self, Error> {
        let gpu = &context.cuda.gpu;
        let windows = u64::from(context.windows);
        let bucket_sets = if context.shifted_bases {
            1
        } else {
            context.windows
        };
        let buckets_per_set = 1u64 << (context.window_bits - 1);
        let keys = u64::from(bucket_sets) * buckets_per_set;
        // A power of two, so that groups split the buckets evenly and pair up in the tree.
        let groups =
            prev_power_of_two(REDUCE_THREADS / u64::from(bucket_sets)).clamp(1, buckets_per_set);
        // Memory that does not grow with the chunk, then per scalar of a chunk.
        let xyzz = size_of::<XyzzOf<C>>() as u64;
        // Two points per group, then two per pair of groups.
        let fixed = keys * xyzz + 8 * MAX_FINE + 3 * u64::from(bucket_sets) * groups * xyzz;
        // Scalars, keys and references partitioned and sorted, and the first pass's partial
        // sums.
        let per_sm = context
            .kernels
            .accumulate_affine
            .blocks_per_sm(THREADS, 0)?;
        let wave = u64::from(gpu.info().sm_count) * u64::from(per_sm) * u64::from(THREADS);
        let first_segment_for = |chunk: u64| first_segment(chunk * windows, wave);
        // The first pass's partials, then the second's (a quarter as many).
        let per_scalar = |first_segment: u64| {
            let partials = 2 * windows * (4 + xyzz) / first_segment + 1;
            32 + 16 * windows + partials + partials / 4 + 1
        };
        let free = gpu.free_memory()?.saturating_sub(RESERVED_BYTES) as u64;
        let room = free.saturating_sub(fixed);
        let mut chunk = (context.points as u64)
            .min(MAX_ENTRIES / windows - 1)
            .min(context.scratch_points.unwrap_or(usize::MAX) as u64);
        // A smaller chunk gets shorter first-pass segments and so more partials per scalar:
        // shrink until the chunk's own needs fit.
        while chunk > 1 && chunk * per_scalar(first_segment_for(chunk)) > room {
            chunk = (room / per_scalar(first_segment_for(chunk))).clamp(1, chunk - 1);
        }
        let entries = chunk * windows;
        let mut segments = vec![entries.div_ceil(first_segment_for(chunk))];
        while let Some(&last) = segments.last().filter(|&&s| s > 1) {
            segments.push((2 * last).div_ceil(u64::from(LATER_PASS_SEGMENT)));
        }
        let partials = |pass: usize| segments.get(pass).map_or(1, |s| 2 * s) as usize;
        let u32s = |len: u64| gpu.alloc_zeroed::<u32>(len as usize);
        let points = |len: u64| gpu.alloc_zeroed::<XyzzOf<C>>(len as usize);
        let fine_shift = fine_partition_shift(keys, entries);
        let fine = keys.div_ceil(1u64 << fine_shift);
        Ok(Self {
            chunk: chunk as usize,
            fine_shift,
            fine: fine as u32,
            coarse_cursors: u32s(fine.div_ceil(FINE_PER_COARSE))?,
            bucket_sets,
            groups: groups as u32,
            wave,
            scalars: gpu.alloc_zeroed(4 * chunk as usize)?,
            counts: u32s(fine)?,
            cursors: u32s(fine)?,
            tile_sums: u32s(fine.div_ceil(SCAN_TILE))?,
            counters: u32s(segments.len() as u64 + 1)?,
            pieces: u32s(segments.len() as u64)?,
            partitioned: gpu.alloc_zeroed(entries as usize)?,
            sorted: gpu.alloc_zeroed(entries as usize)?,
            partial_keys: [u32s(partials(0) as u64)?, u32s(partials(1) as u64)?],
            partial_points: [points(partials(0) as u64)?, points(partials(1) as u64)?],
            buckets: points(keys)?,
            group_sums: [
                points(2 * u64::from(bucket_sets) * groups)?,
                points(u64::from(bucket_sets) * groups)?,
            ],
            result: points(1)?,
            staged: None,
            segments,
        })
    }
}

/// `blocks` blocks of `threads` threads with `shared_bytes` of dynamic shared memory for
/// `kernel`, which is allowed that much (the sort's kernels take more than the default 48 KiB).
fn shared_grid(
    kernel: &Kernel,
    blocks: u32,
    threads: u32,
    shared_bytes: u32,
) -> Result<Grid, Error> {
    kernel.allow_shared_bytes(shared_bytes)?;
    Ok(Grid {
        blocks,
        threads,
        shared_bytes,
    })
}

/// Entries per thread of the first reduction pass over `entries` digits, when `wave` of its
/// threads run at once: about `entries >> FIRST_PASS_THREADS_LOG`, within [2,
/// `FIRST_SEGMENT_MAX`], then shortened so that the threads fill whole waves. Every thread takes
/// as many entries, so a last wave part full takes about as long as a full one (on an H100,
/// BLS12-381 G1 resident: 2^22 scalars 24.2 -> 23.6 ms, 2^20 7.39 -> 7.32 ms).
fn first_segment(entries: u64, wave: u64) -> u64 {
    let wave = wave.max(1);
    let segment = (entries >> FIRST_PASS_THREADS_LOG).clamp(2, FIRST_SEGMENT_MAX);
    let waves = entries.div_ceil(segment).div_ceil(wave).max(1);
    entries.div_ceil(waves * wave).clamp(2, segment)
}

/// Entries per thread of the first reduction pass over a chunk of at most `entries` digits, when
/// `wave` of its threads run at once and its partial sums have room for `max_segments`
/// segments: `first_segment` of the chunk's own entries (so that a chunk shorter than the
/// scratch's still fills the GPU), or more where that would give too many segments. For a
/// chunk of the scratch's size, `first_segment` of its entries, which sized `max_segments`.
fn chunk_segment(entries: u64, wave: u64, max_segments: u64) -> u64 {
    first_segment(entries, wave).max(entries.div_ceil(max_segments.max(1)))
}

/// A pass's tile for `items` (scalars or entries) when its largest is `tile`: small enough that
/// the items spread over `SORT_SPREAD` blocks, but at least one item and at most `tile`.
fn spread_tile(items: u64, tile: u64) -> u64 {
    items.div_ceil(SORT_SPREAD).clamp(1, tile)
}

/// Keys per fine partition of the sort (`2^shift`) for `keys` bucket keys and at most `entries`
/// digits: the fewest that make at most one partition per `FINE_ENTRIES` digits (but allow
/// `SORT_SPREAD`, so that a small chunk still spreads over that many of the last pass's
/// blocks), at most `MAX_FINE` partitions and at most `2^MAX_FINE_SHIFT` keys to one. (Beyond
/// `MAX_FINE` times `SORT_CAP` digits, 2^29, as 2^25.4 scalars in 12 windows give, even
/// partitions overflow the last pass's shared memory and take its slower path.)
fn fine_partition_shift(keys: u64, entries: u64) -> u32 {
    let partitions = (entries / FINE_ENTRIES).clamp(SORT_SPREAD, MAX_FINE);
    let mut shift = 0;
    while shift < MAX_FINE_SHIFT && keys.div_ceil(1 << shift) > partitions {
        shift += 1;
    }
    shift
}

/// The largest power of two at most `x` (1 for 0).
fn prev_power_of_two(x: u64) -> u64 {
    if x == 0 { 1 } else { 1 << x.ilog2() }
}

/// Pass `pass >= 1` reads the partials pass `pass - 1` wrote and writes the other set.
fn partials_for_pass<'a, P>(
    keys: &'a mut [DeviceBuffer<u32>; 2],
    points: &'a mut [DeviceBuffer<P>; 2],
    pass: usize,
) -> PassBuffers<'a, P> {
    let [keys0, keys1] = keys;
    let [points0, points1] = points;
    if pass % 2 == 1 {
        ((keys0, points0), (keys1, points1))
    } else {
        ((keys1, points1), (keys0, points0))
    }
}

/// A backend chosen at run time: the GPU when one is usable, the CPU otherwise.
#[derive(Debug, Clone)]
pub enum Backend {
    /// The CPU reference.
    Cpu(crate::Cpu),
    /// The CUDA backend.
    Cuda(Cuda),
}

impl Backend {
    /// The CUDA backend if a GPU, its driver and NVRTC are present; otherwise the CPU, saying
    /// why on standard error.
    pub fn best() -> Self {
        match Cuda::new() {
            Ok(cuda) => Backend::Cuda(cuda),
            Err(why) => {
                eprintln!("msm: using the CPU backend: {why}");
                Backend::Cpu(crate::Cpu::new())
            }
        }
    }

    /// A human-readable name: the chosen backend's (as [`MsmBackend::name`] in every group;
    /// this one needs no group named).
    pub fn name(&self) -> String {
        self.as_dyn::<ark_bls12_381::g1::Config>().name()
    }

    fn as_dyn<C: MsmCurve>(&self) -> &dyn MsmBackend<C> {
        match self {
            Backend::Cpu(cpu) => cpu,
            Backend::Cuda(cuda) => cuda,
        }
    }
}

impl<C: MsmCurve> MsmBackend<C> for Backend {
    fn name(&self) -> String {
        Backend::name(self)
    }

    fn msm(&self, bases: &[Affine<C>], scalars: &[C::ScalarField]) -> Result<Projective<C>, Error> {
        self.as_dyn().msm(bases, scalars)
    }

    fn msm_batch(
        &self,
        bases: &[Affine<C>],
        scalar_sets: &[&[C::ScalarField]],
    ) -> Result<Vec<Projective<C>>, Error> {
        self.as_dyn().msm_batch(bases, scalar_sets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first pass's threads fill whole waves, in no more waves than the segments before
    /// the shortening took, and no segment grows.
    #[test]
    fn first_segments_fill_whole_waves() {
        for wave in [0, 1, 128, 132 * 4 * 128, 114 * 6 * 128, 1 << 20] {
            assert_eq!(first_segment(0, wave), 2);
            for log in 0..=31u32 {
                for entries in [
                    (1u64 << log) * 12,
                    (1u64 << log) * 13 + 7,
                    (1u64 << log) + 1,
                ] {
                    let before = (entries >> FIRST_PASS_THREADS_LOG).clamp(2, FIRST_SEGMENT_MAX);
                    let segment = first_segment(entries, wave);
                    assert!(
                        (2..=before).contains(&segment),
                        "entries {entries} wave {wave}"
                    );
                    let waves = entries.div_ceil(before).div_ceil(wave.max(1));
                    assert!(
                        entries.div_ceil(segment) <= waves * wave.max(1),
                        "entries {entries} wave {wave}"
                    );
                    if segment > 2 && segment < before {
                        // Any shorter segment would need another wave.
                        assert!(entries.div_ceil(segment - 1) > waves * wave.max(1));
                    }
                }
            }
        }
    }

    /// A chunk shorter than the scratch's gets a first-pass segment of its own whose segments
    /// fit the scratch's partial sums; one of the scratch's size gets the scratch's.
    #[test]
    fn chunk_segments_fit_the_scratch() {
        let windows = 12u64;
        for wave in [1, 132 * 4 * 128, 1 << 20] {
            for log in 0..=27u32 {
                for chunk in [1u64 << log, (1u64 << log) * 3 + 1] {
                    let full = first_segment(chunk * windows, wave);
                    let max_segments = (chunk * windows).div_ceil(full);
                    assert_eq!(chunk_segment(chunk * windows, wave, max_segments), full);
                    for n in [1, 2, chunk / 8, chunk / 4 + 1, chunk / 2, chunk - 1] {
                        let entries = n.max(1) * windows;
                        let segment = chunk_segment(entries, wave, max_segments);
                        assert!((2..=FIRST_SEGMENT_MAX.max(full)).contains(&segment));
                        assert!(
                            entries.div_ceil(segment) <= max_segments,
                            "chunk {chunk}, n {n}, wave {wave}"
                        );
                    }
                }
            }
        }
    }

    /// The pieces cover every scalar of every set once, in order, within the chunk size;
    /// only the batch's first chunk is split, only when large and asked.
    #[test]
    fn upload_pieces_cover_each_set_once() {
        let big = LEAD_SPLIT_MIN;
        for ((points, chunk, sets), split_first) in [
            (1, 1, 1),
            (5, 2, 3),
            (big - 1, big, 2),
            (big, big, 1),
            (big + 3, big, 2),
            (4 * big + 1, 3 * big, 3),
            (7, 100, 0),
        ]
        .into_iter()
        .flat_map(|shape| [(shape, true), (shape, false)])
        {
            let pieces = upload_pieces(points, chunk, sets, split_first);
            let split = split_first && points.min(chunk) >= big && sets > 0;
            let chunks_per_set = points.div_ceil(chunk);
            assert_eq!(pieces.len(), sets * chunks_per_set + usize::from(split));
            for set in 0..sets {
                let mut next = 0;
                for piece in pieces.iter().filter(|p| p.set == set) {
                    assert_eq!(piece.first, next);
                    assert!((1..=chunk).contains(&piece.n));
                    next += piece.n;
                }
                assert_eq!(next, points);
            }
            if split {
                assert_eq!(pieces[0].n, points.min(chunk) / 4);
                assert_eq!(pieces[0].n + pieces[1].n, points.min(chunk));
            }
        }
    }

    /// Every key count the window widths allow, shifted or not, at chunk sizes from one scalar
    /// to the largest: at most `MAX_FINE` fine partitions, whose key counters fit the shared
    /// memory the sort's kernel is allowed, and on average at most three quarters of `SORT_CAP`
    /// digits each where no limit binds (nor the key count).
    #[test]
    fn fine_partitions_fit_the_sort() {
        for c in 1..=MAX_GPU_WINDOW_BITS {
            let windows = u64::from(window_count(c));
            for bucket_sets in [1, windows] {
                let keys = bucket_sets << (c - 1);
                for log in 0..=31 {
                    let entries = ((1u64 << log) * windows).min(MAX_ENTRIES);
                    let shift = fine_partition_shift(keys, entries);
                    let fine = keys.div_ceil(1 << shift);
                    assert!(
                        shift <= MAX_FINE_SHIFT && fine <= MAX_FINE,
                        "c {c} keys {keys}"
                    );
                    if entries <= MAX_FINE * FINE_ENTRIES && shift > 0 && shift < MAX_FINE_SHIFT {
                        assert!(
                            entries / fine <= 3 * SORT_CAP / 4,
                            "c {c} keys {keys} entries {entries}"
                        );
                    }
                }
            }
        }
    }
}
