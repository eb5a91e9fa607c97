//! PIR hint shapes shared by the `pir_hints` bench, the `report` binary and `pir_scale`.

use pir_hints::{
    Cpu, Database, HintGenerator, Hints, Job, MasterKey, Params, Scheme, synthetic_database,
};

use crate::progress::Progress;
use crate::table::{Check, Row, row};
use crate::{median_of, wall};

/// The key every benchmark uses.
pub fn bench_key() -> MasterKey {
    MasterKey::new(&[0x42; 32])
}

/// The synthetic database seed every benchmark uses.
pub const SEED: u64 = 7;

/// A small RMS24 shape a 2-core machine runs in a fraction of a second: 2^18 entries of 32
/// bytes in 512 blocks, 4096 main and 4096 backup hints.
pub fn rms24_small() -> Params {
    Params::new(Scheme::Rms24, 1 << 18, 32)
        .and_then(|p| p.with_block_size(512))
        .and_then(|p| p.with_hints(4096, 4096))
        .unwrap_or_else(|e| unreachable!("fixed shape: {e}"))
}

/// A small Plinko shape: 2^14 entries of 32 bytes in 128 blocks of 128, 1024 regular and
/// 1024 backup hints; runs cover [`PLINKO_SMALL_BLOCKS`] of the blocks.
pub fn plinko_small() -> Params {
    Params::new(Scheme::Plinko, 1 << 14, 32)
        .and_then(|p| p.with_block_size(128))
        .and_then(|p| p.with_hints(1024, 1024))
        .unwrap_or_else(|e| unreachable!("fixed shape: {e}"))
}

/// Blocks per run of [`plinko_small`] (Plinko's work is linear in the blocks).
pub const PLINKO_SMALL_BLOCKS: u64 = 8;

/// The published RMS24 mainnet shape: 1.83e9 entries of 40 bytes, blocks of 42,826, and
/// 10.97M hints (128 w main and 128 w backup, 256 w = 10,963,456).
pub fn rms24_mainnet() -> Params {
    Params::new(Scheme::Rms24, 1_830_000_000, 40)
        .and_then(|p| p.with_block_size(42_826))
        .and_then(|p| p.with_hints(128 * 42_826, 128 * 42_826))
        .unwrap_or_else(|e| unreachable!("fixed shape: {e}"))
}

/// The published Plinko shape: w = 2^17, 16,404 blocks, lambda = 128, 2^24 regular and 2^24
/// backup hints, 48-byte entries.
pub fn plinko_published() -> Params {
    Params::new(Scheme::Plinko, 16_404 << 17, 48)
        .and_then(|p| p.with_block_size(1 << 17))
        .and_then(|p| p.with_hints(1 << 24, 1 << 24))
        .unwrap_or_else(|e| unreachable!("fixed shape: {e}"))
}

/// The job of a shape: all blocks for RMS24, the first `PLINKO_SMALL_BLOCKS` for Plinko.
pub fn small_job<'a>(params: Params, key: &'a MasterKey) -> Job<'a> {
    let job = Job::new(params, key);
    match params.scheme() {
        Scheme::Rms24 => job,
        Scheme::Plinko => job
            .with_blocks(0..PLINKO_SMALL_BLOCKS)
            .unwrap_or_else(|e| unreachable!("fixed shape: {e}")),
    }
}

/// Steps of [`cpu_rows`], one per measured row.
pub const CPU_STEPS: u64 = 2;
/// Steps of [`cuda_rows`], one per measured row.
pub const CUDA_STEPS: u64 = 2;

/// The CPU outputs the GPU rows are checked against.
#[derive(Debug)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub struct Reference {
    databases: Vec<Vec<u8>>,
    hints: Vec<Hints>,
}

fn primitive(params: &Params) -> String {
    format!(
        "{} hints (n = 2^{}, {} hints)",
        params.scheme(),
        params.entries().ilog2(),
        params.total_hints()
    )
}

/// Runs the CPU rows (all threads) for both small shapes.
pub fn cpu_rows(progress: &Progress) -> Result<(Vec<Row>, Reference), pir_hints::Error> {
    let key = bench_key();
    let mut rows = Vec::new();
    let mut reference = Reference {
        databases: Vec::new(),
        hints: Vec::new(),
    };
    for params in [rms24_small(), plinko_small()] {
        progress.step(&primitive(&params), &Cpu.name());
        let bytes = synthetic_database(SEED, params.entries(), params.entry_size())?;
        let db = Database::new(&bytes, params.entry_size())?;
        let job = small_job(params, &key);
        let (hints, time) = median_of(3, || wall(|| Cpu.generate(&job, &db)))?;
        let (work, unit) = job.work();
        rows.push(row(
            &primitive(&params),
            &Cpu.name(),
            work,
            unit,
            0,
            time,
            Check::Reference,
        ));
        reference.databases.push(bytes);
        reference.hints.push(hints);
    }
    Ok((rows, reference))
}

/// Runs the CUDA rows on the CPU rows' shapes and inputs (host database to host hints).
#[cfg(feature = "cuda")]
pub fn cuda_rows(
    cuda: &pir_hints::Cuda,
    reference: &Reference,
    progress: &Progress,
) -> Result<Vec<Row>, pir_hints::Error> {
    let key = bench_key();
    let mut rows = Vec::new();
    for ((params, bytes), expected) in [rms24_small(), plinko_small()]
        .into_iter()
        .zip(&reference.databases)
        .zip(&reference.hints)
    {
        progress.step(&primitive(&params), &cuda.name());
        let db = Database::new(bytes, params.entry_size())?;
        let job = small_job(params, &key);
        let (hints, time) = median_of(3, || wall(|| cuda.generate(&job, &db)))?;
        let (work, unit) = job.work();
        let check = Check::from_equal(hints == *expected, "hints differ from the CPU's");
        rows.push(row(
            &primitive(&params),
            &cuda.name(),
            work,
            unit,
            0,
            time,
            check,
        ));
    }
    Ok(rows)
}
