//! Criterion bench `groth16`: a Groth16 proof of a circuit of `2^k` constraints (the chain
//! `x_{i+1} = x_i^2 + x_i + c` of `msm::groth16::SquareChain`, its last value public) with
//! ark-groth16 0.5's keys, ours (`msm::groth16`) beside ark-groth16's own
//! `create_proof_with_reduction` (its `parallel` build) on the same machine.
//!
//! Ids are `groth16/<curve>/<prover>/2^k`, curve `bn254` or `bls12-381`, throughput in
//! constraints:
//! - k = 10, 12: `cpu` is our prover with its MSMs on `msm::Cpu`, `arkworks` ark-groth16's;
//! - k = 16, 20 (with the `cuda` feature and a usable GPU): `cuda` is our prover with its MSMs
//!   on `msm::Cuda` (the key's queries uploaded at every proof), `cuda-resident` with the
//!   queries resident on the GPU (`ResidentProver`, shifted bases, made once per size outside
//!   the timing), `arkworks` ark-groth16's.
//!
//! The key comes from ark-groth16's setup, once per curve and size (outside the timing; about
//! a minute per curve at 2^20 on 16 cores); each of our proofs is checked equal to
//! ark-groth16's (same `r` and `s`) before the timing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ark_ff::UniformRand;
use ark_groth16::{Groth16, ProvingKey};
use ark_std::rand::{SeedableRng, rngs::StdRng};
use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use msm::Cpu;
use msm::groth16::{Groth16Curve, Groth16Prover, SquareChain};

/// log2 of the constraints proved with the CPU backend.
const CPU_LOGS: [u32; 2] = [10, 12];
/// log2 of the constraints proved on the GPU.
#[cfg(feature = "cuda")]
const GPU_LOGS: [u32; 2] = [16, 20];

/// One size of one curve: the circuit, its key, the randomness and ark-groth16's proof.
struct Case<E: Groth16Curve> {
    circuit: SquareChain<E::ScalarField>,
    key: ProvingKey<E>,
    r: E::ScalarField,
    s: E::ScalarField,
    expected: ark_groth16::Proof<E>,
    curve: &'static str,
    log: u32,
}

impl<E: Groth16Curve> Case<E> {
    /// A chain of `2^log` constraints with one public input, and ark-groth16's key for it.
    fn new(curve: &'static str, log: u32) -> Self {
        let mut rng = StdRng::seed_from_u64(0x6772_6f74);
        let circuit = SquareChain::new(
            E::ScalarField::rand(&mut rng),
            E::ScalarField::rand(&mut rng),
            1 << log,
            1,
        );
        let key = Groth16::<E>::generate_random_parameters_with_reduction(
            circuit.without_witness(),
            &mut rng,
        )
        .unwrap();
        let (r, s) = (
            E::ScalarField::rand(&mut rng),
            E::ScalarField::rand(&mut rng),
        );
        let expected = Groth16::<E>::create_proof_with_reduction(circuit, &key, r, s).unwrap();
        let prepared = ark_groth16::prepare_verifying_key(&key.vk);
        assert!(
            Groth16::<E>::verify_proof(&prepared, &expected, &circuit.public_values()).unwrap()
        );
        Self {
            circuit,
            key,
            r,
            s,
            expected,
            curve,
            log,
        }
    }

    /// The benchmark id of `prover` at this size.
    fn id(&self, prover: &str) -> BenchmarkId {
        BenchmarkId::new(
            format!("{}/{prover}", self.curve),
            format!("2^{}", self.log),
        )
    }

    /// ark-groth16's prover.
    fn bench_arkworks(&self, group: &mut BenchmarkGroup<'_, WallTime>) {
        group.bench_function(self.id("arkworks"), |b| {
            b.iter(|| {
                Groth16::<E>::create_proof_with_reduction(self.circuit, &self.key, self.r, self.s)
                    .unwrap()
            })
        });
    }

    /// Our prover through `prove`, checked against ark-groth16's proof first.
    fn bench_ours(
        &self,
        group: &mut BenchmarkGroup<'_, WallTime>,
        name: &str,
        prove: impl Fn() -> ark_groth16::Proof<E>,
    ) {
        assert_eq!(prove(), self.expected, "{} 2^{}", self.curve, self.log);
        group.bench_function(self.id(name), |b| b.iter(&prove));
    }
}

/// The CPU rows of curve `E`.
fn cpu_rows<E: Groth16Curve>(group: &mut BenchmarkGroup<'_, WallTime>, curve: &'static str) {
    for log in CPU_LOGS {
        let case = Case::<E>::new(curve, log);
        group.throughput(Throughput::Elements(1 << log));
        let prover = Groth16Prover::new(&case.key, Cpu::new(), Cpu::new());
        case.bench_ours(group, "cpu", || {
            prover.prove(case.circuit, case.r, case.s).unwrap()
        });
        case.bench_arkworks(group);
    }
}

/// The GPU rows of curve `E`.
#[cfg(feature = "cuda")]
fn gpu_rows<E: Groth16Curve>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    curve: &'static str,
    gpu: &msm::Cuda,
) {
    use msm::ContextOptions;
    use msm::groth16::ResidentProver;

    for log in GPU_LOGS {
        let case = Case::<E>::new(curve, log);
        group.throughput(Throughput::Elements(1 << log));
        let prover = Groth16Prover::new(&case.key, gpu.clone(), gpu.clone());
        case.bench_ours(group, "cuda", || {
            prover.prove(case.circuit, case.r, case.s).unwrap()
        });
        let shifted = ContextOptions {
            shifted_bases: true,
            ..ContextOptions::default()
        };
        let resident = ResidentProver::new(gpu, &case.key, shifted).unwrap();
        case.bench_ours(group, "cuda-resident", || {
            resident.prove(case.circuit, case.r, case.s).unwrap()
        });
        drop(resident);
        case.bench_arkworks(group);
    }
}

fn groth16(c: &mut Criterion) {
    let mut group = c.benchmark_group("groth16");
    group.sample_size(10);
    cpu_rows::<ark_bn254::Bn254>(&mut group, "bn254");
    cpu_rows::<ark_bls12_381::Bls12_381>(&mut group, "bls12-381");
    #[cfg(feature = "cuda")]
    match msm::Cuda::new() {
        Ok(gpu) => {
            gpu_rows::<ark_bn254::Bn254>(&mut group, "bn254", &gpu);
            gpu_rows::<ark_bls12_381::Bls12_381>(&mut group, "bls12-381", &gpu);
        }
        Err(why) => eprintln!("groth16: no CUDA benches: {why}"),
    }
    group.finish();
}

criterion_group!(benches, groth16);
criterion_main!(benches);
