//! The algebraic hashes of Goldilocks STARK provers, and Merkle trees over them, on the CPU
//! and on CUDA GPUs: Rp64_256 and RpJive64_256 bit-compatible with winter-crypto 0.13.1,
//! Rpo256, Rpx256 and Poseidon2 bit-compatible with miden-crypto 0.28.1.
//!
//! It follows section "merkle: algebraic hashes over Goldilocks" of the workspace's `SPEC.md`:
//!
//! - [`Felt`]: the Goldilocks field p = 2^64 - 2^32 + 1, canonical form at the API;
//! - the [`Hasher`]s, each with `merge` and `hash_elements` equal to its reference's:
//!   [`Rp64_256`] ([`rescue`], with its permutation and constants), [`RpJive64_256`]
//!   ([`jive`]: Jive compression on an 8-element state), [`Rpo256`] ([`rpo`]), [`Rpx256`]
//!   ([`rpx`]) and [`Poseidon2`] ([`poseidon2`], the hash of miden-crypto's `MerkleTree`).
//!   The miden-crypto hashers use its sponge layout since 0.21.0 (rate `s[0..8]`, capacity
//!   `s[8..12]`, digest `s[0..4]`; older releases give other digests);
//! - [`MerkleTree`]: trees from leaf digests or from rows of elements, in one call or as a
//!   batch of equal-size trees; root, every node, a Merkle cap; single paths and compact
//!   [`BatchProof`]s with their CPU verification. `MerkleTree<H>` is generic over the hasher
//!   (Rp64_256 when unnamed): the `_with` constructors take the hasher as a value.
//!
//! Every build goes through the [`MerkleBackend`] trait, implemented by [`Cpu`] (rayon),
//! [`Cuda`] (feature `cuda`, on by default), [`MultiGpu`] (several GPUs of one host, the work
//! split between them) and [`Backend`], which picks the GPU when one is usable. Results are
//! identical on every backend. On the GPU the Rescue family (Rp64_256,
//! Rpo256, Rpx256, RpJive64_256) runs on lane kernels (a quad of lanes per merge, a half warp
//! near the root, the levels nearest the root in one launch); Poseidon2 runs one thread per hash with the state in registers, which its
//! cheap partial rounds favour (the crate README's performance notes give each hasher's floor).
//!
//! # Example
//!
//! ```
//! use merkle::{Backend, Felt, MerkleTree, rescue};
//!
//! # fn main() -> Result<(), merkle::Error> {
//! let backend = Backend::Cpu(merkle::Cpu); // or Backend::best()
//! // 16 rows of 10 field elements; leaf j = hash_elements(row j).
//! let elements: Vec<Felt> = (0..160u32).map(Felt::from).collect();
//! let tree = MerkleTree::from_rows(&backend, &elements, 10)?;
//! assert_eq!(tree.leaves()[3], rescue::hash_elements(&elements[30..40]));
//!
//! let proof = tree.prove_batch(&[3, 4, 9])?;
//! let opened = [tree.leaves()[3], tree.leaves()[4], tree.leaves()[9]];
//! MerkleTree::verify_batch(tree.root(), &[3, 4, 9], &opened, &proof)?;
//! # Ok(()) }
//! ```
//!
//! # Interoperability (feature `winter`, on by default)
//!
//! [`winter`] converts digests and elements to and from winter-crypto's types and provides
//! [`winter::GpuMerkleTree`], an implementation of winter-crypto's `VectorCommitment` for
//! `Rp64_256`, so a Winterfell prover commits with this crate's trees (on the GPU when one is
//! present) by naming it as its vector commitment.
//!
//! # Other hashers
//!
//! ```
//! use merkle::{Cpu, Digest, Felt, Hasher, MerkleTree, Poseidon2};
//!
//! # fn main() -> Result<(), merkle::Error> {
//! let leaves: Vec<Digest> = (0..8u32).map(|i| Digest::new([Felt::from(i); 4])).collect();
//! // miden-crypto's `MerkleTree::new` gives the same root for these leaves.
//! let tree = MerkleTree::build_with(Poseidon2, &Cpu, &leaves)?;
//! assert_eq!(tree.nodes()[7], Poseidon2::merge(&leaves[6], &leaves[7]));
//! let path = tree.prove(6)?;
//! MerkleTree::verify_with(Poseidon2, tree.root(), 6, &leaves[6], &path)?;
//! # Ok(()) }
//! ```
//!
//! # Cross-checking
//!
//! `tests/winter.rs` compares Rp64_256 and RpJive64_256 hashes, trees, paths and batch
//! proofs with winter-crypto on random inputs; `tests/miden.rs` compares Rpo256, Rpx256 and
//! Poseidon2 (constants, permutations, `merge`, `hash_elements`) with miden-crypto, and
//! Poseidon2 trees and paths with its `MerkleTree`; `tests/hashers.rs` checks trees, proofs
//! and caps of every hasher; `tests/gpu.rs` (ignored without a GPU) compares the CUDA backend
//! with the CPU one for every hasher.

