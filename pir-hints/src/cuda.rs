//! The CUDA backend: kernels of `pir-hints/cuda/pir.cu`, run through `kernels`.
//!
//! - Subsets: one thread block per hint finds the exact median of its `c` select values by a
//!   four-pass radix select (8 bits a pass, the values regenerated from ChaCha each pass, so
//!   nothing is stored), then the extra block by a block-wide prefix count.
//! - RMS24: one warp per hint walks the blocks, each lane one ChaCha block for 16 select
//!   values and two for 16 offsets; then the warp loads the chosen entries together, each
//!   entry's words by neighbouring lanes (so a load instruction reads whole entries), and
//!   XORs them in registers. Entries wider than 128 bytes are done 128 bytes (a column) per
//!   pass.
//! - Plinko: per database block, the iPRF's inverse permutation over all `m` hints and its bin
//!   ranges are built on the GPU by the `prp` crate; then one thread per PRP image finds its
//!   bin (the entry's offset), its hint, and XORs the entry into that hint. Every hint is hit
//!   once per block, so no atomics are needed.
//!
//! Several GPUs split both schemes by blocks ([`crate::block_slices`]): first each GPU makes
//! the subset summaries (16 bytes each) of a range of the hints, and every GPU gets them all
//! through the host; then each GPU holds only its slice of the database and makes its blocks'
//! part of every hint's parities, in a host thread of its own; the parts are XORed on the
//! host (one pass over the hint set per GPU, in parallel). Databases larger than a GPU's free
//! memory are uploaded in block ranges.

#![allow(unsafe_code)]

use std::ops::Range;
use std::sync::Arc;

use crate::source;
use kernels::{DeviceBuffer, DeviceRepr, Gpu, Grid, Kernel, ValidAsZeroBits};
use prp::Evaluator;
use rayon::prelude::*;

use crate::database::{Database, synthetic_rows, synthetic_stream};
use crate::error::Error;
use crate::hints::Hints;
use crate::keys::MasterKey;
use crate::params::{Params, Scheme};
use crate::slices::{block_slices, synthetic_alignment};
use crate::{HintGenerator, Job};

/// Threads per block of the subset kernel (fixed in pir.cu).
const SUBSET_THREADS: u32 = 256;
/// Threads per block of the gather and scatter kernels (pir.cu's GATHER_THREADS).
const THREADS: u32 = 128;
/// The L2 fetch granularity during RMS24's gather (`Gpu::set_l2_fetch_granularity`).
const GATHER_L2_FETCH_BYTES: usize = 32;
/// Hints per launch of the subset and gather kernels: the unit of progress reports.
const HINTS_PER_LAUNCH: u64 = 1 << 18;
/// Bytes of database rows uploaded at a time when streaming Plinko's blocks.
const PLINKO_ROW_BYTES: u64 = 256 << 20;
/// Device memory left free for everything else (the iPRF tables, the driver).
const RESERVED_BYTES: u64 = 1 << 30;
/// Parity words a gather pass handles per hint (128 bytes, a word per lane of the hint's
/// warp); wider entries take several passes.
const COLUMN_WORDS: u32 = 32;
/// Plinko jobs of at most this many hints (the iPRF's balls) take their blocks in batches of
/// [`SMALL_BATCH`] ([`BlockTables::small`]): for so few balls one block's iPRF keeps the GPU idle (its
/// inverse table fills one thread block; its sampler's tree is launches and round trips).
const SMALL_MAX_HINTS: u64 = 1 << 16;
/// Blocks of a small Plinko job prepared at once.
const SMALL_BATCH: u64 = 64;
/// Parity words of a part copied at a time when the parts are summed (256 MiB).
const REDUCE_CHUNK_WORDS: usize = 1 << 26;
/// Hints whose parities are turned into bytes and downloaded at a time.
const BYTES_CHUNK_HINTS: usize = 1 << 22;
/// The largest number of blocks the subset kernel handles (its ranks are 32-bit).
const MAX_GPU_BLOCKS: u64 = 1 << 32;

/// A hint's subset on the device, as `HintSummary` in pir.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct HintSummary {
    extra: u64,
    cutoff: u32,
    valid: u32,
}

// SAFETY: a `#[repr(C)]` struct of integers laid out as `HintSummary` in pir.cu; all zero
// bits is a valid value.
unsafe impl DeviceRepr for HintSummary {}
// SAFETY: as above.
unsafe impl ValidAsZeroBits for HintSummary {}

/// The shape of the rows a kernel reads, as `RowShape` in pir.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct RowShape {
    row_first: u64,
    row_count: u64,
    entry_size: u32,
    words: u32,
}

// SAFETY: a `#[repr(C)]` struct of integers laid out as `RowShape` in pir.cu.
unsafe impl DeviceRepr for RowShape {}

/// Parity words per hint for `E`-byte entries.
fn parity_words(entry_size: usize) -> u32 {
    entry_size.div_ceil(4) as u32
}

