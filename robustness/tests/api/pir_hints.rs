//! `pir-hints` under extreme values, many threads and GPU faults.

// Test code throughout: its helpers unwrap as the tests do.
#![allow(clippy::unwrap_used)]

use std::ops::Range;
use std::path::Path;

use pir_hints::{
    Cpu, Database, Error, FORMAT_VERSION, HEADER_BYTES, HintGenerator, Hints, Job, KEY_FILE_BYTES,
    MAGIC, MAX_BLOCKS, MAX_ENTRY_SIZE, MAX_SYNTHETIC_BYTES, MappedDatabase, MasterKey, Params,
    Scheme, ShardedRun, Subset, block_slices, direct_hints, fill_synthetic, rms24_offset,
    select_value, synthetic_database,
};
use proptest::prelude::*;

use crate::assert_send_sync;

#[test]
fn backends_and_hint_types_are_send_and_sync() {
    assert_send_sync::<Cpu>();
    assert_send_sync::<pir_hints::Backend>();
    #[cfg(feature = "cuda")]
    {
        assert_send_sync::<pir_hints::Cuda>();
        assert_send_sync::<pir_hints::DeviceDatabase>();
    }
    assert_send_sync::<MasterKey>();
    assert_send_sync::<Job<'static>>();
    assert_send_sync::<Params>();
    assert_send_sync::<Database<'static>>();
    assert_send_sync::<MappedDatabase>();
    assert_send_sync::<Hints>();
    assert_send_sync::<ShardedRun<'static>>();
    assert_send_sync::<Subset>();
    assert_send_sync::<Error>();
}

fn extreme_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(2),
        Just(u64::MAX),
        Just(u64::MAX - 1),
        Just(MAX_BLOCKS),
        Just(MAX_SYNTHETIC_BYTES),
        (0u32..64).prop_map(|b| 1u64 << b),
        0u64..100,
        any::<u64>(),
    ]
}

fn extreme_usize() -> impl Strategy<Value = usize> {
    prop_oneof![
        Just(0usize),
        Just(1),
        Just(usize::MAX),
        Just(MAX_ENTRY_SIZE),
        Just(MAX_ENTRY_SIZE + 1),
        (0u32..64).prop_map(|b| 1usize << b),
        0usize..50,
    ]
}

