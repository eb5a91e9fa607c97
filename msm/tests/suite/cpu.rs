//! The CPU backend against arkworks' `VariableBaseMSM::msm` (parallel build), in each group
//! (BLS12-381 and BN254, G1 and G2): random inputs of many sizes, proptest, every edge case of
//! `SPEC.md`, a known answer, and the errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::{Scalar, oracle, random_bases, random_scalars};
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::{AffineRepr, CurveGroup, PrimeGroup};
use ark_ff::{Field, Zero};
use msm::{Cpu, Error, MAX_WINDOW_BITS, MsmBackend, MsmCurve};
use proptest::prelude::*;

/// Ours equals arkworks.
fn check<C: MsmCurve>(bases: &[Affine<C>], scalars: &[Scalar<C>]) {
    let expected = oracle(bases, scalars);
    let ours = Cpu::new().msm(bases, scalars).unwrap();
    assert_eq!(ours, expected, "{}: n = {}", C::NAME, bases.len());
}

/// Random inputs of awkward sizes up to `max` points.
fn random_inputs_of_many_sizes<C: MsmCurve>(max: usize) {
    let sizes = [
        1usize, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 255, 256, 257,
        511, 1000, 1023, 1025, 2047, 4097, 8191, 16_411, 32_771, 65_537,
    ];
    let all = random_bases::<C>(max, 1);
    for (i, &n) in sizes.iter().enumerate().filter(|(_, n)| **n <= max) {
        let scalars = random_scalars::<C>(n, 100 + i as u64);
        check(&all[..n], &scalars);
    }
}

/// Every window width the backend accepts, on random scalars with edge values among them.
fn every_window_width<C: MsmCurve>() {
    let n = 301;
    let bases = random_bases::<C>(n, 2);
    let mut scalars = random_scalars::<C>(n, 3);
    scalars[0] = Scalar::<C>::zero();
    scalars[1] = -Scalar::<C>::ONE;
    scalars[2] = Scalar::<C>::ONE;
    scalars[3] = Scalar::<C>::from(u64::MAX);
    let expected = oracle(&bases, &scalars);
    for c in 1..=MAX_WINDOW_BITS {
        let cpu = Cpu::with_window_bits(c).unwrap();
        assert_eq!(cpu.window_bits(n), c);
        assert_eq!(
            cpu.msm(&bases, &scalars).unwrap(),
            expected,
            "{}: c = {c}",
            C::NAME
        );
    }
}

/// The counting sort splits the points into one chunk per thread and the buckets into
/// several tasks per thread: other thread counts cut both elsewhere.
fn any_number_of_threads<C: MsmCurve>() {
    let n = 9001;
    let bases = random_bases::<C>(n, 30);
    let mut scalars = random_scalars::<C>(n, 31);
    for s in scalars.iter_mut().skip(5).step_by(7) {
        *s = Scalar::<C>::from(99u64);
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
        assert_eq!(got, expected, "{}: {threads} threads", C::NAME);
    }
}

/// Every edge case of SPEC.md at each size in `sizes`; the mixed case at several widths.
fn edge_cases<C: MsmCurve>(sizes: &[usize]) {
    for case in crate::common::edge_cases::<C>(sizes) {
        let expected = oracle(&case.bases, &case.scalars);
        let ours = Cpu::new().msm(&case.bases, &case.scalars).unwrap();
        assert_eq!(ours, expected, "{}: {}", C::NAME, case.name);
        if case.name.starts_with("mixed") {
            for c in [2, 5, 9, 13, 16] {
                let cpu = Cpu::with_window_bits(c).unwrap();
                let ours = cpu.msm(&case.bases, &case.scalars).unwrap();
                assert_eq!(ours, expected, "{}: {}, c = {c}", C::NAME, case.name);
            }
        }
    }
}

/// One point: arkworks' MSM and arkworks' scalar multiplication agree with ours.
fn one_point<C: MsmCurve>() {
    let bases = random_bases::<C>(1, 7);
    let minus = crate::common::minus::<C>;
    for s in [
        Scalar::<C>::zero(),
        Scalar::<C>::ONE,
        Scalar::<C>::from(2u64),
        minus(0),
        minus(1),
        random_scalars::<C>(1, 8)[0],
    ] {
        check(&bases, &[s]);
        assert_eq!(Cpu::new().msm(&bases, &[s]).unwrap(), bases[0] * s);
    }
    check::<C>(&[Affine::identity()], &[Scalar::<C>::from(5u64)]);
}

