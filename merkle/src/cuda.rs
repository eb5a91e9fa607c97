//! The CUDA backend: the kernels of `merkle/cuda/`, one module per hasher, run through
//! `kernels`.
//!
//! A tree of `n` leaves lives on the device as its `2n`-digest node array, and each level is
//! one launch; each hasher's [`DeviceHasher`] names its module, kernels, launch shapes and
//! constants. The Rescue family (Rp64_256, Rpo256, Rpx256, RpJive64_256: `rescue_lanes.cuh`)
//! has compute-bound, long permutations (about 110k instructions for Rp64_256), so how a level
//! is spread matters more than memory traffic:
//!
//! - levels of at least [`QUAD_MIN_MERGES`] merges (over all trees of a batch) run a quad of
//!   lanes per merge, three state elements (two for RpJive64_256's 8) and as many independent
//!   S-box chains per lane: few registers, so many warps per SM keep the pipelines busy (one
//!   thread per merge, with all twelve chains, needed 142 registers and was 1.2-1.3x slower
//!   for Rp64_256);
//! - smaller levels, where that would leave most of the GPU idle while a few lanes walk the
//!   whole permutation, run one state element per lane on half warps (16 lanes per merge; 8
//!   for RpJive64_256).
//!
//! Poseidon2 runs one thread per hash with the state in registers: its 22 internal rounds
//! raise one element and multiply the other eleven by a diagonal, so lanes sharing a state
//! would each issue that S-box and exchange the state's sum every round (the crate README's
//! performance notes count it). Only its levels too small to fill the GPU, where a
//! permutation's latency is what counts, share states: quads of lanes, then from
//! [`POSEIDON2_TOP_MERGES`] merges one state element per lane on half warps, every level up to
//! the roots in one launch.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use kernels::source::Module;
use kernels::{DeviceBuffer, DeviceRepr, Gpu, Grid, Kernel, SharedStaging, ValidAsZeroBits};

use crate::digest::Digest;
use crate::error::Error;
use crate::field::Felt;
use crate::hasher::Hasher;
use crate::host::{node_arrays, zero_digests};
use crate::rescue::Rp64_256;
use crate::tree::MerkleTree;
use crate::{MerkleBackend, check_batch, check_rows, leaves_per_tree, source, tree_rows};

/// Levels with at least this many merges run a quad of lanes per merge (`merkle_merge_level`);
/// smaller ones 16 lanes per merge. Measured on an H100 per level: 2^12 merges take 61 µs on
/// quads (their latency floor) and 41 µs on half warps, 2^13 merges 61 µs against 74 µs.
const QUAD_MIN_MERGES: u64 = 1 << 13;

/// Lanes per merge of `merkle_merge_level` (and per row of `merkle_hash_rows`), and their
/// block size (256 measured against 128 on an H100: 2^20 leaves 8.14 -> 7.92 ms).
const QUAD: LaunchShape = LaunchShape {
    lanes: 4,
    threads: 256,
};

/// Lanes per merge of the split kernels of a 12-element state (`split_lanes` in
/// rescue_lanes.cuh, `SplitState` in poseidon2.cu) and their block size. Small blocks spread a
/// level near the root over the SMs, a warp to a scheduler: with 256 threads the merge of the
/// top level ran beside seven warps of padding on one SM. Measured on an H200 (trees already on
/// the GPU, medians of 300 builds, 50 at 2^20, docs/journal/merkle.md), 64 threads against
/// 256: Rp64_256 2^16 leaves 664-672 -> 615-618 µs, 2^20 5.79-5.80 -> 5.73-5.75 ms (32
/// threads: within 1% of 64).
const SPLIT: LaunchShape = LaunchShape {
    lanes: 16,
    threads: 64,
};

/// The same for RpJive64_256's 8-element state: 8 lanes per merge.
const SPLIT8: LaunchShape = LaunchShape {
    lanes: 8,
    threads: 64,
};

/// One thread per hash, the shape of the kernels of `sponge.cuh` (Poseidon2). Blocks of 128
/// threads measured on an H200 against 64, 256 and 512 (docs/journal/merkle.md): 2^20 leaves
/// 1.173 ms against 1.175, 1.198 and 1.269 ms; 2^24 within 0.8% of each other.
const ONE_PER_THREAD: LaunchShape = LaunchShape {
    lanes: 1,
    threads: 128,
};

