//! This crate's CUDA sources (`cuda/`), embedded for NVRTC, and the device headers it exports
//! as it exports its Rust API: [`CHACHA_HEADER`], the ChaCha block function, which other
//! crates' kernels include (with [`CHACHA_HEADERS`]) to draw the same keystream as
//! [`crate::ChaCha`] (pir-hints does), and [`PERMUTATION_HEADER`], one value through
//! SwapOrNot rounds and Sometimes-Recurse stages (with [`PERMUTATION_HEADERS`]).

use kernels::source::{COMMON, Header, Module};

/// `chacha.cuh`: the ChaCha block function for any round count, and `ChaChaKey`.
pub const CHACHA_HEADER: Header = Header {
    name: "chacha.cuh",
    text: include_str!("../cuda/chacha.cuh"),
};

/// Everything a module that includes `chacha.cuh` needs: it and the header it includes.
pub const CHACHA_HEADERS: &[Header] = &[COMMON, CHACHA_HEADER];

/// `permutation.cuh`: one SwapOrNot round, and the stages of a Sometimes-Recurse permutation,
/// on one value (`Stage` laid out as this crate's CUDA backend lays it out).
pub const PERMUTATION_HEADER: Header = Header {
    name: "permutation.cuh",
    text: include_str!("../cuda/permutation.cuh"),
};

/// Everything a module that includes `permutation.cuh` needs.
pub const PERMUTATION_HEADERS: &[Header] = &[COMMON, CHACHA_HEADER, PERMUTATION_HEADER];

/// Bulk ChaCha keystream and keystream-digest kernels for 8, 12 and 20 rounds.
pub const CHACHA: Module = Module {
    name: "chacha",
    source: include_str!("../cuda/chacha.cu"),
    headers: CHACHA_HEADERS,
};

/// SwapOrNot, Sometimes-Recurse and multinomial-sampler kernels for 8, 12 and 20 rounds.
pub const PRP: Module = Module {
    name: "prp",
    source: include_str!("../cuda/prp.cu"),
    headers: PERMUTATION_HEADERS,
};

/// Every kernel module of this crate (its NVRTC compile test walks this list).
pub const MODULES: &[Module] = &[CHACHA, PRP];
