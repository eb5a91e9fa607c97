//! Binary Merkle trees in the array layout of winter-crypto.

use std::marker::PhantomData;

use rayon::prelude::*;

use crate::digest::Digest;
use crate::error::Error;
use crate::field::Felt;
use crate::hasher::Hasher;
use crate::host::par_copy;
use crate::rescue::Rp64_256;
use crate::{MerkleBackend, check_leaf_count, leaves_per_tree};

/// A binary Merkle tree over `n = 2^depth` leaf digests, with every node kept, hashed with
/// `H` (Rp64_256 unless named).
///
/// Nodes live in one array of `2n` digests: `nodes[1]` is the root, `nodes[i] =
/// H::merge(nodes[2i], nodes[2i + 1])`, leaf `j` sits at `nodes[n + j]` and `nodes[0]` is
/// unused (the zero digest). This is the layout of SPEC.md and of winter-crypto's
/// `MerkleTree`, whose internal-node array is our first half.
///
/// The constructors and [`MerkleTree::verify_with`] take the hasher as a value
/// (`MerkleTree::build_with(Poseidon2, &backend, &leaves)`); [`MerkleTree::build`],
/// [`MerkleTree::build_batch`], [`MerkleTree::from_rows`] and [`MerkleTree::verify`] are the
/// same for Rp64_256.
#[derive(Clone, PartialEq, Eq)]
pub struct MerkleTree<H: Hasher = Rp64_256> {
    nodes: Vec<Digest>,
    hasher: PhantomData<H>,
}

impl<H: Hasher> std::fmt::Debug for MerkleTree<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MerkleTree")
            .field("hasher", &H::NAME)
            .field("leaves", &self.leaf_count())
            .field("root", &self.root())
            .finish()
    }
}

impl MerkleTree<Rp64_256> {
    /// [`MerkleTree::build_with`] for Rp64_256.
    pub fn build<B: MerkleBackend + ?Sized>(backend: &B, leaves: &[Digest]) -> Result<Self, Error> {
        Self::build_with(Rp64_256, backend, leaves)
    }

    /// [`MerkleTree::build_batch_with`] for Rp64_256.
    pub fn build_batch<B: MerkleBackend + ?Sized>(
        backend: &B,
        leaves: &[Digest],
        trees: usize,
    ) -> Result<Vec<Self>, Error> {
        Self::build_batch_with(Rp64_256, backend, leaves, trees)
    }

    /// [`MerkleTree::from_rows_with`] for Rp64_256.
    pub fn from_rows<B: MerkleBackend + ?Sized>(
        backend: &B,
        elements: &[Felt],
        width: usize,
    ) -> Result<Self, Error> {
        Self::from_rows_with(Rp64_256, backend, elements, width)
    }

    /// [`MerkleTree::verify_with`] for Rp64_256.
    pub fn verify(
        root: &Digest,
        index: usize,
        leaf: &Digest,
        path: &[Digest],
    ) -> Result<(), Error> {
        Self::verify_with(Rp64_256, root, index, leaf, path)
    }
}

impl<H: Hasher> MerkleTree<H> {
    /// Wraps a complete node array (the caller guarantees the layout).
    pub(crate) fn from_node_array(nodes: Vec<Digest>) -> Self {
        MerkleTree {
            nodes,
            hasher: PhantomData,
        }
    }

    /// The trees of back-to-back node arrays of `per_tree` leaves each (a complete layout):
    /// one tree keeps `nodes`, several are copied out of it on every core.
    pub(crate) fn split_node_arrays(nodes: Vec<Digest>, per_tree: usize) -> Vec<Self> {
        if nodes.len() == 2 * per_tree {
            return vec![Self::from_node_array(nodes)];
        }
        nodes
            .par_chunks_exact(2 * per_tree)
            .map(|tree| Self::from_node_array(par_copy(tree)))
            .collect()
    }

    /// Builds the tree over `leaves` (a power of two, at least 2) with `hasher` on `backend`.
    pub fn build_with<B: MerkleBackend + ?Sized>(
        hasher: H,
        backend: &B,
        leaves: &[Digest],
    ) -> Result<Self, Error> {
        check_leaf_count(leaves.len())?;
        let nodes = backend.node_arrays_with(hasher, leaves, leaves.len())?;
        Ok(Self::from_node_array(nodes))
    }

    /// Builds `trees` trees of equal size in one call: `leaves` holds the leaves of tree 0,
    /// then those of tree 1, and so on.
    pub fn build_batch_with<B: MerkleBackend + ?Sized>(
        hasher: H,
        backend: &B,
        leaves: &[Digest],
        trees: usize,
    ) -> Result<Vec<Self>, Error> {
        let per_tree = leaves_per_tree(leaves.len(), trees)?;
        let nodes = backend.node_arrays_with(hasher, leaves, per_tree)?;
        Ok(Self::split_node_arrays(nodes, per_tree))
    }