#![cfg_attr(not(feature = "cuda"), forbid(unsafe_code))]

mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
mod digest;
mod error;
mod field;
mod hasher;
mod host;
pub mod jive;
#[cfg(feature = "cuda")]
mod multi_gpu;
pub mod poseidon2;
mod proof;
pub mod rescue;
pub mod rpo;
pub mod rpx;
#[cfg(feature = "cuda")]
pub mod source;
mod sponge;
mod tree;
#[cfg(feature = "winter")]
pub mod winter;

pub use cpu::Cpu;
#[cfg(feature = "cuda")]
pub use cuda::{Cuda, DeviceTrees};
pub use digest::Digest;
pub use error::Error;
pub use field::{Felt, MODULUS};
pub use hasher::Hasher;
pub use jive::RpJive64_256;
#[cfg(feature = "cuda")]
pub use multi_gpu::MultiGpu;
pub use poseidon2::Poseidon2;
pub use proof::BatchProof;
pub use rescue::Rp64_256;
pub use rpo::Rpo256;
pub use rpx::Rpx256;
pub use tree::{MerkleTree, flatten_rows, pad_leaves};

/// Builds Merkle trees and hashes rows with any [`Hasher`]: the operation every backend
/// provides.
///
/// The methods work on the node-array layout of [`MerkleTree`] so that the caller owns the
/// memory; most users call [`MerkleTree::build_with`], [`MerkleTree::build_batch_with`] and
/// [`MerkleTree::from_rows_with`] instead. Each `_with` method takes the hasher as a value
/// (`Rpo256`, `Poseidon2`, ...); the methods without the suffix are the same for Rp64_256.
pub trait MerkleBackend {
    /// A human-readable name ("cpu (16 threads)", "cuda: NVIDIA H100 ...").
    fn name(&self) -> String;

    /// `nodes` holds one or more trees of `leaves_per_tree` leaves each, back to back, each
    /// as `2 * leaves_per_tree` digests with its leaves in the upper half. Fills in every
    /// internal node (`nodes[1..leaves_per_tree]` of each tree), hashing with `hasher`.
    fn build_nodes_with<H: Hasher>(
        &self,
        hasher: H,
        nodes: &mut [Digest],
        leaves_per_tree: usize,
    ) -> Result<(), Error>;

    /// `out[j] = H::hash_elements(row j)` for the row-major matrix of `width` columns in
    /// `elements`; `out` has one digest per row.
    fn hash_rows_with<H: Hasher>(
        &self,
        hasher: H,
        elements: &[Felt],
        width: usize,
        out: &mut [Digest],
    ) -> Result<(), Error>;

    /// Fills `nodes` (the `2n` node array of one tree) from the rows of `elements`: the leaves
    /// are the row hashes, then every internal node. Backends may fuse the two steps.
    fn build_nodes_from_rows_with<H: Hasher>(
        &self,
        hasher: H,
        elements: &[Felt],
        width: usize,
        nodes: &mut [Digest],
    ) -> Result<(), Error> {
        let leaves = nodes.len() / 2;
        self.hash_rows_with(hasher, elements, width, &mut nodes[leaves..])?;
        self.build_nodes_with(hasher, nodes, leaves)
    }

