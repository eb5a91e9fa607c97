//! Proves a circuit of `2^LOG2` constraints with Groth16 on BN254 and BLS12-381 — ark-groth16
//! 0.5's setup, keys and verifier — with every MSM of the prover on the GPU
//! (`msm::groth16`), beside ark-groth16's own prover on the same machine:
//!
//! `cargo run --release -p gpu-crypto-msm --features groth16 --example groth16 --
//! [LOG2] [bn254|bls12-381] [cpu] [runs=N]`
//!
//! `LOG2` defaults to 20; the circuit is the chain `x_{i+1} = x_i^2 + x_i + c`
//! (`SquareChain`), one constraint per step, its last value public. Without a usable GPU (or
//! with `cpu`) our prover runs its MSMs on the CPU backend: use small sizes then (a 2^12 circuit
//! takes seconds on 2 cores). Prints, per curve, the setup time and the median of `N` (default
//! 3) proofs of: ours with the bases uploaded at each proof, ours with the key's queries
//! resident on the GPU (shifted bases; the upload is timed apart), and ark-groth16's
//! `create_proof_with_reduction`. Every proof is checked equal to ark-groth16's (same `r` and
//! `s`) and verified by ark-groth16.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use ark_ff::UniformRand;
use ark_groth16::{Groth16, Proof, ProvingKey};
use ark_std::rand::{SeedableRng, rngs::StdRng};
use msm::groth16::{Groth16Curve, Groth16Prover, ResidentProver, SquareChain};
use msm::{Backend, ContextOptions, Cpu, Cuda};

/// What the command line asks for.
struct Options {
    log: u32,
    bn254: bool,
    bls12_381: bool,
    cpu: bool,
    runs: usize,
}

fn options() -> Options {
    let mut options = Options {
        log: 20,
        bn254: true,
        bls12_381: true,
        cpu: false,
        runs: 3,
    };
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "bn254" => options.bls12_381 = false,
            "bls12-381" => options.bn254 = false,
            "cpu" => options.cpu = true,
            _ => match arg.strip_prefix("runs=") {
                Some(runs) => options.runs = runs.parse::<usize>().expect("runs=N").max(1),
                None => options.log = arg.parse().expect("LOG2, bn254, bls12-381, cpu or runs=N"),
            },
        }
    }
    options
}

/// The median time of `runs` calls of `prove`, and its last proof.
fn median<E: Groth16Curve>(
    runs: usize,
    mut prove: impl FnMut() -> Proof<E>,
) -> (Duration, Proof<E>) {
    let mut times = Vec::with_capacity(runs);
    let mut proof = None;
    for _ in 0..runs {
        let start = Instant::now();
        proof = Some(prove());
        times.push(start.elapsed());
    }
    times.sort();
    (times[runs / 2], proof.expect("one run at least"))
}

fn seconds(time: Duration) -> String {
    format!("{:.3} s", time.as_secs_f64())
}

/// Setup, our proofs and ark-groth16's on curve `E`, every proof checked and verified.
fn run<E: Groth16Curve>(name: &str, options: &Options, backend: &Backend) {
    let mut rng = StdRng::seed_from_u64(20);
    let steps = 1usize << options.log;
    let circuit = SquareChain::new(
        E::ScalarField::rand(&mut rng),
        E::ScalarField::rand(&mut rng),
        steps,
        1,
    );
    println!(
        "{name}: {steps} constraints (2^{}), 1 public input",
        options.log
    );

    let start = Instant::now();
    let key: ProvingKey<E> = Groth16::<E>::generate_random_parameters_with_reduction(
        circuit.without_witness(),
        &mut rng,
    )
    .unwrap();
    println!(
        "  setup (ark-groth16)                {}",
        seconds(start.elapsed())
    );
    let verifying_key = ark_groth16::prepare_verifying_key(&key.vk);
    let (r, s) = (
        E::ScalarField::rand(&mut rng),
        E::ScalarField::rand(&mut rng),
    );
    let inputs = circuit.public_values();

    let (arkworks_time, expected) = median(options.runs, || {
        Groth16::<E>::create_proof_with_reduction(circuit, &key, r, s).unwrap()
    });
    assert!(Groth16::<E>::verify_proof(&verifying_key, &expected, &inputs).unwrap());

    let prover = Groth16Prover::new(&key, backend.clone(), backend.clone());
    // The first proof loads the groups' kernels: a warm-up, untimed.
    assert_eq!(prover.prove(circuit, r, s).unwrap(), expected);
    let (ours, proof) = median(options.runs, || prover.prove(circuit, r, s).unwrap());
    assert_eq!(proof, expected, "our proof differs from ark-groth16's");
    println!("  ours, MSMs on {:<20} {}", backend.name(), seconds(ours));

    if let Backend::Cuda(cuda) = backend {
        let start = Instant::now();
        let shifted = ContextOptions {
            shifted_bases: true,
            ..ContextOptions::default()
        };
        let resident = ResidentProver::new(cuda, &key, shifted).unwrap();
        let upload = start.elapsed();
        assert_eq!(resident.prove(circuit, r, s).unwrap(), expected);
        let (resident_time, proof) =
            median(options.runs, || resident.prove(circuit, r, s).unwrap());
        assert_eq!(
            proof, expected,
            "our resident proof differs from ark-groth16's"
        );
        println!(
            "  ours, queries resident on the GPU  {} (upload and shifted copies once: {})",
            seconds(resident_time),
            seconds(upload)
        );
    }
    println!(
        "  ark-groth16 create_proof           {} ({} threads)",
        seconds(arkworks_time),
        rayon::current_num_threads()
    );
    assert!(Groth16::<E>::verify_proof(&verifying_key, &proof, &inputs).unwrap());
    println!("  every proof equals ark-groth16's and verifies");
}

fn main() {
    let options = options();
    let backend = if options.cpu {
        Backend::Cpu(Cpu::new())
    } else {
        Cuda::new().map_or_else(
            |why| {
                eprintln!("no GPU ({why}): MSMs on the CPU backend");
                Backend::Cpu(Cpu::new())
            },
            Backend::Cuda,
        )
    };
    if options.bn254 {
        run::<ark_bn254::Bn254>("BN254", &options, &backend);
    }
    if options.bls12_381 {
        run::<ark_bls12_381::Bls12_381>("BLS12-381", &options, &backend);
    }
}
