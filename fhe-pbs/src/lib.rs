//! TFHE key switching and programmable bootstrapping on the 64-bit torus.
//!
//! **Status: not implemented yet.** This crate will provide LWE/GLWE/GGSW types, key
//! switching, and the programmable bootstrap (modulus switch, blind rotation by external
//! products, sample extraction) with a CPU reference and a CUDA backend behind one trait,
//! with bootstrap keys kept on the GPU.
//!
//! It follows section "fhe-pbs: TFHE on the 64-bit torus" of the workspace's `SPEC.md`:
//! tfhe-rs `core_crypto` conventions, `PARAM_MESSAGE_2_CARRY_2` and a small test set.

#![forbid(unsafe_code)]
