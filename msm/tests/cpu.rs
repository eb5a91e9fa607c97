//! The CPU backend against arkworks' `VariableBaseMSM::msm` (parallel build): random inputs
//! of many sizes, proptest, every edge case of `SPEC.md`, a known answer, and the errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ark_bls12_381::{Fr, G1Affine, G1Projective};
use ark_ec::{AffineRepr, CurveGroup, PrimeGroup, ScalarMul, VariableBaseMSM};
use ark_ff::{BigInteger, Field, PrimeField, UniformRand, Zero};
use ark_std::rand::{Rng, SeedableRng, rngs::StdRng};
use msm::{Cpu, Error, MAX_WINDOW_BITS, MsmBackend};
use proptest::prelude::*;

/// `n` random bases (random multiples of the generator, so distinct with overwhelming
/// probability), from `seed`.
fn random_bases(n: usize, seed: u64) -> Vec<G1Affine> {
    let mut rng = StdRng::seed_from_u64(seed);
    let k: Vec<Fr> = (0..n).map(|_| Fr::rand(&mut rng)).collect();
    G1Projective::generator().batch_mul(&k)
}

/// `n` uniform random scalars from `seed`.
fn random_scalars(n: usize, seed: u64) -> Vec<Fr> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| Fr::rand(&mut rng)).collect()
}

/// arkworks' MSM.
fn oracle(bases: &[G1Affine], scalars: &[Fr]) -> G1Projective {
    G1Projective::msm(bases, scalars).unwrap()
}

/// Ours equals arkworks (and the default backend equals every forced window width given).
fn check(bases: &[G1Affine], scalars: &[Fr]) {
    let expected = oracle(bases, scalars);
    let ours = Cpu::new().msm(bases, scalars).unwrap();
    assert_eq!(ours, expected, "n = {}", bases.len());
}

/// `r - 1 - k`.
fn minus(k: u64) -> Fr {
    -Fr::from(k + 1)
}

#[test]
fn random_inputs_of_many_sizes() {
    let sizes = [
        1usize, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 255, 256, 257,
        511, 1000, 1023, 1025, 2047, 4097, 8191, 16_411, 32_771, 65_537,
    ];
    let all = random_bases(*sizes.iter().max().unwrap(), 1);
    for (i, &n) in sizes.iter().enumerate() {
        let scalars = random_scalars(n, 100 + i as u64);
        check(&all[..n], &scalars);
    }
}

#[test]
fn every_window_width() {
    let n = 301;
    let bases = random_bases(n, 2);
    let mut scalars = random_scalars(n, 3);
    // Some edge values among the random ones.
    scalars[0] = Fr::zero();
    scalars[1] = minus(0);
    scalars[2] = Fr::from(1u64);
    scalars[3] = Fr::from(u64::MAX);
    let expected = oracle(&bases, &scalars);
    for c in 1..=MAX_WINDOW_BITS {
        let cpu = Cpu::with_window_bits(c).unwrap();
        assert_eq!(cpu.window_bits(n), c);
        assert_eq!(cpu.msm(&bases, &scalars).unwrap(), expected, "c = {c}");
    }
}

#[test]
fn any_number_of_threads() {
    // The counting sort splits the points into one chunk per thread and the buckets into
    // several tasks per thread: other thread counts cut both elsewhere.
    let n = 9001;
    let bases = random_bases(n, 30);
    let mut scalars = random_scalars(n, 31);
    for s in scalars.iter_mut().skip(5).step_by(7) {
        *s = Fr::from(99u64);
    }
    let expected = oracle(&bases, &scalars);
    for threads in [1, 3, 8] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let cpu = Cpu::new();
        assert_eq!(
            pool.install(|| cpu.name()),
            format!("cpu ({threads} threads)")
        );
        let got = pool.install(|| cpu.msm(&bases, &scalars)).unwrap();
        assert_eq!(got, expected, "{threads} threads");
    }
}

#[test]
fn zero_scalars() {
    for n in [1, 2, 17, 1000] {
        let bases = random_bases(n, 4);
        let scalars = vec![Fr::zero(); n];
        assert!(Cpu::new().msm(&bases, &scalars).unwrap().is_zero());
        check(&bases, &scalars);
    }
}

#[test]
fn points_at_infinity() {
    for n in [1, 2, 33, 1000] {
        let scalars = random_scalars(n, 5);
        let infinity = vec![G1Affine::identity(); n];
        assert!(Cpu::new().msm(&infinity, &scalars).unwrap().is_zero());
        check(&infinity, &scalars);

        // Every third base at infinity.
        let mut bases = random_bases(n, 6);
        for b in bases.iter_mut().step_by(3) {
            *b = G1Affine::identity();
        }
        check(&bases, &scalars);
    }
}

