//! This crate's CUDA sources (`cuda/`), embedded for NVRTC: one module, `fhe_pbs.cu`, and the
//! headers it is split into by concern. The CUDA backend compiles it once per parameter set,
//! with the set's sizes defined (see [`crate::Cuda`]'s module docs).

use kernels::source::{COMMON, Header, Module};

/// The integer stages: the kernels' shapes, modulus switch, decomposition, rotation.
const INTEGER: Header = Header {
    name: "fhe_integer.cuh",
    text: include_str!("../cuda/fhe_integer.cuh"),
};

/// The key switch: by tiles, on the int8 tensor cores, by key columns.
const KEYSWITCH: Header = Header {
    name: "fhe_keyswitch.cuh",
    text: include_str!("../cuda/fhe_keyswitch.cuh"),
};

/// Complex f64 arithmetic and the shared-memory negacyclic FFTs.
const FFT: Header = Header {
    name: "fhe_fft.cuh",
    text: include_str!("../cuda/fhe_fft.cuh"),
};

/// The low-latency blind rotation on thread-block clusters.
const CLUSTER: Header = Header {
    name: "fhe_cluster.cuh",
    text: include_str!("../cuda/fhe_cluster.cuh"),
};

/// The multi-bit bootstrap's key bundles.
const MULTI_BIT: Header = Header {
    name: "fhe_multi_bit.cuh",
    text: include_str!("../cuda/fhe_multi_bit.cuh"),
};

/// TFHE: key switch, modulus switch, decomposition, sample extraction, and the blind rotation
/// with its f64 negacyclic FFT, amortized (one block per bootstrap) and low latency (one
/// thread-block cluster per bootstrap, sm_90 and newer).
pub const FHE_PBS: Module = Module {
    name: "fhe_pbs",
    source: include_str!("../cuda/fhe_pbs.cu"),
    headers: &[COMMON, INTEGER, KEYSWITCH, FFT, MULTI_BIT, CLUSTER],
};

/// Every kernel module of this crate (its NVRTC compile test walks this list).
pub const MODULES: &[Module] = &[FHE_PBS];
