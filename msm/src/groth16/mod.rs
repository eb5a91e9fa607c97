//! Groth16 proofs with ark-groth16 0.5's keys, every multi-scalar multiplication of the prover
//! on an [`MsmBackend`] (feature `groth16`).
//!
//! A Groth16 proof `(A, B, C)` costs five MSMs over the proving key's query vectors: A over
//! `a_query` (G1), B over `b_g1_query` (G1) and `b_g2_query` (G2), and for C the `h_query`
//! (G1, scalars the coefficients of the QAP quotient `h`) and the `l_query` (G1, scalars the
//! private witness). [`Groth16Prover`] runs them on the G1 and G2 backends it is given
//! ([`Cpu`](crate::Cpu), [`Cuda`](crate::Cuda) or [`Backend`](crate::Backend)), and
//! [`ResidentProver`] (feature `cuda`) on contexts that keep the five query vectors on the GPU
//! for many proofs. Everything else stays on the CPU, with ark-groth16's own code: the circuit's
//! synthesis (ark-relations), the witness map to the QAP (`LibsnarkReduction`, FFTs on all
//! cores through ark-groth16's `parallel` feature), which runs while the A, B and L MSMs run;
//! then the H MSM, and a few scalar multiplications that finish A, B and C.
//!
//! Given the same randomness `r` and `s` ([`Groth16Prover::prove`]) the proof is the one
//! ark-groth16's `Groth16::<E>::create_proof_with_reduction(circuit, key, r, s)` gives, bit for
//! bit, so ark-groth16's verifier accepts it; [`Groth16Prover::prove_random`] draws `r` and `s`
//! from an RNG in the order ark-groth16's `prove` does. Unlike ark-groth16, the prover checks
//! the witness ([`Error::Unsatisfied`]) and the key's sizes ([`Error::KeyMismatch`]) first.
//!
//! The curves are BLS12-381 and BN254 ([`Groth16Curve`]).
//!
//! # Example
//!
//! ```
//! use ark_bn254::{Bn254, Fr};
//! use ark_groth16::Groth16;
//! use msm::Cpu;
//! use msm::groth16::{Groth16Prover, SquareChain};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut rng = ark_std::test_rng();
//! // x_{i+1} = x_i^2 + x_i + 7 for 16 steps from x_0 = 3; the last value is public.
//! let circuit = SquareChain::new(Fr::from(3u64), Fr::from(7u64), 16, 1);
//! let key = Groth16::<Bn254>::generate_random_parameters_with_reduction(
//!     circuit.without_witness(),
//!     &mut rng,
//! )?;
//!
//! // G1 and G2 MSMs on the CPU here; `msm::Cuda::new()?` (twice) puts them on the GPU.
//! let prover = Groth16Prover::new(&key, Cpu::new(), Cpu::new());
//! let proof = prover.prove_random(circuit, &mut rng)?;
//!
//! let verifying_key = ark_groth16::prepare_verifying_key(&key.vk);
//! assert!(Groth16::<Bn254>::verify_proof(&verifying_key, &proof, &circuit.public_values())?);
//! # Ok(()) }
//! ```

mod chain;
#[cfg(feature = "cuda")]
mod resident;
mod witness;

use ark_ec::CurveGroup;
use ark_ec::pairing::Pairing;
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ff::Zero;
use ark_groth16::{Proof, ProvingKey};
use ark_relations::r1cs::ConstraintSynthesizer;

pub use chain::SquareChain;
#[cfg(feature = "cuda")]
pub use resident::ResidentProver;
use witness::Witness;

use crate::{Error, MsmBackend, MsmCurve};

/// A pairing the prover takes: `ark_bls12_381::Bls12_381` and `ark_bn254::Bn254`, whose G1 and
/// G2 are groups of [`MsmCurve`].
pub trait Groth16Curve:
    Pairing<
        G1 = Projective<Self::G1Config>,
        G1Affine = Affine<Self::G1Config>,
        G2 = Projective<Self::G2Config>,
        G2Affine = Affine<Self::G2Config>,
    > + sealed::Sealed
{
    /// G1's curve configuration.
    type G1Config: MsmCurve<ScalarField = Self::ScalarField>;
    /// G2's curve configuration.
    type G2Config: MsmCurve<ScalarField = Self::ScalarField>;
}

mod sealed {
    /// Keeps [`Groth16Curve`](super::Groth16Curve) to the pairings whose groups have kernels.
    pub trait Sealed {}
    impl Sealed for ark_bls12_381::Bls12_381 {}
    impl Sealed for ark_bn254::Bn254 {}
}

