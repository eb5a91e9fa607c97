//! The CUDA backend against the CPU reference on fresh random shapes and keys. Needs a CUDA
//! GPU: run with `cargo test --release -- --include-ignored`; fails, never skips, without one.
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use pir_hints::{
    Cpu, Cuda, Database, HintGenerator, Hints, Job, MasterKey, Params, Scheme, direct_hints,
    synthetic_database,
};
use proptest::prelude::*;

mod common;

fn gpu() -> Cuda {
    Cuda::new().expect("these tests need a CUDA GPU")
}

/// Random shapes: n not a multiple of w, odd and wide entries (wider than one 128-byte
/// column), few and many hints.
fn shapes(scheme: Scheme) -> impl Strategy<Value = Params> {
    // Plinko on the CPU builds an iPRF table per block: fewer blocks and hints.
    let (block_size, entries, hints) = match scheme {
        Scheme::Rms24 => ((1u64..200).boxed(), 1u64..6000, 400),
        Scheme::Plinko => ((2u32..8).prop_map(|b| 1u64 << b).boxed(), 1u64..3000, 200),
    };
    (
        entries,
        prop_oneof![1usize..50, Just(128), 129usize..300],
        block_size,
        0u64..hints,
        0u64..hints / 2,
    )
        .prop_filter_map("at least one hint", move |(n, e, w, main, backup)| {
            Params::new(scheme, n, e)
                .ok()?
                .with_block_size(w)
                .ok()?
                .with_hints(main, backup)
                .ok()
        })
}

