//! `msm` under extreme values, many threads and GPU faults.
//!
//! The CPU tests cover every public entry point that takes a length, a count or a window
//! width: empty and mismatched inputs, one point, window widths 0, 1, the maximum and
//! `u32::MAX`, point counts 0 and `usize::MAX` for the window tables, and random short inputs
//! full of edge values (zero scalars, `-1`, the point at infinity, `P` beside `-P`) against a
//! plain sum of scalar multiplications, in all four groups. The GPU tests (ignored without a
//! GPU) share one backend and one context among 8 threads, fill the GPU's memory in the
//! middle of a run, and check that the next call still gives the right sum.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{One, UniformRand, Zero};
use ark_std::rand::SeedableRng;
use ark_std::rand::rngs::StdRng;
use msm::{Cpu, Error, MAX_WINDOW_BITS, MsmBackend, MsmCurve};
use proptest::prelude::*;

use crate::assert_send_sync;

type Scalar<C> = <C as ark_ec::CurveConfig>::ScalarField;

/// Every backend and context type crosses threads and is shared between them.
#[test]
fn backends_and_contexts_are_send_and_sync() {
    assert_send_sync::<Cpu>();
    assert_send_sync::<Error>();
    #[cfg(feature = "cuda")]
    {
        assert_send_sync::<msm::Backend>();
        assert_send_sync::<msm::Cuda>();
        assert_send_sync::<msm::MultiGpu>();
        assert_send_sync::<msm::MultiGpuContext<ark_bls12_381::g1::Config>>();
        assert_send_sync::<msm::MsmContext<ark_bls12_381::g1::Config>>();
        assert_send_sync::<msm::MsmContext<ark_bn254::g2::Config>>();
        assert_send_sync::<msm::DeviceScalars<msm::Fr>>();
    }
}

/// The sum `sum_i s_i P_i` by one scalar multiplication per point: the oracle.
fn plain_sum<C: SWCurveConfig>(bases: &[Affine<C>], scalars: &[Scalar<C>]) -> Projective<C> {
    bases.iter().zip(scalars).map(|(p, s)| *p * s).sum()
}

/// `n` bases and scalars drawn from `seed`, with the edge values mixed in as `kinds` says:
/// per position, 0 a random point and scalar, 1 the point at infinity, 2 the negation of the
/// previous point, 3 a zero scalar, 4 the scalar `-1`, 5 a repeat of the previous point.
fn inputs<C: MsmCurve>(kinds: &[u8], seed: u64) -> (Vec<Affine<C>>, Vec<Scalar<C>>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut bases: Vec<Affine<C>> = Vec::with_capacity(kinds.len());
    let mut scalars = Vec::with_capacity(kinds.len());
    for &kind in kinds {
        let previous = bases.last().copied();
        let random = Projective::<C>::rand(&mut rng).into_affine();
        let base = match (kind, previous) {
            (1, _) => Affine::<C>::zero(),
            (2, Some(p)) => -p,
            (5, Some(p)) => p,
            _ => random,
        };
        let scalar = match kind {
            3 => Scalar::<C>::zero(),
            4 => -Scalar::<C>::one(),
            _ => Scalar::<C>::rand(&mut rng),
        };
        bases.push(base);
        scalars.push(scalar);
    }
    (bases, scalars)
}

/// The trait's error paths, in group `C`, on any backend.
fn check_errors<C: MsmCurve>(backend: &dyn MsmBackend<C>) {
    let (bases, scalars) = inputs::<C>(&[0, 0, 0], 1);
    assert!(matches!(backend.msm(&[], &[]), Err(Error::Empty)));
    assert!(matches!(
        backend.msm(&bases, &scalars[..2]),
        Err(Error::LengthMismatch {
            bases: 3,
            scalars: 2
        })
    ));
    assert!(matches!(
        backend.msm(&bases[..1], &scalars),
        Err(Error::LengthMismatch {
            bases: 1,
            scalars: 3
        })
    ));
    assert!(matches!(
        backend.msm(&[], &scalars),
        Err(Error::LengthMismatch {
            bases: 0,
            scalars: 3
        })
    ));
    // Batches: the first bad set is named; no sets is no sums; sets over no bases are empty.
    assert!(matches!(
        backend.msm_batch(&bases, &[&scalars[..], &scalars[..1], &[]]),
        Err(Error::BatchLengthMismatch {
            set: 1,
            bases: 3,
            scalars: 1
        })
    ));
    assert!(backend.msm_batch(&bases, &[]).is_ok_and(|s| s.is_empty()));
    assert!(backend.msm_batch(&[], &[]).is_ok_and(|s| s.is_empty()));
    assert!(matches!(backend.msm_batch(&[], &[&[]]), Err(Error::Empty)));
    // One point.
    assert_eq!(
        backend.msm(&bases[..1], &scalars[..1]).ok(),
        Some(bases[0] * scalars[0])
    );
}

