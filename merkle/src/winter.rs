//! Interoperability with winter-crypto 0.13 (feature `winter`).
//!
//! - [`Felt`] converts to and from winter-math's `f64::BaseElement` (`From` both ways), and
//!   [`Digest`] to and from winter-crypto's `Rp64_256` digest ([`WinterDigest`]) with
//!   [`Digest::to_winter`] / [`Digest::from_winter`]. Winter keeps Montgomery form inside;
//!   ours is canonical.
//! - [`BatchProof`] converts to and from `BatchMerkleProof<Rp64_256>` (same layout).
//! - [`GpuMerkleTree`] implements `VectorCommitment<Rp64_256>`, so a Winterfell prover can
//!   commit with this crate's trees: name it as the prover's vector commitment type.
//!
//! ```
//! use merkle::winter::GpuMerkleTree;
//! use winter_crypto::{Digest as _, ElementHasher, VectorCommitment, hashers::Rp64_256};
//! use winter_math::fields::f64::BaseElement;
//!
//! let leaves: Vec<_> = (0..8u64).map(|i| Rp64_256::hash_elements(&[BaseElement::new(i)])).collect();
//! let ours = GpuMerkleTree::new(leaves.clone())?;
//! let theirs = winter_crypto::MerkleTree::<Rp64_256>::new(leaves).expect("8 leaves");
//! assert_eq!(ours.commitment().as_bytes(), theirs.root().as_bytes());
//! # Ok::<(), merkle::Error>(())
//! ```

use std::sync::OnceLock;

use winter_crypto::hashers::Rp64_256;
use winter_crypto::{BatchMerkleProof, Hasher, VectorCommitment};
use winter_math::fields::f64::BaseElement;

use crate::Backend;
use crate::digest::Digest;
use crate::error::Error;
use crate::field::Felt;
use crate::proof::BatchProof;
use crate::tree::MerkleTree;

/// winter-crypto's `Rp64_256` digest type (its `ElementDigest`, which the crate does not
/// export by name).
pub type WinterDigest = <Rp64_256 as Hasher>::Digest;

impl From<Felt> for BaseElement {
    fn from(value: Felt) -> BaseElement {
        BaseElement::new(value.as_u64())
    }
}

impl From<BaseElement> for Felt {
    fn from(value: BaseElement) -> Felt {
        Felt::new(value.as_int())
    }
}

impl Digest {
    /// The same digest as winter-crypto's `Rp64_256` digest type.
    pub fn to_winter(self) -> WinterDigest {
        WinterDigest::new(self.elements().map(BaseElement::from))
    }

    /// A winter-crypto `Rp64_256` digest in canonical form.
    pub fn from_winter(digest: WinterDigest) -> Digest {
        let elements: [BaseElement; 4] = digest.into();
        Digest::new(elements.map(Felt::from))
    }
}

impl BatchProof {
    /// The same proof as a winter-crypto `BatchMerkleProof` (trees of depth up to 255, which
    /// covers every tree that fits in memory).
    pub fn to_winter(&self) -> BatchMerkleProof<Rp64_256> {
        BatchMerkleProof {
            depth: u8::try_from(self.depth).unwrap_or(u8::MAX),
            nodes: self
                .nodes
                .iter()
                .map(|group| to_winter_all(group))
                .collect(),
        }
    }

    /// A winter-crypto `BatchMerkleProof` in this crate's form.
    pub fn from_winter(proof: &BatchMerkleProof<Rp64_256>) -> BatchProof {
        BatchProof {
            depth: proof.depth.into(),
            nodes: proof
                .nodes
                .iter()
                .map(|group| from_winter_all(group))
                .collect(),
        }
    }
}

/// The leaves of a tree of depth `depth`, or 0 when `2^depth` does not fit a `usize` (a
/// malformed proof, which then matches no domain).
fn domain_len(depth: usize) -> usize {
    u32::try_from(depth)
        .ok()
        .and_then(|depth| 1usize.checked_shl(depth))
        .unwrap_or(0)
}

fn to_winter_all(digests: &[Digest]) -> Vec<WinterDigest> {
    digests.iter().map(|digest| digest.to_winter()).collect()
}

fn from_winter_all(digests: &[WinterDigest]) -> Vec<Digest> {
    digests
        .iter()
        .map(|&digest| Digest::from_winter(digest))
        .collect()
}

