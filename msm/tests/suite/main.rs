//! The msm test suite, one binary: its modules share their instantiations of the generic code,
//! so it compiles in about half the CPU time that one binary per module took:
//!
//! - `cpu`: the CPU backend against arkworks, in each group;
//! - `gpu`: the CUDA backend against arkworks and the CPU backend (needs a GPU: ignored without
//!   one, `-- --include-ignored` runs it);
//! - `groth16`: `msm::groth16` against ark-groth16 (with the `groth16` feature);
//! - `constants`: the curve constants of the CUDA headers against arkworks.
//!
//! `cargo test -p gpu-crypto-msm --test suite cpu::` runs one module.

mod common;
mod constants;
mod cpu;
mod gpu;
mod groth16;