fn scheme() -> impl Strategy<Value = Scheme> {
    prop_oneof![Just(Scheme::Rms24), Just(Scheme::Plinko)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any shape: refused with a parameter error, or parameters whose derived sizes are all
    /// consistent (no wrapped product or sum anywhere).
    #[test]
    fn parameters_of_any_shape(
        scheme in scheme(),
        entries in extreme_u64(),
        entry_size in extreme_usize(),
        block_size in extreme_u64(),
        hints in (extreme_u64(), extreme_u64()),
        lambda in prop_oneof![Just(0u32), Just(1), Just(u32::MAX), any::<u32>()],
    ) {
        let params = Params::new(scheme, entries, entry_size)
            .and_then(|p| p.with_block_size(block_size))
            .and_then(|p| p.with_lambda(lambda))
            .and_then(|p| p.with_hints(hints.0, hints.1));
        match params {
            Ok(p) => {
                let blocks = p.blocks();
                prop_assert!(blocks >= 2 && blocks % 2 == 0 && blocks <= MAX_BLOCKS);
                prop_assert!(blocks.checked_mul(p.block_size()).is_some_and(|cap| cap >= entries));
                prop_assert_eq!(p.total_hints(), hints.0 + hints.1);
                let bytes = p.hint_set_bytes();
                prop_assert!(usize::try_from(bytes).is_ok());
                prop_assert!(p.check_block_range(&p.all_blocks()).is_ok());
                prop_assert!(p.check_block_range(&(0..blocks + 1)).is_err());
                prop_assert!(p.check_block_range(&(blocks..blocks)).is_err());
            }
            Err(Error::Parameter(_) | Error::Prp(_)) => {}
            Err(other) => panic!("{other}"),
        }
    }

    /// Synthetic databases and fills at any offset, length and shape: refused before any
    /// allocation when past the stream.
    #[test]
    fn synthetic_data_anywhere(seed in any::<u64>(), entries in extreme_u64(), entry_size in extreme_usize(), offset in extreme_u64(), len in 0usize..200) {
        let small = entries.checked_mul(entry_size as u64).is_some_and(|b| b <= 4096);
        if small || entries.checked_mul(entry_size as u64).is_none_or(|b| b > MAX_SYNTHETIC_BYTES) {
            match synthetic_database(seed, entries, entry_size) {
                Ok(bytes) => prop_assert_eq!(bytes.len() as u64, entries * entry_size as u64),
                Err(Error::Parameter(_)) => prop_assert!(!small),
                Err(other) => panic!("{other}"),
            }
        }
        let mut out = vec![0u8; len];
        match fill_synthetic(seed, offset, &mut out) {
            Ok(()) => {
                prop_assert!(offset % 64 == 0 && offset < MAX_SYNTHETIC_BYTES && offset + len as u64 <= MAX_SYNTHETIC_BYTES);
                if offset == 0 {
                    prop_assert_eq!(out, synthetic_database(seed, len as u64, 1).unwrap());
                }
            }
            Err(Error::Parameter(_)) => {
                let end = offset.checked_add(len as u64);
                prop_assert!(offset % 64 != 0 || offset >= MAX_SYNTHETIC_BYTES || end.is_none_or(|end| end > MAX_SYNTHETIC_BYTES));
            }
            Err(other) => panic!("{other}"),
        }
    }

    /// Database views of any shape, entries and rows at any index.
    #[test]
    fn database_views(len in 0usize..64, entry_size in extreme_usize(), index in extreme_u64(), blocks in (extreme_u64(), extreme_u64()), block_size in extreme_u64()) {
        let bytes: Vec<u8> = (0..len as u8).collect();
        match Database::new(&bytes, entry_size) {
            Ok(db) => {
                prop_assert!(len > 0 && len % entry_size == 0);
                match db.entry(index) {
                    Some(entry) => prop_assert!(index < db.entries() && entry.len() == entry_size),
                    None => prop_assert!(index >= db.entries()),
                }
                let rows = db.rows(blocks.0..blocks.1, block_size);
                prop_assert!(rows.len() <= len && rows.len() % entry_size == 0);
            }
            Err(Error::Database(_)) => prop_assert!(len == 0 || entry_size == 0 || len % entry_size != 0),
            Err(other) => panic!("{other}"),
        }
    }

    /// Block splits with any part count and alignment (the count as large as usize allows).
    #[test]
    fn block_slices_with_any_count(start in extreme_u64(), len in extreme_u64(), parts in extreme_usize(), align in extreme_u64()) {
        let blocks = start..start.saturating_add(len);
        // At most min(parts, blocks) slices come back: more than a Vec can hold is an error,
        // and lists of millions are left out here (correct, but slow in debug).
        let count = (parts as u128).min(u128::from(blocks.end - blocks.start));
        prop_assume!(count <= 1 << 20 || count > 1 << 60);
        match block_slices(blocks.clone(), parts, align) {
            Ok(slices) => {
                prop_assert!(count <= 1 << 20);
                prop_assert!(!slices.is_empty() && slices.len() <= parts);
                prop_assert_eq!(slices[0].start, blocks.start);
                prop_assert_eq!(slices[slices.len() - 1].end, blocks.end);
                for pair in slices.windows(2) {
                    prop_assert!(pair[0].end == pair[1].start && pair[0].end % align == 0);
                }
            }
            Err(Error::Parameter(_)) => {
                prop_assert!(parts == 0 || align == 0 || blocks.is_empty() || count > 1 << 60);
            }
            Err(other) => panic!("{other}"),
        }
    }

    /// Subsets, select values and offsets at any block and hint.
    #[test]
    fn subsets_at_any_index(hint in extreme_u64(), block in extreme_u64(), blocks in prop_oneof![Just(0u64), Just(1), Just(3), Just(MAX_BLOCKS + 2), Just(u64::MAX), 1u64..200], block_size in extreme_u64()) {
        let key = MasterKey::new(&[9; 32]).select_key(Scheme::Rms24);
        match select_value(&key, hint, block) {
            Ok(_) => prop_assert!(block < MAX_BLOCKS),
            Err(Error::Parameter(_)) => prop_assert!(block >= MAX_BLOCKS),
            Err(other) => panic!("{other}"),
        }
        match rms24_offset(&key, hint, block, block_size) {
            Ok(offset) => prop_assert!(block < MAX_BLOCKS && offset < block_size),
            Err(Error::Parameter(_)) => prop_assert!(block >= MAX_BLOCKS || block_size == 0),
            Err(other) => panic!("{other}"),
        }
        match Subset::new(&key, hint, blocks) {
            Ok(subset) => {
                prop_assert!(blocks >= 2 && blocks % 2 == 0 && blocks < 200);
                let members = (0..blocks).filter(|&a| subset.contains(a)).count() as u64;
                prop_assert!(!subset.is_valid() || members == blocks / 2);
                prop_assert!(!subset.contains(u64::MAX));
            }
            Err(Error::Parameter(_)) => prop_assert!(blocks < 2 || blocks % 2 == 1 || blocks > MAX_BLOCKS),
            Err(other) => panic!("{other}"),
        }
    }

    /// Jobs, shards, direct hints and hint lookups at any block range and index.
    #[test]
    fn jobs_and_lookups_at_any_index(range in (extreme_u64(), extreme_u64()), hint in extreme_u64(), shards in extreme_u64(), shard in extreme_u64()) {
        let (params, key, bytes) = small_set(Scheme::Rms24);
        let db = Database::new(&bytes, params.entry_size()).unwrap();
        let blocks = range.0..range.1;
        let in_range = blocks.start < blocks.end && blocks.end <= params.blocks();
        match Job::new(params, &key).with_blocks(blocks.clone()) {
            Ok(job) => {
                prop_assert!(in_range);
                let hints = Cpu.generate(&job, &db).unwrap();
                prop_assert_eq!(hints.blocks(), blocks.clone());
            }
            Err(Error::Parameter(_)) => prop_assert!(!in_range),
            Err(other) => panic!("{other}"),
        }
        match direct_hints(&params, &key, &db, params.all_blocks(), &[0, hint]) {
            Ok(values) => prop_assert!(hint < params.total_hints() && values.len() == 2),
            Err(Error::Parameter(_)) => prop_assert!(hint >= params.total_hints()),
            Err(other) => panic!("{other}"),
        }
        let dir = tempfile::tempdir().unwrap();
        match ShardedRun::new(Job::new(params, &key), shards, dir.path()) {
            Ok(run) => {
                prop_assert!(shards >= 1 && shards <= params.blocks());
                let Range { start, end } = run.shard_blocks(shard);
                prop_assert!(start <= end && end <= params.blocks());
                prop_assert!(shard < shards || start == end);
            }
            Err(Error::Parameter(_)) => prop_assert!(shards == 0 || shards > params.blocks()),
            Err(other) => panic!("{other}"),
        }
        let hints = Cpu.generate(&Job::new(params, &key), &db).unwrap();
        prop_assert_eq!(hints.parity(hint).is_some(), hint < params.total_hints());
        prop_assert_eq!(
            hints.second_parity(hint).is_some(),
            hint >= params.main_hints() && hint < params.total_hints()
        );
        prop_assert!(hint < params.total_hints() || !hints.is_valid(hint));
    }
}

/// Parameters small enough for debug builds, their key and a synthetic database.
fn small_set(scheme: Scheme) -> (Params, MasterKey, Vec<u8>) {
    let params = Params::new(scheme, 300, 5)
        .unwrap()
        .with_block_size(16)
        .unwrap()
        .with_hints(40, 12)
        .unwrap();
    let bytes = synthetic_database(3, 300, 5).unwrap();
    (params, MasterKey::new(&[0x5a; 32]), bytes)
}

#[test]
fn one_block_shards_and_sharded_runs_agree() {
    let (params, key, bytes) = small_set(Scheme::Plinko);
    let db = Database::new(&bytes, params.entry_size()).unwrap();
    let job = Job::new(params, &key);
    let dir = tempfile::tempdir().unwrap();
    let run = ShardedRun::new(job.clone(), params.blocks(), dir.path()).unwrap();
    let hints = run.run(&Cpu, &db, &|_| {}, &mut |_| {}).unwrap();
    assert_eq!(hints, Cpu.generate(&job, &db).unwrap());
    assert!(run.shard_blocks(u64::MAX).is_empty());
}

// ---------------------------------------------------------------------------------------------
// Files.

/// A valid hint file's bytes.
fn hint_file(dir: &Path) -> Vec<u8> {
    let (params, key, bytes) = small_set(Scheme::Rms24);
    let db = Database::new(&bytes, params.entry_size()).unwrap();
    let hints = Cpu.generate(&Job::new(params, &key), &db).unwrap();
    let path = dir.join("good.hints");
    hints.write(&path).unwrap();
    assert_eq!(Hints::read(&path).unwrap(), hints);
    std::fs::read(&path).unwrap()
}

/// Reads `bytes` as a hint file (whole and header only); both must be a `Hints` error.
fn assert_refused(dir: &Path, bytes: &[u8], what: &str) {
    let path = dir.join("bad.hints");
    std::fs::write(&path, bytes).unwrap();
    for result in [
        Hints::read(&path).map(|_| ()),
        Hints::read_header(&path).map(|_| ()),
    ] {
        match result {
            Err(Error::Hints(_)) => {}
            other => panic!("{what}: expected a Hints error, got {other:?}"),
        }
    }
}

fn put_u64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

#[test]
fn malformed_hint_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let good = hint_file(dir.path());
    for len in [
        0,
        7,
        HEADER_BYTES - 1,
        HEADER_BYTES,
        HEADER_BYTES + 1,
        good.len() - 1,
    ] {
        assert_refused(dir.path(), &good[..len], &format!("truncated to {len}"));
    }
    let mut longer = good.clone();
    longer.push(0);
    assert_refused(dir.path(), &longer, "one byte more");
    let mut wrong_magic = good.clone();
    wrong_magic[0] ^= 1;
    assert_refused(dir.path(), &wrong_magic, "magic");
    assert_eq!(&good[..8], &MAGIC);
    for version in [0, 1, FORMAT_VERSION + 1, u32::MAX] {
        let mut other = good.clone();
        other[8..12].copy_from_slice(&version.to_le_bytes());
        assert_refused(dir.path(), &other, &format!("version {version}"));
    }
    // Every header field near 2^64 (and the body length, which a reader must not allocate
    // for): n, E, w, c, M, q, lambda, the block range, the body length.
    for at in [16, 24, 32, 40, 48, 56, 64, 72, 80, 128] {
        for value in [u64::MAX, u64::MAX - 7, 1 << 63, 1 << 40, 0] {
            let mut other = good.clone();
            put_u64(&mut other, at, value);
            if other != good {
                assert_refused(dir.path(), &other, &format!("field at {at} = {value}"));
            }
        }
    }
    // A consistent header declaring 2^62 hints of 4096 bytes: refused by its parameters, and
    // otherwise by the length of the file, before anything is allocated.
    let mut huge = good[..HEADER_BYTES].to_vec();
    put_u64(&mut huge, 24, MAX_ENTRY_SIZE as u64);
    put_u64(&mut huge, 48, 1 << 50);
    put_u64(&mut huge, 56, 1 << 50);
    put_u64(&mut huge, 128, u64::MAX);
    assert_refused(dir.path(), &huge, "2^51 hints");
    // A flipped body byte: the digest, which only a whole read checks.
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x80;
    let path = dir.path().join("flipped.hints");
    std::fs::write(&path, &flipped).unwrap();
    assert!(matches!(Hints::read(&path), Err(Error::Hints(_))));
    assert!(Hints::read_header(&path).is_ok());
    // A missing file is an I/O error naming it.
    match Hints::read(&dir.path().join("missing.hints")) {
        Err(Error::Io { path, .. }) => assert!(path.ends_with("missing.hints")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn shards_that_do_not_belong_together_are_refused() {
    let (params, key, bytes) = small_set(Scheme::Rms24);
    let db = Database::new(&bytes, params.entry_size()).unwrap();
    let job = |blocks: Range<u64>| Job::new(params, &key).with_blocks(blocks).unwrap();
    let a = Cpu.generate(&job(0..4), &db).unwrap();
    let b = Cpu.generate(&job(4..10), &db).unwrap();
    let c = Cpu.generate(&job(3..6), &db).unwrap();
    assert!(matches!(Hints::combine_all(vec![]), Err(Error::Hints(_))));
    assert!(matches!(
        Hints::combine_all(vec![a.clone(), c]),
        Err(Error::Hints(_))
    ));
    assert!(matches!(
        Hints::combine_all(vec![a.clone(), a.clone()]),
        Err(Error::Hints(_))
    ));
    let other_key = MasterKey::new(&[1; 32]);
    let foreign = Cpu
        .generate(
            &Job::new(params, &other_key).with_blocks(4..10).unwrap(),
            &db,
        )
        .unwrap();
    assert!(matches!(
        Hints::combine_all(vec![a.clone(), foreign]),
        Err(Error::Hints(_))
    ));
    let both = Hints::combine_all(vec![b, a]).unwrap();
    assert_eq!(both.blocks(), 0..10);
}

#[test]
fn databases_and_key_files_of_any_length() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    for (len, entry_size, ok) in [
        (0, 4, false),
        (10, 4, false),
        (12, 4, true),
        (12, 0, false),
        (12, usize::MAX, false),
    ] {
        std::fs::write(&path, vec![7u8; len]).unwrap();
        match MappedDatabase::open(&path, entry_size) {
            Ok(db) => assert!(ok && db.database().entries() == (len / entry_size) as u64),
            Err(Error::Database(why)) => assert!(!ok && why.contains("db"), "{why}"),
            Err(other) => panic!("{other}"),
        }
    }
    assert!(matches!(
        MappedDatabase::open(&dir.path().join("missing"), 4),
        Err(Error::Io { .. })
    ));
    let key_path = dir.path().join("key");
    for len in [0, 1, KEY_FILE_BYTES - 1, KEY_FILE_BYTES + 1, 1 << 20] {
        // Key-like contents: the error must give the length, never the bytes.
        std::fs::write(&key_path, vec![0xc3u8; len]).unwrap();
        match MasterKey::from_file(&key_path) {
            Err(Error::KeyFile(why)) => {
                assert!(why.contains(&len.to_string()), "{why}");
                assert!(
                    !why.contains("195, 195") && !why.to_lowercase().contains("c3c3"),
                    "{why}"
                );
            }
            other => panic!("{len} bytes: {other:?}"),
        }
    }
    std::fs::write(&key_path, [0xc3u8; KEY_FILE_BYTES]).unwrap();
    let key = MasterKey::from_file(&key_path).unwrap();
    assert_eq!(key.fingerprint(), MasterKey::new(&[0xc3; 32]).fingerprint());
    assert!(matches!(
        MasterKey::from_file(&dir.path().join("missing")),
        Err(Error::Io { .. })
    ));
}

// ---------------------------------------------------------------------------------------------
// Secrets.

#[test]
fn debug_output_never_shows_key_material() {
    let bytes: [u8; 32] =
        core::array::from_fn(|i| 0xb7u8.wrapping_add(29u8.wrapping_mul(i as u8)) | 0x80);
    let key = MasterKey::new(&bytes);
    let mut secrets = vec![format!("{:?}", &bytes[..4]), format!("{:x?}", &bytes[..4])];
    // The master key's words and those of every key derived from it.
    let mut keys = vec![prp::Key::new(&bytes)];
    keys.push(key.select_key(Scheme::Rms24));
    keys.push(key.select_key(Scheme::Plinko));
    keys.push(key.block_key(0));
    for k in &keys {
        for word in k.words() {
            secrets.push(word.to_string());
            secrets.push(format!("{word:08x}"));
        }
    }
    let (params, _, db_bytes) = small_set(Scheme::Plinko);
    let db = Database::new(&db_bytes, params.entry_size()).unwrap();
    let job = Job::new(params, &key);
    let hints = Cpu.generate(&job, &db).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = ShardedRun::new(job.clone(), 2, dir.path()).unwrap();
    let shown = [
        format!("{key:?}"),
        format!("{key:#?}"),
        format!("{job:?}"),
        format!("{hints:?}"),
        format!("{run:?}"),
        format!("{:?}", key.block_iprf(&params, 3).unwrap()),
    ];
    for text in &shown {
        for secret in &secrets {
            assert!(!text.contains(secret.as_str()), "{text:?} shows {secret:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GPU.

#[cfg(feature = "cuda")]
mod gpu {
    use super::*;
    use crate::kernels::{assert_out_of_memory, fill_device_memory, gpu_lock};
    use pir_hints::Cuda;

    /// Parameters of mixed, awkward shapes (n not a multiple of w, odd entry sizes).
    fn shapes(scheme: Scheme, i: usize) -> Params {
        let (n, e, w): (u64, usize, u64) =
            [(1000, 16, 33), (777, 7, 16), (5000, 40, 64), (64, 1, 8)][i % 4];
        let w = if scheme == Scheme::Plinko {
            w.next_power_of_two()
        } else {
            w
        };
        Params::new(scheme, n, e)
            .unwrap()
            .with_block_size(w)
            .unwrap()
            .with_hints(200 + i as u64 * 37, 50 + i as u64)
            .unwrap()
    }

    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn eight_threads_share_one_backend() {
        let _lock = gpu_lock();
        let cuda = Cuda::new().unwrap();
        std::thread::scope(|scope| {
            for t in 0..8usize {
                let cuda = &cuda;
                scope.spawn(move || {
                    for call in 0..20usize {
                        let scheme = if (t + call) % 2 == 0 {
                            Scheme::Rms24
                        } else {
                            Scheme::Plinko
                        };
                        let params = shapes(scheme, t + call);
                        let bytes = synthetic_database(
                            rand::random(),
                            params.entries(),
                            params.entry_size(),
                        )
                        .unwrap();
                        let db = Database::new(&bytes, params.entry_size()).unwrap();
                        let key = MasterKey::new(&rand::random());
                        let job = Job::new(params, &key);
                        let job = if call % 3 == 0 {
                            job.with_blocks(1..params.blocks() - 1).unwrap()
                        } else {
                            job
                        };
                        assert_eq!(
                            cuda.generate(&job, &db).unwrap(),
                            Cpu.generate(&job, &db).unwrap(),
                            "thread {t}, call {call}: {params}"
                        );
                    }
                });
            }
        });
    }

    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn too_large_or_out_of_memory_then_the_backend_works() {
        let _lock = gpu_lock();
        let cuda = Cuda::new().unwrap();
        // The largest synthetic database, 2^38 one-byte entries (256 GiB, more than an H100 or
        // an H200 holds), declared by its parameters only: refused with the numbers.
        let huge = Params::new(Scheme::Rms24, MAX_SYNTHETIC_BYTES, 1).unwrap();
        match cuda.synthetic_database(1, &huge, huge.all_blocks()) {
            Err(Error::Gpu(error)) => assert_out_of_memory(&error),
            other => panic!("expected an out-of-memory error, got {other:?}"),
        }
        // The next call on the same backend works.
        let params = shapes(Scheme::Rms24, 0);
        let bytes = synthetic_database(2, params.entries(), params.entry_size()).unwrap();
        let db = Database::new(&bytes, params.entry_size()).unwrap();
        let key = MasterKey::new(&[4; 32]);
        let job = Job::new(params, &key);
        let expected = Cpu.generate(&job, &db).unwrap();
        let resident = cuda
            .synthetic_database(2, &params, params.all_blocks())
            .unwrap();
        assert_eq!(
            cuda.generate_resident(&job, &resident, &|_| {}).unwrap(),
            expected
        );
        drop(resident);

        // With the device full but for 64 MiB, a 256 MiB database either goes through in
        // pieces that fit or fails with the numbers; a small job works either way, and once
        // the memory is back the large one gives the CPU's hints.
        let big = Params::new(Scheme::Rms24, 1 << 23, 32)
            .unwrap()
            .with_hints(1000, 100)
            .unwrap();
        let big_bytes = synthetic_database(5, big.entries(), big.entry_size()).unwrap();
        let big_db = Database::new(&big_bytes, big.entry_size()).unwrap();
        let big_job = Job::new(big, &key);
        let big_expected = Cpu.generate(&big_job, &big_db).unwrap();
        let held = fill_device_memory(&cuda.gpus()[0], 64 << 20);
        match cuda.generate(&big_job, &big_db) {
            Ok(hints) => assert_eq!(hints, big_expected),
            Err(Error::Gpu(error)) => assert_out_of_memory(&error),
            Err(other) => panic!("{other}"),
        }
        assert_eq!(cuda.generate(&job, &db).unwrap(), expected);
        drop(held);
        assert_eq!(cuda.generate(&big_job, &big_db).unwrap(), big_expected);
    }
}
