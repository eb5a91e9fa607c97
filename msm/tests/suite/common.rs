//! Inputs and the arkworks oracle shared by the CPU, GPU and Groth16 tests, for any curve group
//! `C` (BLS12-381 and BN254, G1 and G2).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::{PrimeGroup, ScalarMul, VariableBaseMSM};
use ark_ff::{BigInteger, Field, PrimeField, UniformRand, Zero};
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use msm::MsmCurve;

/// The scalar field of `C`.
pub type Scalar<C> = <C as ark_ec::CurveConfig>::ScalarField;

/// `n` random bases (random multiples of the generator, so distinct with overwhelming
/// probability), from `seed`.
pub fn random_bases<C: MsmCurve>(n: usize, seed: u64) -> Vec<Affine<C>> {
    let k = random_scalars::<C>(n, seed);
    Projective::<C>::generator().batch_mul(&k)
}

/// A seed that differs from run to run (printed in failure messages to replay it).
pub fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    nanos as u64 ^ (nanos >> 64) as u64
}

/// The CUDA backend of the GPU under test.
#[cfg(feature = "cuda")]
pub fn cuda() -> msm::Cuda {
    msm::Cuda::new().expect("a usable CUDA GPU")
}

/// `n` uniform random scalars from `seed`.
pub fn random_scalars<C: MsmCurve>(n: usize, seed: u64) -> Vec<Scalar<C>> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| Scalar::<C>::rand(&mut rng)).collect()
}

/// arkworks' MSM.
pub fn oracle<C: MsmCurve>(bases: &[Affine<C>], scalars: &[Scalar<C>]) -> Projective<C> {
    Projective::<C>::msm(bases, scalars).unwrap()
}

/// `r - 1 - k`.
pub fn minus<C: MsmCurve>(k: u64) -> Scalar<C> {
    -Scalar::<C>::from(k + 1)
}

/// The errors every backend gives through the trait: mismatched lengths (single and batch)
/// and empty inputs, with messages that say what is wrong.
pub fn check_trait_errors<C: MsmCurve>(backend: &dyn msm::MsmBackend<C>) {
    use msm::Error;
    let bases = random_bases::<C>(5, 25);
    let scalars = random_scalars::<C>(6, 26);
    assert!(matches!(
        backend.msm(&bases, &scalars),
        Err(Error::LengthMismatch {
            bases: 5,
            scalars: 6
        })
    ));
    assert!(matches!(
        backend.msm(&bases, &scalars[..4]),
        Err(Error::LengthMismatch {
            bases: 5,
            scalars: 4
        })
    ));
    assert!(matches!(backend.msm(&[], &[]), Err(Error::Empty)));
    assert!(matches!(
        backend.msm_batch(&bases, &[&scalars[..5], &scalars[..3]]),
        Err(Error::BatchLengthMismatch {
            set: 1,
            bases: 5,
            scalars: 3
        })
    ));
    assert!(matches!(backend.msm_batch(&[], &[&[]]), Err(Error::Empty)));
    let message = backend.msm(&bases, &scalars).unwrap_err().to_string();
    assert!(
        message.contains("5 bases") && message.contains("6 scalars"),
        "{message}"
    );
    assert!(
        backend
            .msm(&[], &[])
            .unwrap_err()
            .to_string()
            .contains("empty")
    );
}

/// The property tests' inputs: scalars from random bytes (reduced mod r), and random bases
/// (from `seed`) edited by `edits`: (index, 0) puts infinity there, 1 the first base, 2 its
/// negation, 3 the base mirrored from the other end.
pub fn edited_inputs<C: MsmCurve>(
    scalar_bytes: &[[u8; 32]],
    seed: u64,
    edits: &[(proptest::sample::Index, u8)],
) -> (Vec<Affine<C>>, Vec<Scalar<C>>) {
    let n = scalar_bytes.len();
    let scalars = scalar_bytes
        .iter()
        .map(|b| Scalar::<C>::from_le_bytes_mod_order(b))
        .collect();
    let mut bases = random_bases::<C>(n, seed);
    for (index, edit) in edits {
        let i = index.index(n);
        bases[i] = match edit {
            0 => Affine::identity(),
            1 => bases[0],
            2 => -bases[0],
            _ => bases[n - 1 - i],
        };
    }
    (bases, scalars)
}

/// One adversarial input: a name for failure messages, bases, scalars.
pub struct Case<C: MsmCurve> {
    pub name: String,
    pub bases: Vec<Affine<C>>,
    pub scalars: Vec<Scalar<C>>,
}

fn case<C: MsmCurve>(
    name: impl Into<String>,
    bases: Vec<Affine<C>>,
    scalars: Vec<Scalar<C>>,
) -> Case<C> {
    Case {
        name: name.into(),
        bases,
        scalars,
    }
}