/// Poseidon2's levels of fewer merges than this run on quads of lanes (`merge_level_quad`),
/// where one thread's whole permutation is what the level waits for. One level on an H200
/// (docs/journal/merkle.md), one thread per hash against quads: 2^15 merges 34.7 against
/// 52.7 µs, 2^14 24.2 against 28.5 µs, 2^13 24.2 against 16.4 µs, 2^12 24.1 against 11.7 µs.
const POSEIDON2_QUADS_BELOW: u64 = 1 << 14;

/// Lanes per merge of `merge_level_quad` (Poseidon2) and their block size (128 threads within
/// 0.5% of 64 on an H200).
const POSEIDON2_QUAD: LaunchShape = LaunchShape {
    lanes: 4,
    threads: 64,
};

/// Poseidon2's levels of at most this many merges run in one launch on half warps
/// (`merge_levels_split`), each level waiting for one permutation's latency. On an H200 its
/// bound against 2^11 and 2^12 (the levels above on quads): trees of 2^12 leaves 101 against
/// 120 µs, 2^20 leaves 1,042 against 1,061 µs.
const POSEIDON2_TOP_MERGES: u64 = 1 << 10;

/// The Rescue family's levels of at most this many merges run on half warps in one launch
/// (`merkle_merge_levels_split`), each level waiting for one permutation's latency. On an H200
/// (docs/journal/merkle.md), Rp64_256 trees of 2^12 leaves took 245 µs against 262 µs with a
/// launch per level, 2^16 leaves 600 against 617 µs; a bound of 2^9 was within 1% of this
/// one, 2^11 and 2^12 slower than a launch per level.
const RESCUE_TOP_MERGES: u64 = 1 << 10;

/// 64-bit words in [`ConstantBank`]: the most any hasher needs (Rp64_256, Rpo256 and Rpx256:
/// two tables of 7 x 12).
const CONSTANT_WORDS: usize = 168;

// SAFETY: `Felt` is a `#[repr(transparent)]` u64, and every bit pattern the kernels write is
// a canonical value (they reduce before storing); zero is a valid element.
unsafe impl DeviceRepr for Felt {}
// SAFETY: as above; all-zero bits are the element zero.
unsafe impl ValidAsZeroBits for Felt {}
// SAFETY: `Digest` is a `#[repr(transparent)]` `[Felt; 4]`, the kernels' `struct Digest`.
unsafe impl DeviceRepr for Digest {}
// SAFETY: all-zero bits are the zero digest.
unsafe impl ValidAsZeroBits for Digest {}

/// The kernels' constants parameter (`ConstantBank` in sponge.cuh, 168 words): a hasher's
/// round constants in Montgomery form (the kernels work on Montgomery forms), laid out as its
/// module reads them, zeros after. Passed by value, so the Rust crate holds the only copy of the constants.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub(crate) struct ConstantBank([u64; CONSTANT_WORDS]);

// SAFETY: a `#[repr(C)]` array of u64, laid out as the kernels' constant structs.
unsafe impl DeviceRepr for ConstantBank {}

/// Builds a [`ConstantBank`] from tables laid end to end.
struct BankBuilder {
    words: [u64; CONSTANT_WORDS],
    len: usize,
}

impl BankBuilder {
    const fn new() -> Self {
        BankBuilder {
            words: [0; CONSTANT_WORDS],
            len: 0,
        }
    }

    /// Appends `table` row by row.
    const fn table<const W: usize, const R: usize>(mut self, table: &[[u64; W]; R]) -> Self {
        let mut r = 0;
        while r < R {
            let mut c = 0;
            while c < W {
                self.words[self.len] = table[r][c];
                self.len += 1;
                c += 1;
            }
            r += 1;
        }
        self
    }

    const fn done(self) -> ConstantBank {
        ConstantBank(self.words)
    }
}

/// Lanes per hash and threads per block of a kernel.
#[derive(Debug, Clone, Copy)]
struct LaunchShape {
    lanes: u64,
    threads: u32,
}

impl LaunchShape {
    fn grid(self, hashes: u64) -> Grid {
        Grid::cover(hashes * self.lanes, self.threads)
    }
}