    /// The node arrays of the trees of `leaves_per_tree` leaves over `leaves` (tree 0's
    /// leaves first), back to back, every node filled in: what [`MerkleTree::build_with`] and
    /// [`MerkleTree::build_batch_with`] keep. By default the arrays are written on the host
    /// and then given to [`MerkleBackend::build_nodes_with`]; the CUDA backend writes them
    /// while the GPU hashes.
    fn node_arrays_with<H: Hasher>(
        &self,
        hasher: H,
        leaves: &[Digest],
        leaves_per_tree: usize,
    ) -> Result<Vec<Digest>, Error> {
        check_batch(2 * leaves.len(), leaves_per_tree)?;
        let mut nodes = host::node_arrays(leaves, leaves_per_tree);
        self.build_nodes_with(hasher, &mut nodes, leaves_per_tree)?;
        Ok(nodes)
    }

    /// The node array of the tree over the rows of `elements` (`width` columns, a
    /// power-of-two number of rows, at least 2), every node filled in: what
    /// [`MerkleTree::from_rows_with`] keeps. By default the array is written on the host and
    /// then given to [`MerkleBackend::build_nodes_from_rows_with`]; the CUDA backend writes it
    /// while the GPU hashes.
    fn node_array_from_rows_with<H: Hasher>(
        &self,
        hasher: H,
        elements: &[Felt],
        width: usize,
    ) -> Result<Vec<Digest>, Error> {
        let leaves = tree_rows(elements.len(), width)?;
        let mut nodes = host::zero_digests(2 * leaves);
        self.build_nodes_from_rows_with(hasher, elements, width, &mut nodes)?;
        Ok(nodes)
    }

    /// The Merkle cap of height `height` (the `2^height` nodes of that level) of the tree over
    /// `leaves`, for callers that keep only the cap. Backends may skip bringing the other
    /// nodes back.
    fn build_cap_with<H: Hasher>(
        &self,
        hasher: H,
        leaves: &[Digest],
        height: u32,
    ) -> Result<Vec<Digest>, Error> {
        Ok(MerkleTree::build_with(hasher, self, leaves)?
            .cap(height)?
            .to_vec())
    }

    /// [`MerkleBackend::build_nodes_with`] for Rp64_256.
    fn build_nodes(&self, nodes: &mut [Digest], leaves_per_tree: usize) -> Result<(), Error> {
        self.build_nodes_with(Rp64_256, nodes, leaves_per_tree)
    }

    /// [`MerkleBackend::hash_rows_with`] for Rp64_256.
    fn hash_rows(&self, elements: &[Felt], width: usize, out: &mut [Digest]) -> Result<(), Error> {
        self.hash_rows_with(Rp64_256, elements, width, out)
    }

    /// [`MerkleBackend::build_nodes_from_rows_with`] for Rp64_256.
    fn build_nodes_from_rows(
        &self,
        elements: &[Felt],
        width: usize,
        nodes: &mut [Digest],
    ) -> Result<(), Error> {
        self.build_nodes_from_rows_with(Rp64_256, elements, width, nodes)
    }

    /// [`MerkleBackend::build_cap_with`] for Rp64_256.
    fn build_cap(&self, leaves: &[Digest], height: u32) -> Result<Vec<Digest>, Error> {
        self.build_cap_with(Rp64_256, leaves, height)
    }
}

/// Checks that a tree of `leaves` leaves can be built.
pub(crate) fn check_leaf_count(leaves: usize) -> Result<(), Error> {
    if leaves < 2 {
        return Err(Error::TooFewLeaves { leaves });
    }
    if !leaves.is_power_of_two() {
        return Err(Error::NotPowerOfTwo { leaves });
    }
    Ok(())
}

/// The leaves per tree when `leaves` leaves are split into `trees` equal trees.
pub(crate) fn leaves_per_tree(leaves: usize, trees: usize) -> Result<usize, Error> {
    if trees == 0 || leaves % trees != 0 {
        return Err(Error::UnevenBatch { leaves, trees });
    }
    check_leaf_count(leaves / trees)?;
    Ok(leaves / trees)
}

