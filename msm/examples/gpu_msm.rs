//! Times MSMs on the GPU: `cargo run --release -p gpu-crypto-msm --example gpu_msm --
//! [LOG2_POINTS] [shifted|unshifted] [WINDOW_BITS|default] [GROUP]`, where GROUP is one of
//! `bls12-381-g1` (the default), `bls12-381-g2`, `bn254-g1`, `bn254-g2`; checked against the CPU
//! backend up to 2^20 points.
//! Prints the time of context creation (upload and shifted copies), of an MSM with the scalar
//! upload, of one MSM of a batch of 4 with the upload (the median of 3 batches), and of an
//! MSM from scalars already on the GPU (the median of 5 runs each). On a host with several
//! GPUs it then times the same on all of them (`MultiGpu`, each holding a part of the bases),
//! without the resident run. Every result is also checked against its closed form: base i is
//! (k + i) G.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::{CurveGroup, PrimeGroup};
use ark_ff::UniformRand;
use ark_std::rand::{SeedableRng, rngs::StdRng};
use msm::{ContextOptions, Cpu, Cuda, MsmBackend, MsmCurve, MultiGpu};
use rayon::prelude::*;

/// The sets of a timed `msm_batch` (the same scalars in each).
const BATCH: usize = 4;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// The median time of one MSM with the scalar upload (of 5 runs) and of one MSM in a batch of
/// `BATCH` (of 3 batches), every result checked against `sum`.
fn upload_timings<P: PartialEq + std::fmt::Debug>(
    sum: &P,
    msm: impl Fn() -> P,
    batch: impl Fn() -> Vec<P>,
) -> (Duration, Duration) {
    let one = median(
        (0..5)
            .map(|_| {
                let start = Instant::now();
                assert_eq!(msm(), *sum);
                start.elapsed()
            })
            .collect(),
    );
    let in_batch = median(
        (0..3)
            .map(|_| {
                let start = Instant::now();
                assert!(batch().iter().all(|s| s == sum));
                start.elapsed() / BATCH as u32
            })
            .collect(),
    );
    (one, in_batch)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let log: u32 = args
        .first()
        .map_or(20, |a| a.parse().expect("log2 of the points"));
    let shifted_bases = args.get(1).is_none_or(|a| a != "unshifted");
    let window_bits = args
        .get(2)
        .filter(|a| *a != "default")
        .map(|a| a.parse().expect("window bits"));
    match args.get(3).map_or("bls12-381-g1", String::as_str) {
        "bls12-381-g1" => run::<ark_bls12_381::g1::Config>(log, shifted_bases, window_bits),
        "bls12-381-g2" => run::<ark_bls12_381::g2::Config>(log, shifted_bases, window_bits),
        "bn254-g1" => run::<ark_bn254::g1::Config>(log, shifted_bases, window_bits),
        "bn254-g2" => run::<ark_bn254::g2::Config>(log, shifted_bases, window_bits),
        other => panic!("unknown group {other}"),
    }
}

fn run<C: MsmCurve>(log: u32, shifted_bases: bool, window_bits: Option<u32>) {
    type Fr<C> = <C as ark_ec::CurveConfig>::ScalarField;
    let n = 1usize << log;

    // Bases (k + i) * G from parallel chunks of additions; uniform scalars.
    let mut rng = StdRng::seed_from_u64(1);
    let k = Fr::<C>::rand(&mut rng);
    let g = Projective::<C>::generator();
    let projective: Vec<Projective<C>> = (0..n.div_ceil(4096))
        .into_par_iter()
        .flat_map_iter(|c| {
            let start = g * (k + Fr::<C>::from((c * 4096) as u64));
            std::iter::successors(Some(start), move |p| Some(*p + g)).take(4096.min(n - c * 4096))
        })
        .collect();
    let bases: Vec<Affine<C>> = Projective::<C>::normalize_batch(&projective);
    let scalars: Vec<Fr<C>> = (0..n).map(|_| Fr::<C>::rand(&mut rng)).collect();

    let gpu = Cuda::new().unwrap();
    let options = ContextOptions {
        window_bits,
        shifted_bases,
        scratch_points: None,
    };
    let start = Instant::now();
    let context = gpu.context(&bases, options).unwrap();
    let made = start.elapsed();
    let sum = context.msm(&scalars).unwrap();
    // Base i is (k + i) G, so the sum is (sum of s_i (k + i)) G at every size.
    let exponent: Fr<C> = scalars
        .par_iter()
        .enumerate()
        .map(|(i, s)| *s * (k + Fr::<C>::from(i as u64)))
        .sum();
    assert_eq!(sum, g * exponent, "GPU differs from the closed form");
    if log <= 20 {
        assert_eq!(
            sum,
            Cpu::new().msm(&bases, &scalars).unwrap(),
            "GPU differs from CPU"
        );
    }
    let (with_upload, batch) = upload_timings(
        &sum,
        || context.msm(&scalars).unwrap(),
        || context.msm_batch(&[&scalars[..]; BATCH]).unwrap(),
    );
    let device = context.upload_scalars(&scalars).unwrap();
    let resident = median(
        (0..5)
            .map(|_| {
                let start = Instant::now();
                assert_eq!(context.msm_device(&device).unwrap(), sum);
                start.elapsed()
            })
            .collect(),
    );
    println!(
        "{}, 2^{log} points, c = {}, shifted {shifted_bases}: context {made:.2?}, msm {with_upload:.2?} \
         with scalar upload, {batch:.2?} an MSM in batches of {BATCH} with upload, \
         {resident:.2?} resident{}",
        C::NAME,
        context.window_bits(),
        if log <= 20 {
            " (checked against the CPU and the closed form)"
        } else {
            " (checked against the closed form)"
        }
    );
    drop((device, context));
    let gpus = MultiGpu::new().unwrap();
    if gpus.backends().len() > 1 {
        let start = Instant::now();
        let context = gpus.context(&bases, options).unwrap();
        let made = start.elapsed();
        let (with_upload, batch) = upload_timings(
            &sum,
            || context.msm(&scalars).unwrap(),
            || context.msm_batch(&[&scalars[..]; BATCH]).unwrap(),
        );
        println!(
            "{} on {} GPUs: context {made:.2?}, msm {with_upload:.2?} with scalar upload, \
             {batch:.2?} an MSM in batches of {BATCH} with upload (checked against the closed \
             form)",
            C::NAME,
            gpus.backends().len()
        );
    }
}
