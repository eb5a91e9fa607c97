//! This crate's CUDA sources (`cuda/`), embedded for NVRTC: the MSM kernels and the
//! BLS12-381 field and curve arithmetic they include.

use kernels::source::{COMMON, Header, Module};

/// `bls12_381.cuh`: Montgomery arithmetic over the BLS12-381 base field and G1 point
/// arithmetic.
pub const BLS12_381_HEADER: Header = Header {
    name: "bls12_381.cuh",
    text: include_str!("../cuda/bls12_381.cuh"),
};

/// BLS12-381 G1 multi-scalar multiplication: digit recoding, bucket sort, bucket accumulation
/// and reduction, shifted-base precomputation.
pub const MSM: Module = Module {
    name: "msm",
    source: include_str!("../cuda/msm.cu"),
    headers: &[COMMON, BLS12_381_HEADER],
};

/// Every kernel module of this crate (its NVRTC compile test walks this list).
pub const MODULES: &[Module] = &[MSM];
