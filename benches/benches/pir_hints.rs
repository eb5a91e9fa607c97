//! Criterion bench `pir_hints`: RMS24 and Plinko hint generation on the CPU (one thread and
//! all threads) and CUDA.
//!
//! Ids are `<scheme>/<backend>/<size>`:
//! - `rms24/{cpu-1t,cpu}/8192`: the small shape of `benches::pir::rms24_small`, throughput in
//!   hints; `plinko/{cpu-1t,cpu}/8-blocks`: 8 blocks of `plinko_small`, throughput in blocks;
//! - `rms24/cuda/mainnet-2^k`: 2^k hints over the published mainnet database shape (1.83e9
//!   entries of 40 bytes, blocks of 42,826), generated on the GPU; the work per hint is that of
//!   the full 10.97M-hint run, so the full run takes 10.97M / rate. On a GPU with less memory
//!   than the 73 GB database needs, the database shrinks to 2^30 entries and 2^15-entry
//!   blocks, and the id says `2^30x2^15`.
//! - `plinko/cuda/8-blocks`: the CPU ids' small Plinko shape on the GPU, host to host (the
//!   `report` row's work);
//! - `plinko/cuda/published-k-blocks`: the published Plinko shape (w = 2^17, 2^25 hints,
//!   48-byte entries), over its first k blocks (rows generated on the GPU); the difference of
//!   two k gives the time per block, the intercept the subsets of all hints.
//!
//! Without a GPU the CUDA ids are skipped with a message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use benches::pir::{PLINKO_SMALL_BLOCKS, bench_key, plinko_small, rms24_small, small_job};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pir_hints::{Cpu, Database, HintGenerator, synthetic_database};

fn cpu(c: &mut Criterion) {
    let mut group = c.benchmark_group("pir_hints");
    group.sample_size(10);
    let key = bench_key();
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    for (params, size) in [
        (rms24_small(), "8192".to_string()),
        (plinko_small(), format!("{PLINKO_SMALL_BLOCKS}-blocks")),
    ] {
        let bytes = synthetic_database(1, params.entries(), params.entry_size()).unwrap();
        let db = Database::new(&bytes, params.entry_size()).unwrap();
        let job = small_job(params, &key);
        group.throughput(Throughput::Elements(job.work().0));
        let scheme = params.scheme();
        group.bench_function(BenchmarkId::new(format!("{scheme}/cpu-1t"), &size), |b| {
            b.iter(|| one_thread.install(|| Cpu.generate(&job, &db).unwrap()))
        });
        group.bench_function(BenchmarkId::new(format!("{scheme}/cpu"), &size), |b| {
            b.iter(|| Cpu.generate(&job, &db).unwrap())
        });
    }
    group.finish();
}

#[cfg(feature = "cuda")]
fn cuda(c: &mut Criterion) {
    use benches::pir::{SEED, plinko_published, rms24_mainnet};
    use pir_hints::{Job, Params, Scheme};

    let gpu = match pir_hints::Cuda::new() {
        Ok(gpu) => gpu,
        Err(why) => {
            eprintln!("pir_hints: skipping the CUDA benches: {why}");
            return;
        }
    };
    let key = bench_key();
    let mut group = c.benchmark_group("pir_hints");
    group.sample_size(10);

    let mainnet = rms24_mainnet();
    let db_bytes = mainnet.entries() * mainnet.entry_size() as u64;
    let free = gpu.gpus()[0].free_memory().unwrap() as u64;
    let (shape, label) = if free > db_bytes + (4 << 30) {
        (mainnet, "mainnet".to_string())
    } else {
        let smaller = Params::new(Scheme::Rms24, 1 << 30, 40)
            .unwrap()
            .with_block_size(1 << 15)
            .unwrap();
        (smaller, "mainnet-2^30x2^15".to_string())
    };
    let db = gpu
        .synthetic_database(SEED, &shape, shape.all_blocks())
        .unwrap();
    for log in [18u32, 20] {
        let params = shape.with_hints(1 << (log - 1), 1 << (log - 1)).unwrap();
        let job = Job::new(params, &key);
        group.throughput(Throughput::Elements(1 << log));
        group.bench_function(
            BenchmarkId::new("rms24/cuda", format!("{label}-2^{log}")),
            |b| b.iter(|| gpu.generate_resident(&job, &db, &|_| {}).unwrap()),
        );
    }
    drop(db);

    // The CPU ids' small Plinko shape, host database to host hints (the report's row).
    let small = plinko_small();
    let bytes = synthetic_database(1, small.entries(), small.entry_size()).unwrap();
    let host_db = Database::new(&bytes, small.entry_size()).unwrap();
    let job = small_job(small, &key);
    group.throughput(Throughput::Elements(job.work().0));
    group.bench_function(
        BenchmarkId::new("plinko/cuda", format!("{PLINKO_SMALL_BLOCKS}-blocks")),
        |b| b.iter(|| gpu.generate(&job, &host_db).unwrap()),
    );

    let published = plinko_published();
    let db = gpu.synthetic_database(SEED, &published, 0..8).unwrap();
    for blocks in [2u64, 8] {
        let job = Job::new(published, &key).with_blocks(0..blocks).unwrap();
        group.throughput(Throughput::Elements(blocks));
        group.bench_function(
            BenchmarkId::new("plinko/cuda", format!("published-{blocks}-blocks")),
            |b| b.iter(|| gpu.generate_resident(&job, &db, &|_| {}).unwrap()),
        );
    }
    group.finish();
}

#[cfg(not(feature = "cuda"))]
fn cuda(_: &mut Criterion) {}

criterion_group!(benches, cpu, cuda);
criterion_main!(benches);