/// How the CUDA backend runs one hasher: its module, the kernels of a tree level (one for
/// large levels, one for those of fewer than `wide_min_merges` merges, and optionally one
/// launch for all the levels from the first of at most `top.1` merges to the roots) and of row
/// hashing, with their shapes, and its constants. Every level kernel takes `(Digest* trees,
/// u64 leaves_per_tree, u64 parents, u64 merges, ConstantBank)`, the top kernel `(Digest*
/// trees, u64 leaves_per_tree, u64 parents, u64 merges, u32* arrivals, ConstantBank)` in
/// blocks of one warp, two merges each, every row kernel `(const u64* elements, u64 rows,
/// u32 width, Digest* out, u64 first, ConstantBank)`.
#[derive(Debug, Clone, Copy)]
pub struct DeviceHasher {
    module: Module,
    wide: (&'static str, LaunchShape),
    narrow: (&'static str, LaunchShape),
    wide_min_merges: u64,
    top: Option<(&'static str, u64)>,
    rows: (&'static str, LaunchShape),
    constants: ConstantBank,
}

/// A hasher on the lane layouts of `rescue_lanes.cuh`: quads of lanes, `split` (half warps)
/// near the root, and from the first level of at most [`RESCUE_TOP_MERGES`] merges one launch;
/// `module` defines `merkle_merge_level`, `merkle_merge_level_split`,
/// `merkle_merge_levels_split` and `merkle_hash_rows`.
const fn rescue_lanes(module: Module, split: LaunchShape, constants: ConstantBank) -> DeviceHasher {
    DeviceHasher {
        module,
        wide: ("merkle_merge_level", QUAD),
        narrow: ("merkle_merge_level_split", split),
        wide_min_merges: QUAD_MIN_MERGES,
        top: Some(("merkle_merge_levels_split", RESCUE_TOP_MERGES)),
        rows: ("merkle_hash_rows", QUAD),
        constants,
    }
}

/// Rp64_256 (merkle.cu): ARK1 then ARK2.
pub(crate) const RP64_256: DeviceHasher = rescue_lanes(
    source::MERKLE,
    SPLIT,
    BankBuilder::new()
        .table(&crate::rescue::ARK1_MONT)
        .table(&crate::rescue::ARK2_MONT)
        .done(),
);

/// Rpo256 (rpo.cu): ARK1 then ARK2.
pub(crate) const RPO256: DeviceHasher = rescue_lanes(
    source::RPO,
    SPLIT,
    BankBuilder::new()
        .table(&crate::rpo::ARK1_MONT)
        .table(&crate::rpo::ARK2_MONT)
        .done(),
);

/// Rpx256 (rpx.cu): Rpo256's constants.
pub(crate) const RPX256: DeviceHasher = rescue_lanes(source::RPX, SPLIT, RPO256.constants);

/// The multipliers of one thread's internal rounds (`Multipliers` in poseidon2.cu), passed in
/// the constant bank so that ptxas keeps the products by them as multiply-adds on the FMA pipe
/// instead of shifts and additions on the integer ALU: 1, 2, 3, 4, 2^31, 2^30, 2^29, 2^32 - 1.
const POSEIDON2_LIMB_MULTIPLIERS: [u64; 8] = [1, 2, 3, 4, 1 << 31, 1 << 30, 1 << 29, 0xffff_ffff];

/// Poseidon2 (poseidon2.cu): one thread per hash (`merge_level`, `hash_rows`), levels of fewer
/// than [`POSEIDON2_QUADS_BELOW`] merges on quads (`merge_level_quad`), and from the first of
/// at most [`POSEIDON2_TOP_MERGES`] merges on half warps in one launch (`merge_levels_split`).
/// Constants: initial external, internal, terminal external, the internal matrix's diagonal
/// (which the quads and half warps multiply by), then [`POSEIDON2_LIMB_MULTIPLIERS`].
pub(crate) const POSEIDON2: DeviceHasher = DeviceHasher {
    module: source::POSEIDON2,
    wide: ("merge_level", ONE_PER_THREAD),
    narrow: ("merge_level_quad", POSEIDON2_QUAD),
    wide_min_merges: POSEIDON2_QUADS_BELOW,
    top: Some(("merge_levels_split", POSEIDON2_TOP_MERGES)),
    rows: ("hash_rows", ONE_PER_THREAD),
    constants: BankBuilder::new()
        .table(&crate::poseidon2::EXTERNAL_INITIAL_MONT)
        .table(&[crate::poseidon2::INTERNAL_MONT])
        .table(&crate::poseidon2::EXTERNAL_TERMINAL_MONT)
        .table(&[crate::poseidon2::MATRIX_DIAGONAL_MONT])
        .table(&[POSEIDON2_LIMB_MULTIPLIERS])
        .done(),
};

/// RpJive64_256 (jive.cu): ARK1 then ARK2.
pub(crate) const RP_JIVE64_256: DeviceHasher = rescue_lanes(
    source::JIVE,
    SPLIT8,
    BankBuilder::new()
        .table(&crate::jive::ARK1_MONT)
        .table(&crate::jive::ARK2_MONT)
        .done(),
);

/// One hasher's kernels, loaded.
#[derive(Debug, Clone)]
struct HasherKernels {
    wide: Kernel,
    narrow: Kernel,
    top: Option<TopLevels>,
    rows: Kernel,
}

/// A loaded top kernel (see [`DeviceHasher`]) and its arrival counters: one word per merge of
/// its first level, zero between launches (each launch leaves them so). Launches on this
/// backend's one stream run one at a time, so they can share the counters.
#[derive(Debug, Clone)]
struct TopLevels {
    kernel: Kernel,
    max_merges: u64,
    arrivals: Arc<Mutex<DeviceBuffer<u32>>>,
}

/// The CUDA backend on one GPU. Kernels are compiled (or read from the cache) when it is made.
///
/// ```no_run
/// use merkle::{Cuda, Digest, Felt, MerkleTree};
///
/// # fn main() -> Result<(), merkle::Error> {
/// let gpu = Cuda::new()?;
/// let leaves: Vec<Digest> = (0..1u32 << 20).map(|i| Digest::new([Felt::from(i); 4])).collect();
/// let tree = MerkleTree::build(&gpu, &leaves)?;
/// println!("root {}", tree.root());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Cuda {
    gpu: Arc<Gpu>,
    /// Each hasher's kernels by name, loaded on first use (Rp64_256's when made).
    loaded: Arc<Mutex<HashMap<&'static str, HasherKernels>>>,
    /// Bytes per staging chunk if set by [`Cuda::with_staging_bytes`], else the defaults.
    staging_bytes: Option<usize>,
    /// Page-locked chunks for rows to hash.
    felt_staging: SharedStaging<Felt>,
    /// Page-locked chunks for leaves and nodes.
    digest_staging: SharedStaging<Digest>,
}

/// Bytes per staging chunk by default.
const STAGING_BYTES: usize = 16 << 20;

/// Rows per chunk at least, by default, up to [`MAX_STAGING_BYTES`]: each chunk's launch fills
/// the GPU several times over. On an H200, 1,048,576 rows of 100 elements were hashed from host
/// memory in 90 ms through chunks of 16 MiB (20,971 rows) and in 77 ms through 64 MiB (83,886
/// rows).
const MIN_CHUNK_ROWS: usize = 1 << 16;

/// Bytes per staging chunk at most, by default, so that wide rows do not pin much host memory
/// (two chunks of 64 MiB at most): rows of more than 128 elements get fewer than
/// [`MIN_CHUNK_ROWS`] rows a chunk.
const MAX_STAGING_BYTES: usize = 64 << 20;

/// Levels of fewer nodes than this come back from a subtree in one transfer
/// ([`Cuda::download_levels`]), the larger ones each on its own.
const SMALL_LEVELS_NODES: usize = 1 << 12;

/// One or more Merkle trees of equal size in device memory, hashed with `H`, as consecutive
/// `2n`-digest node arrays. Made by [`Cuda::upload_leaves_with`] or
/// [`Cuda::hash_rows_to_device_with`], filled by [`Cuda::build_device`]; the tree data stays
/// on the GPU until read back.
#[derive(Debug)]
pub struct DeviceTrees<H: Hasher = Rp64_256> {
    /// The backend that made them, whose staging [`DeviceTrees::download`] uses.
    backend: Cuda,
    nodes: DeviceBuffer<Digest>,
    leaves_per_tree: usize,
    hasher: PhantomData<H>,
}

impl<H: Hasher> DeviceTrees<H> {
    /// Number of trees.
    pub fn tree_count(&self) -> usize {
        self.nodes.len() / (2 * self.leaves_per_tree)
    }

    /// Leaves per tree.
    pub fn leaves_per_tree(&self) -> usize {
        self.leaves_per_tree
    }

    /// The root of every tree (after [`Cuda::build_device`]).
    pub fn roots(&self) -> Result<Vec<Digest>, Error> {
        (0..self.tree_count())
            .map(|tree| Ok(self.cap(tree, 0)?[0]))
            .collect()
    }

    /// The Merkle cap of height `height` of tree `tree`, copying only those nodes back.
    /// Errors: [`Error::TreeOutOfRange`] past the last tree, [`Error::CapTooTall`] above the
    /// tree's depth.
    pub fn cap(&self, tree: usize, height: u32) -> Result<Vec<Digest>, Error> {
        let trees = self.tree_count();
        if tree >= trees {
            return Err(Error::TreeOutOfRange { tree, trees });
        }
        let depth = self.leaves_per_tree.trailing_zeros();
        if height > depth {
            return Err(Error::CapTooTall { height, depth });
        }
        let mut cap = vec![Digest::default(); 1 << height];
        let start = tree * 2 * self.leaves_per_tree + (1 << height);
        self.nodes.copy_range_to_host(start, &mut cap)?;
        Ok(cap)
    }

    /// Copies every tree back to the host.
    pub fn download(&self) -> Result<Vec<MerkleTree<H>>, Error> {
        let len = 2 * self.leaves_per_tree;
        (0..self.tree_count())
            .map(|tree| {
                let mut nodes = zero_digests(len);
                self.backend
                    .download_digests(&self.nodes, tree * len, &mut nodes)?;
                Ok(MerkleTree::from_node_array(nodes))
            })
            .collect()
    }
}

impl Cuda {
    /// The backend on the first visible GPU.
    pub fn new() -> Result<Self, Error> {
        Self::on(Gpu::first()?)
    }

    /// The backend on a GPU handle the caller opened (to pick a device or share one).
    pub fn on(gpu: Arc<Gpu>) -> Result<Self, Error> {
        let cuda = Self {
            loaded: Arc::default(),
            staging_bytes: None,
            felt_staging: SharedStaging::new(&gpu),
            digest_staging: SharedStaging::new(&gpu),
            gpu,
        };
        cuda.kernels::<Rp64_256>()?;
        Ok(cuda)
    }

    /// The same backend with staging chunks of `bytes` bytes (rounded down to whole elements
    /// or rows, at least one) and staging memory of its own.
    ///
    /// Host data goes to and from the GPU through two page-locked chunks and two device chunks,
    /// made at the first transfer (no larger than it needs) and kept; clones share them.
    /// Copies from page-locked memory run at bus speed, and row hashing uploads one chunk while
    /// the GPU hashes the one before. By default a chunk holds 16 MiB, and a chunk of rows at
    /// least 65,536 rows (so that each launch fills the GPU) up to 64 MiB.
    pub fn with_staging_bytes(&self, bytes: usize) -> Self {
        Self {
            staging_bytes: Some(bytes),
            felt_staging: SharedStaging::new(&self.gpu),
            digest_staging: SharedStaging::new(&self.gpu),
            ..self.clone()
        }
    }

    /// Items of `item_bytes` bytes (digests, or rows to hash) in a staging chunk, at least one;
    /// by default at least `default_min` within [`MAX_STAGING_BYTES`].
    fn items_per_chunk(&self, item_bytes: usize, default_min: usize) -> usize {
        let items = match self.staging_bytes {
            Some(bytes) => bytes / item_bytes,
            None => (STAGING_BYTES / item_bytes)
                .max(default_min)
                .min(MAX_STAGING_BYTES / item_bytes),
        };
        items.max(1)
    }

    /// Digests in a staging chunk for a transfer of `len` digests: no more than it needs.
    fn digests_per_chunk(&self, len: usize) -> usize {
        self.items_per_chunk(size_of::<Digest>(), 1).min(len.max(1))
    }

    /// Copies `leaves` into `nodes` from element `offset` on, through the digest staging.
    fn upload_digests(
        &self,
        leaves: &[Digest],
        nodes: &mut DeviceBuffer<Digest>,
        offset: usize,
    ) -> Result<(), Error> {
        let chunk = self.digests_per_chunk(leaves.len());
        self.digest_staging.with(chunk, |staging| {
            Ok(staging.copy_to_buffer(leaves, chunk, nodes, offset)?)
        })
    }

    /// Copies `out.len()` digests of `nodes` from element `offset` on into `out`, through the
    /// digest staging.
    fn download_digests(
        &self,
        nodes: &DeviceBuffer<Digest>,
        offset: usize,
        out: &mut [Digest],
    ) -> Result<(), Error> {
        let chunk = self.digests_per_chunk(out.len());
        self.digest_staging.with(chunk, |staging| {
            Ok(staging.copy_from_buffer(nodes, offset, out, chunk)?)
        })
    }

    /// Copies the internal nodes (each tree's lower half) of the trees in `device` into
    /// `nodes`, the host node arrays of the same trees.
    pub(crate) fn download_internal_nodes<H: Hasher>(
        &self,
        device: &DeviceTrees<H>,
        nodes: &mut [Digest],
    ) -> Result<(), Error> {
        let per_tree = device.leaves_per_tree;
        for (tree, array) in nodes.chunks_exact_mut(2 * per_tree).enumerate() {
            self.download_digests(&device.nodes, 2 * tree * per_tree, &mut array[..per_tree])?;
        }
        Ok(())
    }

    /// Copies the levels of the one tree in `device` into `levels`, where `levels[t]` holds
    /// the `2^t` nodes of depth `t` (the root first) and the last of them may be the leaves:
    /// a subtree of a tree split over several GPUs, whose levels lie apart in the whole
    /// tree's node array. The levels of fewer than [`SMALL_LEVELS_NODES`] nodes come back in
    /// one transfer.
    pub(crate) fn download_levels<H: Hasher>(
        &self,
        device: &DeviceTrees<H>,
        levels: &mut [&mut [Digest]],
    ) -> Result<(), Error> {
        let small = levels
            .iter()
            .take_while(|level| level.len() < SMALL_LEVELS_NODES)
            .count();
        let mut top = vec![Digest::default(); (1 << small) - 1];
        if !top.is_empty() {
            self.download_digests(&device.nodes, 1, &mut top)?;
        }
        for (depth, level) in levels.iter_mut().enumerate() {
            let first = 1 << depth;
            if depth < small {
                level.copy_from_slice(&top[first - 1..2 * first - 1]);
            } else {
                self.download_digests(&device.nodes, first, level)?;
            }
        }
        Ok(())
    }

    /// Uploads `leaves` as `trees` trees and queues their build: the GPU hashes while the
    /// caller prepares the host memory to download them into.
    pub(crate) fn queue_trees<H: Hasher>(
        &self,
        hasher: H,
        leaves: &[Digest],
        trees: usize,
    ) -> Result<DeviceTrees<H>, Error> {
        let mut device = self.upload_leaves_with(hasher, leaves, trees)?;
        self.build_device(&mut device)?;
        Ok(device)
    }

    /// As [`Cuda::queue_trees`], for the one tree over the rows of `elements` (`width`
    /// columns).
    pub(crate) fn queue_tree_from_rows<H: Hasher>(
        &self,
        hasher: H,
        elements: &[Felt],
        width: usize,
    ) -> Result<DeviceTrees<H>, Error> {
        let mut device = self.hash_rows_to_device_with(hasher, elements, width)?;
        self.build_device(&mut device)?;
        Ok(device)
    }

    /// Queues the hashes of the rows in `elements` (`width` columns) into `out` from digest
    /// `first` on, uploading the rows through the element staging in chunks of whole rows, one
    /// chunk while the GPU hashes the one before.
    fn hash_rows_staged<H: Hasher>(
        &self,
        elements: &[Felt],
        width: usize,
        out: &mut DeviceBuffer<Digest>,
        first: usize,
    ) -> Result<(), Error> {
        // The kernels take the width as a u32: checked before any staging is made.
        let width32 = u32::try_from(width).map_err(|_| Error::PartialRow {
            len: elements.len(),
            width,
        })?;
        let rows = elements.len() / width;
        let chunk_rows = self
            .items_per_chunk(width.saturating_mul(size_of::<Felt>()), MIN_CHUNK_ROWS)
            .min(rows.max(1));
        let chunk = chunk_rows * width;
        self.felt_staging.with(chunk, |staging| {
            staging.to_device(elements, chunk, |i, part, len| {
                self.launch_hash_rows::<H>(part, len / width, width32, out, first + i * chunk_rows)
            })
        })
    }

    /// The kernels of `H`, loaded (and compiled, or read from the cache) on first use.
    fn kernels<H: Hasher>(&self) -> Result<HasherKernels, Error> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(kernels) = loaded.get(H::NAME) {
            return Ok(kernels.clone());
        }
        let device = H::DEVICE;
        let top = match device.top {
            Some((name, max_merges)) => Some(TopLevels {
                kernel: self.gpu.kernel(&device.module, name)?,
                max_merges,
                arrivals: Arc::new(Mutex::new(self.gpu.alloc_zeroed(max_merges as usize)?)),
            }),
            None => None,
        };
        let kernels = HasherKernels {
            wide: self.gpu.kernel(&device.module, device.wide.0)?,
            narrow: self.gpu.kernel(&device.module, device.narrow.0)?,
            top,
            rows: self.gpu.kernel(&device.module, device.rows.0)?,
        };
        loaded.insert(H::NAME, kernels.clone());
        Ok(kernels)
    }

    /// The GPU this backend runs on.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// [`Cuda::upload_leaves_with`] for Rp64_256.
    pub fn upload_leaves(&self, leaves: &[Digest], trees: usize) -> Result<DeviceTrees, Error> {
        self.upload_leaves_with(Rp64_256, leaves, trees)
    }

    /// Copies `trees` trees' worth of leaves (tree 0's, then tree 1's, ...) into a new
    /// device node array of trees hashed with `hasher`, ready for [`Cuda::build_device`].
    pub fn upload_leaves_with<H: Hasher>(
        &self,
        _hasher: H,
        leaves: &[Digest],
        trees: usize,
    ) -> Result<DeviceTrees<H>, Error> {
        let per_tree = leaves_per_tree(leaves.len(), trees)?;
        let mut nodes = self.gpu.alloc_zeroed(2 * leaves.len())?;
        for (tree, tree_leaves) in leaves.chunks_exact(per_tree).enumerate() {
            self.upload_digests(tree_leaves, &mut nodes, (2 * tree + 1) * per_tree)?;
        }
        Ok(DeviceTrees {
            backend: self.clone(),
            nodes,
            leaves_per_tree: per_tree,
            hasher: PhantomData,
        })
    }

    /// [`Cuda::hash_rows_to_device_with`] for Rp64_256.
    pub fn hash_rows_to_device(
        &self,
        elements: &[Felt],
        width: usize,
    ) -> Result<DeviceTrees, Error> {
        self.hash_rows_to_device_with(Rp64_256, elements, width)
    }

    /// Hashes the rows of `elements` (row-major, `width` columns, a power-of-two number of
    /// rows) with `hasher` on the GPU straight into the leaves of a new device tree.
    pub fn hash_rows_to_device_with<H: Hasher>(
        &self,
        _hasher: H,
        elements: &[Felt],
        width: usize,
    ) -> Result<DeviceTrees<H>, Error> {
        let rows = tree_rows(elements.len(), width)?;
        let mut nodes = self.gpu.alloc_zeroed(2 * rows)?;
        self.hash_rows_staged::<H>(elements, width, &mut nodes, rows)?;
        Ok(DeviceTrees {
            backend: self.clone(),
            nodes,
            leaves_per_tree: rows,
            hasher: PhantomData,
        })
    }

    /// Fills in the internal nodes of every tree in `trees` from their leaves. Returns once
    /// the work is queued; reading anything back waits for it.
    pub fn build_device<H: Hasher>(&self, trees: &mut DeviceTrees<H>) -> Result<(), Error> {
        let device = H::DEVICE;
        let kernels = self.kernels::<H>()?;
        let leaves = trees.leaves_per_tree as u64;
        let mut parents = leaves / 2;
        while parents >= 1 {
            let merges = trees.tree_count() as u64 * parents;
            if let Some(top) = kernels.top.as_ref().filter(|top| merges <= top.max_merges) {
                return self.launch_top_levels(top, trees, parents, merges);
            }
            let (kernel, grid) = if merges >= device.wide_min_merges {
                (&kernels.wide, device.wide.1.grid(merges))
            } else {
                (&kernels.narrow, device.narrow.1.grid(merges))
            };
            // SAFETY: arguments match the level kernels' `(Digest*, u64, u64, u64,
            // ConstantBank)` (see `DeviceHasher`); merge g (< merges) reads nodes 2i, 2i + 1
            // and writes node i, i = parents + g % parents, of tree g / parents, inside
            // `trees.nodes`; the grid covers `merges` merges (`Grid::cover` never caps below
            // that for these sizes, which fit in memory).
            unsafe {
                self.gpu
                    .launch(kernel, grid)
                    .buffer_mut(&mut trees.nodes)
                    .value(&leaves)
                    .value(&parents)
                    .value(&merges)
                    .value(&device.constants)
                    .run()?;
            }
            parents /= 2;
        }
        Ok(())
    }

    /// Queues the top kernel for every level of `trees` from the one of `parents` parents per
    /// tree (`merges` merges, at most `top.max_merges`) to the roots.
    fn launch_top_levels<H: Hasher>(
        &self,
        top: &TopLevels,
        trees: &mut DeviceTrees<H>,
        parents: u64,
        merges: u64,
    ) -> Result<(), Error> {
        let leaves = trees.leaves_per_tree as u64;
        let mut arrivals = top.arrivals.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: arguments match the top kernel's `(Digest*, u64, u64, u64, u32*,
        // ConstantBank)` (see `DeviceHasher`); its merges read and write nodes of the trees
        // inside `trees.nodes` as the level kernels do (see `build_device`), from the level of
        // `parents` parents up, and its counters lie below `merges` / 2 < `arrivals.len()`;
        // the grid has a warp for every two merges of the first level.
        unsafe {
            self.gpu
                .launch(&top.kernel, Grid::cover(merges.div_ceil(2) * 32, 32))
                .buffer_mut(&mut trees.nodes)
                .value(&leaves)
                .value(&parents)
                .value(&merges)
                .buffer_mut(&mut arrivals)
                .value(&H::DEVICE.constants)
                .run()?;
        }
        Ok(())
    }

    /// Queues `out[first + r] = H::hash_elements(row r)` for the first `rows` rows (`width`
    /// elements each) in `elements`.
    fn launch_hash_rows<H: Hasher>(
        &self,
        elements: &DeviceBuffer<Felt>,
        rows: usize,
        width: u32,
        out: &mut DeviceBuffer<Digest>,
        first: usize,
    ) -> Result<(), Error> {
        let len = rows * width as usize;
        if len > elements.len() {
            return Err(kernels::GpuError::BufferTooSmall {
                len,
                capacity: elements.len(),
            }
            .into());
        }
        if first + rows > out.len() {
            return Err(kernels::GpuError::BufferTooSmall {
                len: first + rows,
                capacity: out.len(),
            }
            .into());
        }
        let (rows, first) = (rows as u64, first as u64);
        let device = H::DEVICE;
        let kernels = self.kernels::<H>()?;
        // SAFETY: arguments match the row kernels' `(const u64*, u64, u32, Digest*, u64,
        // ConstantBank)` (see `DeviceHasher`); the lanes of row r read row r (`width` elements
        // inside `elements`) and write digest `first + r`, inside `out` as checked above.
        unsafe {
            self.gpu
                .launch(&kernels.rows, device.rows.1.grid(rows))
                .buffer(elements)
                .value(&rows)
                .value(&width)
                .buffer_mut(out)
                .value(&first)
                .value(&device.constants)
                .run()?;
        }
        Ok(())
    }
}

impl MerkleBackend for Cuda {
    fn name(&self) -> String {
        format!("cuda: {}", self.gpu.info().name)
    }

    fn build_nodes_with<H: Hasher>(
        &self,
        _hasher: H,
        nodes: &mut [Digest],
        leaves_per_tree: usize,
    ) -> Result<(), Error> {
        check_batch(nodes.len(), leaves_per_tree)?;
        let trees = nodes.len() / (2 * leaves_per_tree);
        let mut device = DeviceTrees::<H> {
            backend: self.clone(),
            nodes: self.gpu.alloc_zeroed(nodes.len())?,
            leaves_per_tree,
            hasher: PhantomData,
        };
        for tree in 0..trees {
            let leaves = (2 * tree + 1) * leaves_per_tree;
            self.upload_digests(
                &nodes[leaves..leaves + leaves_per_tree],
                &mut device.nodes,
                leaves,
            )?;
        }
        self.build_device(&mut device)?;
        self.download_internal_nodes(&device, nodes)
    }

    fn node_arrays_with<H: Hasher>(
        &self,
        hasher: H,
        leaves: &[Digest],
        leaves_per_tree: usize,
    ) -> Result<Vec<Digest>, Error> {
        check_batch(2 * leaves.len(), leaves_per_tree)?;
        let device = self.queue_trees(hasher, leaves, leaves.len() / leaves_per_tree)?;
        // Written while the GPU hashes.
        let mut nodes = node_arrays(leaves, leaves_per_tree);
        self.download_internal_nodes(&device, &mut nodes)?;
        Ok(nodes)
    }

    fn node_array_from_rows_with<H: Hasher>(
        &self,
        hasher: H,
        elements: &[Felt],
        width: usize,
    ) -> Result<Vec<Digest>, Error> {
        let device = self.queue_tree_from_rows(hasher, elements, width)?;
        // Written while the GPU hashes.
        let mut nodes = zero_digests(device.nodes.len());
        self.download_digests(&device.nodes, 0, &mut nodes)?;
        Ok(nodes)
    }

    fn hash_rows_with<H: Hasher>(
        &self,
        _hasher: H,
        elements: &[Felt],
        width: usize,
        out: &mut [Digest],
    ) -> Result<(), Error> {
        check_rows(elements.len(), width, out.len())?;
        if out.is_empty() {
            return Ok(());
        }
        let mut digests = self.gpu.alloc_zeroed(out.len())?;
        self.hash_rows_staged::<H>(elements, width, &mut digests, 0)?;
        self.download_digests(&digests, 0, out)
    }

    fn build_nodes_from_rows_with<H: Hasher>(
        &self,
        hasher: H,
        elements: &[Felt],
        width: usize,
        nodes: &mut [Digest],
    ) -> Result<(), Error> {
        check_rows(elements.len(), width, nodes.len() / 2)?;
        let device = self.queue_tree_from_rows(hasher, elements, width)?;
        self.download_digests(&device.nodes, 0, nodes)
    }

    fn build_cap_with<H: Hasher>(
        &self,
        hasher: H,
        leaves: &[Digest],
        height: u32,
    ) -> Result<Vec<Digest>, Error> {
        self.queue_trees(hasher, leaves, 1)?.cap(0, height)
    }
}
