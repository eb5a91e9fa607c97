//! Multi-scalar multiplication on BLS12-381 G1.
//!
//! **Status: not implemented yet.** This crate will provide Pippenger's bucket method for
//! `sum_i s_i * P_i` over `ark_bls12_381::G1Affine` bases and `Fr` scalars, with a CPU
//! reference and a CUDA backend behind one trait, and a context that keeps bases on the GPU.
//!
//! It follows section "msm: BLS12-381 G1" of the workspace's `SPEC.md`: equal as a group
//! element to arkworks' `VariableBaseMSM::msm` for every input.

#![forbid(unsafe_code)]
