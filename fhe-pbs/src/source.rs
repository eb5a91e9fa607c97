//! This crate's CUDA source (`cuda/fhe_pbs.cu`), embedded for NVRTC. The CUDA backend compiles
//! it once per parameter set, with the set's sizes defined (see [`crate::Cuda`]'s module docs).

use kernels::source::{COMMON, Module};

/// TFHE: key switch, modulus switch, decomposition, sample extraction, and the blind rotation
/// with its f64 negacyclic FFT, amortized (one block per bootstrap) and low latency (one
/// thread-block cluster per bootstrap, sm_90 and newer).
pub const FHE_PBS: Module = Module {
    name: "fhe_pbs",
    source: include_str!("../cuda/fhe_pbs.cu"),
    headers: &[COMMON],
};

/// Every kernel module of this crate (its NVRTC compile test walks this list).
pub const MODULES: &[Module] = &[FHE_PBS];
