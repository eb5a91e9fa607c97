//! The CUDA backend: the kernels of `merkle/cuda/merkle.cu`, run through `kernels`.
//!
//! A tree of `n` leaves lives on the device as its `2n`-digest node array, and each level is
//! one launch. The permutation is compute-bound and long (about 110k instructions), so how a
//! level is spread matters more than memory traffic:
//!
//! - levels of at least [`QUAD_MIN_MERGES`] merges (over all trees of a batch) run a quad of
//!   lanes per merge, three state elements and three independent S-box chains per lane: few
//!   registers, so many warps per SM keep the pipelines busy (one thread per merge, with all
//!   twelve chains, needed 142 registers and was 1.2-1.3x slower);
//! - smaller levels, where that would leave most of the GPU idle while a few lanes walk the
//!   whole permutation, run one state element per lane on half warps (16 lanes per merge).

use std::sync::Arc;

use crate::source;
use kernels::{DeviceBuffer, DeviceRepr, Gpu, Grid, Kernel, ValidAsZeroBits};

use crate::digest::Digest;
use crate::error::Error;
use crate::field::Felt;
use crate::rescue::{ARK1_MONT, ARK2_MONT, ROUNDS, STATE_WIDTH};
use crate::tree::MerkleTree;
use crate::{MerkleBackend, check_batch, check_rows, leaves_per_tree, tree_rows};

/// Levels with at least this many merges run a quad of lanes per merge (`merkle_merge_level`);
/// smaller ones 16 lanes per merge. Measured on an H100 per level: 2^12 merges take 61 µs on
/// quads (their latency floor) and 41 µs on half warps, 2^13 merges 61 µs against 74 µs.
const QUAD_MIN_MERGES: u64 = 1 << 13;

/// Lanes per merge of `merkle_merge_level` (and per row of `merkle_hash_rows`), and their
/// block size (256 measured against 128 on an H100: 2^20 leaves 8.14 -> 7.92 ms).
const QUAD_LANES: u64 = 4;
const QUAD_THREADS: u32 = 256;

/// Lanes per merge of the split kernel (`SPLIT_LANES` in merkle.cu) and its block size.
const SPLIT_LANES: u64 = 16;
const SPLIT_THREADS: u32 = 256;

// SAFETY: `Felt` is a `#[repr(transparent)]` u64, and every bit pattern the kernels write is
// a canonical value (they reduce before storing); zero is a valid element.
unsafe impl DeviceRepr for Felt {}
// SAFETY: as above; all-zero bits are the element zero.
unsafe impl ValidAsZeroBits for Felt {}
// SAFETY: `Digest` is a `#[repr(transparent)]` `[Felt; 4]`, the kernels' `struct Digest`.
unsafe impl DeviceRepr for Digest {}
// SAFETY: all-zero bits are the zero digest.
unsafe impl ValidAsZeroBits for Digest {}

/// The kernels' `RescueConstants` parameter: the round constants in Montgomery form (the
/// kernels' permutation works on Montgomery forms, as the CPU's does), passed by value.
#[repr(C)]
struct RescueConstants {
    ark1: [[u64; STATE_WIDTH]; ROUNDS],
    ark2: [[u64; STATE_WIDTH]; ROUNDS],
}

// SAFETY: a `#[repr(C)]` struct of u64 arrays, laid out as `RescueConstants` in merkle.cu.
unsafe impl DeviceRepr for RescueConstants {}

const CONSTANTS: RescueConstants = RescueConstants {
    ark1: ARK1_MONT,
    ark2: ARK2_MONT,
};

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
    merge_level: Kernel,
    merge_level_split: Kernel,
    hash_rows: Kernel,
}

/// One or more Merkle trees of equal size in device memory, as consecutive `2n`-digest node
/// arrays. Made by [`Cuda::upload_leaves`] or [`Cuda::hash_rows_to_device`], filled by
/// [`Cuda::build_device`]; the tree data stays on the GPU until read back.
#[derive(Debug)]
pub struct DeviceTrees {
    nodes: DeviceBuffer<Digest>,
    leaves_per_tree: usize,
}

