//! The CUDA backend against arkworks' `VariableBaseMSM::msm` and our CPU backend, in each
//! group (BLS12-381 and BN254, G1 and G2; a module per group): fresh random inputs of awkward
//! sizes up to 2^18 points (G1; 2^16 + 1 in G2) and a 2^20 (G1; 2^18 in G2) run, every edge case
//! of `SPEC.md`, every window width with and without shifted bases, chunked runs, batches,
//! device scalars, the errors, and proptest. BN254 G1's large run has 2^20 + 3 points, so that
//! its shifted copies are made in two slices, and BLS12-381 G1's largest edge cases 140,001, so
//! that infinities meet batches of more than one inversion (`msm_precompute_window`); a BN254
//! G1 run of 2^22 + 5 points has its first chunk uploaded in two pieces.
//!
//! Every test needs a CUDA GPU: run with
//! `cargo test --release -p gpu-crypto-msm --test suite gpu:: -- --include-ignored`. They fail,
//! never skip, without one.
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::{Scalar, cuda, edge_cases, fresh_seed, oracle, random_bases, random_scalars};
use ark_ec::AffineRepr;
use ark_ec::short_weierstrass::Affine;
use msm::{ContextOptions, Cpu, Cuda, Error, MAX_GPU_WINDOW_BITS, MsmBackend, MsmCurve, MultiGpu};
use proptest::prelude::*;

fn shifted() -> ContextOptions {
    ContextOptions {
        shifted_bases: true,
        ..ContextOptions::default()
    }
}

/// Fresh random inputs of awkward sizes up to `max` points, with and without shifted bases.
fn random_inputs_of_many_sizes<C: MsmCurve>(max: usize) {
    let gpu = cuda();
    let sizes = [
        1usize,
        2,
        3,
        31,
        32,
        33,
        127,
        128,
        129,
        1000,
        1023,
        1025,
        4097,
        (1 << 12) + 7,
        16_411,
        (1 << 16) - 1,
        1 << 16,
        (1 << 16) + 1,
        262_147,
    ];
    let seed = fresh_seed();
    let all = random_bases::<C>(max, seed);
    for (i, &n) in sizes.iter().enumerate().filter(|(_, n)| **n <= max) {
        let (bases, scalars) = (&all[..n], random_scalars::<C>(n, seed + 1 + i as u64));
        let expected = oracle(bases, &scalars);
        let name = C::NAME;
        assert_eq!(
            gpu.msm(bases, &scalars).unwrap(),
            expected,
            "{name}: n = {n}, seed {seed}"
        );
        let context = gpu.context(bases, shifted()).unwrap();
        assert_eq!(
            context.msm(&scalars).unwrap(),
            expected,
            "{name}: n = {n}, shifted, seed {seed}"
        );
    }
}

/// `n` random points, plain and shifted, the adversarial case of one bucket per window
/// holding every point, and most points in one bucket per window with the rest spread (so that
/// the sort meets partitions far larger and far smaller than its tiles together).
fn large<C: MsmCurve>(n: usize) {
    let gpu = cuda();
    let seed = fresh_seed();
    let bases = random_bases::<C>(n, seed);
    let plain = gpu.context(&bases, ContextOptions::default()).unwrap();
    let shifted = gpu.context(&bases, shifted()).unwrap();
    let random = random_scalars::<C>(n, seed + 1);
    let expected = oracle(&bases, &random);
    let what = format!("{}, n = {n}, seed {seed}", C::NAME);
    assert_eq!(plain.msm(&random).unwrap(), expected, "{what}");
    assert_eq!(shifted.msm(&random).unwrap(), expected, "{what}, shifted");
    assert_eq!(
        Cpu::new().msm(&bases, &random).unwrap(),
        expected,
        "{what}, cpu"
    );
    // Adversarial: one bucket per window holds every point.
    let equal = vec![random[0]; n];
    let expected = oracle(&bases, &equal);
    assert_eq!(plain.msm(&equal).unwrap(), expected, "{what}, equal");
    assert_eq!(
        shifted.msm(&equal).unwrap(),
        expected,
        "{what}, equal, shifted"
    );
    let mostly_equal: Vec<_> = (0..n)
        .map(|i| if i % 16 == 0 { random[i] } else { random[0] })
        .collect();
    let expected = oracle(&bases, &mostly_equal);
    assert_eq!(
        plain.msm(&mostly_equal).unwrap(),
        expected,
        "{what}, mostly equal"
    );
    assert_eq!(
        shifted.msm(&mostly_equal).unwrap(),
        expected,
        "{what}, mostly equal, shifted"
    );
}