fn cpu_and_gpu(params: Params, master: [u8; 32], seed: u64) -> (Hints, Hints) {
    let bytes = synthetic_database(seed, params.entries(), params.entry_size()).unwrap();
    let db = Database::new(&bytes, params.entry_size()).unwrap();
    let key = MasterKey::new(&master);
    let job = Job::new(params, &key);
    (
        Cpu.generate(&job, &db).unwrap(),
        gpu().generate(&job, &db).unwrap(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn rms24_gpu_equals_cpu(params in shapes(Scheme::Rms24), master: [u8; 32], seed: u64) {
        let (cpu, gpu) = cpu_and_gpu(params, master, seed);
        prop_assert_eq!(cpu, gpu);
    }

    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn plinko_gpu_equals_cpu(params in shapes(Scheme::Plinko), master: [u8; 32], seed: u64) {
        let (cpu, gpu) = cpu_and_gpu(params, master, seed);
        prop_assert_eq!(cpu, gpu);
    }
}

/// Many blocks (c in the thousands: several ChaCha groups per subset thread) and shards over
/// block ranges, on GPU-resident and host databases.
#[test]
#[ignore = "requires a CUDA GPU"]
fn large_shapes_shards_and_resident_databases() {
    let cuda = gpu();
    for (scheme, w, main, backup) in [
        (Scheme::Rms24, 37, 3000, 1000),
        (Scheme::Plinko, 64, 2000, 700),
    ] {
        let n = 200_003;
        let params = Params::new(scheme, n, 40)
            .unwrap()
            .with_block_size(w)
            .unwrap()
            .with_hints(main, backup)
            .unwrap();
        let bytes = synthetic_database(77, n, 40).unwrap();
        let db = Database::new(&bytes, 40).unwrap();
        let key = MasterKey::new(&[0x5a; 32]);
        let job = Job::new(params, &key);
        let whole = cuda.generate(&job, &db).unwrap();
        // A database streamed through the GPU 50 kB at a time (about 30 ranges).
        let streamed = cuda.clone().with_upload_limit(50_000);
        assert_eq!(streamed.generate(&job, &db).unwrap(), whole, "{scheme}");
        let sample: Vec<u64> = (0..main + backup).step_by(97).collect();
        let direct = direct_hints(&params, &key, &db, params.all_blocks(), &sample).unwrap();
        for d in direct {
            assert_eq!(whole.is_valid(d.hint), d.valid, "{scheme} hint {}", d.hint);
            assert_eq!(
                whole.parity(d.hint),
                Some(&d.parity[..]),
                "{scheme} hint {}",
                d.hint
            );
            assert_eq!(whole.second_parity(d.hint), d.second.as_deref());
        }
        let c = params.blocks();
        let shards: Vec<Hints> = [0..c / 3, c / 3..c]
            .into_iter()
            .map(|r| {
                cuda.generate(&job.clone().with_blocks(r).unwrap(), &db)
                    .unwrap()
            })
            .collect();
        assert_eq!(Hints::combine_all(shards).unwrap(), whole, "{scheme}");
        let resident = cuda.synthetic_database(77, &params, 0..c).unwrap();
        let from_device = cuda.generate_resident(&job, &resident, &|_| {}).unwrap();
        assert_eq!(from_device, whole, "{scheme}");
        let part = cuda.upload_database(&params, &db, 5..c).unwrap();
        let job_part = job.clone().with_blocks(6..40).unwrap();
        assert_eq!(
            cuda.generate_resident(&job_part, &part, &|_| {}).unwrap(),
            Cpu.generate(&job_part, &db).unwrap(),
            "{scheme}"
        );
        assert!(cuda.generate_resident(&job, &part, &|_| {}).is_err());
    }
}

/// Keys with a tie at the cutoff (tests/common): the GPU flags the same hint.
#[test]
#[ignore = "requires a CUDA GPU"]
fn ties_make_the_same_hints_invalid() {
    for (scheme, master, tied, params) in common::ties() {
        let (cpu, gpu) = cpu_and_gpu(params, master, 6);
        assert!(!gpu.is_valid(tied), "{scheme}");
        assert_eq!(gpu.valid_count(), params.total_hints() - 1, "{scheme}");
        assert_eq!(cpu, gpu, "{scheme}");
    }
}

/// The database split by blocks between GPUs (host databases through `generate`, resident
/// slices through `synthetic_slices` and `generate_slices`) equals the CPU: on the first
/// 1 ..= all GPUs, as 2 ..= 5 slices on the first GPU alone, so that a one-GPU machine runs
/// the split too, and as 8 slices over the GPUs in turn (an 8-GPU host's split, issue 38). The shapes have block counts that the slices do not divide, fewer
/// blocks than slices, and a synthetic alignment of 8 blocks; keys and data are fresh.
#[test]
#[ignore = "requires a CUDA GPU"]
fn database_split_by_blocks_equals_cpu() {
    let all = gpu().gpus().to_vec();
    let first = std::sync::Arc::clone(&all[0]);
    let mut layouts: Vec<_> = (1..=all.len()).map(|k| all[..k].to_vec()).collect();
    layouts.extend((2..=5).map(|k| vec![std::sync::Arc::clone(&first); k]));
    layouts.push(
        (0..8)
            .map(|i| std::sync::Arc::clone(&all[i % all.len()]))
            .collect(),
    );
    let seed: u64 = rand::random();
    let master: [u8; 32] = rand::random();
    let key = MasterKey::new(&master);
    // (scheme, n, E, w, main, backup): 19 blocks aligned to 8 (w E = 1480), 3 blocks, 10
    // blocks, 4 blocks.
    for (scheme, n, e, w, main, backup) in [
        (Scheme::Rms24, 700, 40, 37, 300, 100),
        (Scheme::Rms24, 90, 16, 40, 200, 61),
        (Scheme::Plinko, 300, 24, 32, 150, 40),
        (Scheme::Plinko, 50, 20, 16, 90, 30),
    ] {
        let params = Params::new(scheme, n, e)
            .unwrap()
            .with_block_size(w)
            .unwrap()
            .with_hints(main, backup)
            .unwrap();
        let bytes = synthetic_database(seed, n, e).unwrap();
        let db = Database::new(&bytes, e).unwrap();
        let c = params.blocks();
        for blocks in [0..c, 1..c] {
            let job = Job::new(params, &key).with_blocks(blocks.clone()).unwrap();
            let cpu = Cpu.generate(&job, &db).unwrap();
            for layout in &layouts {
                let cuda = Cuda::on(layout.clone()).unwrap();
                let what = format!(
                    "{scheme} {params} blocks {blocks:?} on {} slices",
                    layout.len()
                );
                assert_eq!(
                    cuda.generate(&job, &db).unwrap(),
                    cpu,
                    "{what}, host database"
                );
                let slices = cuda.synthetic_slices(seed, &params, 0..c).unwrap();
                assert!(slices.len() <= layout.len(), "{what}");
                let (hints, seconds) = cuda.generate_slices(&job, &slices).unwrap();
                assert_eq!(hints, cpu, "{what}, resident slices");
                assert_eq!(seconds.len(), slices.len(), "{what}");
                // A slice of the job's missing is refused, not silently wrong.
                if slices.len() > 1 && blocks.start == 0 {
                    assert!(cuda.generate_slices(&job, &slices[1..]).is_err(), "{what}");
                }
            }
        }
    }
}