impl DeviceTrees {
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
    pub fn cap(&self, tree: usize, height: u32) -> Result<Vec<Digest>, Error> {
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
    pub fn download(&self) -> Result<Vec<MerkleTree>, Error> {
        let mut nodes = vec![Digest::default(); self.nodes.len()];
        self.nodes.copy_to_host(&mut nodes)?;
        Ok(nodes
            .chunks_exact(2 * self.leaves_per_tree)
            .map(|tree| MerkleTree::from_node_array(tree.to_vec()))
            .collect())
    }
}

impl Cuda {
    /// The backend on the first visible GPU.
    pub fn new() -> Result<Self, Error> {
        Self::on(Gpu::first()?)
    }

    /// The backend on a GPU handle the caller opened (to pick a device or share one).
    pub fn on(gpu: Arc<Gpu>) -> Result<Self, Error> {
        let merge_level = gpu.kernel(&source::MERKLE, "merkle_merge_level")?;
        let merge_level_split = gpu.kernel(&source::MERKLE, "merkle_merge_level_split")?;
        let hash_rows = gpu.kernel(&source::MERKLE, "merkle_hash_rows")?;
        Ok(Self {
            gpu,
            merge_level,
            merge_level_split,
            hash_rows,
        })
    }

    /// The GPU this backend runs on.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Copies `trees` trees' worth of leaves (tree 0's, then tree 1's, ...) into a new
    /// device node array, ready for [`Cuda::build_device`].
    pub fn upload_leaves(&self, leaves: &[Digest], trees: usize) -> Result<DeviceTrees, Error> {
        let per_tree = leaves_per_tree(leaves.len(), trees)?;
        let mut nodes = self.gpu.alloc_zeroed(2 * leaves.len())?;
        for (tree, tree_leaves) in leaves.chunks_exact(per_tree).enumerate() {
            nodes.copy_from_host_at((2 * tree + 1) * per_tree, tree_leaves)?;
        }
        Ok(DeviceTrees {
            nodes,
            leaves_per_tree: per_tree,
        })
    }

    /// Hashes the rows of `elements` (row-major, `width` columns, a power-of-two number of
    /// rows) on the GPU straight into the leaves of a new device tree.
    pub fn hash_rows_to_device(
        &self,
        elements: &[Felt],
        width: usize,
    ) -> Result<DeviceTrees, Error> {
        let rows = tree_rows(elements.len(), width)?;
        let input = self.gpu.upload(elements)?;
        let mut nodes = self.gpu.alloc_zeroed(2 * rows)?;
        self.launch_hash_rows(&input, width, &mut nodes, rows)?;
        Ok(DeviceTrees {
            nodes,
            leaves_per_tree: rows,
        })
    }

    /// Fills in the internal nodes of every tree in `trees` from their leaves. Returns once
    /// the work is queued; reading anything back waits for it.
    pub fn build_device(&self, trees: &mut DeviceTrees) -> Result<(), Error> {
        let leaves = trees.leaves_per_tree as u64;
        let mut parents = leaves / 2;
        while parents >= 1 {
            let merges = trees.tree_count() as u64 * parents;
            let (kernel, grid) = if merges >= QUAD_MIN_MERGES {
                (
                    &self.merge_level,
                    Grid::cover(merges * QUAD_LANES, QUAD_THREADS),
                )
            } else {
                (
                    &self.merge_level_split,
                    Grid::cover(merges * SPLIT_LANES, SPLIT_THREADS),
                )
            };
            // SAFETY: arguments match `merkle_merge_level[_split](Digest*, u64, u64, u64,
            // RescueConstants)`; merge g (< merges) reads nodes 2i, 2i + 1 and writes node i,
            // i = parents + g % parents, of tree g / parents, inside `trees.nodes`; the grid
            // covers `merges` merges (`Grid::cover` never caps below that for these sizes,
            // which fit in memory).
            unsafe {
                self.gpu
                    .launch(kernel, grid)
                    .buffer_mut(&mut trees.nodes)
                    .value(&leaves)
                    .value(&parents)
                    .value(&merges)
                    .value(&CONSTANTS)
                    .run()?;
            }
            parents /= 2;
        }
        Ok(())
    }