#[test]
fn one_point() {
    let bases = random_bases(1, 7);
    for s in [
        Fr::zero(),
        Fr::from(1u64),
        Fr::from(2u64),
        minus(0),
        minus(1),
        random_scalars(1, 8)[0],
    ] {
        check(&bases, &[s]);
        assert_eq!(Cpu::new().msm(&bases, &[s]).unwrap(), bases[0] * s);
    }
    check(&[G1Affine::identity()], &[Fr::from(5u64)]);
}

#[test]
fn repeated_points() {
    // Bucket additions of P + P: the same base everywhere, with random scalars and with
    // equal ones (then every bucket addition of every round is a doubling).
    for n in [2, 3, 64, 1000, 4099] {
        let p = random_bases(1, 9)[0];
        let bases = vec![p; n];
        check(&bases, &random_scalars(n, 10));
        check(&bases, &vec![random_scalars(1, 11)[0]; n]);
        check(&bases, &vec![Fr::from(3u64); n]);
    }
    // A few distinct points, each repeated many times.
    let few = random_bases(3, 12);
    let bases: Vec<G1Affine> = (0..2000).map(|i| few[i % 3]).collect();
    check(&bases, &random_scalars(2000, 13));
}

#[test]
fn points_and_their_negations() {
    for n in [2, 10, 1000, 4096] {
        let half = random_bases(n / 2, 14);
        let bases: Vec<G1Affine> = half.iter().flat_map(|&p| [p, -p]).collect();
        // Equal scalars on P and -P: everything cancels, bucket additions P + (-P) = O.
        let s = random_scalars(n / 2, 15);
        let scalars: Vec<Fr> = s.iter().flat_map(|&k| [k, k]).collect();
        assert!(Cpu::new().msm(&bases, &scalars).unwrap().is_zero());
        check(&bases, &scalars);
        // All scalars equal.
        check(&bases, &vec![s[0]; n]);
        // Random scalars.
        check(&bases, &random_scalars(n, 16));
        // P and -P with scalars k and r - k: both terms equal k * P.
        let scalars: Vec<Fr> = s.iter().flat_map(|&k| [k, -k]).collect();
        check(&bases, &scalars);
    }
    // One point and its negation, many times, with equal scalars.
    let p = random_bases(1, 17)[0];
    let bases: Vec<G1Affine> = (0..3001).map(|i| if i % 2 == 0 { p } else { -p }).collect();
    check(&bases, &vec![Fr::from(12345u64); 3001]);
}