/// Checks a node array of whole trees of `leaves_per_tree` leaves.
pub(crate) fn check_batch(nodes: usize, leaves_per_tree: usize) -> Result<(), Error> {
    check_leaf_count(leaves_per_tree)?;
    // A tree of more than usize::MAX / 2 leaves has more nodes than a slice can hold (and
    // `2 * leaves_per_tree` would overflow): no node array is a whole number of such trees.
    let tree_nodes = leaves_per_tree.saturating_mul(2);
    if nodes == 0 || nodes % tree_nodes != 0 {
        return Err(Error::UnevenBatch {
            leaves: nodes / 2,
            trees: nodes.div_ceil(tree_nodes).max(1),
        });
    }
    Ok(())
}

/// Checks `len` elements against rows of `width` and an output of `rows` digests.
pub(crate) fn check_rows(len: usize, width: usize, rows: usize) -> Result<(), Error> {
    if width == 0 {
        return Err(Error::EmptyRows);
    }
    if len % width != 0 || len / width != rows {
        return Err(Error::PartialRow { len, width });
    }
    Ok(())
}

/// The number of rows of `len` elements of `width` columns, checked to be whole rows and a
/// valid leaf count for a tree.
pub(crate) fn tree_rows(len: usize, width: usize) -> Result<usize, Error> {
    check_rows(len, width, len / width.max(1))?;
    check_leaf_count(len / width)?;
    Ok(len / width)
}

/// A backend chosen at run time: the GPU when one is usable, the CPU otherwise.
#[derive(Debug, Clone)]
pub enum Backend {
    /// The CPU reference.
    Cpu(Cpu),
    /// The CUDA backend.
    #[cfg(feature = "cuda")]
    Cuda(Cuda),
}

impl Backend {
    /// The CUDA backend if a GPU, its driver and NVRTC are present; otherwise the CPU, saying
    /// why on standard error.
    pub fn best() -> Self {
        #[cfg(feature = "cuda")]
        match Cuda::new() {
            Ok(cuda) => return Backend::Cuda(cuda),
            Err(why) => eprintln!("merkle: using the CPU backend: {why}"),
        }
        Backend::Cpu(Cpu)
    }
}

/// Runs `$call` on the backend inside a [`Backend`].
macro_rules! on_backend {
    ($backend:expr, $inner:ident => $call:expr) => {
        match $backend {
            Backend::Cpu($inner) => $call,
            #[cfg(feature = "cuda")]
            Backend::Cuda($inner) => $call,
        }
    };
}

impl MerkleBackend for Backend {
    fn name(&self) -> String {
        on_backend!(self, b => b.name())
    }

    fn build_nodes_with<H: Hasher>(
        &self,
        hasher: H,
        nodes: &mut [Digest],
        leaves_per_tree: usize,
    ) -> Result<(), Error> {
        on_backend!(self, b => b.build_nodes_with(hasher, nodes, leaves_per_tree))
    }

    fn hash_rows_with<H: Hasher>(
        &self,
        hasher: H,
        elements: &[Felt],
        width: usize,
        out: &mut [Digest],
    ) -> Result<(), Error> {
        on_backend!(self, b => b.hash_rows_with(hasher, elements, width, out))
    }

    fn build_nodes_from_rows_with<H: Hasher>(
        &self,
        hasher: H,
        elements: &[Felt],
        width: usize,
        nodes: &mut [Digest],
    ) -> Result<(), Error> {
        on_backend!(self, b => b.build_nodes_from_rows_with(hasher, elements, width, nodes))
    }

    fn node_arrays_with<H: Hasher>(
        &self,
        hasher: H,
        leaves: &[Digest],
        leaves_per_tree: usize,
    ) -> Result<Vec<Digest>, Error> {
        on_backend!(self, b => b.node_arrays_with(hasher, leaves, leaves_per_tree))
    }

    fn node_array_from_rows_with<H: Hasher>(
        &self,
        hasher: H,
        elements: &[Felt],
        width: usize,
    ) -> Result<Vec<Digest>, Error> {
        on_backend!(self, b => b.node_array_from_rows_with(hasher, elements, width))
    }

    fn build_cap_with<H: Hasher>(
        &self,
        hasher: H,
        leaves: &[Digest],
        height: u32,
    ) -> Result<Vec<Digest>, Error> {
        on_backend!(self, b => b.build_cap_with(hasher, leaves, height))
    }
}

/// The README's code, compiled and run as a doctest so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
