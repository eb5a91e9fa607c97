//! Criterion bench `msm`: multi-scalar multiplication, ours on the CPU beside arkworks 0.5's
//! parallel `VariableBaseMSM::msm` on the same inputs in every group ours takes, and ours on
//! the GPU in every group.
//!
//! Ids are `<group>/<backend>/2^k`, throughput in points:
//! - group `msm` (BLS12-381 G1), k = 10, 12, ..., 18: `cpu` is `msm::Cpu`, `arkworks` is
//!   `G1Projective::msm` (ark-ec with its `parallel` feature);
//! - groups `msm-bls12-381-g2`, `msm-bn254-g1` and `msm-bn254-g2`, k = 10, 12, ..., 16 (G2:
//!   up to 14): the same two backends in that group, on bases that are random multiples of
//!   the generator and uniform scalars;
//! - group `msm`, k = 10, 12, ..., 24, bases resident on the GPU in an `MsmContext` with
//!   shifted bases (made once per size, outside the timing): `cuda` uploads the scalars and
//!   reads the sum back, `cuda-resident` starts from scalars already on the GPU;
//!   `cuda-unshifted` is the resident run of a context without shifted bases (k <= 22);
//! - the same three rows in groups `msm-bn254-g1` (k = 20, 22, 24), `msm-bls12-381-g2` and
//!   `msm-bn254-g2` (k = 20, 22).
//!
//! BLS12-381 G1's bases are an arithmetic progression of multiples of the generator
//! (`benches::msm::inputs`), the other groups' random multiples of the generator; both are
//! made once for the largest size and shared by prefixes; scalars are uniform in `Fr`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::{PrimeGroup, ScalarMul, VariableBaseMSM};
use ark_ff::UniformRand;
use ark_std::rand::{SeedableRng, rngs::StdRng};
use benches::msm::inputs;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use msm::{Cpu, MsmBackend, MsmCurve};

/// log2 of the sizes benchmarked.
const LOG_SIZES: [u32; 5] = [10, 12, 14, 16, 18];

fn cpu(c: &mut Criterion) {
    let (bases, scalars) = inputs(1 << LOG_SIZES[LOG_SIZES.len() - 1]);
    cpu_in(c, "msm", &bases, &scalars, &LOG_SIZES);
}

/// `2^max_log` bases of group `C` that are random multiples of the generator, and as many
/// uniform scalars, from a fixed seed.
fn random_inputs<C: MsmCurve>(max_log: u32) -> (Vec<Affine<C>>, Vec<C::ScalarField>) {
    let n = 1usize << max_log;
    let mut rng = StdRng::seed_from_u64(0x6d73_6d32);
    let mut random =
        || -> Vec<C::ScalarField> { (0..n).map(|_| C::ScalarField::rand(&mut rng)).collect() };
    let bases: Vec<Affine<C>> = Projective::<C>::generator().batch_mul(&random());
    (bases, random())
}

/// The groups other than BLS12-381 G1, on bases that are random multiples of the generator.
fn cpu_other_groups(c: &mut Criterion) {
    /// The group's criterion group at `2^log` points.
    fn bench<C: MsmCurve>(c: &mut Criterion, name: &str, log_sizes: &[u32]) {
        let (bases, scalars) = random_inputs::<C>(*log_sizes.iter().max().unwrap());
        cpu_in(c, name, &bases, &scalars, log_sizes);
    }
    bench::<ark_bls12_381::g2::Config>(c, "msm-bls12-381-g2", &[10, 12, 14]);
    bench::<ark_bn254::g1::Config>(c, "msm-bn254-g1", &[10, 12, 14, 16]);
    bench::<ark_bn254::g2::Config>(c, "msm-bn254-g2", &[10, 12, 14]);
}

