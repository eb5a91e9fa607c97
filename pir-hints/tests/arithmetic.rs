//! Sizes and offsets from callers and files at their extremes (0, 1, values near 2^64, sums
//! and products that overflow, lengths that do not match): every public entry point returns
//! an error or the correct value, never a panic or a wrong block. The expected values are
//! computed here in 128-bit arithmetic, so that these tests hold both with overflow checks
//! (`cargo test`) and without (`cargo test --release`).

use pir_hints::{
    Cpu, Database, HintGenerator, Hints, Job, MAX_BLOCKS, MAX_SYNTHETIC_BYTES, MasterKey, Params,
    Scheme, Subset, direct_hints, fill_synthetic, rms24_offset, select_value, synthetic_database,
    synthetic_stream,
};
use proptest::prelude::*;
use prp::{R8, tags};

/// The nonce of hint `j` under `tag` (SPEC.md): `[jl, jh, tag]`.
fn nonce(hint: u64, tag: u32) -> [u32; 3] {
    [hint as u32, (hint >> 32) as u32, tag]
}

/// A `u64` drawn mostly from the values where arithmetic breaks: 0, 1, powers of two and
/// their neighbours, the ends of the synthetic stream and of `u64`, and any value.
fn extreme() -> impl Strategy<Value = u64> {
    prop_oneof![
        prop::sample::select(vec![
            0,
            1,
            2,
            63,
            64,
            65,
            u64::from(u32::MAX),
            1 << 32,
            MAX_BLOCKS - 1,
            MAX_BLOCKS,
            MAX_SYNTHETIC_BYTES - 64,
            MAX_SYNTHETIC_BYTES,
            1 << 63,
            u64::MAX - 64,
            u64::MAX - 63,
            u64::MAX - 1,
            u64::MAX,
        ]),
        (0..64u32).prop_map(|bits| 1u64 << bits),
        (0..64u32, -3i64..=3).prop_map(|(bits, d)| (1u64 << bits).wrapping_add_signed(d)),
        any::<u64>(),
    ]
}

