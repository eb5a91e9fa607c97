//! The CUDA permutations, sampler and iPRF against the CPU reference on fresh random keys and
//! sizes. Ignored by default: run with `cargo test --release -- --include-ignored` on a CUDA
//! machine. They fail, never skip, when no GPU is usable.
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::test_runner::TestRng;
use prp::{
    Cpu, Cuda, Evaluator, Iprf, Key, Permutation, Pmns, R8, R12, R20, Rounds, SometimesRecurse,
    SwapOrNot,
};
use rand::Rng;

fn cuda() -> &'static Cuda {
    static CUDA: OnceLock<Cuda> = OnceLock::new();
    CUDA.get_or_init(|| Cuda::new().expect("these tests need a usable CUDA GPU"))
}

/// `len` random values below `domain`, with both ends of the domain among them.
fn values(rng: &mut TestRng, domain: u64, len: usize) -> Vec<u64> {
    let mut values: Vec<u64> = (0..len).map(|_| rng.random_range(0..domain)).collect();
    if len >= 2 {
        values[0] = 0;
        values[len - 1] = domain - 1;
    }
    values
}

/// Batches forward and inverse (direct and through a table) and both tables, GPU against CPU.
fn check_permutation<P: Permutation>(prp: &P, values: &[u64]) -> Result<(), TestCaseError> {
    let mut expected = values.to_vec();
    Cpu.forward_batch(prp, &mut expected).unwrap();
    let mut got = values.to_vec();
    cuda().forward_batch(prp, &mut got).unwrap();
    prop_assert!(
        got == expected,
        "forward batch differs, N = {}",
        prp.domain()
    );
    cuda().inverse_batch(prp, &mut got).unwrap();
    prop_assert!(
        got == values,
        "inverse batch does not undo forward, N = {}",
        prp.domain()
    );
    if prp.domain() <= 1 << 22 {
        let table = cuda().inverse_table(prp).unwrap();
        prop_assert!(
            table == Cpu.inverse_table(prp).unwrap(),
            "P^-1 table, N = {}",
            prp.domain()
        );
        let table = cuda().forward_table(prp).unwrap();
        prop_assert!(
            table == Cpu.forward_table(prp).unwrap(),
            "P table, N = {}",
            prp.domain()
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn swap_or_not_matches_cpu(seed: [u8; 32], n in 2u64..(1 << 20), rounds in 0u32..120, len in 1usize..3000) {
        let prp = SwapOrNot::new(Key::new(&seed), n, rounds).unwrap();
        let mut rng = TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &seed);
        check_permutation(&prp, &values(&mut rng, n, len))?;
    }

    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn sometimes_recurse_matches_cpu(seed: [u8; 32], n in 2u64..(1 << 19), len in 1usize..2000) {
        let prp = SometimesRecurse::new(Key::new(&seed), n).unwrap();
        let mut rng = TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &seed);
        check_permutation(&prp, &values(&mut rng, n, len))?;
    }

    /// Domains above 2^32, random access only (no table exists there).
    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn large_domains_match_cpu(seed: [u8; 32], n in (1u64 << 32)..=u64::MAX, len in 1usize..300) {
        let prp = SometimesRecurse::new(Key::new(&seed), n).unwrap();
        let mut rng = TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &seed);
        check_permutation(&prp, &values(&mut rng, n, len))?;
        let sn = SwapOrNot::new(Key::new(&seed), n, 200).unwrap();
        check_permutation(&sn, &values(&mut rng, n, len))?;
    }

    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn pmns_matches_cpu(seed: [u8; 32], m in 1u64..(1 << 24), b in 0u32..12) {
        let pmns = Pmns::new(Key::new(&seed), m, 1 << b).unwrap();
        prop_assert_eq!(cuda().bin_boundaries(&pmns).unwrap(), Cpu.bin_boundaries(&pmns).unwrap());
    }

    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn iprf_matches_cpu(seed: [u8; 32], m in 1u64..(1 << 18), b in 0u32..10, len in 1usize..500) {
        let iprf = Iprf::new(Key::new(&seed), m, 1 << b).unwrap();
        prop_assert_eq!(cuda().iprf_tables(&iprf).unwrap(), Cpu.iprf_tables(&iprf).unwrap());
        let mut rng = TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &seed);
        let xs = values(&mut rng, m, len);
        let (mut got, mut expected) = (xs.clone(), xs);
        cuda().iprf_forward_batch(&iprf, &mut got).unwrap();
        Cpu.iprf_forward_batch(&iprf, &mut expected).unwrap();
        prop_assert_eq!(got, expected);
    }
}

