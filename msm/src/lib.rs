//! Multi-scalar multiplication (MSM): `sum_i s_i * P_i` over arkworks 0.5 affine bases and
//! scalar-field scalars of `ark_bls12_381::{G1Affine, G2Affine}` and
//! `ark_bn254::{G1Affine, G2Affine}` (the groups that implement [`MsmCurve`]).
//!
//! It follows section "msm: BLS12-381 and BN254, G1 and G2" of the workspace's `SPEC.md`: the
//! result is equal,
//! as a group element, to arkworks' `VariableBaseMSM::msm` for every input, including zero
//! scalars, the point at infinity, repeated points, `P` and `-P` together, and lengths that
//! are not a multiple of any block size. Mismatched lengths and empty inputs are errors.
//!
//! Every MSM goes through the [`MsmBackend`] trait, generic over the group `C` (inferred from
//! the bases' type). [`Cpu`] implements it in every group with our own
//! Pippenger bucket method: signed-digit windows, buckets accumulated by batch-affine
//! additions (one field inversion shared by thousands of independent additions), bucket
//! reduction by running sums, all cores busy through rayon. [`Cpu`] documents the algorithm
//! and its window table.
//!
//! [`Cuda`] (feature `cuda`, on by default) runs the whole algorithm on the GPU, in every
//! group too (one CUDA source, compiled once per group; coordinates in `Fq` or `Fq2`): recoding
//! the scalars into signed digits, a sort of the digits by bucket (counting sorts through two
//! levels of partitions of the bucket keys), bucket accumulation
//! with XYZZ + affine additions in a load-balanced segmented reduction, bucket reduction by
//! running sums, and the window combination. [`MsmContext`] ([`Cuda::context`]) keeps the
//! bases on the GPU for many MSMs, optionally with precomputed shifted copies
//! ([`ContextOptions::shifted_bases`]) so that all windows share one set of buckets; it takes
//! batches ([`MsmContext::msm_batch`]) and scalars already on the device
//! ([`MsmContext::msm_device`]), and splits inputs larger than its scratch memory into
//! chunks. [`Backend`] picks the GPU when one is usable and falls back to the CPU. The `cuda`
//! module documents the GPU algorithm.
//!
//! The module `groth16` (feature `groth16`, off by default) proves Groth16 with ark-groth16
//! 0.5's keys on BLS12-381 and BN254, every MSM of the prover on the backends it is given (or
//! on contexts that keep the key's queries on the GPU), the rest on the CPU with ark-groth16's
//! own code; its proofs equal ark-groth16's bit for bit given the same randomness.
//!
//! # Dependencies
//!
//! arkworks 0.5 without default features, plus `std`: `ark-bls12-381` and `ark-bn254`
//! (`curve`), `ark-ec` and `ark-ff`. The field arithmetic is arkworks' own `Fq` and `Fq2`,
//! shared with arkworks' MSM, so the
//! comparison in the benchmark is between the two algorithms; arkworks' `asm` feature (used
//! only when built with `-C target-feature=+bmi2,+adx`) would speed up both alike. The tests
//! and benchmarks compare against `ark-ec` with its `parallel` feature.
//!
//! # Example
//!
//! ```
//! use ark_ec::{CurveGroup, PrimeGroup};
//! use msm::{Cpu, Error, Fr, G1Affine, G1Projective, MsmBackend};
//!
//! # fn main() -> Result<(), msm::Error> {
//! // Bases k * G for k = 1..=4, scalars 10, 20, 30, 40.
//! let g = G1Projective::generator();
//! let bases: Vec<G1Affine> = (1..=4u64).map(|k| (g * Fr::from(k)).into_affine()).collect();
//! let scalars: Vec<Fr> = (1..=4u64).map(|k| Fr::from(10 * k)).collect();
//!
//! let cpu = Cpu::new();
//! let sum = cpu.msm(&bases, &scalars)?;
//! // 10*1 + 20*2 + 30*3 + 40*4 = 300
//! assert_eq!(sum, g * Fr::from(300u64));
//!
//! // Several scalar sets over the same bases.
//! let doubled: Vec<Fr> = scalars.iter().map(|s| *s + s).collect();
//! let sums = cpu.msm_batch(&bases, &[&scalars, &doubled])?;
//! assert_eq!(sums[1], g * Fr::from(600u64));
//!
//! let error = cpu.msm(&bases, &scalars[..3]).unwrap_err();
//! assert!(matches!(error, Error::LengthMismatch { bases: 4, scalars: 3 }));
//! # Ok(()) }
//! ```
//!
//! # Cross-checking
//!
//! The test suite `tests/suite/` (one binary, a module per subject): `cpu` compares [`Cpu`] with
//! `ark_ec::VariableBaseMSM::msm` (arkworks' parallel build) in each of the four groups on
//! random inputs of many sizes, with proptest, and on every edge case above, and checks a known
//! answer computed with plain scalar multiplication. `gpu` (ignored without a GPU:
//! `cargo test --release -p gpu-crypto-msm --test suite gpu:: -- --include-ignored`) compares
//! [`Cuda`] with arkworks in each of the four groups on fresh random inputs up to 2^20 points
//! (2^18 in G2), every edge case, every window width with and without shifted bases, chunked
//! runs, batches and device scalars; `constants` checks the curve constants typed into the CUDA
//! headers against arkworks. The criterion group
//! `msm` (`benches/benches/msm.rs`) times ours beside arkworks on the CPU (the other groups
//! under `msm-bls12-381-g2`, `msm-bn254-g1` and `msm-bn254-g2`), and the GPU from
//! 2^10 to 2^24 points with and without the scalar upload; `examples/gpu_msm.rs` times one
//! size.

