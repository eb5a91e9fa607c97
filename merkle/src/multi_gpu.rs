//! Trees and rows spread over several GPUs of one host: a [`Cuda`] backend per GPU behind one
//! [`MerkleBackend`].

use std::ops::Range;
use std::sync::{Arc, Mutex};

use kernels::{Gpu, even_parts, even_parts_of_at_least, on_each, on_each_part};

use crate::cuda::{Cuda, DeviceTrees};
use crate::digest::Digest;
use crate::error::Error;
use crate::field::Felt;
use crate::hasher::Hasher;
use crate::host::{node_arrays, zero_digests};
use crate::{MerkleBackend, check_batch, check_rows, tree_rows};

/// Leaves (or rows) of one subtree at least, when a tree is split over the GPUs: smaller
/// trees are built on one GPU. On two H200s, from host memory and back, a tree of 2^16 leaves
/// took 1.26 ms as two subtrees against 1.14 ms on one GPU, one of 2^17 leaves 1.78-1.80 ms
/// against 1.76 ms, and one of 2^18 leaves 2.40-2.47 ms against 2.69-2.77 ms.
const MIN_SUBTREE_LEAVES: usize = 1 << 17;

/// Rows per GPU at least, when rows to hash are split over the GPUs.
const MIN_ROWS_PER_GPU: usize = 1 << 12;

/// A [`MerkleBackend`] over several GPUs of one host, one [`Cuda`] backend on each.
///
/// How the work is split (the results are those of one GPU, node for node):
/// - each of `t` trees of `n` leaves is split into `s` subtrees of `n / s` leaves, `s` the
///   largest power of two with `t s` no more than the GPUs and `n / s` at least 2^17, when
///   that gives `s >= 2`: each GPU builds one subtree from its leaves (or rows) and writes its
///   levels into its tree's node array, and the host hashes the `s - 1` nodes above them. So
///   one tree on three GPUs uses two, and two trees on four GPUs two each;
/// - other batches of several trees go to the GPUs in consecutive groups of whole trees
///   ([`kernels::even_parts`]: group sizes differ by at most one tree), so a batch of fewer
///   trees than GPUs may leave some GPUs idle; a lone smaller tree runs on the first GPU;
/// - rows to hash go to the GPUs in consecutive groups of at least 4,096 rows.
///
/// The parts run at once, one host thread per GPU, each through its backend's page-locked
/// staging. Measured on two H200s against one (host data both ways): a tree of 2^22 leaves
/// in 31.0 ms against 41.8 ms, 2^20 rows of 100 elements hashed in 41.5 ms against 77.3 ms.
///
/// ```no_run
/// use merkle::{Digest, Felt, MerkleTree, MultiGpu};
///
/// # fn main() -> Result<(), merkle::Error> {
/// let gpus = MultiGpu::new()?; // every GPU of the host
/// let leaves: Vec<Digest> = (0..1u32 << 22).map(|i| Digest::new([Felt::from(i); 4])).collect();
/// let tree = MerkleTree::build(&gpus, &leaves)?;
/// println!("root {} on {}", tree.root(), merkle::MerkleBackend::name(&gpus));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct MultiGpu {
    backends: Vec<Cuda>,
}

impl MultiGpu {
    /// The backend on every visible GPU.
    ///
    /// # Errors
    ///
    /// As [`Cuda::on`] on any of the GPUs.
    pub fn new() -> Result<Self, Error> {
        Self::on(&Gpu::all()?)
    }

    /// The backend on GPU handles the caller opened (a GPU given twice takes two parts of the
    /// work).
    ///
    /// # Errors
    ///
    /// [`Error::NoGpus`] for an empty list; as [`Cuda::on`] on any of the GPUs.
    pub fn on(gpus: &[Arc<Gpu>]) -> Result<Self, Error> {
        if gpus.is_empty() {
            return Err(Error::NoGpus);
        }
        let backends = on_each(gpus, |gpu| Cuda::on(Arc::clone(gpu)))
            .into_iter()
            .collect::<Result<_, _>>()?;
        Ok(Self { backends })
    }

    /// The backend on each GPU, in the order the GPUs were given.
    pub fn backends(&self) -> &[Cuda] {
        &self.backends
    }

    /// How `trees` trees of `per_tree` leaves (or rows) are spread over the GPUs.
    fn plan(&self, trees: usize, per_tree: usize) -> Plan {
        plan(self.backends.len(), trees, per_tree)
    }

