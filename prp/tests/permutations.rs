//! SwapOrNot, Sometimes-Recurse, the sampler and the iPRF on the CPU: against the second
//! implementation in `spec/`, against written-out vectors, and their defining properties.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod spec;

use std::collections::BTreeSet;

use proptest::prelude::*;
use prp::{
    Cpu, Error, Evaluator, Iprf, Key, Permutation, Pmns, R12, R20, SometimesRecurse, SwapOrNot,
};

fn key(seed: u8) -> [u8; 32] {
    std::array::from_fn(|i| seed.wrapping_mul(31).wrapping_add(i as u8))
}

/// Written-out SwapOrNot values (key(1), 2^17 values, 759 rounds: the Plinko GPU benchmark's
/// shape), checked against the spec model before they were written down.
#[test]
fn swap_or_not_known_answers() {
    let prp = SwapOrNot::new(Key::new(&key(1)), 1 << 17, 759).unwrap();
    let expected = [(0, 19380), (1, 77697), (12345, 87792), (131071, 70244)];
    for (x, y) in expected {
        assert_eq!(prp.forward(x).unwrap(), y, "P({x})");
        assert_eq!(prp.inverse(y).unwrap(), x, "P^-1({y})");
        assert_eq!(spec::swap_or_not(&key(1), 0, 1 << 17, 759, x), y);
    }
}

/// Written-out Sometimes-Recurse values over a domain that is not a power of two.
#[test]
fn sometimes_recurse_known_answers() {
    let n = 1_000_003;
    let prp = SometimesRecurse::new(Key::new(&key(2)), n).unwrap();
    let expected = [
        (0, 353529),
        (1, 590598),
        (500_000, 380920),
        (1_000_002, 653302),
    ];
    for (x, y) in expected {
        assert_eq!(prp.forward(x).unwrap(), y, "P({x})");
        assert_eq!(prp.inverse(y).unwrap(), x, "P^-1({y})");
        assert_eq!(spec::recurse(&key(2), n, 128, x), y);
    }
}

/// Written-out sampler ranges and iPRF values.
#[test]
fn pmns_and_iprf_known_answers() {
    let pmns = Pmns::new(Key::new(&key(3)), 1000, 8).unwrap();
    let boundaries = Cpu.bin_boundaries(&pmns).unwrap();
    assert_eq!(boundaries, [0, 122, 256, 384, 518, 647, 783, 904, 1000]);
    for y in 0..8 {
        let (start, len) = spec::pmns_range(&key(3), 1000, 3, y);
        assert_eq!(pmns.range(y).unwrap(), start..start + len);
    }
    let iprf = Iprf::new(Key::new(&key(4)), 3000, 16).unwrap();
    let expected = [(0, 6), (1, 8), (2999, 10)];
    for (x, y) in expected {
        assert_eq!(iprf.forward(x).unwrap(), y, "F({x})");
        assert_eq!(spec::iprf(&key(4), 3000, 4, x), y);
    }
}

/// Every small domain, a few round counts: forward is a bijection and inverse undoes it.
#[test]
fn swap_or_not_is_a_permutation_exhaustively() {
    for n in 2..=70u64 {
        for rounds in [0, 1, 2, 7, 40] {
            let prp = SwapOrNot::new(Key::new(&key(n as u8)), n, rounds).unwrap();
            let images: BTreeSet<u64> = (0..n).map(|x| prp.forward(x).unwrap()).collect();
            assert_eq!(images, (0..n).collect(), "N = {n}, t = {rounds}");
            for x in 0..n {
                assert_eq!(prp.inverse(prp.forward(x).unwrap()).unwrap(), x);
            }
        }
    }
}

#[test]
fn sometimes_recurse_is_a_permutation_exhaustively() {
    for n in [2, 3, 4, 5, 7, 8, 31, 64, 100, 257] {
        let prp = SometimesRecurse::new(Key::new(&key(n as u8)), n).unwrap();
        let forward: Vec<u64> = (0..n).map(|x| prp.forward(x).unwrap()).collect();
        let images: BTreeSet<u64> = forward.iter().copied().collect();
        assert_eq!(images, (0..n).collect(), "N = {n}");
        for (x, &y) in forward.iter().enumerate() {
            assert_eq!(prp.inverse(y).unwrap(), x as u64);
            assert_eq!(spec::recurse(&key(n as u8), n, 128, x as u64), y);
        }
    }
}

