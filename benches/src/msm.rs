//! MSM rows of the `report` binary: ours on the CPU beside arkworks' parallel MSM, which is
//! the reference they are checked against.

use ark_bls12_381::{Fr, G1Affine, G1Projective};
use ark_ec::{CurveGroup, PrimeGroup, VariableBaseMSM};
use ark_ff::UniformRand;
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use msm::{Cpu, MsmBackend};
use rayon::prelude::*;

use crate::progress::Progress;
use crate::table::{Check, Row, row};
use crate::{median_of, wall};

const MSM: &str = "BLS12-381 G1 MSM";

/// Points in the report's MSM: a size 2 cores run in well under a second.
const POINTS: usize = 1 << 14;

/// Bases and scalars from a fixed seed: the bases are `(k + i * d) * G` for random `k` and
/// `d` (an arithmetic progression of exponents, made by additions in parallel chunks, so
/// that 2^24 of them take seconds, not minutes), the scalars uniform in `Fr`.
pub fn inputs(points: usize) -> (Vec<G1Affine>, Vec<Fr>) {
    const CHUNK: usize = 1 << 12;
    let mut rng = StdRng::seed_from_u64(0x006d_736d);
    let (k, d) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
    let g = G1Projective::generator();
    let step = g * d;
    let projective: Vec<G1Projective> = (0..points.div_ceil(CHUNK))
        .into_par_iter()
        .flat_map_iter(|chunk| {
            let first = chunk * CHUNK;
            let start = g * (k + d * Fr::from(first as u64));
            let len = CHUNK.min(points - first);
            std::iter::successors(Some(start), move |p| Some(*p + step)).take(len)
        })
        .collect();
    let bases = G1Projective::normalize_batch(&projective);
    let seeds: Vec<u64> = (0..points.div_ceil(CHUNK)).map(|_| rng.r#gen()).collect();
    let scalars = seeds
        .par_iter()
        .enumerate()
        .flat_map_iter(|(chunk, &seed)| {
            let mut rng = StdRng::seed_from_u64(seed);
            let len = CHUNK.min(points - chunk * CHUNK);
            (0..len).map(move |_| Fr::rand(&mut rng))
        })
        .collect();
    (bases, scalars)
}

/// Steps of [`cpu_rows`], one per measured row.
pub const CPU_STEPS: u64 = 2;
/// Steps of [`cuda_rows`], one per measured row.
pub const CUDA_STEPS: u64 = 2;

/// The report's inputs and arkworks' sum, against which the GPU is checked.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub struct Reference {
    bases: Vec<G1Affine>,
    scalars: Vec<Fr>,
    sum: G1Projective,
}

/// Runs arkworks (the reference) and our CPU backend on the same inputs.
pub fn cpu_rows(progress: &Progress) -> Result<(Vec<Row>, Reference), msm::Error> {
    let threads = rayon::current_num_threads();
    let arkworks = format!("arkworks 0.5 ({threads} threads)");
    progress.step(MSM, &arkworks);
    let (bases, scalars) = inputs(POINTS);
    let (expected, time) = median_of(3, || {
        wall(|| {
            G1Projective::msm(&bases, &scalars).map_err(|_| msm::Error::LengthMismatch {
                bases: bases.len(),
                scalars: scalars.len(),
            })
        })
    })?;
    let mut rows = vec![row(
        MSM,
        &arkworks,
        POINTS as u64,
        "points",
        0,
        time,
        Check::Reference,
    )];
    let ours = Cpu::new();
    progress.step(MSM, &ours.name());
    let (sum, time) = median_of(3, || wall(|| ours.msm(&bases, &scalars)))?;
    let check = Check::from_equal(sum == expected, "the sum differs from arkworks'");
    rows.push(row(
        MSM,
        &ours.name(),
        POINTS as u64,
        "points",
        0,
        time,
        check,
    ));
    let reference = Reference {
        bases,
        scalars,
        sum: expected,
    };
    Ok((rows, reference))
}

/// Runs the GPU on the reference inputs, bases resident with shifted copies: once with the
/// scalar upload, once from scalars already on the device.
#[cfg(feature = "cuda")]
pub fn cuda_rows(
    cuda: &msm::Cuda,
    reference: &Reference,
    progress: &Progress,
) -> Result<Vec<Row>, msm::Error> {
    let options = msm::ContextOptions {
        shifted_bases: true,
        ..msm::ContextOptions::default()
    };
    let context = cuda.context(&reference.bases, options)?;
    let device = context.upload_scalars(&reference.scalars)?;
    let mut rows = Vec::new();
    type Run<'a> = &'a dyn Fn() -> Result<G1Projective, msm::Error>;
    let runs: [(&str, Run); 2] = [
        ("scalars uploaded", &|| context.msm(&reference.scalars)),
        ("scalars resident", &|| context.msm_device(&device)),
    ];
    for (what, run) in runs {
        let backend = format!("{} ({what})", cuda.name());
        progress.step(MSM, &backend);
        let _warm_up = run()?;
        let (sum, time) = median_of(5, || wall(run))?;
        let check = Check::from_equal(sum == reference.sum, "the sum differs from arkworks'");
        rows.push(row(MSM, &backend, POINTS as u64, "points", 0, time, check));
    }
    Ok(rows)
}