#[test]
fn cpu_errors_in_every_group() {
    let cpu = Cpu::new();
    check_errors::<ark_bls12_381::g1::Config>(&cpu);
    check_errors::<ark_bls12_381::g2::Config>(&cpu);
    check_errors::<ark_bn254::g1::Config>(&cpu);
    check_errors::<ark_bn254::g2::Config>(&cpu);
}

#[test]
fn window_widths_out_of_range_are_errors() {
    for bits in [0, MAX_WINDOW_BITS + 1, u32::MAX / 2, u32::MAX] {
        assert!(
            matches!(
                Cpu::with_window_bits(bits),
                Err(Error::InvalidWindow { bits: b, max: MAX_WINDOW_BITS }) if b == bits
            ),
            "{bits} bits"
        );
    }
    // The table answers for any point count.
    for points in [0, 1, 2, 1 << 20, usize::MAX / 2, usize::MAX] {
        let bits = Cpu::new().window_bits(points);
        assert!(
            (1..=MAX_WINDOW_BITS).contains(&bits),
            "{points} points: {bits}"
        );
        #[cfg(feature = "cuda")]
        for shifted in [false, true] {
            let bits = msm::default_gpu_window_bits(points, shifted);
            assert!((1..=msm::MAX_GPU_WINDOW_BITS).contains(&bits));
        }
    }
}

/// The extreme window widths give the right sum: 1 bit (256 windows) and the widest (one
/// window of 2^19 buckets for two points).
#[test]
fn extreme_window_widths_give_the_right_sum() {
    let (bases, scalars) = inputs::<ark_bn254::g1::Config>(&[0, 2, 4, 3, 1, 5], 2);
    let expected = plain_sum(&bases, &scalars);
    for bits in [1, 2, MAX_WINDOW_BITS] {
        let cpu = Cpu::with_window_bits(bits).unwrap();
        assert_eq!(cpu.msm(&bases, &scalars).unwrap(), expected, "{bits} bits");
    }
}