    /// Runs `work(j, backend, part, range)` for each of `ranges` (consecutive, range `j` on GPU
    /// `j`) with its part of `out` (`out_per_item` entries per item of the range), all at
    /// once; the first error in the ranges' order is the result.
    fn split<T: Send>(
        &self,
        ranges: &[Range<usize>],
        out: &mut [T],
        out_per_item: usize,
        work: impl Fn(usize, &Cuda, &mut [T], Range<usize>) -> Result<(), Error> + Sync,
    ) -> Result<(), Error> {
        let lens: Vec<usize> = ranges.iter().map(|r| r.len() * out_per_item).collect();
        on_each_part(out, &lens, |j, part| {
            work(j, &self.backends[j], part, ranges[j].clone())
        })
        .into_iter()
        .collect()
    }

    /// Runs `queue(backend, part)` for part `j` on GPU `j`, all at once: each uploads its
    /// part and queues its build, and returns while its GPU hashes.
    fn queue<P: Sync, H: Hasher>(
        &self,
        parts: &[P],
        queue: impl Fn(&Cuda, &P) -> Result<DeviceTrees<H>, Error> + Sync,
    ) -> Result<Vec<DeviceTrees<H>>, Error> {
        let items: Vec<_> = self.backends.iter().zip(parts).collect();
        on_each(&items, |(backend, part)| queue(backend, part))
            .into_iter()
            .collect()
    }

    /// Queues the `s` subtrees of the tree over the rows of `elements` (`width` columns), the
    /// rows of subtree `j` on GPU `j`.
    fn queue_rows<H: Hasher>(
        &self,
        hasher: H,
        elements: &[Felt],
        width: usize,
        s: usize,
    ) -> Result<Vec<DeviceTrees<H>>, Error> {
        let parts: Vec<_> = elements.chunks_exact(elements.len() / s).collect();
        self.queue(&parts, |backend, rows| {
            backend.queue_tree_from_rows(hasher, rows, width)
        })
    }

    /// Copies the subtrees in `device` into the node arrays `nodes` of their trees (of equal
    /// size, one after the other, each split into `s` subtrees: subtree `j` of tree `i` on
    /// GPU `i s + j`), with their leaves if `leaves` (otherwise already there), and hashes the
    /// nodes above them.
    fn download_subtrees<H: Hasher>(
        &self,
        device: &[DeviceTrees<H>],
        nodes: &mut [Digest],
        s: usize,
        leaves: bool,
    ) -> Result<(), Error> {
        let mut tops = Vec::new();
        let mut levels = Vec::new();
        for tree in nodes.chunks_exact_mut(nodes.len() / (device.len() / s)) {
            let (top, subtrees) = subtree_levels(tree, s);
            tops.push(top);
            levels.extend(subtrees);
        }
        let items: Vec<_> = self
            .backends
            .iter()
            .zip(device)
            .zip(levels.into_iter().map(Mutex::new))
            .collect();
        on_each(&items, |((backend, device), levels)| {
            let mut levels = levels.lock().unwrap_or_else(|p| p.into_inner());
            let downloaded = levels.len() - usize::from(!leaves);
            backend.download_levels(device, &mut levels[..downloaded])
        })
        .into_iter()
        .collect::<Result<(), Error>>()?;
        let roots: Vec<Digest> = items
            .into_iter()
            .map(|(_, levels)| levels.into_inner().unwrap_or_else(|p| p.into_inner())[0][0])
            .collect();
        for (top, roots) in tops.into_iter().zip(roots.chunks_exact(s)) {
            merge_top::<H>(top, roots);
        }
        Ok(())
    }
}

/// How `trees` trees of `per_tree` leaves (or rows) are spread over `gpus` GPUs.
fn plan(gpus: usize, trees: usize, per_tree: usize) -> Plan {
    let most = (gpus / trees.max(1)).min(per_tree / MIN_SUBTREE_LEAVES);
    match (trees, most) {
        (_, 2..) => Plan::Subtrees(1 << most.ilog2()),
        (0 | 1, _) => Plan::One,
        _ => Plan::Trees(even_parts(trees, gpus)),
    }
}

/// How a call's trees are spread over the GPUs (see [`MultiGpu`]).
#[derive(Debug, PartialEq)]
enum Plan {
    /// All on the first GPU.
    One,
    /// Consecutive groups of whole trees, a group per GPU.
    Trees(Vec<Range<usize>>),
    /// Each tree as this many subtrees (a power of two), a subtree per GPU: subtree `j` of
    /// tree `i` on GPU `i s + j`.
    Subtrees(usize),
}

/// The levels of the `s` subtrees of the tree whose node array is `nodes` (`s` a power of
/// two): entry `j` lists subtree `j`'s levels, its root first and its leaves last, each a
/// part of `nodes`; the nodes above the subtrees' roots (`nodes[..s]`) come back apart.
fn subtree_levels(nodes: &mut [Digest], s: usize) -> (&mut [Digest], Vec<Vec<&mut [Digest]>>) {
    let (top, mut rest) = nodes.split_at_mut(s);
    let mut levels: Vec<Vec<&mut [Digest]>> = (0..s).map(|_| Vec::new()).collect();
    let mut width = s;
    while !rest.is_empty() {
        let (level, tail) = rest.split_at_mut(width);
        for (subtree, part) in levels.iter_mut().zip(level.chunks_mut(width / s)) {
            subtree.push(part);
        }
        rest = tail;
        width *= 2;
    }
    (top, levels)
}

