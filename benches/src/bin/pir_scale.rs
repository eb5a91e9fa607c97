//! `pir_scale`: PIR hint generation at the published shapes on one GPU or several, timed once
//! each, with the database generated on the GPU (nothing crosses the bus but the hints).
//!
//! ```text
//! pir_scale [--gpus N] SCHEME ... on the first N GPUs (default 1): with N > 1 the database
//!                                 is split by blocks, each GPU holding and using only its
//!                                 slice; prints each GPU's time, the wall time and the
//!                                 GPU-hours (N times the wall time)
//! pir_scale rms24 [--hints N]     the RMS24 mainnet shape (1.83e9 x 40 B, w = 42,826),
//!                                 N hints (default all 10,963,456); needs ~75 GB of GPU memory
//! pir_scale plinko [--blocks K]   the Plinko shape (w = 2^17, 2^25 hints, 48 B), over 1 and
//!                                 then K blocks (default 8); prints the time per block and the
//!                                 whole 16,404-block run it implies
//! ```
//!
//! Each run is checked against the CPU's direct evaluation of a few hints.

use std::time::Instant;

use benches::pir::{SEED, bench_key, plinko_published, rms24_mainnet};
use clap::{Parser, Subcommand};
use pir_hints::{Cuda, Database, Hints, Job, Params, direct_hints, fill_synthetic};

/// Published-shape PIR hint runs on the GPU.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// GPUs to use (the first N); with more than one the database is split between them by
    /// blocks.
    #[arg(long, default_value_t = 1, global = true)]
    gpus: usize,
    #[command(subcommand)]
    scheme: Scheme,
}

#[derive(Debug, Subcommand)]
enum Scheme {
    /// The RMS24 mainnet shape.
    Rms24 {
        /// Hints to generate (main and backup half each); default all of the published set.
        #[arg(long)]
        hints: Option<u64>,
    },
    /// The Plinko shape over a slice of its blocks.
    Plinko {
        /// Blocks in the longer run (at least 2).
        #[arg(long, default_value_t = 8)]
        blocks: u64,
    },
}

type Outcome<T = ()> = Result<T, Box<dyn std::error::Error>>;

/// Checks hints `sample` of `hints` against the CPU's direct evaluation, with the rows of the
/// hints' blocks regenerated on the host.
fn check(hints: &Hints, sample: &[u64]) -> Outcome {
    let params = *hints.params();
    let blocks = hints.blocks();
    let w = params.block_size();
    let e = params.entry_size() as u64;
    // A host database holding only the rows of `blocks` (the rest zero, never read).
    let end = (blocks.end * w).min(params.entries());
    let mut bytes = vec![0u8; (params.entries() * e) as usize];
    let start = (blocks.start * w * e) as usize;
    fill_synthetic(SEED, start as u64, &mut bytes[start..(end * e) as usize])?;
    let db = Database::new(&bytes, params.entry_size())?;
    let key = bench_key();
    for value in direct_hints(&params, &key, &db, blocks, sample)? {
        let same = hints.is_valid(value.hint) == value.valid
            && hints.parity(value.hint) == Some(&value.parity[..])
            && hints.second_parity(value.hint) == value.second.as_deref();
        if !same {
            return Err(format!("hint {} differs from the CPU's", value.hint).into());
        }
    }
    println!("checked hints {sample:?} against the CPU: equal");
    Ok(())
}

fn rms24(gpu: &Cuda, hints: Option<u64>) -> Outcome {
    let mainnet = rms24_mainnet();
    let total = hints.unwrap_or(mainnet.total_hints());
    let params: Params = mainnet.with_hints(total / 2, total - total / 2)?;
    let start = Instant::now();
    let db = gpu.synthetic_database(SEED, &params, params.all_blocks())?;
    gpu.gpus()[0].synchronize()?;
    println!(
        "database: {} entries of {} bytes generated on the GPU in {:.2} s",
        params.entries(),
        params.entry_size(),
        start.elapsed().as_secs_f64()
    );
    let key = bench_key();
    let warm = params.with_hints(64, 64)?;
    gpu.generate_resident(&Job::new(warm, &key), &db, &|_| {})?;
    let start = Instant::now();
    let out = gpu.generate_resident(&Job::new(params, &key), &db, &|_| {})?;
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "rms24 {params}: {total} hints in {seconds:.2} s = {:.0} hints/s; the published 10,963,456 \
         take {:.1} s at this rate",
        total as f64 / seconds,
        mainnet.total_hints() as f64 * seconds / total as f64
    );
    drop(db);
    check(&out, &[0, total / 2 - 1, total / 2, total - 1])
}

