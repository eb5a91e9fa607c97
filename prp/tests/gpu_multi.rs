//! `MultiGpu` against the CPU reference: every GPU of the machine, and this machine's first
//! GPU given one to three times (so that the parts and their seams are exercised on a host
//! with one GPU). Ignored by default: run with `cargo test --release -- --include-ignored` on
//! a CUDA machine. They fail, never skip, when no GPU is usable.
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use prp::{
    ChaCha8, ChaCha20, Cpu, Error, Evaluator, Iprf, Key, Keystream, MultiGpu, Permutation, Pmns,
    SometimesRecurse, SwapOrNot,
};
use rand::{Rng, SeedableRng};

/// `MultiGpu::new()`, then the first GPU given 1, 2 and 3 times.
fn backends() -> Vec<MultiGpu> {
    let all = MultiGpu::new().expect("these tests need a usable CUDA GPU");
    let first = Arc::clone(all.backends()[0].gpu());
    let mut out = vec![all];
    for times in 1..=3 {
        out.push(MultiGpu::on(&vec![Arc::clone(&first); times]).unwrap());
    }
    out
}

fn random_values(rng: &mut impl Rng, domain: u64, len: usize) -> Vec<u64> {
    let mut values: Vec<u64> = (0..len).map(|_| rng.random_range(0..domain)).collect();
    values[0] = 0;
    values[len - 1] = domain - 1;
    values
}

fn check_batches<P: Permutation>(gpus: &MultiGpu, prp: &P, values: &[u64]) {
    let name = gpus.name();
    let mut expected = values.to_vec();
    Cpu.forward_batch(prp, &mut expected).unwrap();
    let mut got = values.to_vec();
    gpus.forward_batch(prp, &mut got).unwrap();
    assert!(
        got == expected,
        "forward batch of {} on {name}",
        values.len()
    );
    gpus.inverse_batch(prp, &mut got).unwrap();
    assert!(got == values, "inverse batch of {} on {name}", values.len());
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn keystreams_split_over_gpus_equal_the_cpu() {
    let stream = ChaCha8::new(Key::new(&[3; 32]), [1, 2, 3]);
    let wide = ChaCha20::new(Key::new(&[9; 32]), [0, 7, 0]);
    // Two parts of at least 2^18 blocks, and a partial last block; the last counter.
    let cases = [
        (5u32, (3 << 18) * 64 + 17),
        (0, 100),
        (u32::MAX - 9, 10 * 64),
    ];
    for gpus in backends() {
        for &(counter, len) in &cases {
            let mut expected = vec![0u8; len];
            Cpu.fill_keystream(&stream, counter, &mut expected).unwrap();
            let mut got = vec![0xa5u8; len];
            gpus.fill_keystream(&stream, counter, &mut got).unwrap();
            assert!(
                got == expected,
                "fill of {len} from {counter} on {}",
                gpus.name()
            );
        }
        let mut got = vec![1u8; 2 << 20];
        let mut expected = got.clone();
        gpus.fill_keystream(&wide, 11, &mut got).unwrap();
        Cpu.fill_keystream(&wide, 11, &mut expected).unwrap();
        assert!(got == expected, "ChaCha20 fill on {}", gpus.name());
        gpus.fill_keystream(&stream, 0, &mut []).unwrap();

        // Three parts of at least 2^24 blocks.
        let blocks = (3 << 24) + 5;
        assert_eq!(
            gpus.keystream_digest(&stream, 77, blocks).unwrap(),
            Cpu.keystream_digest(&stream, 77, blocks).unwrap(),
            "digest on {}",
            gpus.name()
        );
        assert_eq!(
            gpus.keystream_digest(&stream, 0, 0).unwrap(),
            [0; 16],
            "empty digest"
        );
        assert!(matches!(
            gpus.fill_keystream(&stream, u32::MAX, &mut [0; 65]),
            Err(Error::CounterOverflow { .. })
        ));
        assert!(matches!(
            gpus.keystream_digest(&stream, 2, u64::MAX),
            Err(Error::CounterOverflow { .. })
        ));
    }
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn batches_and_tables_split_over_gpus_equal_the_cpu() {
    // Fresh inputs each run; the seed is printed to replay a failure.
    let run_seed: u64 = rand::random();
    eprintln!("seed {run_seed:#x}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(run_seed);
    let seed: [u8; 32] = rng.random();
    // One by one (parts of 2^15 values and more), and through tables (a small domain).
    let sn = SwapOrNot::new(Key::new(&seed), (1 << 17) - 3, 300).unwrap();
    let small = SwapOrNot::new(Key::new(&seed), 4093, 120).unwrap();
    let sr = SometimesRecurse::new(Key::new(&seed), 1_000_003).unwrap();
    let iprf = Iprf::new(Key::new(&seed), 300_007, 1 << 9).unwrap();
    let pmns = Pmns::new(Key::new(&seed), 1 << 22, 1 << 11).unwrap();
    for gpus in backends() {
        for len in [1, 100, 3 * (1 << 15) + 7] {
            check_batches(&gpus, &sn, &random_values(&mut rng, sn.domain(), len));
            check_batches(&gpus, &sr, &random_values(&mut rng, sr.domain(), len));
        }
        check_batches(&gpus, &small, &random_values(&mut rng, 4093, 5 << 14));
        check_batches(&gpus, &sn, &[]);

        // Tables and samplers go to the GPUs in turn: twice each reaches two of them.
        for _ in 0..2 {
            assert_eq!(
                gpus.inverse_table(&sr).unwrap(),
                Cpu.inverse_table(&sr).unwrap()
            );
            assert_eq!(
                gpus.forward_table(&sn).unwrap(),
                Cpu.forward_table(&sn).unwrap()
            );
            assert_eq!(
                gpus.bin_boundaries(&pmns).unwrap(),
                Cpu.bin_boundaries(&pmns).unwrap()
            );
            assert_eq!(
                gpus.iprf_tables(&iprf).unwrap(),
                Cpu.iprf_tables(&iprf).unwrap()
            );
        }
        let xs = random_values(&mut rng, iprf.domain(), 70_000);
        let (mut got, mut expected) = (xs.clone(), xs);
        gpus.iprf_forward_batch(&iprf, &mut got).unwrap();
        Cpu.iprf_forward_batch(&iprf, &mut expected).unwrap();
        assert_eq!(got, expected, "iPRF batch on {}", gpus.name());

        // A value outside the domain in the last part: an error, and no value changed.
        let mut values = random_values(&mut rng, sn.domain(), 3 << 15);
        *values.last_mut().unwrap() = sn.domain();
        let before = values.clone();
        assert!(matches!(
            gpus.forward_batch(&sn, &mut values),
            Err(Error::OutOfDomain { .. })
        ));
        assert_eq!(values, before, "values unchanged after an error");
    }
}

/// Needs no GPU.
#[test]
fn no_gpus_is_an_error() {
    assert!(matches!(MultiGpu::on(&[]), Err(Error::NoGpus)));
}