/// Fills in `top` (`nodes[..s]` of a tree split into `s` subtrees) from the subtrees' roots:
/// node `i` of the whole tree merges nodes `2i` and `2i + 1`, node `s + j` being the root of
/// subtree `j`.
fn merge_top<H: Hasher>(top: &mut [Digest], roots: &[Digest]) {
    let s = top.len();
    for i in (1..s).rev() {
        let child = |c: usize| if c < s { top[c] } else { roots[c - s] };
        let (left, right) = (child(2 * i), child(2 * i + 1));
        top[i] = H::merge(&left, &right);
    }
}

impl MerkleBackend for MultiGpu {
    fn name(&self) -> String {
        let names: Vec<String> = self
            .backends
            .iter()
            .map(|backend| backend.gpu().info().name.clone())
            .collect();
        format!("cuda x{}: {}", names.len(), names.join(", "))
    }

    fn build_nodes_with<H: Hasher>(
        &self,
        hasher: H,
        nodes: &mut [Digest],
        leaves_per_tree: usize,
    ) -> Result<(), Error> {
        check_batch(nodes.len(), leaves_per_tree)?;
        match self.plan(nodes.len() / (2 * leaves_per_tree), leaves_per_tree) {
            Plan::One => self.backends[0].build_nodes_with(hasher, nodes, leaves_per_tree),
            Plan::Trees(ranges) => self.split(
                &ranges,
                nodes,
                2 * leaves_per_tree,
                |_, backend, part, _| backend.build_nodes_with(hasher, part, leaves_per_tree),
            ),
            Plan::Subtrees(s) => {
                let parts: Vec<_> = nodes
                    .chunks_exact(2 * leaves_per_tree)
                    .flat_map(|tree| tree[leaves_per_tree..].chunks_exact(leaves_per_tree / s))
                    .collect();
                let device = self.queue(&parts, |backend, leaves| {
                    backend.queue_trees(hasher, leaves, 1)
                })?;
                self.download_subtrees(&device, nodes, s, false)
            }
        }
    }

    fn node_arrays_with<H: Hasher>(
        &self,
        hasher: H,
        leaves: &[Digest],
        leaves_per_tree: usize,
    ) -> Result<Vec<Digest>, Error> {
        check_batch(2 * leaves.len(), leaves_per_tree)?;
        let plan = self.plan(leaves.len() / leaves_per_tree, leaves_per_tree);
        let parts: Vec<&[Digest]> = match &plan {
            Plan::One => {
                return self.backends[0].node_arrays_with(hasher, leaves, leaves_per_tree);
            }
            Plan::Trees(ranges) => ranges
                .iter()
                .map(|r| &leaves[r.start * leaves_per_tree..r.end * leaves_per_tree])
                .collect(),
            Plan::Subtrees(s) => leaves.chunks_exact(leaves_per_tree / s).collect(),
        };
        // A group's trees, or one subtree.
        let device = self.queue(&parts, |backend, part| {
            backend.queue_trees(hasher, part, part.len().div_ceil(leaves_per_tree))
        })?;
        // Written while the GPUs hash.
        let mut nodes = node_arrays(leaves, leaves_per_tree);
        if let Plan::Trees(ranges) = &plan {
            self.split(
                ranges,
                &mut nodes,
                2 * leaves_per_tree,
                |j, backend, part, _| backend.download_internal_nodes(&device[j], part),
            )?;
        } else if let Plan::Subtrees(s) = plan {
            self.download_subtrees(&device, &mut nodes, s, false)?;
        }
        Ok(nodes)
    }

    fn hash_rows_with<H: Hasher>(
        &self,
        hasher: H,
        elements: &[Felt],
        width: usize,
        out: &mut [Digest],
    ) -> Result<(), Error> {
        check_rows(elements.len(), width, out.len())?;
        self.split(
            &even_parts_of_at_least(out.len(), self.backends.len(), MIN_ROWS_PER_GPU),
            out,
            1,
            |_, backend, part, rows| {
                let rows = &elements[rows.start * width..rows.end * width];
                backend.hash_rows_with(hasher, rows, width, part)
            },
        )
    }

    fn build_nodes_from_rows_with<H: Hasher>(
        &self,
        hasher: H,
        elements: &[Felt],
        width: usize,
        nodes: &mut [Digest],
    ) -> Result<(), Error> {
        let rows = tree_rows(elements.len(), width)?;
        check_rows(elements.len(), width, nodes.len() / 2)?;
        match self.plan(1, rows) {
            Plan::Subtrees(s) => {
                let device = self.queue_rows(hasher, elements, width, s)?;
                self.download_subtrees(&device, nodes, s, true)
            }
            _ => self.backends[0].build_nodes_from_rows_with(hasher, elements, width, nodes),
        }
    }