/// Tables across the shared-memory threshold (32768) and in the ChaCha12 and ChaCha20 variants.
#[test]
#[ignore = "requires a CUDA GPU"]
fn tables_around_the_shared_memory_threshold_and_variants() {
    fn check<R: Rounds>(variant: R, n: u64) {
        let prp =
            SometimesRecurse::with_variant(variant, Key::new(&[n as u8; 32]), n, 128).unwrap();
        let expected = Cpu.inverse_table(&prp).unwrap();
        assert_eq!(
            cuda().inverse_table(&prp).unwrap(),
            expected,
            "ChaCha{} N = {n}",
            R::ROUNDS
        );
        let mut all: Vec<u64> = (0..n).collect();
        cuda().forward_batch(&prp, &mut all).unwrap();
        for (x, &y) in all.iter().enumerate() {
            assert_eq!(u64::from(expected[y as usize]), x as u64);
        }
    }
    for n in [2, 3, 32767, 32768, 32769, 65535, 65536, 65537, 100_003] {
        check(R8, n);
    }
    check(R12, 40_000);
    check(R20, 40_000);
    let sn = SwapOrNot::with_variant(R20, Key::new(&[1; 32]), 1 << 17, 759).unwrap();
    assert_eq!(
        cuda().inverse_table(&sn).unwrap(),
        Cpu.inverse_table(&sn).unwrap()
    );
}

/// Several inverse tables built at once (a thread block each below the shared-memory
/// threshold, one by one above it) against the CPU's tables, on fresh random keys.
#[test]
#[ignore = "requires a CUDA GPU"]
fn many_inverse_tables_at_once_equal_the_cpu_tables() {
    fn check<P: Permutation>(prps: &[P]) {
        let n = prps[0].domain() as usize;
        let refs: Vec<&P> = prps.iter().collect();
        let got = cuda()
            .inverse_tables_device(&refs)
            .unwrap()
            .to_host()
            .unwrap();
        assert_eq!(got.len(), n * prps.len());
        for (i, prp) in prps.iter().enumerate() {
            let expected = Cpu.inverse_table(prp).unwrap();
            assert!(
                got[i * n..(i + 1) * n] == expected[..],
                "table {i}, N = {n}"
            );
        }
    }
    for (n, count) in [
        (2, 5),
        (3, 1),
        (1000, 7),
        (2048, 64),
        (32_768, 3),
        (32_769, 2),
    ] {
        let prps: Vec<_> = (0..count)
            .map(|_| SometimesRecurse::new(Key::new(&rand::random()), n).unwrap())
            .collect();
        check(&prps);
    }
    let prps: Vec<_> = (0..4)
        .map(|_| SometimesRecurse::with_variant(R12, Key::new(&rand::random()), 5000, 64).unwrap())
        .collect();
    check(&prps);
    let prps: Vec<_> = (0..3)
        .map(|_| SwapOrNot::with_variant(R20, Key::new(&rand::random()), 777, 100).unwrap())
        .collect();
    check(&prps);

    let none: [&SwapOrNot<R8>; 0] = [];
    assert!(cuda().inverse_tables_device(&none).unwrap().is_empty());
    let (a, b) = (
        SometimesRecurse::new(Key::new(&[1; 32]), 100).unwrap(),
        SometimesRecurse::new(Key::new(&[2; 32]), 101).unwrap(),
    );
    let mixed = [&a, &b];
    assert!(matches!(
        cuda().inverse_tables_device(&mixed),
        Err(prp::Error::DomainMismatch {
            expected: 100,
            found: 101
        })
    ));
}

/// A large whole-domain table against single CPU evaluations at random points.
#[test]
#[ignore = "requires a CUDA GPU"]
fn full_domain_table_of_2_pow_25() {
    let prp = SometimesRecurse::new(Key::new(&rand::random()), 1 << 25).unwrap();
    let inverse = cuda().inverse_table(&prp).unwrap();
    let forward = cuda().forward_table(&prp).unwrap();
    for _ in 0..2000 {
        let y = rand::rng().random_range(0..1u64 << 25);
        let x = prp.inverse(y).unwrap();
        assert_eq!(u64::from(inverse[y as usize]), x);
        assert_eq!(u64::from(forward[x as usize]), y);
    }
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn out_of_domain_batches_are_errors() {
    let prp = SwapOrNot::new(Key::new(&[2; 32]), 100, 10).unwrap();
    let mut values = vec![5, 100];
    assert!(matches!(
        cuda().forward_batch(&prp, &mut values),
        Err(prp::Error::OutOfDomain {
            value: 100,
            domain: 100
        })
    ));
}

/// Host batches of at least 2^16 values go through page-locked chunks of 2^21 values: at the
/// threshold, and over two chunks with a partial last one, through a table (SwapOrNot) and one
/// by one (a domain past 2^32).
#[test]
#[ignore = "requires a CUDA GPU"]
fn large_host_batches_through_staging_equal_the_cpu() {
    let seed: [u8; 32] = rand::random();
    let mut rng = TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &seed);
    let sn = SwapOrNot::new(Key::new(&seed), (1 << 17) + 9, 64).unwrap();
    let sr = SometimesRecurse::new(Key::new(&seed), 1 << 40).unwrap();
    for len in [(1 << 16) - 1, 1 << 16, (1 << 21) + 3] {
        check_permutation(&sn, &values(&mut rng, sn.domain(), len))
            .unwrap_or_else(|e| panic!("SwapOrNot, {len} values, seed {seed:?}: {e}"));
    }
    check_permutation(&sr, &values(&mut rng, sr.domain(), (1 << 21) + 3))
        .unwrap_or_else(|e| panic!("Sometimes-Recurse, seed {seed:?}: {e}"));
}