    /// Queues `out[first + r] = hash_elements(row r)` for the `rows` rows in `elements`.
    fn launch_hash_rows(
        &self,
        elements: &DeviceBuffer<Felt>,
        width: usize,
        out: &mut DeviceBuffer<Digest>,
        first: usize,
    ) -> Result<(), Error> {
        let rows = elements.len() / width;
        if first + rows > out.len() {
            return Err(kernels::GpuError::BufferTooSmall {
                len: first + rows,
                capacity: out.len(),
            }
            .into());
        }
        let width32 = u32::try_from(width).map_err(|_| Error::PartialRow {
            len: elements.len(),
            width,
        })?;
        let (rows, first) = (rows as u64, first as u64);
        // SAFETY: arguments match `merkle_hash_rows(const u64*, u64, u32, Digest*, u64,
        // RescueConstants)`; quad r reads row r (`width` elements inside `elements`) and
        // writes digest `first + r`, inside `out` as checked above.
        unsafe {
            self.gpu
                .launch(
                    &self.hash_rows,
                    Grid::cover(rows * QUAD_LANES, QUAD_THREADS),
                )
                .buffer(elements)
                .value(&rows)
                .value(&width32)
                .buffer_mut(out)
                .value(&first)
                .value(&CONSTANTS)
                .run()?;
        }
        Ok(())
    }
}

impl MerkleBackend for Cuda {
    fn name(&self) -> String {
        format!("cuda: {}", self.gpu.info().name)
    }

    fn build_nodes(&self, nodes: &mut [Digest], leaves_per_tree: usize) -> Result<(), Error> {
        check_batch(nodes.len(), leaves_per_tree)?;
        let trees = nodes.len() / (2 * leaves_per_tree);
        let mut device = DeviceTrees {
            nodes: self.gpu.alloc_zeroed(nodes.len())?,
            leaves_per_tree,
        };
        for tree in 0..trees {
            let leaves = (2 * tree + 1) * leaves_per_tree;
            device
                .nodes
                .copy_from_host_at(leaves, &nodes[leaves..leaves + leaves_per_tree])?;
        }
        self.build_device(&mut device)?;
        for tree in 0..trees {
            let start = 2 * tree * leaves_per_tree;
            device
                .nodes
                .copy_range_to_host(start, &mut nodes[start..start + leaves_per_tree])?;
        }
        Ok(())
    }

    fn hash_rows(&self, elements: &[Felt], width: usize, out: &mut [Digest]) -> Result<(), Error> {
        check_rows(elements.len(), width, out.len())?;
        if out.is_empty() {
            return Ok(());
        }
        let input = self.gpu.upload(elements)?;
        let mut digests = self.gpu.alloc_zeroed(out.len())?;
        self.launch_hash_rows(&input, width, &mut digests, 0)?;
        digests.copy_to_host(out)?;
        Ok(())
    }

    fn build_nodes_from_rows(
        &self,
        elements: &[Felt],
        width: usize,
        nodes: &mut [Digest],
    ) -> Result<(), Error> {
        check_rows(elements.len(), width, nodes.len() / 2)?;
        let mut device = self.hash_rows_to_device(elements, width)?;
        self.build_device(&mut device)?;
        device.nodes.copy_to_host(nodes)?;
        Ok(())
    }

    fn build_cap(&self, leaves: &[Digest], height: u32) -> Result<Vec<Digest>, Error> {
        let mut device = self.upload_leaves(leaves, 1)?;
        self.build_device(&mut device)?;
        device.cap(0, height)
    }
}