impl Groth16Curve for ark_bls12_381::Bls12_381 {
    type G1Config = ark_bls12_381::g1::Config;
    type G2Config = ark_bls12_381::g2::Config;
}

impl Groth16Curve for ark_bn254::Bn254 {
    type G1Config = ark_bn254::g1::Config;
    type G2Config = ark_bn254::g2::Config;
}

/// The proving methods of [`Groth16Prover`] and [`ResidentProver`]: `prove` and
/// `prove_random`, through [`prove`] with the prover's [`QueryMsms`] and key.
macro_rules! proof_methods {
    () => {
        /// A proof for `circuit` with the randomness `r` and `s`: the proof ark-groth16's
        /// `Groth16::<E>::create_proof_with_reduction(circuit, key, r, s)` gives. `r` and `s`
        /// must be uniformly random and secret for the proof to hide the witness.
        ///
        /// # Errors
        ///
        /// [`Error::Synthesis`](crate::Error::Synthesis) when the circuit fails to synthesize,
        /// [`Error::Unsatisfied`](crate::Error::Unsatisfied) when its witness breaks a
        /// constraint, [`Error::KeyMismatch`](crate::Error::KeyMismatch) when the key was made
        /// for a circuit of another shape, and the MSMs' errors
        /// ([`Error::Gpu`](crate::Error::Gpu), [`Error::OutOfMemory`](crate::Error::OutOfMemory),
        /// ...).
        pub fn prove<C: ark_relations::r1cs::ConstraintSynthesizer<E::ScalarField>>(
            &self,
            circuit: C,
            r: E::ScalarField,
            s: E::ScalarField,
        ) -> Result<ark_groth16::Proof<E>, crate::Error> {
            crate::groth16::prove(self.key, self, circuit, r, s)
        }

        /// A proof for `circuit` with `r` and `s` drawn from `rng` (in this order, as
        /// ark-groth16's `Groth16::<E>::prove` does).
        ///
        /// # Errors
        ///
        /// As `prove`.
        pub fn prove_random<
            C: ark_relations::r1cs::ConstraintSynthesizer<E::ScalarField>,
            R: ark_std::rand::Rng + ?Sized,
        >(
            &self,
            circuit: C,
            rng: &mut R,
        ) -> Result<ark_groth16::Proof<E>, crate::Error> {
            let r = <E::ScalarField as ark_ff::UniformRand>::rand(rng);
            let s = <E::ScalarField as ark_ff::UniformRand>::rand(rng);
            self.prove(circuit, r, s)
        }
    };
}
#[cfg(feature = "cuda")]
use proof_methods;

/// A Groth16 prover for one proving key whose MSMs run on the backends `G1` (the four G1
/// MSMs) and `G2` (B in G2). The bases go to the backend at every proof (a [`Cuda`](crate::Cuda)
/// backend uploads them each time); [`ResidentProver`] keeps them on the GPU.
///
/// The module's docs have an example.
#[derive(Debug, Clone)]
pub struct Groth16Prover<'k, E: Pairing, G1, G2> {
    key: &'k ProvingKey<E>,
    g1: G1,
    g2: G2,
}

impl<'k, E, G1, G2> Groth16Prover<'k, E, G1, G2>
where
    E: Groth16Curve,
    G1: MsmBackend<E::G1Config> + Sync,
    G2: MsmBackend<E::G2Config> + Sync,
{
    /// A prover for `key` (made by ark-groth16's setup for the circuits it will prove).
    pub fn new(key: &'k ProvingKey<E>, g1: G1, g2: G2) -> Self {
        Self { key, g1, g2 }
    }

    /// The proving key.
    pub fn key(&self) -> &'k ProvingKey<E> {
        self.key
    }

    proof_methods!();
}

/// A G1 query vector of the proving key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum G1Query {
    /// `a_query` after its first point.
    A,
    /// `b_g1_query` after its first point.
    BG1,
    /// `h_query`.
    H,
    /// `l_query`.
    L,
}

impl G1Query {
    /// The bases of this query's MSM (the first point of A's and B's queries, which the
    /// constant `1` multiplies, is added apart).
    fn bases<E: Pairing>(self, key: &ProvingKey<E>) -> &[E::G1Affine] {
        match self {
            G1Query::A => key.a_query.get(1..).unwrap_or_default(),
            G1Query::BG1 => key.b_g1_query.get(1..).unwrap_or_default(),
            G1Query::H => &key.h_query,
            G1Query::L => &key.l_query,
        }
    }
}

/// B's bases in G2: `b_g2_query` after its first point.
fn b_g2_bases<E: Pairing>(key: &ProvingKey<E>) -> &[E::G2Affine] {
    key.b_g2_query.get(1..).unwrap_or_default()
}