/// Every edge case of SPEC.md at each of `sizes`.
fn edge_cases_equal_arkworks<C: MsmCurve>(sizes: &[usize]) {
    let gpu = cuda();
    for case in edge_cases::<C>(sizes) {
        let expected = oracle(&case.bases, &case.scalars);
        assert_eq!(
            gpu.msm(&case.bases, &case.scalars).unwrap(),
            expected,
            "{}",
            case.name
        );
        let context = gpu.context(&case.bases, shifted()).unwrap();
        assert_eq!(
            context.msm(&case.scalars).unwrap(),
            expected,
            "{}, shifted",
            case.name
        );
    }
}

/// Every window width, with and without shifted bases, on the mixed edge case.
fn every_window_width<C: MsmCurve>() {
    let gpu = cuda();
    let cases = edge_cases::<C>(&[301]);
    let mixed = cases.iter().find(|c| c.name.starts_with("mixed")).unwrap();
    let expected = oracle(&mixed.bases, &mixed.scalars);
    for c in 1..=MAX_GPU_WINDOW_BITS {
        for shifted_bases in [false, true] {
            let options = ContextOptions {
                window_bits: Some(c),
                shifted_bases,
                ..ContextOptions::default()
            };
            let context = gpu.context(&mixed.bases, options).unwrap();
            assert_eq!(context.window_bits(), c);
            assert_eq!(context.has_shifted_bases(), shifted_bases);
            let got = context.msm(&mixed.scalars).unwrap();
            assert_eq!(got, expected, "c = {c}, shifted = {shifted_bases}");
        }
    }
}

/// Scratch passes and uploads in chunks of many sizes.
fn chunked_scratch_and_uploads<C: MsmCurve>() {
    let gpu = cuda();
    let n = 10_007;
    let seed = fresh_seed();
    let bases = random_bases::<C>(n, seed);
    let scalars = random_scalars::<C>(n, seed + 1);
    let expected = oracle(&bases, &scalars);
    for scratch_points in [1, 999, 5000, n] {
        for shifted_bases in [false, true] {
            let options = ContextOptions {
                scratch_points: Some(scratch_points),
                shifted_bases,
                ..ContextOptions::default()
            };
            let context = gpu.context(&bases, options).unwrap();
            let got = context.msm(&scalars).unwrap();
            assert_eq!(
                got,
                expected,
                "{}: {scratch_points} scalars a pass, shifted {shifted_bases}, seed {seed}",
                C::NAME
            );
        }
    }
    for limit in [1, 1000, 4096] {
        let chunked = gpu.clone().with_upload_limit(limit);
        assert_eq!(
            chunked.msm(&bases, &scalars).unwrap(),
            expected,
            "{}: upload limit {limit}, seed {seed}",
            C::NAME
        );
    }
}

