//! This crate's CUDA source (`cuda/merkle.cu`), embedded for NVRTC.

use kernels::source::{COMMON, Module};

/// Rescue Prime Rp64_256: Merkle tree levels and row hashing.
pub const MERKLE: Module = Module {
    name: "merkle",
    source: include_str!("../cuda/merkle.cu"),
    headers: &[COMMON],
};

/// Every kernel module of this crate (its NVRTC compile test walks this list).
pub const MODULES: &[Module] = &[MERKLE];
