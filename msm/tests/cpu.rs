//! The CPU backend against arkworks' `VariableBaseMSM::msm` (parallel build): random inputs
//! of many sizes, proptest, every edge case of `SPEC.md`, a known answer, and the errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ark_bls12_381::{Fr, G1Affine, G1Projective};
use ark_ec::{AffineRepr, CurveGroup, PrimeGroup};
use ark_ff::Zero;
use common::{minus, oracle, random_bases, random_scalars};
use msm::{Cpu, Error, MAX_WINDOW_BITS, MsmBackend};
use proptest::prelude::*;

mod common;

/// Ours equals arkworks (and the default backend equals every forced window width given).
fn check(bases: &[G1Affine], scalars: &[Fr]) {
    let expected = oracle(bases, scalars);
    let ours = Cpu::new().msm(bases, scalars).unwrap();
    assert_eq!(ours, expected, "n = {}", bases.len());
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
fn edge_cases() {
    for case in common::edge_cases(&[1, 2, 7, 100, 1000, 4099]) {
        let expected = oracle(&case.bases, &case.scalars);
        let ours = Cpu::new().msm(&case.bases, &case.scalars).unwrap();
        assert_eq!(ours, expected, "{}", case.name);
        if case.name.starts_with("mixed") {
            for c in [2, 5, 9, 13, 16] {
                let cpu = Cpu::with_window_bits(c).unwrap();
                let ours = cpu.msm(&case.bases, &case.scalars).unwrap();
                assert_eq!(ours, expected, "{}, c = {c}", case.name);
            }
        }
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
    let cpu = Cpu::new();
    common::check_trait_errors(&cpu);
    for bits in [0, MAX_WINDOW_BITS + 1] {
        let error = Cpu::with_window_bits(bits).unwrap_err();
        assert!(
            matches!(error, Error::InvalidWindow { bits: b, max: MAX_WINDOW_BITS } if b == bits),
            "{error}"
        );
    }
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
        let (bases, scalars) = common::edited_inputs(&scalar_bytes, seed, &edits);
        let cpu = match window {
            Some(c) => Cpu::with_window_bits(c).unwrap(),
            None => Cpu::new(),
        };
        prop_assert_eq!(cpu.msm(&bases, &scalars).unwrap(), oracle(&bases, &scalars));
    }
}
