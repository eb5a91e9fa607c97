//! This crate's CUDA source (`cuda/pir.cu`), embedded for NVRTC. It draws its ChaCha blocks
//! through prp's exported device header, so that the GPU's subsets are the CPU's.

use kernels::source::Module;

/// PIR hints: subsets by exact median selection, RMS24's gather, Plinko's scatter.
pub const PIR: Module = Module {
    name: "pir",
    source: include_str!("../cuda/pir.cu"),
    headers: prp::source::CHACHA_HEADERS,
};

/// Every kernel module of this crate (its NVRTC compile test walks this list).
pub const MODULES: &[Module] = &[PIR];
