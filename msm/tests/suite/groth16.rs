//! `msm::groth16` against ark-groth16 0.5 on BLS12-381 and BN254: with the same randomness our
//! proofs equal ark-groth16's bit for bit and its verifier accepts them (and refuses them with
//! a wrong public input), for 0 to 5 public inputs and 1 to 1,024 constraints; unsatisfied
//! witnesses, missing witnesses, keys of other circuits and failing backends are errors.
//!
//! The `gpu` module (ignored without a GPU) runs the same on the CUDA backend and on resident
//! query vectors at 2^12 to 2^16 constraints, on fresh random inputs:
//! `cargo test --release -p gpu-crypto-msm --features groth16 --test suite groth16:: --
//! --include-ignored`.
#![cfg(feature = "groth16")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ff::{One, UniformRand, Zero};
use ark_groth16::{Groth16, Proof, ProvingKey};
use ark_relations::r1cs::{
    ConstraintSynthesizer, ConstraintSystemRef, LinearCombination, SynthesisError,
};
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use msm::groth16::{Groth16Curve, Groth16Prover, SquareChain};
use msm::{Cpu, Error, MsmBackend, MsmCurve};
use proptest::prelude::*;

type Bls = ark_bls12_381::Bls12_381;
type Bn = ark_bn254::Bn254;

/// A chain of `steps` constraints with `public` public inputs from a random start and
/// constant, and ark-groth16's key for its shape.
fn chain_and_key<E: Groth16Curve>(
    steps: usize,
    public: usize,
    rng: &mut impl Rng,
) -> (SquareChain<E::ScalarField>, ProvingKey<E>) {
    let circuit = SquareChain::new(
        E::ScalarField::rand(rng),
        E::ScalarField::rand(rng),
        steps,
        public,
    );
    let key =
        Groth16::<E>::generate_random_parameters_with_reduction(circuit.without_witness(), rng)
            .unwrap();
    (circuit, key)
}

/// ark-groth16's proof with randomness `r` and `s`.
fn arkworks<E: Groth16Curve, C: ConstraintSynthesizer<E::ScalarField>>(
    circuit: C,
    key: &ProvingKey<E>,
    r: E::ScalarField,
    s: E::ScalarField,
) -> Proof<E> {
    Groth16::<E>::create_proof_with_reduction(circuit, key, r, s).unwrap()
}

/// Whether ark-groth16's verifier accepts `proof` for `inputs` (an error counts as no).
fn verifies<E: Groth16Curve>(
    key: &ProvingKey<E>,
    proof: &Proof<E>,
    inputs: &[E::ScalarField],
) -> bool {
    let prepared = ark_groth16::prepare_verifying_key(&key.vk);
    Groth16::<E>::verify_proof(&prepared, proof, inputs).unwrap_or(false)
}

/// Our proof equals ark-groth16's for random and zero randomness, verifies, and fails with a
/// changed or an extra public input.
fn check_chain<E: Groth16Curve>(steps: usize, public: usize, seed: u64) {
    let rng = &mut StdRng::seed_from_u64(seed);
    let (circuit, key) = chain_and_key::<E>(steps, public, rng);
    let prover = Groth16Prover::new(&key, Cpu::new(), Cpu::new());
    let inputs = circuit.public_values();
    assert_eq!(inputs.len(), public.min(steps));
    let case = format!("{steps} steps, {public} public, seed {seed}");

    let (r, s) = (E::ScalarField::rand(rng), E::ScalarField::rand(rng));
    let proof = prover.prove(circuit, r, s).unwrap();
    assert_eq!(proof, arkworks(circuit, &key, r, s), "{case}");
    assert!(verifies(&key, &proof, &inputs), "{case}");
    for i in 0..inputs.len() {
        let mut wrong = inputs.clone();
        wrong[i] += E::ScalarField::one();
        assert!(!verifies(&key, &proof, &wrong), "{case}: input {i} changed");
    }
    let extra = [inputs.as_slice(), &[E::ScalarField::one()]].concat();
    assert!(!verifies(&key, &proof, &extra), "{case}: an extra input");

    // No randomness (ark-groth16 then skips B in G1), and r or s alone zero (on the small
    // shapes: CI runs these tests on 2 cores).
    let zero = E::ScalarField::zero();
    let zeros = if steps < 100 {
        &[(zero, zero), (zero, s), (r, zero)][..]
    } else {
        &[]
    };
    for &(r, s) in zeros {
        let proof = prover.prove(circuit, r, s).unwrap();
        assert_eq!(
            proof,
            arkworks(circuit, &key, r, s),
            "{case}: r = 0 or s = 0"
        );
        assert!(verifies(&key, &proof, &inputs), "{case}");
    }
}

