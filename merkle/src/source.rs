//! This crate's CUDA sources (`cuda/`), embedded for NVRTC.

use kernels::source::{COMMON, Header, Module};

/// Goldilocks arithmetic on Montgomery forms and the power maps `x^7`, `x^(1/7)`.
pub const GOLDILOCKS_HEADER: Header = Header {
    name: "goldilocks.cuh",
    text: include_str!("../cuda/goldilocks.cuh"),
};

/// Digests, the constants parameter, and for Poseidon2 miden-crypto's sponge and the
/// one-thread-per-hash kernel bodies.
pub const SPONGE_HEADER: Header = Header {
    name: "sponge.cuh",
    text: include_str!("../cuda/sponge.cuh"),
};

/// The Rescue-Prime permutations (Rp64_256, Rpo256, Rpx256, RpJive64_256) spread over lanes
/// (quads and half warps), and their kernels.
pub const RESCUE_LANES_HEADER: Header = Header {
    name: "rescue_lanes.cuh",
    text: include_str!("../cuda/rescue_lanes.cuh"),
};

/// Rescue Prime Rp64_256: Merkle tree levels and row hashing.
pub const MERKLE: Module = Module {
    name: "merkle",
    source: include_str!("../cuda/merkle.cu"),
    headers: &[
        COMMON,
        GOLDILOCKS_HEADER,
        SPONGE_HEADER,
        RESCUE_LANES_HEADER,
    ],
};

/// Rpo256: Merkle tree levels and row hashing.
pub const RPO: Module = Module {
    name: "merkle_rpo256",
    source: include_str!("../cuda/rpo.cu"),
    headers: &[
        COMMON,
        GOLDILOCKS_HEADER,
        SPONGE_HEADER,
        RESCUE_LANES_HEADER,
    ],
};

/// Rpx256: Merkle tree levels and row hashing.
pub const RPX: Module = Module {
    name: "merkle_rpx256",
    source: include_str!("../cuda/rpx.cu"),
    headers: &[
        COMMON,
        GOLDILOCKS_HEADER,
        SPONGE_HEADER,
        RESCUE_LANES_HEADER,
    ],
};

/// Poseidon2 over Goldilocks: Merkle tree levels and row hashing.
pub const POSEIDON2: Module = Module {
    name: "merkle_poseidon2",
    source: include_str!("../cuda/poseidon2.cu"),
    headers: &[COMMON, GOLDILOCKS_HEADER, SPONGE_HEADER],
};

/// RpJive64_256: Merkle tree levels and row hashing.
pub const JIVE: Module = Module {
    name: "merkle_rpjive64_256",
    source: include_str!("../cuda/jive.cu"),
    headers: &[
        COMMON,
        GOLDILOCKS_HEADER,
        SPONGE_HEADER,
        RESCUE_LANES_HEADER,
    ],
};

/// Every kernel module of this crate (its NVRTC compile test walks this list).
pub const MODULES: &[Module] = &[MERKLE, RPO, RPX, POSEIDON2, JIVE];