#[test]
fn skewed_scalars() {
    for n in [1, 7, 100, 1000, 5000] {
        let bases = random_bases(n, 18);
        let mut rng = StdRng::seed_from_u64(19);
        // All equal.
        check(&bases, &vec![random_scalars(1, 20)[0]; n]);
        check(&bases, &vec![Fr::from(1u64); n]);
        check(&bases, &vec![minus(0); n]);
        // Small (< 2^16), and tiny.
        let small: Vec<Fr> = (0..n).map(|_| Fr::from(rng.r#gen::<u16>())).collect();
        check(&bases, &small);
        let tiny: Vec<Fr> = (0..n).map(|_| Fr::from(rng.gen_range(0..4u64))).collect();
        check(&bases, &tiny);
        // 64-bit.
        let wide: Vec<Fr> = (0..n).map(|_| Fr::from(rng.r#gen::<u64>())).collect();
        check(&bases, &wide);
        // Near r - 1 (small negatives).
        let near: Vec<Fr> = (0..n).map(|_| minus(rng.r#gen::<u16>().into())).collect();
        check(&bases, &near);
        // High bits set: uniform in [2^254, r).
        let high: Vec<Fr> = (0..n)
            .map(|_| {
                loop {
                    let s = Fr::rand(&mut rng);
                    if s.into_bigint().get_bit(254) {
                        break s;
                    }
                }
            })
            .collect();
        check(&bases, &high);
        // Powers of two, every bit position.
        let powers: Vec<Fr> = (0..n)
            .map(|i| Fr::from(2u64).pow([(i % 255) as u64]))
            .collect();
        check(&bases, &powers);
    }
}

#[test]
fn mixed_edge_cases() {
    let n = 6007;
    let mut rng = StdRng::seed_from_u64(21);
    let distinct = random_bases(n, 22);
    let p = distinct[0];
    let (mut bases, mut scalars) = (Vec::new(), Vec::new());
    for i in 0..n {
        let (b, s) = match i % 9 {
            0 => (distinct[i], Fr::zero()),
            1 => (G1Affine::identity(), Fr::rand(&mut rng)),
            2 => (p, Fr::rand(&mut rng)),
            3 => (-p, Fr::rand(&mut rng)),
            4 => (distinct[i], minus(0)),
            5 => (distinct[i], Fr::from(rng.r#gen::<u16>())),
            6 => (distinct[i], minus(rng.r#gen::<u32>().into())),
            7 => (distinct[i - 1], Fr::from(1u64)),
            _ => (distinct[i], Fr::rand(&mut rng)),
        };
        bases.push(b);
        scalars.push(s);
    }
    check(&bases, &scalars);
    // The same with a few window widths.
    let expected = oracle(&bases, &scalars);
    for c in [2, 5, 9, 13, 16] {
        assert_eq!(
            Cpu::with_window_bits(c)
                .unwrap()
                .msm(&bases, &scalars)
                .unwrap(),
            expected
        );
    }
}

#[test]
fn known_answer() {
    // Bases k * G and scalars s: the MSM is (sum k s) * G, computed with one scalar
    // multiplication by arkworks (GLV), independently of any MSM.
    let g = G1Projective::generator();
    let ks: Vec<u64> = (1..=50).map(|i| i * i + 3).collect();
    let bases: Vec<G1Affine> = ks
        .iter()
        .map(|&k| (g * Fr::from(k)).into_affine())
        .collect();
    let scalars: Vec<Fr> = (0..50u64)
        .map(|i| {
            if i % 5 == 0 {
                minus(i)
            } else {
                Fr::from(1000 + 7 * i)
            }
        })
        .collect();
    let total: Fr = ks.iter().zip(&scalars).map(|(&k, s)| Fr::from(k) * s).sum();
    assert_eq!(Cpu::new().msm(&bases, &scalars).unwrap(), g * total);

    // 1*G + 2*G + ... + 100*G = 5050 * G.
    let bases = vec![G1Affine::generator(); 100];
    let scalars: Vec<Fr> = (1..=100u64).map(Fr::from).collect();
    assert_eq!(
        Cpu::new().msm(&bases, &scalars).unwrap(),
        g * Fr::from(5050u64)
    );
}

#[test]
fn batch_equals_single_msms() {
    let bases = random_bases(777, 23);
    let sets: Vec<Vec<Fr>> = (0..3).map(|i| random_scalars(777, 24 + i)).collect();
    let refs: Vec<&[Fr]> = sets.iter().map(Vec::as_slice).collect();
    let batch = Cpu::new().msm_batch(&bases, &refs).unwrap();
    assert_eq!(batch.len(), 3);
    for (sum, scalars) in batch.iter().zip(&sets) {
        assert_eq!(*sum, oracle(&bases, scalars));
    }
    assert!(Cpu::new().msm_batch(&bases, &[]).unwrap().is_empty());
}

#[test]
fn errors() {
    let bases = random_bases(5, 25);
    let scalars = random_scalars(6, 26);
    let cpu = Cpu::new();
    assert_eq!(
        cpu.msm(&bases, &scalars),
        Err(Error::LengthMismatch {
            bases: 5,
            scalars: 6
        })
    );
    assert_eq!(
        cpu.msm(&bases, &scalars[..4]),
        Err(Error::LengthMismatch {
            bases: 5,
            scalars: 4
        })
    );
    assert_eq!(cpu.msm(&[], &[]), Err(Error::Empty));
    assert_eq!(
        cpu.msm_batch(&bases, &[&scalars[..5], &scalars[..3]]),
        Err(Error::BatchLengthMismatch {
            set: 1,
            bases: 5,
            scalars: 3
        })
    );
    assert_eq!(cpu.msm_batch(&[], &[&[]]), Err(Error::Empty));
    for bits in [0, MAX_WINDOW_BITS + 1] {
        assert_eq!(
            Cpu::with_window_bits(bits),
            Err(Error::InvalidWindow {
                bits,
                max: MAX_WINDOW_BITS
            })
        );
    }
    // The messages say what is wrong.
    let message = cpu.msm(&bases, &scalars).unwrap_err().to_string();
    assert!(
        message.contains("5 bases") && message.contains("6 scalars"),
        "{message}"
    );
    assert!(cpu.msm(&[], &[]).unwrap_err().to_string().contains("empty"));
    assert!(cpu.name().starts_with("cpu"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random sizes, scalars from random bytes (reduced mod r), bases random multiples of the
    /// generator with some repeated, negated or at infinity.
    #[test]
    fn equals_arkworks(
        scalar_bytes in prop::collection::vec(any::<[u8; 32]>(), 1..400),
        seed in any::<u64>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..4), 0..8),
        window in prop::option::of(1u32..=MAX_WINDOW_BITS),
    ) {
        let n = scalar_bytes.len();
        let scalars: Vec<Fr> = scalar_bytes.iter().map(|b| Fr::from_le_bytes_mod_order(b)).collect();
        let mut bases = random_bases(n, seed);
        for (index, edit) in edits {
            let i = index.index(n);
            match edit {
                0 => bases[i] = G1Affine::identity(),
                1 => bases[i] = bases[0],
                2 => bases[i] = -bases[0],
                _ => bases[i] = bases[n - 1 - i],
            }
        }
        let cpu = match window {
            Some(c) => Cpu::with_window_bits(c).unwrap(),
            None => Cpu::new(),
        };
        prop_assert_eq!(cpu.msm(&bases, &scalars).unwrap(), oracle(&bases, &scalars));
    }
}
