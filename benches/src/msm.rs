//! MSM rows of the `report` binary: ours on the CPU beside arkworks' parallel MSM, which is
//! the reference they are checked against.

use ark_bls12_381::{Fr, G1Affine, G1Projective};
use ark_ec::{PrimeGroup, ScalarMul, VariableBaseMSM};
use ark_ff::UniformRand;
use ark_std::rand::{SeedableRng, rngs::StdRng};
use msm::{Cpu, MsmBackend};

use crate::table::{Check, Row, row};
use crate::{median_of, wall};

const MSM: &str = "BLS12-381 G1 MSM";

/// Points in the report's MSM: a size 2 cores run in well under a second.
const POINTS: usize = 1 << 14;

/// Random bases (random multiples of the generator) and scalars, from a fixed seed.
pub fn inputs(points: usize) -> (Vec<G1Affine>, Vec<Fr>) {
    let mut rng = StdRng::seed_from_u64(0x006d_736d);
    let multiples: Vec<Fr> = (0..points).map(|_| Fr::rand(&mut rng)).collect();
    let bases = G1Projective::generator().batch_mul(&multiples);
    let scalars = (0..points).map(|_| Fr::rand(&mut rng)).collect();
    (bases, scalars)
}

/// Runs arkworks (the reference) and our CPU backend on the same inputs.
pub fn cpu_rows() -> Result<Vec<Row>, msm::Error> {
    let (bases, scalars) = inputs(POINTS);
    let threads = rayon::current_num_threads();
    let (expected, time) = median_of(3, || {
        wall(|| {
            G1Projective::msm(&bases, &scalars).map_err(|_| msm::Error::LengthMismatch {
                bases: bases.len(),
                scalars: scalars.len(),
            })
        })
    })?;
    let arkworks = format!("arkworks 0.5 ({threads} threads)");
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
    Ok(rows)
}