/// The CUDA backend on one or more GPUs of this host.
///
/// ```no_run
/// use pir_hints::{Cuda, Database, HintGenerator, Job, MasterKey, Params, Scheme};
///
/// # fn main() -> Result<(), pir_hints::Error> {
/// let bytes = pir_hints::synthetic_database(1, 100_000, 32)?;
/// let db = Database::new(&bytes, 32)?;
/// let params = Params::new(Scheme::Rms24, 100_000, 32)?;
/// let key = MasterKey::new(&[5; 32]);
/// let hints = Cuda::new()?.generate(&Job::new(params, &key), &db)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Cuda {
    gpus: Vec<Arc<Gpu>>,
    upload_limit: Option<u64>,
}

/// A range of a database's blocks resident on one GPU, for repeated or benchmarked runs
/// ([`Cuda::upload_database`], [`Cuda::synthetic_database`], [`Cuda::generate_resident`]).
#[derive(Debug)]
pub struct DeviceDatabase {
    gpu: Arc<Gpu>,
    bytes: DeviceBuffer<u8>,
    params: Params,
    blocks: Range<u64>,
}

impl DeviceDatabase {
    /// The blocks it holds.
    pub fn blocks(&self) -> Range<u64> {
        self.blocks.clone()
    }

    /// The rows' shape for the kernels: the entries of its blocks that lie below `n`.
    fn shape(&self) -> RowShape {
        row_shape(&self.params, self.blocks.clone())
    }
}

/// The entries of `blocks` below `n`, as the kernels see them.
fn row_shape(params: &Params, blocks: Range<u64>) -> RowShape {
    let w = params.block_size();
    let first = (blocks.start * w).min(params.entries());
    let end = (blocks.end * w).min(params.entries());
    RowShape {
        row_first: blocks.start * w,
        row_count: end - first,
        entry_size: params.entry_size() as u32,
        words: parity_words(params.entry_size()),
    }
}

impl Cuda {
    /// The backend on every GPU of the host.
    pub fn new() -> Result<Self, Error> {
        Self::on(Gpu::all()?)
    }

    /// The backend on GPUs the caller opened (`kernels::Gpu::new(ordinal)`); work is split
    /// between them. Errors if the list is empty.
    pub fn on(gpus: Vec<Arc<Gpu>>) -> Result<Self, Error> {
        if gpus.is_empty() {
            return Err(Error::Parameter("no GPUs given".into()));
        }
        Ok(Self {
            gpus,
            upload_limit: None,
        })
    }

    /// The same backend holding at most `bytes` of database rows on each GPU at a time (at
    /// least one block's rows). By default RMS24 uploads as much as free memory allows and
    /// Plinko 256 MiB at a time; a limit leaves room for other work on a shared GPU.
    pub fn with_upload_limit(self, bytes: u64) -> Self {
        Self {
            upload_limit: Some(bytes),
            ..self
        }
    }

    /// The GPUs in use.
    pub fn gpus(&self) -> &[Arc<Gpu>] {
        &self.gpus
    }

    /// Copies blocks `blocks` of `db` to the first GPU.
    pub fn upload_database(
        &self,
        params: &Params,
        db: &Database<'_>,
        blocks: Range<u64>,
    ) -> Result<DeviceDatabase, Error> {
        db.check(params)?;
        params.check_block_range(&blocks)?;
        let gpu = Arc::clone(&self.gpus[0]);
        let bytes = gpu.upload(db.rows(blocks.clone(), params.block_size()))?;
        Ok(DeviceDatabase {
            gpu,
            bytes,
            params: *params,
            blocks,
        })
    }

    /// Blocks `blocks` of the synthetic database of `seed` ([`crate::synthetic_stream`]),
    /// generated on the first GPU: nothing crosses the bus. The blocks must start at a byte
    /// offset that is a multiple of 64 (block 0 always does).
    pub fn synthetic_database(
        &self,
        seed: u64,
        params: &Params,
        blocks: Range<u64>,
    ) -> Result<DeviceDatabase, Error> {
        synthetic_on(&self.gpus[0], seed, params, blocks)
    }

    /// Blocks `blocks` of the synthetic database of `seed`, split between the GPUs by
    /// [`crate::block_slices`] (on boundaries where the synthetic stream can start, so some
    /// GPUs get none when there are few blocks): each GPU generates and holds only its slice.
    /// For [`Cuda::generate_slices`]. A backend on the same GPU listed `k` times holds `k`
    /// slices on it.
    pub fn synthetic_slices(
        &self,
        seed: u64,
        params: &Params,
        blocks: Range<u64>,
    ) -> Result<Vec<DeviceDatabase>, Error> {
        let slices = block_slices(blocks, self.gpus.len(), synthetic_alignment(params))?;
        slices
            .into_iter()
            .zip(&self.gpus)
            .map(|(slice, gpu)| synthetic_on(gpu, seed, params, slice))
            .collect()
    }