/// Whole-domain tables and batches (both the table and the direct path) match single values.
#[test]
fn tables_and_batches_match_single_evaluations() {
    for n in [2u64, 3, 1000, 4099] {
        let prp = SometimesRecurse::new(Key::new(&key(7)), n).unwrap();
        let forward = Cpu.forward_table(&prp).unwrap();
        let inverse = Cpu.inverse_table(&prp).unwrap();
        for x in 0..n {
            let y = prp.forward(x).unwrap();
            assert_eq!(u64::from(forward[x as usize]), y);
            assert_eq!(u64::from(inverse[y as usize]), x);
        }
        // A whole-domain batch takes the table path, a two-value batch the direct one.
        let mut all: Vec<u64> = (0..n).rev().collect();
        Cpu.forward_batch(&prp, &mut all).unwrap();
        let mut two = vec![n - 1, 0];
        Cpu.forward_batch(&prp, &mut two).unwrap();
        assert_eq!(two, [all[0], all[n as usize - 1]]);
        Cpu.inverse_batch(&prp, &mut all).unwrap();
        assert_eq!(all, (0..n).rev().collect::<Vec<_>>());
    }
    let sn = SwapOrNot::new(Key::new(&key(8)), 777, 100).unwrap();
    let table = Cpu.inverse_table(&sn).unwrap();
    for y in 0..777 {
        assert_eq!(u64::from(table[y as usize]), sn.inverse(y).unwrap());
    }
}

/// The ChaCha variant changes every value, and each variant still inverts.
#[test]
fn variants_are_distinct_permutations() {
    let n = 1 << 20;
    let p8 = SometimesRecurse::new(Key::new(&key(9)), n).unwrap();
    let p12 = SometimesRecurse::with_variant(R12, Key::new(&key(9)), n, 128).unwrap();
    let p20 = SometimesRecurse::with_variant(R20, Key::new(&key(9)), n, 128).unwrap();
    let xs = [0, 1, 2, 3, 4, 5, 6, 7];
    let y8: Vec<u64> = xs.iter().map(|&x| p8.forward(x).unwrap()).collect();
    let y12: Vec<u64> = xs.iter().map(|&x| p12.forward(x).unwrap()).collect();
    let y20: Vec<u64> = xs.iter().map(|&x| p20.forward(x).unwrap()).collect();
    assert_ne!(y8, y12);
    assert_ne!(y12, y20);
    for (&x, &y) in xs.iter().zip(&y20) {
        assert_eq!(p20.inverse(y).unwrap(), x);
    }
}

/// The iPRF inverse is exactly the set of preimages; its tables say the same for every bin.
#[test]
fn iprf_inverse_is_the_preimage_set() {
    for (m, bins) in [
        (1u64, 1u64),
        (1, 4),
        (2, 2),
        (100, 8),
        (1000, 64),
        (513, 1024),
    ] {
        let iprf = Iprf::new(Key::new(&key(m as u8)), m, bins).unwrap();
        let images: Vec<u64> = (0..m).map(|x| iprf.forward(x).unwrap()).collect();
        let tables = Cpu.iprf_tables(&iprf).unwrap();
        let mut batch: Vec<u64> = (0..m).collect();
        Cpu.iprf_forward_batch(&iprf, &mut batch).unwrap();
        assert_eq!(batch, images);
        for y in 0..bins {
            let expected: BTreeSet<u64> = (0..m).filter(|&x| images[x as usize] == y).collect();
            let found: BTreeSet<u64> = iprf.preimages(y).unwrap().into_iter().collect();
            assert_eq!(found, expected, "m = {m}, w = {bins}, y = {y}");
            let from_tables: BTreeSet<u64> = tables
                .preimages(y)
                .unwrap()
                .iter()
                .map(|&x| u64::from(x))
                .collect();
            assert_eq!(from_tables, expected);
        }
    }
}