/// How [`GpuMerkleTree`] builds: on a given backend, or (the default) on one chosen once per
/// process with [`Backend::best`].
#[derive(Debug, Clone, Default)]
pub struct CommitOptions {
    /// The backend to build on; `None` for the shared best one.
    pub backend: Option<Backend>,
}

fn shared_backend() -> &'static Backend {
    static BACKEND: OnceLock<Backend> = OnceLock::new();
    BACKEND.get_or_init(Backend::best)
}

/// A Merkle tree built by this crate that winter-crypto (and so Winterfell) can use as its
/// vector commitment for `Rp64_256`. Commitments, paths and batch proofs are exactly those of
/// `winter_crypto::MerkleTree<Rp64_256>`.
#[derive(Debug, Clone)]
pub struct GpuMerkleTree {
    tree: MerkleTree,
}

impl GpuMerkleTree {
    /// The underlying tree.
    pub fn tree(&self) -> &MerkleTree {
        &self.tree
    }
}

impl VectorCommitment<Rp64_256> for GpuMerkleTree {
    type Options = CommitOptions;
    type Proof = Vec<WinterDigest>;
    type MultiProof = BatchMerkleProof<Rp64_256>;
    type Error = Error;

    fn with_options(items: Vec<WinterDigest>, options: CommitOptions) -> Result<Self, Error> {
        let leaves = from_winter_all(&items);
        let backend: &Backend = match &options.backend {
            Some(backend) => backend,
            None => shared_backend(),
        };
        Ok(GpuMerkleTree {
            tree: MerkleTree::build(backend, &leaves)?,
        })
    }

    fn commitment(&self) -> WinterDigest {
        self.tree.root().to_winter()
    }

    fn domain_len(&self) -> usize {
        self.tree.leaf_count()
    }

    /// `2^depth` for a path of `depth` digests; 0 (no tree) for a path of 64 or more, which no
    /// tree in memory has.
    fn get_proof_domain_len(proof: &Self::Proof) -> usize {
        domain_len(proof.len())
    }

    /// `2^depth`, or 0 for a depth of 64 or more (as [`Self::get_proof_domain_len`]).
    fn get_multiproof_domain_len(proof: &Self::MultiProof) -> usize {
        domain_len(proof.depth.into())
    }

    fn open(&self, index: usize) -> Result<(WinterDigest, Self::Proof), Error> {
        let path = self.tree.prove(index)?;
        Ok((self.tree.leaves()[index].to_winter(), to_winter_all(&path)))
    }

    fn open_many(&self, indexes: &[usize]) -> Result<(Vec<WinterDigest>, Self::MultiProof), Error> {
        let proof = self.tree.prove_batch(indexes)?;
        let leaves = indexes
            .iter()
            .map(|&i| self.tree.leaves()[i].to_winter())
            .collect();
        Ok((leaves, proof.to_winter()))
    }

    fn verify(
        commitment: WinterDigest,
        index: usize,
        item: WinterDigest,
        proof: &Self::Proof,
    ) -> Result<(), Error> {
        let root = Digest::from_winter(commitment);
        MerkleTree::verify(
            &root,
            index,
            &Digest::from_winter(item),
            &from_winter_all(proof),
        )
    }

    fn verify_many(
        commitment: WinterDigest,
        indexes: &[usize],
        items: &[WinterDigest],
        proof: &Self::MultiProof,
    ) -> Result<(), Error> {
        let root = Digest::from_winter(commitment);
        let proof = BatchProof::from_winter(proof);
        MerkleTree::verify_batch(&root, indexes, &from_winter_all(items), &proof)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_lengths_of_any_proof_depth() {
        let path = vec![Digest::default().to_winter(); 64];
        assert_eq!(GpuMerkleTree::get_proof_domain_len(&path[..3].to_vec()), 8);
        assert_eq!(
            GpuMerkleTree::get_proof_domain_len(&path[..63].to_vec()),
            1 << 63
        );
        assert_eq!(GpuMerkleTree::get_proof_domain_len(&path), 0);
        for (depth, leaves) in [(0u8, 1usize), (5, 32), (64, 0), (u8::MAX, 0)] {
            let proof = BatchMerkleProof::<Rp64_256> {
                depth,
                nodes: Vec::new(),
            };
            assert_eq!(GpuMerkleTree::get_multiproof_domain_len(&proof), leaves);
        }
    }
}