/// The five MSMs of a proof over one key's queries; callers never pass empty scalars.
trait QueryMsms<E: Groth16Curve>: Sync {
    /// The MSM of `scalars` over a G1 query.
    fn g1(&self, query: G1Query, scalars: &[E::ScalarField]) -> Result<E::G1, Error>;

    /// The MSM of `scalars` over B's G2 query.
    fn b_g2(&self, scalars: &[E::ScalarField]) -> Result<E::G2, Error>;
}

impl<E, G1, G2> QueryMsms<E> for Groth16Prover<'_, E, G1, G2>
where
    E: Groth16Curve,
    G1: MsmBackend<E::G1Config> + Sync,
    G2: MsmBackend<E::G2Config> + Sync,
{
    fn g1(&self, query: G1Query, scalars: &[E::ScalarField]) -> Result<E::G1, Error> {
        self.g1.msm(query.bases(self.key), scalars)
    }

    fn b_g2(&self, scalars: &[E::ScalarField]) -> Result<E::G2, Error> {
        self.g2.msm(b_g2_bases(self.key), scalars)
    }
}

/// The MSMs' sums.
struct QuerySums<E: Pairing> {
    a: E::G1,
    b_g1: E::G1,
    b_g2: E::G2,
    h: E::G1,
    l: E::G1,
}

/// A G1 MSM through `msms`, or zero for no scalars (a circuit without private variables has an
/// empty L query).
fn g1_msm<E: Groth16Curve>(
    msms: &impl QueryMsms<E>,
    query: G1Query,
    scalars: &[E::ScalarField],
) -> Result<E::G1, Error> {
    if scalars.is_empty() {
        return Ok(E::G1::zero());
    }
    msms.g1(query, scalars)
}

/// The proof of `circuit` for `key` with randomness `r` and `s`, the MSMs through `msms`.
fn prove<E: Groth16Curve, C: ConstraintSynthesizer<E::ScalarField>>(
    key: &ProvingKey<E>,
    msms: &impl QueryMsms<E>,
    circuit: C,
    r: E::ScalarField,
    s: E::ScalarField,
) -> Result<Proof<E>, Error> {
    let witness = Witness::synthesize(circuit)?;
    witness.check_key(key)?;
    let assignment = witness.assignment();
    // The witness map (FFTs on the CPU) beside the MSMs that do not need its result.
    let (h, sums) = rayon::join(
        || witness.qap_h(),
        || -> Result<QuerySums<E>, Error> {
            Ok(QuerySums {
                a: g1_msm(msms, G1Query::A, assignment)?,
                // ark-groth16 skips B in G1 when r is zero: C then takes r B = 0.
                b_g1: if r.is_zero() {
                    E::G1::zero()
                } else {
                    g1_msm(msms, G1Query::BG1, assignment)?
                },
                b_g2: if assignment.is_empty() {
                    E::G2::zero()
                } else {
                    msms.b_g2(assignment)?
                },
                h: E::G1::zero(),
                l: g1_msm(msms, G1Query::L, witness.private())?,
            })
        },
    );
    let h = h?;
    let mut sums = sums?;
    // h has one coefficient per domain point, the query one point fewer (the last
    // coefficient is zero).
    let h = h.get(..key.h_query.len()).unwrap_or(&h);
    sums.h = g1_msm(msms, G1Query::H, h)?;
    Ok(assemble(key, &sums, r, s))
}

/// The proof from the MSMs' sums (the key's sizes checked):
/// `A = alpha + a_0 + sum_A + r delta`, `B = beta + b_0 + sum_B + s delta` (in G1 and G2),
/// `C = s A + r B_1 - r s delta + sum_L + sum_H`.
fn assemble<E: Groth16Curve>(
    key: &ProvingKey<E>,
    sums: &QuerySums<E>,
    r: E::ScalarField,
    s: E::ScalarField,
) -> Proof<E> {
    let first = |query: &[E::G1Affine]| query.first().copied().unwrap_or_default();
    let a = key.delta_g1 * r + first(&key.a_query) + sums.a + key.vk.alpha_g1;
    let b_g1 = if r.is_zero() {
        E::G1::zero()
    } else {
        key.delta_g1 * s + first(&key.b_g1_query) + sums.b_g1 + key.beta_g1
    };
    let b_g2_first = key.b_g2_query.first().copied().unwrap_or_default();
    let b = key.vk.delta_g2 * s + b_g2_first + sums.b_g2 + key.vk.beta_g2;
    let c = a * s + b_g1 * r - key.delta_g1 * (r * s) + sums.l + sums.h;
    Proof {
        a: a.into_affine(),
        b: b.into_affine(),
        c: c.into_affine(),
    }
}