#[test]
fn bad_parameters_are_errors() {
    let k = || Key::new(&key(0));
    assert!(matches!(
        SwapOrNot::new(k(), 1, 8),
        Err(Error::DomainTooSmall { domain: 1 })
    ));
    assert!(matches!(
        SwapOrNot::new(k(), 0, 8),
        Err(Error::DomainTooSmall { domain: 0 })
    ));
    assert!(matches!(
        SometimesRecurse::new(k(), 1),
        Err(Error::DomainTooSmall { .. })
    ));
    assert!(matches!(
        SwapOrNot::new(k(), 10, (1 << 24) + 1),
        Err(Error::TooManyRounds { .. })
    ));
    let prp = SwapOrNot::new(k(), 10, 8).unwrap();
    assert!(matches!(
        prp.forward(10),
        Err(Error::OutOfDomain {
            value: 10,
            domain: 10
        })
    ));
    assert!(matches!(
        prp.inverse(u64::MAX),
        Err(Error::OutOfDomain { .. })
    ));
    let mut values = vec![1, 2, 10, 3];
    assert!(matches!(
        Cpu.forward_batch(&prp, &mut values),
        Err(Error::OutOfDomain { value: 10, .. })
    ));
    assert_eq!(
        values,
        [1, 2, 10, 3],
        "a failed batch leaves its input alone"
    );
    let huge = SwapOrNot::new(k(), (1 << 32) + 1, 0).unwrap();
    assert!(matches!(
        Cpu.inverse_table(&huge),
        Err(Error::TooLarge { .. })
    ));
    assert!(matches!(Pmns::new(k(), 0, 4), Err(Error::EmptyDomain)));
    assert!(matches!(
        Pmns::new(k(), 10, 6),
        Err(Error::BinsNotPowerOfTwo { bins: 6 })
    ));
    assert!(matches!(
        Pmns::new(k(), 10, 0),
        Err(Error::BinsNotPowerOfTwo { bins: 0 })
    ));
    assert!(matches!(Iprf::new(k(), 0, 4), Err(Error::EmptyDomain)));
    assert!(matches!(
        Iprf::new(k(), 10, 3),
        Err(Error::BinsNotPowerOfTwo { .. })
    ));
    let iprf = Iprf::new(k(), 10, 4).unwrap();
    assert!(matches!(iprf.forward(10), Err(Error::OutOfDomain { .. })));
    assert!(matches!(
        iprf.preimages(4),
        Err(Error::OutOfRange { value: 4, range: 4 })
    ));
}

#[test]
fn debug_output_hides_keys() {
    let prp = SometimesRecurse::new(Key::new(&[0xab; 32]), 100).unwrap();
    let iprf = Iprf::new(Key::new(&[0xab; 32]), 100, 4).unwrap();
    for shown in [format!("{prp:?}"), format!("{iprf:?}")] {
        assert!(shown.contains("<secret>") || !shown.contains("key"));
        assert!(!shown.contains("171") && !shown.contains("ab, "));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// SwapOrNot over any domain up to 2^64 - 1 agrees with the spec model both ways.
    #[test]
    fn swap_or_not_matches_the_spec(seed: u8, n in 2u64.., x: u64, rounds in 0u32..12) {
        let x = x % n;
        let prp = SwapOrNot::new(Key::new(&key(seed)), n, rounds).unwrap();
        let y = prp.forward(x).unwrap();
        prop_assert_eq!(y, spec::swap_or_not(&key(seed), 0, n, rounds, x));
        prop_assert_eq!(prp.inverse(y).unwrap(), x);
    }

    /// The PMNS: counts sum to m, ranges tile [0, m), and bin() agrees with range().
    #[test]
    fn pmns_ranges_tile_the_balls(seed: u8, m in 1u64..5000, b in 0u32..7, x: u64) {
        let pmns = Pmns::new(Key::new(&key(seed)), m, 1 << b).unwrap();
        let boundaries = Cpu.bin_boundaries(&pmns).unwrap();
        prop_assert_eq!(boundaries.len(), (1 << b) + 1);
        prop_assert_eq!(boundaries[0], 0);
        prop_assert_eq!(*boundaries.last().unwrap(), m);
        prop_assert!(boundaries.windows(2).all(|w| w[0] <= w[1]));
        let x = x % m;
        let bin = pmns.bin(x).unwrap();
        prop_assert!(pmns.range(bin).unwrap().contains(&x));
        prop_assert_eq!(pmns.range(bin).unwrap(), boundaries[bin as usize]..boundaries[bin as usize + 1]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Sometimes-Recurse over large domains agrees with the spec model both ways.
    #[test]
    fn sometimes_recurse_matches_the_spec(seed: u8, n in 2u64.., x: u64, lambda in 0u32..200) {
        let x = x % n;
        let prp = SometimesRecurse::with_variant(prp::R8, Key::new(&key(seed)), n, lambda).unwrap();
        let y = prp.forward(x).unwrap();
        prop_assert_eq!(y, spec::recurse(&key(seed), n, lambda, x));
        prop_assert_eq!(prp.inverse(y).unwrap(), x);
        prop_assert_eq!(spec::recurse_inverse(&key(seed), n, lambda, y), x);
    }
}