/// Batches through the trait and a context, scalars uploaded once, and `Backend`.
fn batches_and_device_scalars<C: MsmCurve>() {
    let gpu = cuda();
    let n = 3001;
    let seed = fresh_seed();
    let bases = random_bases::<C>(n, seed);
    let sets: Vec<Vec<Scalar<C>>> = (0..4)
        .map(|i| random_scalars::<C>(n, seed + 1 + i))
        .collect();
    let refs: Vec<&[Scalar<C>]> = sets.iter().map(Vec::as_slice).collect();
    let expected: Vec<_> = sets.iter().map(|s| oracle(&bases, s)).collect();
    let what = format!("{}, seed {seed}", C::NAME);
    assert_eq!(gpu.msm_batch(&bases, &refs).unwrap(), expected, "{what}");
    assert!(gpu.msm_batch(&bases, &[]).unwrap().is_empty());
    let context = gpu.context(&bases, shifted()).unwrap();
    assert_eq!(context.msm_batch(&refs).unwrap(), expected, "{what}");
    for (scalars, expected) in sets.iter().zip(&expected) {
        let device = context.upload_scalars(scalars).unwrap();
        assert_eq!(device.len(), n);
        // Twice: the scalars on the device are left as they were.
        assert_eq!(context.msm_device(&device).unwrap(), *expected, "{what}");
        assert_eq!(context.msm_device(&device).unwrap(), *expected, "{what}");
    }
    assert_eq!(
        msm::Backend::best().msm(&bases, &sets[0]).unwrap(),
        expected[0],
        "{what}"
    );
}