    /// The hints of `job` from database slices resident on their GPUs (from
    /// [`Cuda::synthetic_slices`] or [`Cuda::upload_database`]), every slice on its own GPU at
    /// once, each in a host thread; the slices' parts are XORed on the host. Only the job's
    /// blocks inside each slice are used; the slices must together hold the job's blocks,
    /// each block once. With several slices, their GPUs first make the subset summaries
    /// between them (each a range of hints). Returns the hints and each slice's seconds (the
    /// shared subsets, then its gather or scatter and download), for speed-up figures.
    pub fn generate_slices(
        &self,
        job: &Job<'_>,
        slices: &[DeviceDatabase],
    ) -> Result<(Hints, Vec<f64>), Error> {
        let mut covered = 0u64;
        for db in slices {
            check_same_shape(job, db)?;
            let inside = intersect(job.blocks(), db.blocks.clone());
            covered += inside.end - inside.start;
        }
        let wanted = job.blocks().end - job.blocks().start;
        if covered != wanted {
            return Err(Error::Parameter(format!(
                "the slices hold {covered} of the job's {wanted} blocks {:?} (each block once)",
                job.blocks()
            )));
        }
        let (made, hints) = beside_hints(job, || {
            // Several GPUs make the subset summaries between them, each a range of hints.
            let start = std::time::Instant::now();
            let shared = if slices.len() > 1 {
                Some(shared_summaries(job, slices.iter().map(|db| &db.gpu))?)
            } else {
                None
            };
            let summaries_seconds = start.elapsed().as_secs_f64();
            let summaries = shared.as_deref();
            let parts: Vec<Result<(Option<DevicePart>, f64), Error>> =
                std::thread::scope(|scope| {
                    let handles: Vec<_> = slices
                        .iter()
                        .map(|db| {
                            scope.spawn(move || {
                                let start = std::time::Instant::now();
                                let part = resident_part(job, db, summaries, &|_| {})?;
                                Ok((part, summaries_seconds + start.elapsed().as_secs_f64()))
                            })
                        })
                        .collect();
                    handles.into_iter().map(join_worker).collect()
                });
            Ok((parts, shared))
        });
        let (parts, shared) = made?;
        let mut finished = Vec::with_capacity(parts.len());
        let mut seconds = Vec::with_capacity(parts.len());
        for part in parts {
            let (part, time) = part?;
            finished.extend(part);
            seconds.push(time);
        }
        Ok((assemble(hints?, finished, shared.as_deref())?, seconds))
    }