/// Random short inputs full of edge values in group `C`, with a window of `bits` bits (or
/// the table's), single and batched, against the plain sum.
fn check_random<C: MsmCurve>(kinds: &[u8], bits: Option<u32>, seed: u64) {
    let (bases, scalars) = inputs::<C>(kinds, seed);
    let cpu = match bits {
        Some(bits) => Cpu::with_window_bits(bits).unwrap(),
        None => Cpu::new(),
    };
    let expected = plain_sum(&bases, &scalars);
    assert_eq!(cpu.msm(&bases, &scalars).unwrap(), expected);
    let doubled: Vec<_> = scalars.iter().map(|s| *s + s).collect();
    let sums = cpu
        .msm_batch(&bases, &[&scalars[..], &doubled[..]])
        .unwrap();
    assert_eq!(sums, vec![expected, expected + expected]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn short_inputs_with_edge_values_match_the_plain_sum(
        kinds in prop::collection::vec(0u8..6, 1..24),
        bits in prop::option::of(1u32..=8),
        group in 0u8..4,
        seed: u64,
    ) {
        match group {
            0 => check_random::<ark_bls12_381::g1::Config>(&kinds, bits, seed),
            1 => check_random::<ark_bls12_381::g2::Config>(&kinds, bits, seed),
            2 => check_random::<ark_bn254::g1::Config>(&kinds, bits, seed),
            _ => check_random::<ark_bn254::g2::Config>(&kinds, bits, seed),
        }
    }
}

/// All zero scalars, all points at infinity: the identity, never a panic.
#[test]
fn degenerate_inputs_sum_to_the_identity() {
    type C = ark_bls12_381::g1::Config;
    let (bases, _) = inputs::<C>(&[0; 5], 3);
    let zeros = vec![Scalar::<C>::zero(); 5];
    let cpu = Cpu::new();
    assert!(cpu.msm(&bases, &zeros).unwrap().is_zero());
    let infinity = vec![Affine::<C>::zero(); 5];
    let (_, scalars) = inputs::<C>(&[0; 5], 4);
    assert!(cpu.msm(&infinity, &scalars).unwrap().is_zero());
    assert!(bases[0].is_on_curve());
}

/// GPU tests: one backend and one context shared by 8 threads, and out-of-memory faults.
#[cfg(feature = "cuda")]
mod gpu {

    use super::*;
    use msm::{ContextOptions, Cuda};

    type G1 = ark_bls12_381::g1::Config;

    /// 8 threads share one `Cuda` and one `MsmContext` for 20 calls each, with point counts
    /// that are not multiples of any block size, and every sum equals the CPU's.
    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn eight_threads_share_one_backend_and_one_context() {
        let _lock = crate::kernels::gpu_lock();
        let cuda = Cuda::new().unwrap();
        let (bases, _) = inputs::<G1>(&vec![0u8; 4099], 10);
        let context = cuda.context(&bases, ContextOptions::default()).unwrap();
        let sizes = [1usize, 3, 257, 1000, 4097];
        let cpu = Cpu::new();
        std::thread::scope(|scope| {
            for thread in 0..8u64 {
                let (cuda, context, bases, cpu) = (&cuda, &context, &bases, &cpu);
                scope.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(100 + thread);
                    for call in 0..20usize {
                        if call % 2 == 0 {
                            let scalars: Vec<_> =
                                (0..bases.len()).map(|_| msm::Fr::rand(&mut rng)).collect();
                            let got = context.msm(&scalars).unwrap();
                            assert_eq!(got, cpu.msm(bases, &scalars).unwrap());
                        } else {
                            let n = sizes[(call + thread as usize) % sizes.len()];
                            let scalars: Vec<_> = (0..n).map(|_| msm::Fr::rand(&mut rng)).collect();
                            let got = cuda.msm(&bases[..n], &scalars).unwrap();
                            assert_eq!(got, cpu.msm(&bases[..n], &scalars).unwrap());
                        }
                    }
                });
            }
        });
    }

    /// Context options at their extremes: windows out of range and no bases are refused;
    /// one-bit and the widest windows, and scratch limits of 0 and `usize::MAX`, give the
    /// right sum; device scalars of another length are refused.
    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn context_options_at_the_edges() {
        let _lock = crate::kernels::gpu_lock();
        let cuda = Cuda::new().unwrap();
        let (bases, scalars) = inputs::<G1>(&[0, 1, 2, 3, 4, 5, 0, 0, 0], 12);
        let expected = plain_sum(&bases, &scalars);
        for bits in [0, msm::MAX_GPU_WINDOW_BITS + 1, u32::MAX] {
            let options = ContextOptions {
                window_bits: Some(bits),
                ..Default::default()
            };
            assert!(matches!(
                cuda.context(&bases, options),
                Err(Error::InvalidWindow { bits: b, .. }) if b == bits
            ));
        }
        assert!(matches!(
            cuda.context::<G1>(&[], ContextOptions::default()),
            Err(Error::Empty)
        ));
        for (bits, shifted, scratch) in [
            (1, false, None),
            (1, true, Some(0)),
            (msm::MAX_GPU_WINDOW_BITS, true, Some(usize::MAX)),
            (13, false, Some(1)),
            (13, true, Some(2)),
        ] {
            let options = ContextOptions {
                window_bits: Some(bits),
                shifted_bases: shifted,
                scratch_points: scratch,
            };
            let context = cuda.context(&bases, options).unwrap();
            assert_eq!(context.msm(&scalars).unwrap(), expected, "{options:?}");
            let device = context.upload_scalars(&scalars).unwrap();
            assert_eq!(
                context.msm_device(&device).unwrap(),
                expected,
                "{options:?}"
            );
            let short = context.upload_scalars(&scalars[..3]).unwrap();
            assert!(matches!(
                context.msm_device(&short),
                Err(Error::LengthMismatch {
                    bases: 9,
                    scalars: 3
                })
            ));
            assert!(matches!(
                context.msm_batch(&[&scalars[..], &scalars[1..]]),
                Err(Error::BatchLengthMismatch { set: 1, .. })
            ));
        }
        check_errors::<G1>(&cuda);
        check_errors::<ark_bn254::g2::Config>(&cuda);
    }

    /// The GPU runs out of memory in the middle of a run (the context's scratch, allocated at
    /// its first MSM, no longer fits: 16-bit windows need about 100 MB of buckets whatever
    /// the chunk): an error with the numbers, then, with the memory back, the same context
    /// gives the right sum. A context too large for what is free is refused with the numbers,
    /// and a plain MSM with an upload limit is split and still right.
    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn out_of_memory_mid_run_is_an_error_and_the_next_call_succeeds() {
        let _lock = crate::kernels::gpu_lock();
        let cuda = Cuda::new().unwrap();
        let (bases, scalars) = inputs::<G1>(&vec![0u8; 3001], 11);
        let expected = Cpu::new().msm(&bases, &scalars).unwrap();
        let options = ContextOptions {
            window_bits: Some(16),
            ..Default::default()
        };
        let context = cuda.context(&bases, options).unwrap();
        let ballast = crate::kernels::fill_device_memory(cuda.gpu(), 16 << 20);
        match context.msm(&scalars) {
            Err(Error::Gpu(error)) => crate::kernels::assert_out_of_memory(&error),
            Err(Error::OutOfMemory { bytes, points }) => {
                assert!(bytes > 0 && points > 0);
            }
            other => panic!("expected an out-of-memory error, got {other:?}"),
        }
        match cuda.context(
            &bases,
            ContextOptions {
                shifted_bases: true,
                ..Default::default()
            },
        ) {
            Err(Error::BasesTooLarge {
                points,
                bytes,
                free,
                ..
            }) => {
                assert_eq!(points, bases.len());
                assert!(bytes > 0 && free < bytes + (256 << 20));
            }
            other => panic!("expected BasesTooLarge, got {:?}", other.map(|c| c.len())),
        }
        drop(ballast);
        assert_eq!(context.msm(&scalars).unwrap(), expected);
        let split = cuda.clone().with_upload_limit(1000);
        assert_eq!(split.msm(&bases, &scalars).unwrap(), expected);
    }
}