/// Shapes: one constraint, domains just full (62 + 2 = 64, 510 + 2 = 512) and one past a
/// power of two (63 + 2 = 65), 0 to 5 public inputs.
const SHAPES: [(usize, usize); 7] = [(1, 0), (1, 1), (2, 5), (62, 1), (63, 1), (200, 5), (510, 1)];

#[test]
fn bls12_381_proofs_equal_arkworks_and_verify() {
    for (i, (steps, public)) in SHAPES.into_iter().enumerate() {
        check_chain::<Bls>(steps, public, i as u64);
    }
}

#[test]
fn bn254_proofs_equal_arkworks_and_verify() {
    for (i, (steps, public)) in SHAPES.into_iter().enumerate() {
        check_chain::<Bn>(steps, public, 100 + i as u64);
    }
}

/// `prove_random` draws `r` and `s` as ark-groth16 does.
fn check_random_randomness<E: Groth16Curve>() {
    let (circuit, key) = chain_and_key::<E>(50, 2, &mut StdRng::seed_from_u64(7));
    let ours = Groth16Prover::new(&key, Cpu::new(), Cpu::new())
        .prove_random(circuit, &mut StdRng::seed_from_u64(8))
        .unwrap();
    let theirs = Groth16::<E>::create_random_proof_with_reduction(
        circuit,
        &key,
        &mut StdRng::seed_from_u64(8),
    )
    .unwrap();
    assert_eq!(ours, theirs);
}

#[test]
fn random_randomness_is_drawn_as_arkworks_draws_it() {
    check_random_randomness::<Bls>();
    check_random_randomness::<Bn>();
}

/// `x_i * x_i = y_i` for `i < squares`, `x_i` private and `y_i` public; `y_wrong` (if any)
/// is assigned `x^2 + 1`. Without private variables when `x_public`: an empty L query.
#[derive(Clone, Copy)]
struct Squares {
    squares: usize,
    wrong: Option<usize>,
    x_public: bool,
}

impl<F: ark_ff::PrimeField> ConstraintSynthesizer<F> for Squares {
    fn generate_constraints(self, cs: ConstraintSystemRef<F>) -> Result<(), SynthesisError> {
        for i in 0..self.squares {
            let x = F::from(i as u64 + 2);
            let y = x.square() + F::from(u64::from(self.wrong == Some(i)));
            let x = if self.x_public {
                cs.new_input_variable(|| Ok(x))?
            } else {
                cs.new_witness_variable(|| Ok(x))?
            };
            let y = cs.new_input_variable(|| Ok(y))?;
            cs.enforce_constraint(x.into(), x.into(), LinearCombination::from(y))?;
        }
        Ok(())
    }
}

impl Squares {
    fn public_values<F: ark_ff::PrimeField>(&self) -> Vec<F> {
        (0..self.squares)
            .flat_map(|i| {
                let x = F::from(i as u64 + 2);
                let y = x.square();
                if self.x_public { vec![x, y] } else { vec![y] }
            })
            .collect()
    }
}

fn check_errors<E: Groth16Curve>() {
    let rng = &mut StdRng::seed_from_u64(11);
    let (r, s) = (E::ScalarField::rand(rng), E::ScalarField::rand(rng));

    // An unsatisfied constraint, named by its index.
    let honest = Squares {
        squares: 9,
        wrong: None,
        x_public: false,
    };
    let key = Groth16::<E>::generate_random_parameters_with_reduction(honest, rng).unwrap();
    let prover = Groth16Prover::new(&key, Cpu::new(), Cpu::new());
    let proof = prover.prove(honest, r, s).unwrap();
    assert!(verifies(&key, &proof, &honest.public_values()));
    for wrong in [0, 4, 8] {
        let broken = Squares {
            wrong: Some(wrong),
            ..honest
        };
        let error = prover.prove(broken, r, s).unwrap_err();
        assert!(
            matches!(error, Error::Unsatisfied { constraint } if constraint == wrong),
            "{error}"
        );
    }

    // No witness: arkworks' synthesis error.
    let (circuit, key) = chain_and_key::<E>(64, 1, rng);
    let prover = Groth16Prover::new(&key, Cpu::new(), Cpu::new());
    let error = prover.prove(circuit.without_witness(), r, s).unwrap_err();
    assert!(
        matches!(error, Error::Synthesis(SynthesisError::AssignmentMissing)),
        "{error}"
    );

    // Keys of other shapes: one step more (66 variables in the key against 67), one public
    // input more (one private variable fewer).
    let longer = SquareChain {
        steps: 65,
        ..circuit
    };
    let error = prover.prove(longer, r, s).unwrap_err();
    assert!(
        matches!(
            error,
            Error::KeyMismatch {
                query: "a_query",
                key: 66,
                circuit: 67
            }
        ),
        "{error}"
    );
    let more_public = SquareChain {
        public_inputs: 2,
        ..circuit
    };
    let error = prover.prove(more_public, r, s).unwrap_err();
    assert!(
        matches!(
            error,
            Error::KeyMismatch {
                query: "l_query",
                key: 64,
                circuit: 63
            }
        ),
        "{error}"
    );
    assert!(
        error.to_string().contains("l_query has 64 points"),
        "{error}"
    );
}