    /// The hints of `job` from a database already on a GPU, on that GPU alone. The database
    /// must have the job's `n`, `E` and `w` (its hint counts may differ), and the job's blocks
    /// must lie within the database's.
    pub fn generate_resident(
        &self,
        job: &Job<'_>,
        db: &DeviceDatabase,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Hints, Error> {
        check_same_shape(job, db)?;
        if job.blocks().start < db.blocks.start || job.blocks().end > db.blocks.end {
            return Err(Error::Parameter(format!(
                "the job's blocks {:?} are not all in the device database's {:?}",
                job.blocks(),
                db.blocks
            )));
        }
        let (part, hints) = beside_hints(job, || resident_part(job, db, None, progress));
        assemble(hints?, part?.into_iter().collect(), None)
    }
}

/// Blocks generated on `gpu`: see [`Cuda::synthetic_database`].
fn synthetic_on(
    gpu: &Arc<Gpu>,
    seed: u64,
    params: &Params,
    blocks: Range<u64>,
) -> Result<DeviceDatabase, Error> {
    params.check_block_range(&blocks)?;
    let (counter, len) = synthetic_rows(params, blocks.clone())?;
    let mut bytes = gpu.alloc_zeroed::<u8>(len)?;
    prp::Cuda::on(Arc::clone(gpu)).fill_keystream_device(
        &synthetic_stream(seed),
        counter,
        &mut bytes,
    )?;
    Ok(DeviceDatabase {
        gpu: Arc::clone(gpu),
        bytes,
        params: *params,
        blocks,
    })
}

/// Errors unless the device database has the job's `n`, `E` and `w` (its hint counts may
/// differ).
fn check_same_shape(job: &Job<'_>, db: &DeviceDatabase) -> Result<(), Error> {
    let (a, b) = (&db.params, job.params());
    if (a.entries(), a.entry_size(), a.block_size())
        != (b.entries(), b.entry_size(), b.block_size())
    {
        return Err(Error::Parameter(format!(
            "the job ({b}) does not match the device database ({a})"
        )));
    }
    Ok(())
}

/// The blocks two ranges share (empty if none).
fn intersect(a: Range<u64>, b: Range<u64>) -> Range<u64> {
    let start = a.start.max(b.start);
    start..a.end.min(b.end).max(start)
}

/// Every hint's subset summary, made by `gpus` between them and brought to the host, so that
/// no GPU makes them all. Main and backup hints cost differently, so each GPU takes a share
/// of both (contiguous ranges of each, in a host thread per GPU).
fn shared_summaries<'g>(
    job: &Job<'_>,
    gpus: impl ExactSizeIterator<Item = &'g Arc<Gpu>>,
) -> Result<Vec<HintSummary>, Error> {
    let params = job.params();
    let (main, total) = (params.main_hints(), params.total_hints());
    let mut shares = vec![Vec::new(); gpus.len()];
    for hints in [0..main, main..total] {
        if !hints.is_empty() {
            for (share, range) in shares.iter_mut().zip(block_slices(hints, gpus.len(), 1)?) {
                share.push(range);
            }
        }
    }
    /// A range of hints and their summaries.
    type Made = (Range<u64>, Vec<HintSummary>);
    let parts: Vec<Result<Vec<Made>, Error>> = std::thread::scope(|scope| {
        let handles: Vec<_> = shares
            .into_iter()
            .zip(gpus)
            .map(|(share, gpu)| {
                scope.spawn(move || {
                    let worker = Worker::new(gpu, job)?;
                    share
                        .into_iter()
                        .map(|hints| Ok((hints.clone(), worker.summaries(hints)?.to_host()?)))
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(join_worker).collect()
    });
    let mut all = vec![HintSummary::default(); usize::try_from(total).unwrap_or(0)];
    for part in parts {
        for (hints, summaries) in part? {
            all[hints.start as usize..hints.end as usize].copy_from_slice(&summaries);
        }
    }
    Ok(all)
}

/// The part of every hint of `job` that the job's blocks inside `db` make, on `db`'s GPU,
/// from `shared` summaries if given (else made there); `None` if the job has no blocks there.
fn resident_part(
    job: &Job<'_>,
    db: &DeviceDatabase,
    shared: Option<&[HintSummary]>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Option<DevicePart>, Error> {
    let blocks = intersect(job.blocks(), db.blocks.clone());
    if blocks.is_empty() {
        return Ok(None);
    }
    let worker = Worker::new(&db.gpu, job)?;
    let summaries = worker.all_summaries(shared)?;
    let part = match job.params().scheme() {
        Scheme::Rms24 => worker.rms24(summaries, &mut |gather| {
            gather(&db.bytes, db.shape(), blocks.clone(), progress)
        })?,
        Scheme::Plinko => worker.plinko(summaries, blocks, &mut |blocks, scatter| {
            for a in blocks {
                scatter(a, &db.bytes, db.shape())?;
                progress(1);
            }
            Ok(())
        })?,
    };
    Ok(Some(part))
}

/// A GPU worker thread's result, a panic turned into an error.
fn join_worker<T>(handle: std::thread::ScopedJoinHandle<'_, Result<T, Error>>) -> Result<T, Error> {
    handle
        .join()
        .unwrap_or_else(|_| Err(Error::Parameter("a GPU worker panicked".into())))
}

impl HintGenerator for Cuda {
    fn name(&self) -> String {
        let first = &self.gpus[0].info().name;
        match self.gpus.len() {
            1 => format!("CUDA ({first})"),
            n => format!("CUDA ({n} x {first})"),
        }
    }

    fn generate_with_progress(
        &self,
        job: &Job<'_>,
        db: &Database<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Hints, Error> {
        db.check(job.params())?;
        let params = *job.params();
        let pieces = block_slices(job.blocks(), self.gpus.len(), 1)?;
        let (made, hints) = beside_hints(job, || {
            // Several GPUs make the subset summaries between them, each a range of hints.
            let shared = if pieces.len() > 1 {
                Some(shared_summaries(job, self.gpus.iter().take(pieces.len()))?)
            } else {
                None
            };
            let summaries = shared.as_deref();
            let parts: Vec<Result<DevicePart, Error>> = std::thread::scope(|scope| {
                let handles: Vec<_> = pieces
                    .into_iter()
                    .zip(&self.gpus)
                    .enumerate()
                    .map(|(index, (piece, gpu))| {
                        scope.spawn(move || {
                            let worker = Worker::new(gpu, job)?;
                            let summaries = worker.all_summaries(summaries)?;
                            if params.scheme() == Scheme::Rms24 {
                                // Every GPU gathers every hint over its blocks: the first GPU's
                                // last range reports the hints.
                                worker.rms24(summaries, &mut |gather| {
                                    upload_in_ranges(
                                        gpu,
                                        &params,
                                        db,
                                        (piece.clone(), self.upload_limit),
                                        &mut |rows, shape, blocks, last| {
                                            let report: &(dyn Fn(u64) + Sync) =
                                                if last && index == 0 {
                                                    progress
                                                } else {
                                                    &|_| {}
                                                };
                                            gather(rows, shape, blocks, report)
                                        },
                                    )
                                })
                            } else {
                                worker.plinko(summaries, piece.clone(), &mut |blocks, scatter| {
                                    upload_in_ranges(
                                        gpu,
                                        &params,
                                        db,
                                        (blocks, self.upload_limit),
                                        &mut |rows, shape, range, _| {
                                            for a in range {
                                                scatter(a, rows, shape)?;
                                                progress(1);
                                            }
                                            Ok(())
                                        },
                                    )
                                })
                            }
                        })
                    })
                    .collect();
                handles.into_iter().map(join_worker).collect()
            });
            let parts = parts.into_iter().collect::<Result<Vec<_>, _>>()?;
            Ok((parts, shared))
        });
        let (parts, shared) = made?;
        assemble(hints?, parts, shared.as_deref())
    }
}

/// Uploads the stored rows of `blocks` in ranges that fit the GPU's free memory (or
/// [`PLINKO_ROW_BYTES`] for Plinko), and at most `limit` bytes, and calls
/// `f(rows, shape, range, is_last)` on each.
fn upload_in_ranges(
    gpu: &Arc<Gpu>,
    params: &Params,
    db: &Database<'_>,
    (blocks, limit): (Range<u64>, Option<u64>),
    f: &mut RowsFn<'_>,
) -> Result<(), Error> {
    let row_bytes = params.block_size() * params.entry_size() as u64;
    let budget = match params.scheme() {
        Scheme::Rms24 => (gpu.free_memory()? as u64).saturating_sub(RESERVED_BYTES),
        Scheme::Plinko => PLINKO_ROW_BYTES,
    }
    .min(limit.unwrap_or(u64::MAX));
    let per_range = (budget / row_bytes).max(1);
    let mut start = blocks.start;
    while start < blocks.end {
        let end = start.saturating_add(per_range).min(blocks.end);
        let rows = gpu.upload(db.rows(start..end, params.block_size()))?;
        f(
            &rows,
            row_shape(params, start..end),
            start..end,
            end == blocks.end,
        )?;
        start = end;
    }
    Ok(())
}

/// One slice's part of every hint, on its GPU: the subset summaries and the parities (as
/// pir.cu keeps them, [`parity_words`] words per hint) of the slice's blocks.
struct DevicePart {
    gpu: Arc<Gpu>,
    summaries: DeviceBuffer<HintSummary>,
    parity: DeviceBuffer<u32>,
    second: DeviceBuffer<u32>,
}

impl DevicePart {
    /// The parities (`second`: the backup hints' second parities).
    fn words(&self, second: bool) -> &DeviceBuffer<u32> {
        if second { &self.second } else { &self.parity }
    }
}

/// Words `words` of every part's parities (`second`: the second parities) XORed together
/// on `gpu`: each part's words copied over [`REDUCE_CHUNK_WORDS`] at a time (a peer copy from
/// another GPU) and folded in.
fn reduce_words(
    gpu: &Arc<Gpu>,
    parts: &[DevicePart],
    second: bool,
    words: Range<usize>,
) -> Result<DeviceBuffer<u32>, Error> {
    let kernel = gpu.kernel(&source::PIR, "pir_xor_words")?;
    let len = words.end - words.start;
    let mut sum = gpu.alloc_zeroed::<u32>(len)?;
    let mut scratch = gpu.alloc_zeroed::<u32>(len.min(REDUCE_CHUNK_WORDS))?;
    for part in parts {
        let src = part.words(second);
        if src.len() < words.end {
            return Err(Error::Parameter("parts of different hint sets".into()));
        }
        for offset in (0..len).step_by(REDUCE_CHUNK_WORDS) {
            let n = (len - offset).min(REDUCE_CHUNK_WORDS);
            scratch.copy_from_device(0, src, words.start + offset, n)?;
            let (offset, n) = (offset as u64, n as u64);
            let launch = gpu
                .launch(&kernel, Grid::cover(n, THREADS))
                .buffer_mut(&mut sum)
                .value(&offset)
                .buffer(&scratch)
                .value(&n);
            // SAFETY: pir_xor_words(u32* dst, u64 offset, const u32* src, u64 n) XORs
            // src[0 .. n) into dst[offset .. offset + n): `scratch` holds n words and
            // offset + n is at most len, `sum`'s length.
            unsafe { launch.run() }?;
        }
    }
    Ok(sum)
}

/// Parity words on `gpu` (every hint's, [`parity_words`] each) as `E`-byte parities into
/// `out`, turned into bytes on the GPU [`BYTES_CHUNK_HINTS`] hints at a time.
fn download_bytes(
    gpu: &Arc<Gpu>,
    words: &DeviceBuffer<u32>,
    entry_size: usize,
    out: &mut [u8],
) -> Result<(), Error> {
    let per_hint = parity_words(entry_size);
    if out.len() != words.len() / per_hint as usize * entry_size {
        return Err(Error::Parameter("parities of another shape".into()));
    }
    let kernel = gpu.kernel(&source::PIR, "pir_words_to_bytes")?;
    let chunk = BYTES_CHUNK_HINTS * entry_size;
    let mut bytes = gpu.alloc_zeroed::<u8>(out.len().min(chunk))?;
    let entry = entry_size as u32;
    for (index, piece) in out.chunks_mut(chunk).enumerate() {
        let first = (index * BYTES_CHUNK_HINTS) as u64;
        let count = (piece.len() / entry_size) as u64;
        let launch = gpu
            .launch(&kernel, Grid::cover(piece.len() as u64, THREADS))
            .buffer(words)
            .value(&per_hint)
            .value(&entry)
            .value(&first)
            .value(&count)
            .buffer_mut(&mut bytes);
        // SAFETY: pir_words_to_bytes(const u32*, u32 words, u32 E, u64 first, u64 count,
        // u8* out) reads the words of hints first .. first + count, which `words` holds (its
        // length is the hints' count times per_hint, checked above), and writes count * E
        // bytes, at most `bytes`' length.
        unsafe { launch.run() }?;
        bytes.copy_range_to_host(0, piece)?;
    }
    Ok(())
}

/// A range of hints whose parities (`second`: the backup hints' second parities, numbered
/// from the first backup hint) one GPU sums and downloads into `out`, `E` bytes a hint.
struct Share<'a> {
    second: bool,
    hints: Range<u64>,
    out: &'a mut [u8],
}

/// `out` (`E` bytes per hint of `0..hints`) as the shares of at most `parts` nearly equal
/// ranges of the hints.
fn shares_of(
    out: &mut [u8],
    second: bool,
    hints: u64,
    parts: usize,
    entry_size: usize,
) -> Result<Vec<Share<'_>>, Error> {
    if hints == 0 {
        return Ok(Vec::new());
    }
    let mut rest = out;
    let mut shares = Vec::new();
    for range in block_slices(0..hints, parts, 1)? {
        let bytes = (range.end - range.start) as usize * entry_size;
        let (piece, tail) = std::mem::take(&mut rest).split_at_mut(bytes);
        shares.push(Share {
            second,
            hints: range,
            out: piece,
        });
        rest = tail;
    }
    Ok(shares)
}

/// `work` (the GPUs' parts of `job`) run beside the making of `job`'s empty hints with their
/// parities' pages touched: a fresh allocation faults every page in on its first write, which
/// took about 0.9 s for 657 MB of parities written by the downloads; here it overlaps the GPUs.
fn beside_hints<T: Send>(
    job: &Job<'_>,
    work: impl FnOnce() -> Result<T, Error>,
) -> (Result<T, Error>, Result<Hints, Error>) {
    std::thread::scope(|scope| {
        let hints = scope.spawn(|| {
            let mut hints = job.empty_hints();
            let (_, parity, second) = hints.parts_mut();
            for bytes in [parity, second] {
                bytes
                    .par_chunks_mut(1 << 20)
                    .for_each(|piece| piece.fill(0));
            }
            Ok(hints)
        });
        let made = work();
        (made, join_worker(hints))
    })
}

/// `hints` (empty, of the parts' job) filled from the parts, one per slice of the job's
/// blocks, each on its GPU. With
/// several parts each part's GPU sums a share of the hints (its own and every other part's
/// parities of those hints, copied over) and downloads that share, all GPUs at once; one part
/// is downloaded as it is. The validity comes from `shared` summaries when given, else from
/// the first part's (every part has the same). No parts (no blocks): zero parities and no
/// valid hint.
fn assemble(
    mut hints: Hints,
    parts: Vec<DevicePart>,
    shared: Option<&[HintSummary]>,
) -> Result<Hints, Error> {
    let params = *hints.params();
    let Some(first) = parts.first() else {
        return Ok(hints);
    };
    let e = params.entry_size();
    let (valid, parity, second) = hints.parts_mut();
    let downloaded;
    let summaries = match shared {
        Some(summaries) => summaries,
        None => {
            downloaded = first.summaries.to_host()?;
            &downloaded[..]
        }
    };
    if summaries.len() != valid.len() {
        return Err(Error::Parameter("summaries of another hint set".into()));
    }
    for (flag, summary) in valid.iter_mut().zip(summaries) {
        *flag = summary.valid == 1;
    }
    if parts.len() == 1 {
        download_bytes(&first.gpu, &first.parity, e, parity)?;
        download_bytes(&first.gpu, &first.second, e, second)?;
        return Ok(hints);
    }
    let n = parts.len();
    let mut shares: Vec<Vec<Share<'_>>> = (0..n).map(|_| Vec::new()).collect();
    let (total, backups) = (params.total_hints(), params.backup_hints());
    for made in [
        shares_of(parity, false, total, n, e)?,
        shares_of(second, true, backups, n, e)?,
    ] {
        for (list, share) in shares.iter_mut().zip(made) {
            list.push(share);
        }
    }
    let per_hint = parity_words(e) as usize;
    let parts = &parts;
    let done: Vec<Result<(), Error>> = std::thread::scope(|scope| {
        let handles: Vec<_> = shares
            .into_iter()
            .zip(parts)
            .map(|(share, part)| {
                scope.spawn(move || {
                    for Share { second, hints, out } in share {
                        let words = hints.start as usize * per_hint..hints.end as usize * per_hint;
                        let sum = reduce_words(&part.gpu, parts, second, words)?;
                        download_bytes(&part.gpu, &sum, e, out)?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().map(join_worker).collect()
    });
    done.into_iter().collect::<Result<(), Error>>()?;
    Ok(hints)
}

/// Work on rows uploaded to the device: `(rows, shape, the blocks they hold, is_last)`.
type RowsFn<'a> =
    dyn FnMut(&DeviceBuffer<u8>, RowShape, Range<u64>, bool) -> Result<(), Error> + 'a;

/// Plinko's scatter of block `a` from rows on the device: `(a, rows, shape)`.
type ScatterFn<'a> = dyn FnMut(u64, &DeviceBuffer<u8>, RowShape) -> Result<(), Error> + 'a;

/// Feeds the rows of blocks `blocks` to a scatter, block by block.
type BlockStream<'a> = dyn FnMut(Range<u64>, &mut ScatterFn<'_>) -> Result<(), Error> + 'a;

/// How a gather pass is run over rows on the device: `(rows, shape, blocks, progress)`.
type Gather<'a> = dyn FnMut(&DeviceBuffer<u8>, RowShape, Range<u64>, &(dyn Fn(u64) + Sync)) -> Result<(), Error>
    + 'a;

/// One GPU's share of a job.
struct Worker<'a> {
    gpu: &'a Arc<Gpu>,
    params: Params,
    key: &'a MasterKey,
    select_key: prp::Key,
}

impl<'a> Worker<'a> {
    fn new(gpu: &'a Arc<Gpu>, job: &Job<'a>) -> Result<Self, Error> {
        let params = *job.params();
        if params.blocks() > MAX_GPU_BLOCKS {
            return Err(Error::Parameter(format!(
                "{} blocks is more than the GPU backend's 2^32",
                params.blocks()
            )));
        }
        Ok(Self {
            gpu,
            params,
            key: job.key(),
            select_key: job.key().select_key(params.scheme()),
        })
    }

    fn kernel(&self, name: &str) -> Result<Kernel, Error> {
        Ok(self.gpu.kernel(&source::PIR, name)?)
    }

    /// The subset summaries of hints `hints`, indexed from `hints.start`.
    fn summaries(&self, hints: Range<u64>) -> Result<DeviceBuffer<HintSummary>, Error> {
        let kernel = self.kernel("pir_subsets")?;
        let mut out = self
            .gpu
            .alloc_zeroed::<HintSummary>((hints.end - hints.start) as usize)?;
        let (blocks, main, base) = (self.params.blocks(), self.params.main_hints(), hints.start);
        let mut first = hints.start;
        while first < hints.end {
            let count = (hints.end - first).min(HINTS_PER_LAUNCH);
            let launch = self
                .gpu
                .launch(
                    &kernel,
                    Grid::cover(count * u64::from(SUBSET_THREADS), SUBSET_THREADS),
                )
                .value(&self.select_key)
                .value(&first)
                .value(&count)
                .value(&blocks)
                .value(&main)
                .value(&base)
                .buffer_mut(&mut out);
            // SAFETY: pir_subsets(ChaChaKey, u64 first, u64 count, u64 blocks, u64 main,
            // u64 base, HintSummary*) writes the summaries of hints first .. first + count,
            // which lie in `hints`, at hint - base of `out` (one entry per hint of `hints`);
            // one block of SUBSET_THREADS per hint.
            unsafe { launch.run() }?;
            first += count;
        }
        Ok(out)
    }

    /// Every hint's subset summary on this worker's GPU: `shared` uploaded (summaries that
    /// several GPUs made between them, [`shared_summaries`]), or made here.
    fn all_summaries(
        &self,
        shared: Option<&[HintSummary]>,
    ) -> Result<DeviceBuffer<HintSummary>, Error> {
        match shared {
            Some(summaries) => Ok(self.gpu.upload(summaries)?),
            None => self.summaries(0..self.params.total_hints()),
        }
    }

    /// RMS24's part of every hint from the blocks that `passes` feeds, given every hint's
    /// subset summary: `passes` runs the returned gather over database rows (once, or per
    /// uploaded range).
    fn rms24(
        &self,
        summaries: DeviceBuffer<HintSummary>,
        passes: &mut dyn FnMut(&mut Gather<'_>) -> Result<(), Error>,
    ) -> Result<DevicePart, Error> {
        let params = self.params;
        let hints = 0..params.total_hints();
        let words = parity_words(params.entry_size());
        let count = hints.end - hints.start;
        let second_base = hints.start.max(params.main_hints());
        let backups = hints.end.saturating_sub(second_base);
        let mut parity = self
            .gpu
            .alloc_zeroed::<u32>((count * u64::from(words)) as usize)?;
        let mut second = self
            .gpu
            .alloc_zeroed::<u32>((backups * u64::from(words)) as usize)?;
        // 8-byte loads where every entry starts 8-byte aligned (pir.cu's rms24_gather).
        let kernel = if params.entry_size() % 8 == 0 {
            self.kernel("pir_rms24_gather_wide")?
        } else {
            self.kernel("pir_rms24_gather")?
        };
        let w = params.block_size();
        let reciprocal = u64::MAX / w;
        let main = params.main_hints();
        let base = hints.start;
        // The gather reads 40-byte entries at random: with 32-byte L2 fetches each costs its
        // two sectors (64 bytes) of memory traffic rather than 96 on average with 64-byte ones.
        let fetch_before = self.gpu.l2_fetch_granularity()?;
        self.gpu.set_l2_fetch_granularity(GATHER_L2_FETCH_BYTES)?;
        let gathered = passes(&mut |rows, shape, blocks, progress| {
            let mut first = hints.start;
            while first < hints.end {
                let n = (hints.end - first).min(HINTS_PER_LAUNCH);
                for column in (0..words).step_by(COLUMN_WORDS as usize) {
                    let launch = self
                        .gpu
                        .launch(&kernel, Grid::cover(n * 32, THREADS))
                        .value(&self.select_key)
                        .value(&first)
                        .value(&n)
                        .value(&main)
                        .value(&base)
                        .value(&second_base)
                        .buffer(&summaries)
                        .buffer(rows)
                        .value(&shape)
                        .value(&blocks.start)
                        .value(&blocks.end)
                        .value(&w)
                        .value(&reciprocal)
                        .value(&column)
                        .buffer_mut(&mut parity)
                        .buffer_mut(&mut second);
                    // SAFETY: pir_rms24_gather(_wide)(ChaChaKey, u64 first, u64 count, u64 main,
                    // u64 base, u64 second_base, const HintSummary*, const u8*, RowShape, u64,
                    // u64, u64, u64, u32, u32*, u32*): hints first .. first + n lie in
                    // `hints`, whose summaries and parities (words per hint) these buffers
                    // hold; backup hints index `second` from second_base; rows are read only
                    // within shape.row_count entries.
                    unsafe { launch.run() }?;
                }
                self.gpu.synchronize()?;
                progress(n);
                first += n;
            }
            Ok(())
        });
        self.gpu.set_l2_fetch_granularity(fetch_before)?;
        gathered?;
        self.part(summaries, parity, second)
    }

    /// Plinko over blocks `blocks`, given every hint's subset summary: `stream` feeds the
    /// blocks' rows to the returned scatter, block by block.
    fn plinko(
        &self,
        summaries: DeviceBuffer<HintSummary>,
        blocks: Range<u64>,
        stream: &mut BlockStream<'_>,
    ) -> Result<DevicePart, Error> {
        let params = self.params;
        let words = parity_words(params.entry_size());
        let m = params.total_hints();
        let mut parity = self
            .gpu
            .alloc_zeroed::<u32>((m * u64::from(words)) as usize)?;
        let mut second = self
            .gpu
            .alloc_zeroed::<u32>((params.backup_hints() * u64::from(words)) as usize)?;
        let kernel = self.kernel("pir_plinko_scatter")?;
        let tables = prp::Cuda::on(Arc::clone(self.gpu));
        let main = params.main_hints();
        let w = params.block_size();
        let end = blocks.end;
        let mut kept: Option<BlockTables> = None;
        stream(blocks, &mut |a, rows, shape| {
            let tables_of_a = match kept.take() {
                Some(run) if run.blocks.contains(&a) => run,
                _ if m <= SMALL_MAX_HINTS => {
                    let run = a..a.saturating_add(SMALL_BATCH).min(end).max(a + 1);
                    BlockTables::small(&tables, self.key, &params, run)?
                }
                _ => BlockTables::one(&tables, self.key, &params, a)?,
            };
            let slot = a - tables_of_a.blocks.start;
            let launch = self
                .gpu
                .launch(&kernel, Grid::cover(m, THREADS))
                .value(&self.select_key)
                .value(&m)
                .value(&main)
                .buffer(&tables_of_a.inverse)
                .buffer(&tables_of_a.boundaries)
                .value(&w)
                .value(&slot)
                .buffer(&summaries)
                .value(&a)
                .buffer(rows)
                .value(&shape)
                .buffer_mut(&mut parity)
                .buffer_mut(&mut second);
            // SAFETY: pir_plinko_scatter(ChaChaKey, u64 m, u64 main, const u32*, const u64*,
            // u64 w, u64 slot, const HintSummary*, u64 a, const u8*, RowShape, u32*, u32*):
            // `inverse` holds m hints below m for each block of the batch and `boundaries`
            // w + 1 values (slot < the batch's blocks), `summaries` m entries, the parities m
            // and q hints of `words` words; rows are read within shape.
            unsafe { launch.run() }?;
            kept = Some(tables_of_a);
            Ok(())
        })?;
        self.part(summaries, parity, second)
    }

    /// This worker's finished part: waits for its GPU (so another GPU may copy from it).
    fn part(
        &self,
        summaries: DeviceBuffer<HintSummary>,
        parity: DeviceBuffer<u32>,
        second: DeviceBuffer<u32>,
    ) -> Result<DevicePart, Error> {
        self.gpu.synchronize()?;
        Ok(DevicePart {
            gpu: Arc::clone(self.gpu),
            summaries,
            parity,
            second,
        })
    }
}

/// The iPRF tables of a run of Plinko blocks on the device: block `blocks.start + slot`'s
/// inverse permutation at `slot` of `inverse` (m values each) and its bins' ranges at `slot`
/// of `boundaries` (w + 1 values each).
struct BlockTables {
    blocks: Range<u64>,
    inverse: DeviceBuffer<u32>,
    boundaries: DeviceBuffer<u64>,
}

impl BlockTables {
    /// Block `a`'s tables, all made on the GPU.
    fn one(tables: &prp::Cuda, key: &MasterKey, params: &Params, a: u64) -> Result<Self, Error> {
        let iprf = key.block_iprf(params, a)?;
        Ok(Self {
            blocks: a..a + 1,
            inverse: tables.inverse_table_device(iprf.prp())?,
            boundaries: tables.gpu().upload(&tables.bin_boundaries(iprf.pmns())?)?,
        })
    }

    /// The tables of blocks `blocks` of a small job ([`SMALL_MAX_HINTS`]): the iPRFs and the
    /// bins' ranges made on the host in parallel, the inverse tables on the GPU at once.
    fn small(
        tables: &prp::Cuda,
        key: &MasterKey,
        params: &Params,
        blocks: Range<u64>,
    ) -> Result<Self, Error> {
        let made: Vec<(prp::Iprf, Vec<u64>)> = blocks
            .clone()
            .into_par_iter()
            .map(|b| {
                let iprf = key.block_iprf(params, b)?;
                let boundaries = prp::Cpu.bin_boundaries(iprf.pmns())?;
                Ok((iprf, boundaries))
            })
            .collect::<Result<_, Error>>()?;
        let prps: Vec<_> = made.iter().map(|(iprf, _)| iprf.prp()).collect();
        let boundaries: Vec<u64> = made.iter().flat_map(|(_, b)| b.iter().copied()).collect();
        Ok(Self {
            blocks,
            inverse: tables.inverse_tables_device(&prps)?,
            boundaries: tables.gpu().upload(&boundaries)?,
        })
    }
}