/// Bases `k * G` and scalars `s`: the MSM is `(sum k s) * G`, computed with one scalar
/// multiplication by arkworks, independently of any MSM.
fn known_answer<C: MsmCurve>() {
    let g = Projective::<C>::generator();
    let ks: Vec<u64> = (1..=50).map(|i| i * i + 3).collect();
    let bases: Vec<Affine<C>> = ks
        .iter()
        .map(|&k| (g * Scalar::<C>::from(k)).into_affine())
        .collect();
    let scalars: Vec<Scalar<C>> = (0..50u64)
        .map(|i| {
            if i % 5 == 0 {
                crate::common::minus::<C>(i)
            } else {
                Scalar::<C>::from(1000 + 7 * i)
            }
        })
        .collect();
    let total: Scalar<C> = ks
        .iter()
        .zip(&scalars)
        .map(|(&k, s)| Scalar::<C>::from(k) * s)
        .sum();
    assert_eq!(Cpu::new().msm(&bases, &scalars).unwrap(), g * total);

    // 1*G + 2*G + ... + 100*G = 5050 * G.
    let bases = vec![Affine::<C>::generator(); 100];
    let scalars: Vec<Scalar<C>> = (1..=100u64).map(Scalar::<C>::from).collect();
    assert_eq!(
        Cpu::new().msm(&bases, &scalars).unwrap(),
        g * Scalar::<C>::from(5050u64)
    );
}

/// A batch equals its MSMs one by one.
fn batch_equals_single_msms<C: MsmCurve>() {
    let bases = random_bases::<C>(777, 23);
    let sets: Vec<Vec<Scalar<C>>> = (0..3).map(|i| random_scalars::<C>(777, 24 + i)).collect();
    let refs: Vec<&[Scalar<C>]> = sets.iter().map(Vec::as_slice).collect();
    let batch = Cpu::new().msm_batch(&bases, &refs).unwrap();
    assert_eq!(batch.len(), 3);
    for (sum, scalars) in batch.iter().zip(&sets) {
        assert_eq!(*sum, oracle(&bases, scalars));
    }
    assert!(Cpu::new().msm_batch(&bases, &[]).unwrap().is_empty());
}

/// The trait's errors in group `C`.
fn errors<C: MsmCurve>() {
    crate::common::check_trait_errors::<C>(&Cpu::new());
}

/// The property test's body: random sizes, scalars from random bytes (reduced mod r), bases
/// random multiples of the generator with some repeated, negated or at infinity.
fn equals_arkworks<C: MsmCurve>(
    scalar_bytes: &[[u8; 32]],
    seed: u64,
    edits: &[(prop::sample::Index, u8)],
    window: Option<u32>,
) -> Result<(), TestCaseError> {
    let (bases, scalars) = crate::common::edited_inputs::<C>(scalar_bytes, seed, edits);
    let cpu = match window {
        Some(c) => Cpu::with_window_bits(c).unwrap(),
        None => Cpu::new(),
    };
    prop_assert_eq!(cpu.msm(&bases, &scalars).unwrap(), oracle(&bases, &scalars));
    Ok(())
}

/// The tests above, in one module per group: `max` is the largest random input and `cases`
/// the property test's cases (G2's arithmetic costs about three times G1's, so its tests stay
/// smaller).
macro_rules! group_tests {
    ($($group:ident: $config:ty, max = $max:expr, cases = $cases:expr;)*) => {$(
        mod $group {
            use super::*;
            type C = $config;

            #[test]
            fn random_inputs_of_many_sizes() {
                super::random_inputs_of_many_sizes::<C>($max);
            }

            #[test]
            fn every_window_width() {
                super::every_window_width::<C>();
            }

            #[test]
            fn any_number_of_threads() {
                super::any_number_of_threads::<C>();
            }

            #[test]
            fn edge_cases() {
                super::edge_cases::<C>(&[1, 2, 7, 100, 1000, 4099]);
            }

            #[test]
            fn one_point() {
                super::one_point::<C>();
            }

            #[test]
            fn known_answer() {
                super::known_answer::<C>();
            }

            #[test]
            fn batch_equals_single_msms() {
                super::batch_equals_single_msms::<C>();
            }

            #[test]
            fn errors() {
                super::errors::<C>();
            }

            proptest! {
                #![proptest_config(ProptestConfig::with_cases($cases))]

                #[test]
                fn equals_arkworks(
                    scalar_bytes in prop::collection::vec(any::<[u8; 32]>(), 1..400),
                    seed in any::<u64>(),
                    edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..4), 0..8),
                    window in prop::option::of(1u32..=MAX_WINDOW_BITS),
                ) {
                    super::equals_arkworks::<C>(&scalar_bytes, seed, &edits, window)?;
                }
            }
        }
    )*};
}

group_tests! {
    bls12_381_g1: ark_bls12_381::g1::Config, max = 65_537, cases = 48;
    bls12_381_g2: ark_bls12_381::g2::Config, max = 16_411, cases = 16;
    bn254_g1: ark_bn254::g1::Config, max = 65_537, cases = 32;
    bn254_g2: ark_bn254::g2::Config, max = 16_411, cases = 16;
}

/// Window widths outside `1..=MAX_WINDOW_BITS` are refused, whatever the group.
#[test]
fn invalid_windows() {
    for bits in [0, MAX_WINDOW_BITS + 1] {
        let error = Cpu::with_window_bits(bits).unwrap_err();
        assert!(
            matches!(error, Error::InvalidWindow { bits: b, max: MAX_WINDOW_BITS } if b == bits),
            "{error}"
        );
    }
    assert!(Cpu::new().name().starts_with("cpu"));
}