/// Bytes `offset .. offset + len` of the synthetic stream of `seed`, block by block from the
/// keystream's block function.
fn synthetic_reference(seed: u64, offset: u64, len: usize) -> Vec<u8> {
    let stream = synthetic_stream(seed);
    let first = offset / 64;
    let blocks = (len as u64).div_ceil(64);
    let mut bytes: Vec<u8> = (first..first + blocks)
        .flat_map(|counter| stream.block(counter as u32))
        .flat_map(u32::to_le_bytes)
        .collect();
    bytes.truncate(len);
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn synthetic_fill_is_checked(seed in any::<u64>(), offset in extreme(), len in 0usize..200) {
        let mut out = vec![0xa5u8; len];
        let fits = offset % 64 == 0
            && u128::from(offset) + len as u128 <= u128::from(MAX_SYNTHETIC_BYTES)
            && offset < MAX_SYNTHETIC_BYTES;
        match fill_synthetic(seed, offset, &mut out) {
            Ok(()) => {
                prop_assert!(fits, "offset {offset} + {len} was accepted");
                prop_assert_eq!(out, synthetic_reference(seed, offset, len));
            }
            Err(_) => prop_assert!(!fits, "offset {offset} + {len} was refused"),
        }
    }

    #[test]
    fn synthetic_database_sizes_are_checked(entries in extreme(), entry_size in extreme()) {
        // Only sizes that are small or do not fit get through to an allocation.
        let bytes = u128::from(entries) * u128::from(entry_size);
        prop_assume!(bytes <= 1 << 16 || bytes > u128::from(MAX_SYNTHETIC_BYTES));
        let Ok(entry_size) = usize::try_from(entry_size) else { return Ok(()); };
        match synthetic_database(3, entries, entry_size) {
            Ok(db) => {
                prop_assert_eq!(db.len() as u128, bytes);
                prop_assert_eq!(db, synthetic_reference(3, 0, bytes as usize));
            }
            Err(_) => prop_assert!(bytes > u128::from(MAX_SYNTHETIC_BYTES)),
        }
    }

    #[test]
    fn database_lookups_are_checked(
        entries in 1usize..20,
        entry_size in 1usize..9,
        index in extreme(),
        start in extreme(),
        end in extreme(),
        block_size in extreme(),
    ) {
        let bytes: Vec<u8> = (0..entries * entry_size).map(|i| i as u8).collect();
        let db = Database::new(&bytes, entry_size).unwrap();
        let expected = (index < entries as u64)
            .then(|| &bytes[index as usize * entry_size..(index as usize + 1) * entry_size]);
        prop_assert_eq!(db.entry(index), expected);

        let clamp = |block: u64| {
            (u128::from(block) * u128::from(block_size)).min(entries as u128) as usize * entry_size
        };
        let (first, last) = (clamp(start), clamp(end));
        let expected = if first < last { &bytes[first..last] } else { &[][..] };
        prop_assert_eq!(db.rows(start..end, block_size), expected);
    }

    #[test]
    fn database_lengths_are_checked(len in 0usize..64, entry_size in extreme()) {
        let bytes = vec![0u8; len];
        let Ok(entry_size) = usize::try_from(entry_size) else { return Ok(()); };
        let whole = entry_size != 0 && len != 0 && len % entry_size == 0;
        match Database::new(&bytes, entry_size) {
            Ok(db) => {
                prop_assert!(whole);
                prop_assert_eq!(db.entries() as usize * entry_size, len);
            }
            Err(_) => prop_assert!(!whole),
        }
    }

    #[test]
    fn parameters_are_checked(
        plinko in any::<bool>(),
        entries in extreme(),
        entry_size in extreme(),
        block_size in extreme(),
        main in extreme(),
        backup in extreme(),
        lambda in prop_oneof![Just(0u32), Just(1), Just(u32::MAX), any::<u32>()],
    ) {
        let scheme = if plinko { Scheme::Plinko } else { Scheme::Rms24 };
        let Ok(entry_size) = usize::try_from(entry_size) else { return Ok(()); };
        let params = Params::new(scheme, entries, entry_size)
            .and_then(|p| p.with_block_size(block_size))
            .and_then(|p| p.with_lambda(lambda))
            .and_then(|p| p.with_hints(main, backup));
        let Ok(params) = params else { return Ok(()); };
        // Whatever was accepted has a shape whose sizes all fit.
        let (n, w) = (u128::from(params.entries()), u128::from(params.block_size()));
        let blocks = n.div_ceil(w).next_multiple_of(2);
        prop_assert_eq!(u128::from(params.blocks()), blocks);
        prop_assert!(blocks <= u128::from(MAX_BLOCKS) && blocks * w <= u128::from(u64::MAX));
        let (total, q, e) = (u128::from(main) + u128::from(backup), u128::from(backup), entry_size as u128);
        prop_assert_eq!(u128::from(params.total_hints()), total);
        prop_assert_eq!(
            u128::from(params.hint_set_bytes()),
            total.div_ceil(8) + total * e + q * e
        );
        // Block ranges: any range is either refused or within 0 .. c.
        for range in [0..1, 0..params.blocks(), std::ops::Range { start: 1, end: 0 }, params.blocks() - 1..u64::MAX] {
            let within = range.start < range.end && range.end <= params.blocks();
            prop_assert_eq!(params.check_block_range(&range).is_ok(), within);
        }
    }

    #[test]
    fn subsets_and_offsets_are_checked(hint in extreme(), block in extreme(), size in extreme()) {
        let key = MasterKey::new(&[9; 32]).select_key(Scheme::Rms24);
        let value = select_value(&key, hint, block);
        prop_assert_eq!(value.is_ok(), block < MAX_BLOCKS);
        if let Ok(value) = value {
            // SPEC.md: word a mod 16 of block(ks, floor(a / 16), [jl, jh, SLCT]).
            let words = prp::block::<R8>(&key, (block / 16) as u32, nonce(hint, tags::SLCT));
            prop_assert_eq!(value, words[(block % 16) as usize]);
        }
        match rms24_offset(&key, hint, block, size) {
            Ok(offset) => {
                prop_assert!(block < MAX_BLOCKS && size > 0);
                // SPEC.md: words 2a mod 16 and 2a + 1 mod 16 of block(ks, floor(a / 8), [jl,
                // jh, OFFS]), as a 64-bit number, mod w.
                let words = prp::block::<R8>(&key, (block / 8) as u32, nonce(hint, tags::OFFS));
                let i = 2 * (block % 8) as usize;
                let wide = u64::from(words[i]) | u64::from(words[i + 1]) << 32;
                prop_assert_eq!(offset, wide % size);
            }
            Err(_) => prop_assert!(block >= MAX_BLOCKS || size == 0),
        }
        // Only small block counts reach the allocation of a subset's values.
        let blocks = block.min(1 << 12) | (block & 1);
        let subset = Subset::new(&key, hint, blocks);
        prop_assert_eq!(subset.is_ok(), blocks >= 2 && blocks % 2 == 0);
        for huge in [MAX_BLOCKS + 2, u64::MAX - 1, 0, 1, u64::MAX] {
            prop_assert!(Subset::new(&key, hint, huge).is_err());
        }
    }

    #[test]
    fn hint_lookups_are_checked(hint in extreme(), start in extreme(), end in extreme()) {
        let entries = synthetic_database(5, 40, 3).unwrap();
        let db = Database::new(&entries, 3).unwrap();
        let params = Params::new(Scheme::Rms24, 40, 3).unwrap().with_hints(6, 5).unwrap();
        let key = MasterKey::new(&[1; 32]);
        let hints = Cpu.generate(&Job::new(params, &key), &db).unwrap();
        prop_assert_eq!(hints.parity(hint).is_some(), hint < 11);
        prop_assert_eq!(hints.second_parity(hint).is_some(), (6..11).contains(&hint));
        if hint >= 11 {
            prop_assert!(!hints.is_valid(hint));
        }
        let within = start < end && end <= params.blocks();
        prop_assert_eq!(Job::new(params, &key).with_blocks(start..end).is_ok(), within);
        let direct = direct_hints(&params, &key, &db, params.all_blocks(), &[0, hint]);
        prop_assert_eq!(direct.is_ok(), hint < 11);
        if let Ok(direct) = direct {
            prop_assert_eq!(Some(&direct[1].parity[..]), hints.parity(hint));
        }
    }
}

