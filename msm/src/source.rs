//! This crate's CUDA sources (`cuda/`), embedded for NVRTC: the MSM kernels, compiled once per
//! curve group, and the field and curve arithmetic they include.
//!
//! `msm.cu` is written once for any group: it includes `msm_group.cuh`, which each module
//! defines for its own group (the coordinate field `Field` and the scalar field's parameters
//! `ScalarField`), so the four modules share every line of device code.

use kernels::source::{COMMON, Header, Module};

/// `field.cuh`: Montgomery arithmetic over a prime field, a template over the field's
/// parameters (limb count, modulus, Montgomery constants).
pub const FIELD_HEADER: Header = Header {
    name: "field.cuh",
    text: include_str!("../cuda/field.cuh"),
};

/// `fp2.cuh`: the quadratic extension `Fp2 = Fp[u] / (u^2 + 1)` over any field of
/// `field.cuh`.
pub const FP2_HEADER: Header = Header {
    name: "fp2.cuh",
    text: include_str!("../cuda/fp2.cuh"),
};

/// `curve.cuh`: affine and XYZZ point arithmetic on `y^2 = x^3 + b` over any field of
/// `field.cuh` or `fp2.cuh`.
pub const CURVE_HEADER: Header = Header {
    name: "curve.cuh",
    text: include_str!("../cuda/curve.cuh"),
};

/// `bls12_381.cuh`: BLS12-381's base field and scalar field parameters.
pub const BLS12_381_HEADER: Header = Header {
    name: "bls12_381.cuh",
    text: include_str!("../cuda/bls12_381.cuh"),
};

/// `bn254.cuh`: BN254's base field and scalar field parameters.
pub const BN254_HEADER: Header = Header {
    name: "bn254.cuh",
    text: include_str!("../cuda/bn254.cuh"),
};

/// The MSM module of one group: `msm.cu` with an `msm_group.cuh` that includes the curve's
/// parameters header and names the coordinate field (`Fp<..>` or `Fp2<..>` over the curve's
/// `Fq` parameters) and the scalar field's parameters.
macro_rules! group_module {
    ($name:literal, $curve_header:literal, $field:literal, $scalar:literal) => {
        Module {
            name: $name,
            source: include_str!("../cuda/msm.cu"),
            headers: &[
                COMMON,
                FIELD_HEADER,
                FP2_HEADER,
                CURVE_HEADER,
                BLS12_381_HEADER,
                BN254_HEADER,
                Header {
                    name: "msm_group.cuh",
                    text: concat!(
                        "#pragma once\n#include \"",
                        $curve_header,
                        "\"\ntypedef ",
                        $field,
                        " Field;\ntypedef ",
                        $scalar,
                        " ScalarField;\n"
                    ),
                },
            ],
        }
    };
}

/// Multi-scalar multiplication on BLS12-381 G1: digit recoding, bucket sort, bucket
/// accumulation and reduction, shifted-base precomputation.
pub const MSM_BLS12_381_G1: Module = group_module!(
    "msm_bls12_381_g1",
    "bls12_381.cuh",
    "Fp<Bls12_381Fq>",
    "Bls12_381Fr"
);

/// The same kernels on BLS12-381 G2 (coordinates in `Fq2`).
pub const MSM_BLS12_381_G2: Module = group_module!(
    "msm_bls12_381_g2",
    "bls12_381.cuh",
    "Fp2<Bls12_381Fq>",
    "Bls12_381Fr"
);

/// The same kernels on BN254 G1.
pub const MSM_BN254_G1: Module =
    group_module!("msm_bn254_g1", "bn254.cuh", "Fp<Bn254Fq>", "Bn254Fr");

/// The same kernels on BN254 G2 (coordinates in `Fq2`).
pub const MSM_BN254_G2: Module =
    group_module!("msm_bn254_g2", "bn254.cuh", "Fp2<Bn254Fq>", "Bn254Fr");

/// Every kernel module of this crate (its NVRTC compile test walks this list).
pub const MODULES: &[Module] = &[
    MSM_BLS12_381_G1,
    MSM_BLS12_381_G2,
    MSM_BN254_G1,
    MSM_BN254_G2,
];