    fn node_array_from_rows_with<H: Hasher>(
        &self,
        hasher: H,
        elements: &[Felt],
        width: usize,
    ) -> Result<Vec<Digest>, Error> {
        let rows = tree_rows(elements.len(), width)?;
        match self.plan(1, rows) {
            Plan::Subtrees(s) => {
                let device = self.queue_rows(hasher, elements, width, s)?;
                // Written while the GPUs hash.
                let mut nodes = zero_digests(2 * rows);
                self.download_subtrees(&device, &mut nodes, s, true)?;
                Ok(nodes)
            }
            _ => self.backends[0].node_array_from_rows_with(hasher, elements, width),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cpu, MerkleTree, Poseidon2, Rp64_256};

    fn leaves(n: usize) -> Vec<Digest> {
        (0..n as u64)
            .map(|i| Digest::new([i, i + 1, 3 * i, 7].map(Felt::new)))
            .collect()
    }

    /// Subtree `j`'s level `t` is the part of the whole tree's level `log2 s + t` that lies
    /// under node `s + j`, and every node from `s` on belongs to exactly one subtree.
    #[test]
    fn subtree_levels_cover_each_node_once_in_place() {
        for (n, s) in [
            (2usize, 2usize),
            (8, 2),
            (8, 4),
            (8, 8),
            (64, 4),
            (1 << 10, 8),
        ] {
            let mut nodes: Vec<Digest> = (0..2 * n as u64)
                .map(|i| Digest::new([Felt::new(i); 4]))
                .collect();
            let (top, levels) = subtree_levels(&mut nodes, s);
            assert_eq!(top.len(), s);
            let mut seen = vec![false; 2 * n];
            for (j, subtree) in levels.iter().enumerate() {
                assert_eq!(subtree.len(), (n / s).ilog2() as usize + 1, "{n} over {s}");
                for (t, level) in subtree.iter().enumerate() {
                    assert_eq!(level.len(), 1 << t);
                    let first = ((s + j) << t) as u64;
                    for (k, node) in level.iter().enumerate() {
                        let index = first + k as u64;
                        assert_eq!(*node, Digest::new([Felt::new(index); 4]));
                        assert!(!seen[index as usize], "node {index} twice");
                        seen[index as usize] = true;
                    }
                }
            }
            assert!(
                seen[s..].iter().all(|&x| x),
                "{n} over {s}: every node from s on"
            );
        }
    }

    /// Trees split into subtrees while every subtree finds a GPU and keeps 2^17 leaves;
    /// otherwise whole trees in groups, or one tree on the first GPU.
    #[test]
    fn plans_split_trees_while_gpus_and_subtree_sizes_allow() {
        let big = 1 << 20;
        assert_eq!(plan(1, 1, big), Plan::One);
        assert_eq!(plan(2, 1, big), Plan::Subtrees(2));
        assert_eq!(plan(3, 1, big), Plan::Subtrees(2));
        assert_eq!(plan(8, 1, big), Plan::Subtrees(8));
        assert_eq!(plan(8, 1, 1 << 19), Plan::Subtrees(4));
        assert_eq!(plan(8, 1, 1 << 18), Plan::Subtrees(2));
        assert_eq!(plan(8, 1, 1 << 17), Plan::One);
        assert_eq!(plan(4, 2, 1 << 18), Plan::Subtrees(2));
        assert_eq!(plan(8, 3, big), Plan::Subtrees(2));
        assert_eq!(plan(4, 2, 1 << 17), Plan::Trees(vec![0..1, 1..2]));
        assert_eq!(plan(4, 3, big), Plan::Trees(vec![0..1, 1..2, 2..3]));
        assert_eq!(plan(2, 5, big), Plan::Trees(vec![0..3, 3..5]));
        assert_eq!(plan(1, 5, big), Plan::Trees(even_parts(5, 1)));
    }

    /// The nodes above the subtrees' roots, hashed on the host, are the CPU tree's.
    #[test]
    fn the_top_merges_equal_the_cpu_tree() {
        fn check<H: Hasher>(hasher: H) {
            for (n, s) in [(2usize, 2usize), (16, 2), (16, 4), (16, 16), (256, 8)] {
                let tree = MerkleTree::build_with(hasher, &Cpu, &leaves(n)).unwrap();
                let expected = tree.nodes();
                let mut top = vec![Digest::default(); s];
                merge_top::<H>(&mut top, &expected[s..2 * s]);
                assert_eq!(&top[1..], &expected[1..s], "{} over {s}", H::NAME);
            }
        }
        check(Rp64_256);
        check(Poseidon2);
    }
}