    /// Builds the tree whose leaf `j` is `H::hash_elements(row j)`, for a row-major matrix of
    /// `width` columns held in `elements` (a power-of-two number of rows, at least 2).
    pub fn from_rows_with<B: MerkleBackend + ?Sized>(
        hasher: H,
        backend: &B,
        elements: &[Felt],
        width: usize,
    ) -> Result<Self, Error> {
        let nodes = backend.node_array_from_rows_with(hasher, elements, width)?;
        Ok(Self::from_node_array(nodes))
    }

    /// The root.
    pub fn root(&self) -> &Digest {
        &self.nodes[1]
    }

    /// The depth: `log2` of the leaf count (a tree of two leaves has depth 1).
    pub fn depth(&self) -> u32 {
        self.leaf_count().trailing_zeros()
    }

    /// The number of leaves.
    pub fn leaf_count(&self) -> usize {
        self.nodes.len() / 2
    }

    /// The leaves, in order.
    pub fn leaves(&self) -> &[Digest] {
        &self.nodes[self.leaf_count()..]
    }

    /// Every node in the array layout described on [`MerkleTree`] (`2n` digests).
    pub fn nodes(&self) -> &[Digest] {
        &self.nodes
    }

    /// The Merkle cap of height `height`: the `2^height` nodes of that level, left to right
    /// (height 0 is the root alone, height `depth` the leaves).
    pub fn cap(&self, height: u32) -> Result<&[Digest], Error> {
        let depth = self.depth();
        if height > depth {
            return Err(Error::CapTooTall { height, depth });
        }
        Ok(&self.nodes[1 << height..2 << height])
    }

    /// The authentication path of leaf `index`: its sibling leaf first, then the sibling of
    /// each ancestor up to (not including) the root; `depth` digests in all. The same path
    /// winter-crypto's `MerkleTree::prove` returns.
    pub fn prove(&self, index: usize) -> Result<Vec<Digest>, Error> {
        let leaves = self.leaf_count();
        if index >= leaves {
            return Err(Error::IndexOutOfRange { index, leaves });
        }
        let mut position = leaves + index;
        let mut path = Vec::with_capacity(self.depth() as usize);
        while position > 1 {
            path.push(self.nodes[position ^ 1]);
            position >>= 1;
        }
        Ok(path)
    }

    /// Checks that `path` (as from [`MerkleTree::prove`]) leads from `leaf` at `index` to `root`
    /// in a tree hashed with `hasher`.
    pub fn verify_with(
        _hasher: H,
        root: &Digest,
        index: usize,
        leaf: &Digest,
        path: &[Digest],
    ) -> Result<(), Error> {
        if path.is_empty() || path.len() >= usize::BITS as usize {
            return Err(Error::MalformedProof {
                why: format!("a path of {} digests", path.len()),
            });
        }
        let leaves = 1usize << path.len();
        if index >= leaves {
            return Err(Error::IndexOutOfRange { index, leaves });
        }
        let mut position = leaves + index;
        let mut node = *leaf;
        for sibling in path {
            node = if position & 1 == 0 {
                H::merge(&node, sibling)
            } else {
                H::merge(sibling, &node)
            };
            position >>= 1;
        }
        if node == *root {
            Ok(())
        } else {
            Err(Error::InvalidProof)
        }
    }
}

/// Pads `leaves` with zero digests up to the next power of two (and at least 2), for callers
/// whose leaf count is arbitrary and who accept that padding as part of their commitment.
pub fn pad_leaves(leaves: &mut Vec<Digest>) {
    let target = leaves.len().next_power_of_two().max(2);
    leaves.resize(target, Digest::default());
}

/// Flattens rows of equal length into one row-major buffer for [`MerkleTree::from_rows`],
/// returning it with the row width; an error names the first row of another length.
pub fn flatten_rows<R: AsRef<[Felt]>>(rows: &[R]) -> Result<(Vec<Felt>, usize), Error> {
    let width = rows.first().map_or(0, |row| row.as_ref().len());
    if width == 0 {
        return Err(Error::EmptyRows);
    }
    let mut elements = Vec::with_capacity(width * rows.len());
    for (index, row) in rows.iter().enumerate() {
        let row = row.as_ref();
        if row.len() != width {
            return Err(Error::RaggedRows {
                row: index,
                len: row.len(),
                expected: width,
            });
        }
        elements.extend_from_slice(row);
    }
    Ok((elements, width))
}
