//! The [`Hasher`] trait: what trees, proofs and backends need from a hash.

use std::fmt::Debug;

use crate::digest::Digest;
use crate::field::Felt;

/// A 2-to-1 hash with a sponge over Goldilocks elements, one of this crate's five:
/// [`Rp64_256`](crate::Rp64_256) and [`RpJive64_256`](crate::RpJive64_256) (winter-crypto
/// 0.13.1), [`Rpo256`](crate::Rpo256), [`Rpx256`](crate::Rpx256) and
/// [`Poseidon2`](crate::Poseidon2) (miden-crypto 0.28.1).
///
/// Hashers are unit values: [`MerkleTree::build_with`](crate::MerkleTree::build_with) and
/// the backends' `_with` methods take one to say which hash to use. The trait is sealed:
/// every hasher has CUDA kernels beside its CPU code.
pub trait Hasher: sealed::Sealed + Copy + Default + Debug + Eq + Send + Sync + 'static {
    /// The name the reference library gives the hash (`"Rpo256"`).
    const NAME: &'static str;

    /// The hash of two digests, as a Merkle tree's parent of `left` and `right`.
    fn merge(left: &Digest, right: &Digest) -> Digest;

    /// The hash of a sequence of field elements (a row of a matrix, for leaf hashing).
    fn hash_elements(elements: &[Felt]) -> Digest;
}

/// Keeps [`Hasher`] to this crate's hashes, and carries what the CUDA backend needs.
pub(crate) mod sealed {
    /// Implemented by the crate's hashers only.
    pub trait Sealed {
        /// How the CUDA backend runs this hash.
        #[cfg(feature = "cuda")]
        const DEVICE: crate::cuda::DeviceHasher;
    }
}