#[test]
fn unsatisfied_missing_witnesses_and_other_keys_are_errors() {
    check_errors::<Bls>();
    check_errors::<Bn>();
}

/// No private variables: the L query is empty and its MSM skipped.
fn check_public_only<E: Groth16Curve>() {
    let rng = &mut StdRng::seed_from_u64(12);
    let circuit = Squares {
        squares: 5,
        wrong: None,
        x_public: true,
    };
    let key = Groth16::<E>::generate_random_parameters_with_reduction(circuit, rng).unwrap();
    assert!(key.l_query.is_empty());
    let (r, s) = (E::ScalarField::rand(rng), E::ScalarField::rand(rng));
    let proof = Groth16Prover::new(&key, Cpu::new(), Cpu::new())
        .prove(circuit, r, s)
        .unwrap();
    assert_eq!(proof, arkworks(circuit, &key, r, s));
    assert!(verifies(&key, &proof, &circuit.public_values()));
}

#[test]
fn circuits_without_private_variables_prove() {
    check_public_only::<Bls>();
    check_public_only::<Bn>();
}

/// A backend that fails every MSM as a GPU out of memory would.
struct OutOfMemory;

impl<C: MsmCurve> MsmBackend<C> for OutOfMemory {
    fn name(&self) -> String {
        "out of memory".into()
    }

    fn msm(&self, bases: &[Affine<C>], _: &[C::ScalarField]) -> Result<Projective<C>, Error> {
        Err(Error::OutOfMemory {
            bytes: 1 << 40,
            points: bases.len(),
        })
    }
}

fn check_backend_errors<E: Groth16Curve>() {
    let rng = &mut StdRng::seed_from_u64(13);
    let (circuit, key) = chain_and_key::<E>(30, 1, rng);
    let (r, s) = (E::ScalarField::rand(rng), E::ScalarField::rand(rng));
    let g1_fails = Groth16Prover::new(&key, OutOfMemory, Cpu::new()).prove(circuit, r, s);
    assert!(matches!(g1_fails, Err(Error::OutOfMemory { .. })));
    // Only B in G2 runs on the G2 backend: 31 variables after the constant one.
    let g2_fails = Groth16Prover::new(&key, Cpu::new(), OutOfMemory).prove(circuit, r, s);
    assert!(matches!(
        g2_fails,
        Err(Error::OutOfMemory { points: 31, .. })
    ));
}

#[test]
fn backend_errors_are_returned() {
    check_backend_errors::<Bls>();
    check_backend_errors::<Bn>();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    /// Random chains: ours equals ark-groth16's and verifies.
    #[test]
    fn random_chains_equal_arkworks(steps in 1usize..48, public in 0usize..5, seed: u64) {
        check_chain::<Bls>(steps, public, seed);
        check_chain::<Bn>(steps, public, seed);
    }
}

/// The CUDA backend and resident query vectors against the CPU prover (and ark-groth16) on
/// fresh random inputs; every test needs a CUDA GPU and fails, never skips, without one.
#[cfg(feature = "cuda")]
mod gpu {
    use super::*;
    use crate::common::{cuda, fresh_seed};
    use msm::groth16::ResidentProver;
    use msm::{ContextOptions, Cuda};