#![deny(unsafe_code)]

mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
mod curve;
mod error;
#[cfg(feature = "groth16")]
pub mod groth16;
#[cfg(feature = "cuda")]
pub mod source;

pub use ark_bls12_381::{Fr, G1Affine, G1Projective};
use ark_ec::short_weierstrass::{Affine, Projective};
pub use cpu::{Cpu, MAX_WINDOW_BITS};
#[cfg(feature = "cuda")]
pub use cuda::{
    Backend, ContextOptions, Cuda, DeviceScalars, MAX_GPU_WINDOW_BITS, MsmContext, MultiGpu,
    MultiGpuContext, default_gpu_window_bits,
};
pub use curve::MsmCurve;
pub use error::Error;

/// Computes multi-scalar multiplications over the curve group `C`: the operation every
/// backend provides.
///
/// [`Cpu`], [`Cuda`] and [`Backend`] implement it for every [`MsmCurve`]. `C` defaults to
/// BLS12-381 G1, and a call infers it from the bases' type.
///
/// Results are group elements in projective form; compare them with `==` (which compares
/// the points, not their coordinates) or normalize with `CurveGroup::into_affine`.
pub trait MsmBackend<C: MsmCurve = ark_bls12_381::g1::Config> {
    /// A human-readable name ("cpu (16 threads)", "cuda: NVIDIA H100 ...").
    fn name(&self) -> String;

    /// `sum_i scalars[i] * bases[i]`.
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] when the slices differ in length, [`Error::Empty`] when they
    /// are empty, [`Error::OutOfMemory`] when scratch memory cannot be had.
    fn msm(&self, bases: &[Affine<C>], scalars: &[C::ScalarField]) -> Result<Projective<C>, Error>;

    /// One MSM per scalar set, all over the same `bases`: `out[j] = sum_i sets[j][i] * bases[i]`.
    ///
    /// Backends that keep the bases on a device upload them once for the whole batch; the
    /// default runs [`MsmBackend::msm`] on each set.
    ///
    /// # Errors
    ///
    /// [`Error::BatchLengthMismatch`] when a set's length differs from the bases', otherwise
    /// as [`MsmBackend::msm`]. An empty batch gives an empty result.
    fn msm_batch(
        &self,
        bases: &[Affine<C>],
        scalar_sets: &[&[C::ScalarField]],
    ) -> Result<Vec<Projective<C>>, Error> {
        check_batch(bases.len(), scalar_sets)?;
        scalar_sets
            .iter()
            .map(|scalars| self.msm(bases, scalars))
            .collect()
    }
}

/// Checks the lengths of one MSM's inputs.
pub(crate) fn check_lengths(bases: usize, scalars: usize) -> Result<(), Error> {
    if bases != scalars {
        return Err(Error::LengthMismatch { bases, scalars });
    }
    if bases == 0 {
        return Err(Error::Empty);
    }
    Ok(())
}

/// Checks every set of a batch against the bases.
pub(crate) fn check_batch<S>(bases: usize, scalar_sets: &[&[S]]) -> Result<(), Error> {
    for (set, scalars) in scalar_sets.iter().enumerate() {
        if scalars.len() != bases {
            return Err(Error::BatchLengthMismatch {
                set,
                bases,
                scalars: scalars.len(),
            });
        }
    }
    if bases == 0 && !scalar_sets.is_empty() {
        return Err(Error::Empty);
    }
    Ok(())
}

/// The README's code, compiled and run as a doctest so that it stays true.
#[cfg(all(doctest, feature = "cuda"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
