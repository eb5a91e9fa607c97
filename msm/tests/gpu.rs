//! The CUDA backend against arkworks' `VariableBaseMSM::msm` and our CPU backend: random
//! inputs of many sizes up to 2^20 points, every edge case of `SPEC.md`, every window width
//! with and without shifted bases, chunked runs, batches, and the errors.
//!
//! Every test needs a CUDA GPU: run with
//! `cargo test --release -p gpu-crypto-msm --test gpu -- --include-ignored`. They fail, never skip, without one.
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ark_bls12_381::{Fr, G1Affine};
use ark_ec::AffineRepr;
use common::{edge_cases, oracle, random_bases, random_scalars};
use msm::{ContextOptions, Cpu, Cuda, Error, MAX_GPU_WINDOW_BITS, MsmBackend};
use proptest::prelude::*;

mod common;

/// The group the CUDA backend runs in.
type G1 = ark_bls12_381::g1::Config;

fn cuda() -> Cuda {
    Cuda::new().expect("a usable CUDA GPU")
}

fn shifted() -> ContextOptions {
    ContextOptions {
        shifted_bases: true,
        ..ContextOptions::default()
    }
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn random_inputs_of_many_sizes() {
    let gpu = cuda();
    let sizes = [
        1usize, 2, 3, 31, 32, 33, 127, 128, 129, 1000, 1023, 1025, 4097, 16_411, 65_537, 262_147,
    ];
    let all = random_bases::<G1>(*sizes.iter().max().unwrap(), 1);
    for (i, &n) in sizes.iter().enumerate() {
        let (bases, scalars) = (&all[..n], random_scalars::<G1>(n, 100 + i as u64));
        let expected = oracle(bases, &scalars);
        assert_eq!(gpu.msm(bases, &scalars).unwrap(), expected, "n = {n}");
        let context = gpu.context(bases, shifted()).unwrap();
        assert_eq!(context.msm(&scalars).unwrap(), expected, "n = {n}, shifted");
    }
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn two_to_the_twenty() {
    let gpu = cuda();
    let n = 1 << 20;
    let bases = random_bases::<G1>(n, 2);
    let plain = gpu.context(&bases, ContextOptions::default()).unwrap();
    let shifted = gpu.context(&bases, shifted()).unwrap();
    let random = random_scalars::<G1>(n, 3);
    let expected = oracle(&bases, &random);
    assert_eq!(plain.msm(&random).unwrap(), expected);
    assert_eq!(shifted.msm(&random).unwrap(), expected);
    assert_eq!(Cpu::new().msm(&bases, &random).unwrap(), expected);
    // Adversarial: one bucket per window holds every point.
    let equal = vec![random[0]; n];
    let expected = oracle(&bases, &equal);
    assert_eq!(plain.msm(&equal).unwrap(), expected);
    assert_eq!(shifted.msm(&equal).unwrap(), expected);
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn edge_cases_equal_arkworks() {
    let gpu = cuda();
    for case in edge_cases(&[1, 2, 7, 100, 1000, 4099, 70_001]) {
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

#[test]
#[ignore = "requires a CUDA GPU"]
fn every_window_width() {
    let gpu = cuda();
    let cases = edge_cases(&[301]);
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

#[test]
#[ignore = "requires a CUDA GPU"]
fn chunked_scratch_and_uploads() {
    let gpu = cuda();
    let n = 10_007;
    let bases = random_bases::<G1>(n, 4);
    let scalars = random_scalars::<G1>(n, 5);
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
                got, expected,
                "{scratch_points} scalars a pass, shifted {shifted_bases}"
            );
        }
    }
    for limit in [1, 1000, 4096] {
        let chunked = gpu.clone().with_upload_limit(limit);
        assert_eq!(
            chunked.msm(&bases, &scalars).unwrap(),
            expected,
            "upload limit {limit}"
        );
    }
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn batches_and_device_scalars() {
    let gpu = cuda();
    let n = 3001;
    let bases = random_bases::<G1>(n, 6);
    let sets: Vec<Vec<Fr>> = (0..4).map(|i| random_scalars::<G1>(n, 7 + i)).collect();
    let refs: Vec<&[Fr]> = sets.iter().map(Vec::as_slice).collect();
    let expected: Vec<_> = sets.iter().map(|s| oracle(&bases, s)).collect();
    assert_eq!(gpu.msm_batch(&bases, &refs).unwrap(), expected);
    assert!(gpu.msm_batch(&bases, &[]).unwrap().is_empty());
    let context = gpu.context(&bases, shifted()).unwrap();
    assert_eq!(context.msm_batch(&refs).unwrap(), expected);
    for (scalars, expected) in sets.iter().zip(&expected) {
        let device = context.upload_scalars(scalars).unwrap();
        assert_eq!(device.len(), n);
        // Twice: the scalars on the device are left as they were.
        assert_eq!(context.msm_device(&device).unwrap(), *expected);
        assert_eq!(context.msm_device(&device).unwrap(), *expected);
    }
    assert_eq!(
        msm::Backend::best().msm(&bases, &sets[0]).unwrap(),
        expected[0]
    );
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn errors() {
    let gpu = cuda();
    assert!(gpu.name().starts_with("cuda: "));
    common::check_trait_errors(&gpu);
    let bases = random_bases::<G1>(5, 8);
    let scalars = random_scalars::<G1>(6, 9);
    assert!(matches!(
        gpu.context(&[], ContextOptions::default()),
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
    let many = vec![G1Affine::generator(); 1 << 23];
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random sizes, scalars from random bytes, bases with some at infinity, repeated or
    /// negated, random window widths, with and without shifted bases.
    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn equals_arkworks(
        scalar_bytes in prop::collection::vec(any::<[u8; 32]>(), 1..3000),
        seed in any::<u64>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..4), 0..16),
        window in prop::option::of(1u32..=16),
        shifted_bases in any::<bool>(),
    ) {
        let (bases, scalars) = common::edited_inputs(&scalar_bytes, seed, &edits);
        let options = ContextOptions { window_bits: window, shifted_bases, scratch_points: None };
        let context = cuda().context(&bases, options).unwrap();
        prop_assert_eq!(context.msm(&scalars).unwrap(), oracle(&bases, &scalars));
    }
}
