//! Rescue Prime (Rp64_256) hashing and Merkle trees.
//!
//! **Status: not implemented yet.** This crate will provide the Rp64_256 permutation over the
//! field p = 2^64 - 2^32 + 1, `merge` and `hash_elements`, Merkle tree construction and
//! proofs, with a CPU reference and a CUDA backend behind one trait.
//!
//! It follows section "merkle: Rescue Prime Rp64_256" of the workspace's `SPEC.md`:
//! bit-compatible with `winter-crypto` 0.13.1 `Rp64_256` and its `MerkleTree`, digests in
//! canonical form at the API.

#![forbid(unsafe_code)]