/// Every edge case of SPEC.md at each size in `sizes`: zero scalars, points at infinity,
/// repeated points (bucket additions of P + P), P and -P together, and skewed scalars (all
/// equal, small, tiny, 64-bit, near r, top bit set, powers of two), plus one mix of all.
pub fn edge_cases<C: MsmCurve>(sizes: &[usize]) -> Vec<Case<C>> {
    type Fr<C> = Scalar<C>;
    let minus = minus::<C>;
    let top_bit = Fr::<C>::MODULUS_BIT_SIZE - 1;
    let mut cases = Vec::new();
    for &n in sizes {
        let mut rng = StdRng::seed_from_u64(n as u64);
        let bases = random_bases::<C>(n, 4);
        let random = random_scalars::<C>(n, 5);
        cases.push(case(
            format!("zero scalars, n = {n}"),
            bases.clone(),
            vec![Fr::<C>::zero(); n],
        ));

        let infinity = vec![Affine::identity(); n];
        cases.push(case(
            format!("all bases at infinity, n = {n}"),
            infinity,
            random.clone(),
        ));
        let mut some_infinite = bases.clone();
        for b in some_infinite.iter_mut().step_by(3) {
            *b = Affine::identity();
        }
        cases.push(case(
            format!("every third base at infinity, n = {n}"),
            some_infinite,
            random.clone(),
        ));

        // Bucket additions of P + P: the same base everywhere, with random and equal scalars
        // (then every bucket addition is a doubling).
        let same = vec![bases[0]; n];
        cases.push(case(
            format!("one base repeated, n = {n}"),
            same.clone(),
            random.clone(),
        ));
        cases.push(case(
            format!("one base repeated, equal scalars, n = {n}"),
            same,
            vec![random[0]; n],
        ));
        let few: Vec<Affine<C>> = (0..n).map(|i| bases[i % 3.min(n)]).collect();
        cases.push(case(
            format!("three bases repeated, n = {n}"),
            few,
            random.clone(),
        ));

        // P and -P.
        let pairs: Vec<Affine<C>> = (0..n)
            .map(|i| if i % 2 == 0 { bases[i] } else { -bases[i - 1] })
            .collect();
        let equal_pairs: Vec<Fr<C>> = (0..n).map(|i| random[i - i % 2]).collect();
        cases.push(case(
            format!("P and -P, equal scalars (cancel), n = {n}"),
            pairs.clone(),
            equal_pairs,
        ));
        let opposite: Vec<Fr<C>> = (0..n)
            .map(|i| {
                if i % 2 == 0 {
                    random[i]
                } else {
                    -random[i - 1]
                }
            })
            .collect();
        cases.push(case(
            format!("P and -P, scalars k and -k, n = {n}"),
            pairs.clone(),
            opposite,
        ));
        cases.push(case(
            format!("P and -P, all scalars equal, n = {n}"),
            pairs,
            vec![random[0]; n],
        ));

        // Skewed scalars.
        cases.push(case(
            format!("all scalars equal, n = {n}"),
            bases.clone(),
            vec![random[1 % n]; n],
        ));
        cases.push(case(
            format!("all scalars one, n = {n}"),
            bases.clone(),
            vec![Fr::<C>::ONE; n],
        ));
        cases.push(case(
            format!("all scalars r - 1, n = {n}"),
            bases.clone(),
            vec![minus(0); n],
        ));
        let small = (0..n).map(|_| Fr::<C>::from(rng.r#gen::<u16>())).collect();
        cases.push(case(
            format!("16-bit scalars, n = {n}"),
            bases.clone(),
            small,
        ));
        let tiny = (0..n)
            .map(|_| Fr::<C>::from(rng.gen_range(0..4u64)))
            .collect();
        cases.push(case(
            format!("scalars below 4, n = {n}"),
            bases.clone(),
            tiny,
        ));
        let wide = (0..n).map(|_| Fr::<C>::from(rng.r#gen::<u64>())).collect();
        cases.push(case(
            format!("64-bit scalars, n = {n}"),
            bases.clone(),
            wide,
        ));
        let near = (0..n).map(|_| minus(rng.r#gen::<u16>().into())).collect();
        cases.push(case(
            format!("scalars near r, n = {n}"),
            bases.clone(),
            near,
        ));
        let high = (0..n)
            .map(|_| {
                loop {
                    let s = Fr::<C>::rand(&mut rng);
                    if s.into_bigint().get_bit(top_bit as usize) {
                        break s;
                    }
                }
            })
            .collect();
        cases.push(case(
            format!("scalars in [2^{top_bit}, r), n = {n}"),
            bases.clone(),
            high,
        ));
        let powers = (0..n)
            .map(|i| Fr::<C>::from(2u64).pow([(i % 256) as u64]))
            .collect();
        cases.push(case(
            format!("powers of two, n = {n}"),
            bases.clone(),
            powers,
        ));

        // Everything at once.
        let p = bases[0];
        let (mut mixed_bases, mut mixed_scalars) = (Vec::new(), Vec::new());
        for i in 0..n {
            let (b, s) = match i % 9 {
                0 => (bases[i], Fr::<C>::zero()),
                1 => (Affine::identity(), Fr::<C>::rand(&mut rng)),
                2 => (p, Fr::<C>::rand(&mut rng)),
                3 => (-p, Fr::<C>::rand(&mut rng)),
                4 => (bases[i], minus(0)),
                5 => (bases[i], Fr::<C>::from(rng.r#gen::<u16>())),
                6 => (bases[i], minus(rng.r#gen::<u32>().into())),
                7 => (bases[i - 1], Fr::<C>::ONE),
                _ => (bases[i], Fr::<C>::rand(&mut rng)),
            };
            mixed_bases.push(b);
            mixed_scalars.push(s);
        }
        cases.push(case(format!("mixed, n = {n}"), mixed_bases, mixed_scalars));
    }
    cases
}
