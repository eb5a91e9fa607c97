//! The CUDA C++ sources, embedded in the binary so that nothing is read from disk at run time.
//!
//! A [`Module`] is one `.cu` translation unit; its `#include "name.cuh"` lines resolve against
//! [`HEADERS`], which NVRTC receives in memory with every compilation.

/// One CUDA C++ translation unit, compiled by NVRTC as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Module {
    /// Short name, used in error messages and cache file names (`chacha`).
    pub name: &'static str,
    /// The `.cu` source text.
    pub source: &'static str,
}

/// The shared headers every module may include, as `(include name, text)`.
pub const HEADERS: &[(&str, &str)] = &[
    ("common.cuh", include_str!("../cuda/common.cuh")),
    ("chacha.cuh", include_str!("../cuda/chacha.cuh")),
    ("bls12_381.cuh", include_str!("../cuda/bls12_381.cuh")),
];

/// Bulk ChaCha keystream and keystream-digest kernels for 8, 12 and 20 rounds.
pub const CHACHA: Module = Module {
    name: "chacha",
    source: include_str!("../cuda/chacha.cu"),
};

/// SwapOrNot, Sometimes-Recurse and multinomial-sampler kernels for 8, 12 and 20 rounds.
pub const PRP: Module = Module {
    name: "prp",
    source: include_str!("../cuda/prp.cu"),
};

/// Rescue Prime Rp64_256: Merkle tree levels and row hashing.
pub const MERKLE: Module = Module {
    name: "merkle",
    source: include_str!("../cuda/merkle.cu"),
};

/// PIR hints: subsets by exact median selection, RMS24's gather, Plinko's scatter.
pub const PIR: Module = Module {
    name: "pir",
    source: include_str!("../cuda/pir.cu"),
};

/// BLS12-381 G1 multi-scalar multiplication: digit recoding, bucket sort, bucket accumulation
/// and reduction, shifted-base precomputation.
pub const MSM: Module = Module {
    name: "msm",
    source: include_str!("../cuda/msm.cu"),
};

/// TFHE (fhe-pbs): key switch, modulus switch, decomposition, sample extraction, and the
/// blind rotation with its f64 negacyclic FFT, amortized (one block per bootstrap) and low
/// latency (one thread-block cluster per bootstrap, sm_90 and newer).
pub const FHE_PBS: Module = Module {
    name: "fhe_pbs",
    source: include_str!("../cuda/fhe_pbs.cu"),
};

/// Every kernel module of the workspace (the NVRTC compile test walks this list).
pub const MODULES: &[Module] = &[CHACHA, PRP, MERKLE, PIR, MSM, FHE_PBS];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every quoted include of every module and header names an embedded header.
    #[test]
    fn includes_resolve_to_embedded_headers() {
        let texts = MODULES
            .iter()
            .map(|m| (m.name, m.source))
            .chain(HEADERS.iter().copied());
        for (name, text) in texts {
            for line in text.lines() {
                let Some(rest) = line.trim_start().strip_prefix("#include") else {
                    continue;
                };
                let include = rest.trim().trim_matches('"');
                assert!(
                    HEADERS.iter().any(|(h, _)| *h == include),
                    "{name} includes {include}, which is not in HEADERS"
                );
            }
        }
    }

    #[test]
    fn module_names_are_unique() {
        for (i, a) in MODULES.iter().enumerate() {
            assert!(MODULES[i + 1..].iter().all(|b| b.name != a.name));
        }
    }
}