/// The errors, none of them a panic.
fn errors<C: MsmCurve>() {
    let gpu = cuda();
    assert!(MsmBackend::<C>::name(&gpu).starts_with("cuda: "));
    crate::common::check_trait_errors::<C>(&gpu);
    let bases = random_bases::<C>(5, 8);
    let scalars = random_scalars::<C>(6, 9);
    assert!(matches!(
        gpu.context::<C>(&[], ContextOptions::default()),
        Err(Error::Empty)
    ));
    let context = gpu.context(&bases, ContextOptions::default()).unwrap();
    assert!(matches!(
        context.msm(&scalars),
        Err(Error::LengthMismatch {
            bases: 5,
            scalars: 6
        })
    ));
    for bits in [0, MAX_GPU_WINDOW_BITS + 1] {
        let options = ContextOptions {
            window_bits: Some(bits),
            ..ContextOptions::default()
        };
        let error = gpu.context(&bases, options).unwrap_err();
        assert!(
            matches!(error, Error::InvalidWindow { bits: b, .. } if b == bits),
            "{error}"
        );
    }
    // One copy per window of 2^23 bases with 1-bit windows: 256 copies, about 200 GB.
    let many = vec![Affine::<C>::generator(); 1 << 23];
    let options = ContextOptions {
        window_bits: Some(1),
        shifted_bases: true,
        ..ContextOptions::default()
    };
    let error = gpu.context(&many, options).unwrap_err();
    assert!(
        matches!(error, Error::BasesTooLarge { copies: 256, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("256 copies"), "{error}");
}

/// The property test's body: random sizes, scalars from random bytes, bases with some at
/// infinity, repeated or negated, random window widths, with and without shifted bases.
fn equals_arkworks<C: MsmCurve>(
    scalar_bytes: &[[u8; 32]],
    seed: u64,
    edits: &[(prop::sample::Index, u8)],
    window: Option<u32>,
    shifted_bases: bool,
) -> Result<(), TestCaseError> {
    let (bases, scalars) = crate::common::edited_inputs::<C>(scalar_bytes, seed, edits);
    let options = ContextOptions {
        window_bits: window,
        shifted_bases,
        scratch_points: None,
    };
    let context = cuda().context(&bases, options).unwrap();
    prop_assert_eq!(context.msm(&scalars).unwrap(), oracle(&bases, &scalars));
    Ok(())
}

/// One backend serves the four groups in turn (each group's kernels load at its first use).
#[test]
#[ignore = "requires a CUDA GPU"]
fn one_backend_serves_every_group() {
    fn check<C: MsmCurve>(gpu: &Cuda, n: usize, seed: u64) {
        let bases = random_bases::<C>(n, seed);
        let scalars = random_scalars::<C>(n, seed + 1);
        assert_eq!(
            gpu.msm(&bases, &scalars).unwrap(),
            oracle(&bases, &scalars),
            "{}",
            C::NAME
        );
    }
    let gpu = cuda();
    let seed = fresh_seed();
    for round in 0..2 {
        let seed = seed + 10 * round;
        check::<ark_bn254::g2::Config>(&gpu, 777, seed);
        check::<ark_bls12_381::g1::Config>(&gpu, 778, seed + 2);
        check::<ark_bn254::g1::Config>(&gpu, 779, seed + 4);
        check::<ark_bls12_381::g2::Config>(&gpu, 780, seed + 6);
    }
}

/// A call's first chunk of at least 2^22 scalars goes to the GPU in two pieces (a quarter, then
/// the rest; later pieces are copied while the GPU reduces the one before): single MSMs and
/// batches, with shifted bases and without, and a chunked context whose last chunk is short.
#[test]
#[ignore = "requires a CUDA GPU"]
fn large_first_chunks_go_up_in_two_pieces() {
    type C = ark_bn254::g1::Config;
    let gpu = cuda();
    let n = (1 << 22) + 5;
    let seed = fresh_seed();
    let bases = random_bases::<C>(n, seed);
    let sets = [
        random_scalars::<C>(n, seed + 1),
        random_scalars::<C>(n, seed + 2),
    ];
    let expected = [oracle(&bases, &sets[0]), oracle(&bases, &sets[1])];
    for (scratch_points, shifted_bases) in [(None, false), (None, true), (Some(n - 3), false)] {
        let options = ContextOptions {
            scratch_points,
            shifted_bases,
            ..ContextOptions::default()
        };
        let what = format!("{options:?}, seed {seed}");
        let context = gpu.context(&bases, options).unwrap();
        assert_eq!(context.msm(&sets[1]).unwrap(), expected[1], "{what}");
        let batch = context.msm_batch(&[&sets[0], &sets[1]]).unwrap();
        assert_eq!(batch, expected, "{what}, batch");
    }
}

/// Several GPUs (every GPU of the host, and this one GPU given three times, so that a
/// single-GPU machine splits too) give arkworks' sums: through the trait and through a
/// context, single MSMs and batches, sizes below and above the number of GPUs, with shifted
/// bases and without; bad lengths and empty inputs are errors.
fn multi_gpu_sums_equal_arkworks<C: MsmCurve>() {
    let one = cuda();
    let gpu = one.gpu().clone();
    let seed = fresh_seed();
    let bases = random_bases::<C>(4099, seed);
    let sets: Vec<Vec<Scalar<C>>> = (0..3)
        .map(|i| random_scalars::<C>(bases.len(), seed + 1 + i))
        .collect();
    for multi in [
        MultiGpu::new().unwrap(),
        MultiGpu::on(&[gpu.clone(), gpu.clone(), gpu.clone()]).unwrap(),
    ] {
        let g = multi.backends().len();
        for n in [1, 2, 3, 5, 1000, 4099] {
            let what = format!("{} on {g} GPUs, n = {n}, seed {seed}", C::NAME);
            let refs: Vec<&[Scalar<C>]> = sets.iter().map(|set| &set[..n]).collect();
            let expected: Vec<_> = refs.iter().map(|set| oracle(&bases[..n], set)).collect();
            assert_eq!(
                multi.msm(&bases[..n], refs[0]).unwrap(),
                expected[0],
                "{what}"
            );
            assert_eq!(
                multi.msm_batch(&bases[..n], &refs).unwrap(),
                expected,
                "{what}"
            );
            for options in [ContextOptions::default(), shifted()] {
                let context = multi.context(&bases[..n], options).unwrap();
                assert_eq!(context.len(), n);
                assert_eq!(context.parts().len(), g.min(n), "{what}");
                assert_eq!(
                    context.msm(refs[1]).unwrap(),
                    expected[1],
                    "{what}, {options:?}"
                );
                assert_eq!(
                    context.msm_batch(&refs).unwrap(),
                    expected,
                    "{what}, {options:?}"
                );
                assert!(context.msm_batch(&[]).unwrap().is_empty());
                assert!(matches!(
                    context.msm(&sets[0][..n - 1]),
                    Err(Error::LengthMismatch { .. })
                ));
            }
        }
        assert!(multi.msm_batch(&bases, &[]).unwrap().is_empty());
        assert!(matches!(
            multi.msm(&bases[..3], &sets[0][..2]),
            Err(Error::LengthMismatch { .. })
        ));
        assert!(matches!(
            MsmBackend::<C>::msm(&multi, &[], &[]),
            Err(Error::Empty)
        ));
        assert!(matches!(
            multi.context::<C>(&[], ContextOptions::default()),
            Err(Error::Empty)
        ));
    }
    assert!(matches!(MultiGpu::on(&[]), Err(Error::Empty)));
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn multi_gpu_sums_equal_arkworks_in_g1_and_g2() {
    multi_gpu_sums_equal_arkworks::<ark_bls12_381::g1::Config>();
    multi_gpu_sums_equal_arkworks::<ark_bn254::g2::Config>();
}

/// The tests above, in one module per group: `max` is the largest random input, `large` the
/// size of the large run, `edge` the edge cases' sizes, `cases` the property test's cases.
macro_rules! group_tests {
    ($($group:ident: $config:ty, max = $max:expr, large = $large:expr, edge = $edge:expr,
       cases = $cases:expr;)*) => {$(
        mod $group {
            use super::*;
            type C = $config;

            #[test]
            #[ignore = "requires a CUDA GPU"]
            fn random_inputs_of_many_sizes() {
                super::random_inputs_of_many_sizes::<C>($max);
            }

            #[test]
            #[ignore = "requires a CUDA GPU"]
            fn large() {
                super::large::<C>($large);
            }

            #[test]
            #[ignore = "requires a CUDA GPU"]
            fn edge_cases_equal_arkworks() {
                super::edge_cases_equal_arkworks::<C>(&$edge);
            }

            #[test]
            #[ignore = "requires a CUDA GPU"]
            fn every_window_width() {
                super::every_window_width::<C>();
            }

            #[test]
            #[ignore = "requires a CUDA GPU"]
            fn chunked_scratch_and_uploads() {
                super::chunked_scratch_and_uploads::<C>();
            }

            #[test]
            #[ignore = "requires a CUDA GPU"]
            fn batches_and_device_scalars() {
                super::batches_and_device_scalars::<C>();
            }

            #[test]
            #[ignore = "requires a CUDA GPU"]
            fn errors() {
                super::errors::<C>();
            }

            proptest! {
                #![proptest_config(ProptestConfig::with_cases($cases))]

                #[test]
                #[ignore = "requires a CUDA GPU"]
                fn equals_arkworks(
                    scalar_bytes in prop::collection::vec(any::<[u8; 32]>(), 1..3000),
                    seed in any::<u64>(),
                    edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..4), 0..16),
                    window in prop::option::of(1u32..=16),
                    shifted_bases in any::<bool>(),
                ) {
                    super::equals_arkworks::<C>(&scalar_bytes, seed, &edits, window, shifted_bases)?;
                }
            }
        }
    )*};
}

group_tests! {
    bls12_381_g1: ark_bls12_381::g1::Config, max = 262_147, large = 1 << 20,
        edge = [1, 2, 3, 7, 100, 1000, 4099, 140_001], cases = 64;
    bls12_381_g2: ark_bls12_381::g2::Config, max = 65_537, large = 1 << 18,
        edge = [1, 2, 3, 7, 100, 1000, 4099, 65_537], cases = 32;
    bn254_g1: ark_bn254::g1::Config, max = 262_147, large = (1 << 20) + 3,
        edge = [1, 2, 3, 7, 100, 1000, 4099, 70_001], cases = 64;
    bn254_g2: ark_bn254::g2::Config, max = 65_537, large = 1 << 18,
        edge = [1, 2, 3, 7, 100, 1000, 4099, 65_537], cases = 32;
}