/// The bug this file was written for: a synthetic fill whose end passes 2^64 wrapped around
/// in a release build and returned the first blocks of the stream as if they were the last.
#[test]
fn synthetic_fill_near_the_end_of_u64() {
    let mut out = [0u8; 128];
    for offset in [u64::MAX - 63, u64::MAX - 127, (u64::MAX - 127) / 64 * 64] {
        assert!(
            fill_synthetic(1, offset, &mut out).is_err(),
            "offset {offset}"
        );
    }
    let last = MAX_SYNTHETIC_BYTES - 128;
    fill_synthetic(1, last, &mut out).unwrap();
    assert_eq!(out.to_vec(), synthetic_reference(1, last, 128));
}

/// A hint file whose header describes more bytes than a `u64` holds is refused, not
/// wrapped into a size that matches the file.
#[test]
fn hint_file_sizes_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.hints");
    let entries = synthetic_database(5, 40, 3).unwrap();
    let db = Database::new(&entries, 3).unwrap();
    let params = Params::new(Scheme::Rms24, 40, 3)
        .unwrap()
        .with_hints(6, 5)
        .unwrap();
    let key = MasterKey::new(&[1; 32]);
    Cpu.generate(&Job::new(params, &key), &db)
        .unwrap()
        .write(&path)
        .unwrap();
    let good = std::fs::read(&path).unwrap();
    // Fields: n at 16, E at 24, w at 32, M at 48, q at 56, block range at 72 and 80.
    for (at, value) in [
        (16, u64::MAX),
        (24, u64::MAX),
        (32, u64::MAX),
        (32, 0),
        (48, u64::MAX),
        (48, u64::MAX - 4),
        (56, 1 << 62),
        (72, u64::MAX),
        (80, u64::MAX),
    ] {
        let mut bad = good.clone();
        bad[at..at + 8].copy_from_slice(&u64::to_le_bytes(value));
        std::fs::write(&path, &bad).unwrap();
        assert!(Hints::read(&path).is_err(), "field at {at} = {value}");
        assert!(
            Hints::read_header(&path).is_err(),
            "field at {at} = {value}"
        );
    }
}