/// Ours and arkworks in group `C`, under the criterion group `name`, on the first `2^log` of
/// `bases` and `scalars` for each `log`.
fn cpu_in<C: MsmCurve>(
    c: &mut Criterion,
    name: &str,
    bases: &[Affine<C>],
    scalars: &[C::ScalarField],
    log_sizes: &[u32],
) {
    let ours = Cpu::new();
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    for &log in log_sizes {
        let n = 1usize << log;
        let (bases, scalars) = (&bases[..n], &scalars[..n]);
        assert_eq!(
            ours.msm(bases, scalars).unwrap(),
            Projective::<C>::msm(bases, scalars).unwrap(),
            "{}",
            C::NAME
        );
        group.throughput(Throughput::Elements(n as u64));
        let size = format!("2^{log}");
        group.bench_function(BenchmarkId::new("cpu", &size), |b| {
            b.iter(|| ours.msm(bases, scalars).unwrap())
        });
        group.bench_function(BenchmarkId::new("arkworks", &size), |b| {
            b.iter(|| Projective::<C>::msm(bases, scalars).unwrap())
        });
    }
    group.finish();
}

#[cfg(feature = "cuda")]
fn cuda(c: &mut Criterion) {
    use msm::Cuda;

    let gpu = match Cuda::new() {
        Ok(gpu) => gpu,
        Err(why) => {
            eprintln!("msm: no CUDA benches: {why}");
            return;
        }
    };
    let (bases, scalars) = inputs(1 << 24);
    cuda_in(
        c,
        &gpu,
        "msm",
        &bases,
        &scalars,
        &[10, 12, 14, 16, 18, 20, 22, 24],
    );
    drop((bases, scalars));
    /// The group's GPU rows at `2^log` points.
    fn bench<C: MsmCurve>(c: &mut Criterion, gpu: &Cuda, name: &str, log_sizes: &[u32]) {
        let (bases, scalars) = random_inputs::<C>(*log_sizes.iter().max().unwrap());
        cuda_in(c, gpu, name, &bases, &scalars, log_sizes);
    }
    bench::<ark_bn254::g1::Config>(c, &gpu, "msm-bn254-g1", &[20, 22, 24]);
    bench::<ark_bls12_381::g2::Config>(c, &gpu, "msm-bls12-381-g2", &[20, 22]);
    bench::<ark_bn254::g2::Config>(c, &gpu, "msm-bn254-g2", &[20, 22]);
}

/// Ours on the GPU in group `C`, under the criterion group `name`, on the first `2^log` of
/// `bases` and `scalars` for each `log`: `cuda`, `cuda-resident` and (up to 2^22)
/// `cuda-unshifted`; each sum up to 2^20 points is checked against the CPU backend's first.
#[cfg(feature = "cuda")]
fn cuda_in<C: MsmCurve>(
    c: &mut Criterion,
    gpu: &msm::Cuda,
    name: &str,
    bases: &[Affine<C>],
    scalars: &[C::ScalarField],
    log_sizes: &[u32],
) {
    use msm::ContextOptions;

    let cpu = Cpu::new();
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    for &log in log_sizes {
        let n = 1usize << log;
        let (bases, scalars) = (&bases[..n], &scalars[..n]);
        let shifted = ContextOptions {
            shifted_bases: true,
            ..ContextOptions::default()
        };
        let context = gpu.context(bases, shifted).unwrap();
        let sum = context.msm(scalars).unwrap();
        if log <= 20 {
            let expected = cpu.msm(bases, scalars).unwrap();
            assert_eq!(sum, expected, "{}: 2^{log}", C::NAME);
        }
        group.throughput(Throughput::Elements(n as u64));
        let size = format!("2^{log}");
        group.bench_function(BenchmarkId::new("cuda", &size), |b| {
            b.iter(|| context.msm(scalars).unwrap())
        });
        let device = context.upload_scalars(scalars).unwrap();
        group.bench_function(BenchmarkId::new("cuda-resident", &size), |b| {
            b.iter(|| context.msm_device(&device).unwrap())
        });
        drop(context);
        if log <= 22 {
            let unshifted = gpu.context(bases, ContextOptions::default()).unwrap();
            let device = unshifted.upload_scalars(scalars).unwrap();
            assert_eq!(unshifted.msm_device(&device).unwrap(), sum);
            group.bench_function(BenchmarkId::new("cuda-unshifted", &size), |b| {
                b.iter(|| unshifted.msm_device(&device).unwrap())
            });
        }
    }
    group.finish();
}

#[cfg(not(feature = "cuda"))]
fn cuda(_: &mut Criterion) {}

criterion_group!(benches, cpu, cpu_other_groups, cuda);
criterion_main!(benches);