    /// Resident provers for `key` without and with shifted bases.
    fn resident_provers<'k, E: Groth16Curve>(
        gpu: &Cuda,
        key: &'k ProvingKey<E>,
    ) -> Vec<ResidentProver<'k, E>> {
        [false, true]
            .into_iter()
            .map(|shifted_bases| {
                let options = ContextOptions {
                    shifted_bases,
                    ..ContextOptions::default()
                };
                ResidentProver::new(gpu, key, options).unwrap()
            })
            .collect()
    }

    /// Three proofs with fresh starts and randomness (the last with r = 0) on the CUDA
    /// backend and on resident provers, each equal to the CPU prover's; the first also equal
    /// to ark-groth16's; all verify.
    fn check_gpu<E: Groth16Curve>(steps: usize, public: usize) {
        let seed = fresh_seed();
        let rng = &mut StdRng::seed_from_u64(seed);
        let (chain, key) = chain_and_key::<E>(steps, public, rng);
        let gpu = cuda();
        let cpu_prover = Groth16Prover::new(&key, Cpu::new(), Cpu::new());
        let gpu_prover = Groth16Prover::new(&key, gpu.clone(), gpu.clone());
        let resident = resident_provers(&gpu, &key);
        for proof in 0..3 {
            let circuit = SquareChain {
                start: Some(E::ScalarField::rand(rng)),
                ..chain
            };
            let r = if proof == 2 {
                E::ScalarField::zero()
            } else {
                E::ScalarField::rand(rng)
            };
            let s = E::ScalarField::rand(rng);
            let case = format!("{steps} steps, {public} public, proof {proof}, seed {seed}");
            let expected = cpu_prover.prove(circuit, r, s).unwrap();
            if proof == 0 {
                assert_eq!(expected, arkworks(circuit, &key, r, s), "{case}");
            }
            assert_eq!(gpu_prover.prove(circuit, r, s).unwrap(), expected, "{case}");
            for (i, prover) in resident.iter().enumerate() {
                let proof = prover.prove(circuit, r, s).unwrap();
                assert_eq!(proof, expected, "{case}, resident prover {i}");
            }
            assert!(
                verifies(&key, &expected, &circuit.public_values()),
                "{case}"
            );
        }
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn bls12_381_gpu_proofs_equal_cpu() {
        check_gpu::<Bls>(1 << 12, 1);
        check_gpu::<Bls>(5000, 3);
        check_gpu::<Bls>(1 << 16, 2);
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn bn254_gpu_proofs_equal_cpu() {
        check_gpu::<Bn>(1 << 12, 1);
        check_gpu::<Bn>(5000, 3);
        check_gpu::<Bn>(1 << 16, 2);
    }

    /// An empty L query (no private variables): the resident prover keeps no context for it.
    fn check_public_only_gpu<E: Groth16Curve>() {
        let seed = fresh_seed();
        let rng = &mut StdRng::seed_from_u64(seed);
        let circuit = Squares {
            squares: 300,
            wrong: None,
            x_public: true,
        };
        let key = Groth16::<E>::generate_random_parameters_with_reduction(circuit, rng).unwrap();
        let (r, s) = (E::ScalarField::rand(rng), E::ScalarField::rand(rng));
        let expected = arkworks(circuit, &key, r, s);
        let gpu = cuda();
        let gpu_prover = Groth16Prover::new(&key, gpu.clone(), gpu.clone());
        assert_eq!(
            gpu_prover.prove(circuit, r, s).unwrap(),
            expected,
            "seed {seed}"
        );
        for prover in resident_provers(&gpu, &key) {
            assert_eq!(
                prover.prove(circuit, r, s).unwrap(),
                expected,
                "seed {seed}"
            );
        }
        assert!(verifies(&key, &expected, &circuit.public_values()));
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_circuits_without_private_variables_prove() {
        check_public_only_gpu::<Bls>();
        check_public_only_gpu::<Bn>();
    }

    /// A resident prover refuses circuits of another shape and unsatisfied witnesses, and
    /// proves the right one afterwards.
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn resident_prover_errors_leave_it_usable() {
        let rng = &mut StdRng::seed_from_u64(fresh_seed());
        let (circuit, key) = chain_and_key::<Bn>(1000, 1, rng);
        let gpu = cuda();
        let (r, s) = (ark_bn254::Fr::rand(rng), ark_bn254::Fr::rand(rng));
        for prover in resident_provers(&gpu, &key) {
            let longer = SquareChain {
                steps: 1001,
                ..circuit
            };
            assert!(matches!(
                prover.prove(longer, r, s),
                Err(Error::KeyMismatch { .. })
            ));
            let error = prover.prove(circuit.without_witness(), r, s).unwrap_err();
            assert!(matches!(error, Error::Synthesis(_)), "{error}");
            let proof = prover.prove(circuit, r, s).unwrap();
            assert_eq!(proof, arkworks(circuit, &key, r, s));
        }
    }
}