fn plinko(gpu: &Cuda, blocks: u64) -> Outcome {
    let params = plinko_published();
    let blocks = blocks.max(2);
    let db = gpu.synthetic_database(SEED, &params, 0..blocks)?;
    let key = bench_key();
    let time = |k: u64| -> Outcome<(Hints, f64)> {
        let job = Job::new(params, &key).with_blocks(0..k)?;
        let start = Instant::now();
        let hints = gpu.generate_resident(&job, &db, &|_| {})?;
        Ok((hints, start.elapsed().as_secs_f64()))
    };
    time(1)?; // warm-up: kernel compilation
    let (_, one) = time(1)?;
    let (hints, many) = time(blocks)?;
    let per_block = (many - one) / (blocks - 1) as f64;
    let fixed = one - per_block;
    let whole = fixed + per_block * params.blocks() as f64;
    println!(
        "plinko {params}: 1 block {one:.2} s, {blocks} blocks {many:.2} s: {per_block:.3} s per \
         block, {fixed:.2} s fixed (subsets, transfers); all {} blocks: {whole:.0} s = {:.2} h",
        params.blocks(),
        whole / 3600.0
    );
    let m = params.total_hints();
    check(&hints, &[0, 1, m / 2, m - 1])
}

/// `job` over `blocks` of the synthetic database split between the GPUs of `gpus`, timed
/// after a warm-up (`warm`, the same shape with few hints or blocks); prints every GPU's time
/// and the wall time.
fn split_run(
    gpus: &Cuda,
    job: &Job<'_>,
    warm: &Job<'_>,
    blocks: std::ops::Range<u64>,
) -> Outcome<Hints> {
    let params = job.params();
    let start = Instant::now();
    let slices = gpus.synthetic_slices(SEED, params, blocks)?;
    for gpu in gpus.gpus() {
        gpu.synchronize()?;
    }
    let held: Vec<_> = slices.iter().map(|s| s.blocks()).collect();
    println!(
        "database: blocks split {held:?} over {} GPUs, generated in {:.2} s",
        gpus.gpus().len(),
        start.elapsed().as_secs_f64()
    );
    gpus.generate_slices(warm, &slices)?;
    let start = Instant::now();
    let (hints, seconds) = gpus.generate_slices(job, &slices)?;
    let wall = start.elapsed().as_secs_f64();
    for (i, s) in seconds.iter().enumerate() {
        println!("GPU {i}: blocks {:?}: {s:.2} s", held[i]);
    }
    let count = gpus.gpus().len();
    println!(
        "{} {params} on {count} GPUs: wall {wall:.2} s (the parts summed on the GPUs and downloaded \
         included) = {:.3} GPU-hours ({count} GPUs held for the wall time)",
        params.scheme(),
        count as f64 * wall / 3600.0
    );
    Ok(hints)
}

fn rms24_split(gpus: &Cuda, hints: Option<u64>) -> Outcome {
    let mainnet = rms24_mainnet();
    let total = hints.unwrap_or(mainnet.total_hints());
    let params: Params = mainnet.with_hints(total / 2, total - total / 2)?;
    let key = bench_key();
    let job = Job::new(params, &key);
    let warm = Job::new(params.with_hints(64, 64)?, &key);
    let out = split_run(gpus, &job, &warm, params.all_blocks())?;
    check(&out, &[0, total / 2 - 1, total / 2, total - 1])
}

fn plinko_split(gpus: &Cuda, blocks: u64) -> Outcome {
    let params = plinko_published();
    let key = bench_key();
    let job = Job::new(params, &key).with_blocks(0..blocks)?;
    let warm = Job::new(params, &key).with_blocks(0..1)?;
    let hints = split_run(gpus, &job, &warm, 0..blocks)?;
    let m = params.total_hints();
    check(&hints, &[0, 1, m / 2, m - 1])
}

fn main() -> Outcome {
    let args = Args::parse();
    let all = kernels::Gpu::all()?;
    if args.gpus == 0 || args.gpus > all.len() {
        return Err(format!("--gpus {}: this host has {} GPUs", args.gpus, all.len()).into());
    }
    let gpu = Cuda::on(all[..args.gpus].to_vec())?;
    match (args.scheme, args.gpus) {
        (Scheme::Rms24 { hints }, 1) => rms24(&gpu, hints),
        (Scheme::Plinko { blocks }, 1) => plinko(&gpu, blocks),
        (Scheme::Rms24 { hints }, _) => rms24_split(&gpu, hints),
        (Scheme::Plinko { blocks }, _) => plinko_split(&gpu, blocks),
    }
}
