//! The CPU reference backend: RMS24 hint by hint, Plinko block by block, rayon over hints.

use prp::{Cpu as PrpCpu, Evaluator, Key};
use rayon::prelude::*;

use crate::database::Database;
use crate::error::Error;
use crate::hints::Hints;
use crate::keys::MasterKey;
use crate::params::{Params, Scheme};
use crate::subset::{OFFSETS_PER_BLOCK, Summary, rms24_offset_unchecked, select_value_unchecked};
use crate::{HintGenerator, Job, Subset};

/// Hints per progress report in RMS24 generation.
const HINTS_PER_REPORT: usize = 1 << 12;

/// The CPU reference backend. Uses every core through rayon (run it inside a
/// `rayon::ThreadPool::install` to choose the thread count).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cpu;

impl HintGenerator for Cpu {
    fn name(&self) -> String {
        format!("CPU ({} threads)", rayon::current_num_threads())
    }

    fn generate_with_progress(
        &self,
        job: &Job<'_>,
        db: &Database<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Hints, Error> {
        db.check(job.params())?;
        match job.params().scheme() {
            Scheme::Rms24 => Ok(rms24(job, db, progress)),
            Scheme::Plinko => plinko(job, db, progress),
        }
    }
}

/// One hint's parities while it is generated: the parity, and the second parity of a backup
/// hint.
pub(crate) struct HintSlot<'a> {
    /// Hint number `j`.
    pub(crate) hint: u64,
    /// The parity, `E` bytes.
    pub(crate) parity: &'a mut [u8],
    /// The second parity for a backup hint.
    pub(crate) second: Option<&'a mut [u8]>,
}

/// Runs `f` on every hint of `hints` in `0 .. M + q`, in parallel, in chunks of `chunk` hints,
/// reporting each finished chunk's size to `progress`. `f` returns whether the hint is valid.
pub(crate) fn for_each_hint(
    hints: &mut Hints,
    chunk: usize,
    progress: &(dyn Fn(u64) + Sync),
    f: impl Fn(HintSlot<'_>) -> bool + Sync,
) {
    let params = *hints.params();
    let e = params.entry_size();
    let main = params.main_hints() as usize;
    let total = params.total_hints() as usize;
    let (valid, parities, second_parities) = hints.parts_mut();
    let mut seconds = second_parities.chunks_mut(e);
    let slots = parities.chunks_mut(e).zip(valid.iter_mut()).enumerate();
    let mut slots: Vec<_> = slots
        .map(|(j, (parity, valid))| {
            let second = if j >= main { seconds.next() } else { None };
            (j as u64, parity, second, valid)
        })
        .collect();
    debug_assert_eq!(slots.len(), total);
    for piece in slots.chunks_mut(chunk.max(1)) {
        piece
            .par_iter_mut()
            .for_each(|(hint, parity, second, valid)| {
                **valid = f(HintSlot {
                    hint: *hint,
                    parity,
                    second: second.as_deref_mut(),
                });
            });
        progress(piece.len() as u64);
    }
}

/// `dst ^= entry (a, b)`, for an entry that exists (index below `n`).
pub(crate) fn xor_entry(
    dst: &mut [u8],
    db: &Database<'_>,
    block_size: u64,
    block: u64,
    offset: u64,
) {
    if let Some(entry) = db.entry(block * block_size + offset) {
        dst.iter_mut().zip(entry).for_each(|(d, s)| *d ^= s);
    }
}

/// RMS24: each hint's subset, then its entries in the job's blocks.
fn rms24(job: &Job<'_>, db: &Database<'_>, progress: &(dyn Fn(u64) + Sync)) -> Hints {
    let params = *job.params();
    let select_key = job.key().select_key(Scheme::Rms24);
    let mut hints = job.empty_hints();
    let blocks = job.blocks();
    for_each_hint(&mut hints, HINTS_PER_REPORT, progress, |slot| {
        let subset = Subset::of_checked(&select_key, slot.hint, params.blocks());
        if !subset.is_valid() {
            return false;
        }
        let mut second = slot.second;
        let is_main = second.is_none();
        let mut offsets = Rms24Offsets::new(&select_key, slot.hint, params.block_size());
        for a in blocks.clone() {
            let offset = offsets.get(a);
            if subset.contains(a) || (is_main && a == subset.extra_block()) {
                xor_entry(slot.parity, db, params.block_size(), a, offset);
            } else if let Some(second) = second.as_deref_mut() {
                xor_entry(second, db, params.block_size(), a, offset);
            }
        }
        true
    });
    hints
}

/// RMS24 offsets of one hint for ascending blocks, one ChaCha block per 8 blocks.
struct Rms24Offsets<'a> {
    select_key: &'a Key,
    hint: u64,
    block_size: u64,
    cached: Option<(u64, [u64; OFFSETS_PER_BLOCK as usize])>,
}

impl<'a> Rms24Offsets<'a> {
    fn new(select_key: &'a Key, hint: u64, block_size: u64) -> Self {
        Self {
            select_key,
            hint,
            block_size,
            cached: None,
        }
    }

    fn get(&mut self, block: u64) -> u64 {
        let k = block / OFFSETS_PER_BLOCK;
        let i = (block % OFFSETS_PER_BLOCK) as usize;
        match self.cached {
            Some((cached, offsets)) if cached == k => offsets[i],
            _ => {
                let first = k * OFFSETS_PER_BLOCK;
                let offsets = std::array::from_fn(|i| {
                    rms24_offset_unchecked(
                        self.select_key,
                        self.hint,
                        first + i as u64,
                        self.block_size,
                    )
                });
                self.cached = Some((k, offsets));
                offsets[i]
            }
        }
    }
}

/// The subset summaries of every hint of `params` (cutoff, validity, extra block).
pub(crate) fn summaries(params: &Params, select_key: &Key) -> Vec<Summary> {
    (0..params.total_hints())
        .into_par_iter()
        .map(|j| Subset::of_checked(select_key, j, params.blocks()).summary())
        .collect()
}

/// `F(K[a], j)` for every hint `j < m`, from the iPRF's whole-domain tables.
pub(crate) fn plinko_offsets(
    params: &Params,
    key: &MasterKey,
    block: u64,
) -> Result<Vec<u32>, Error> {
    let iprf = key.block_iprf(params, block)?;
    let tables = PrpCpu.iprf_tables(&iprf)?;
    let mut offsets = vec![0u32; params.total_hints() as usize];
    for bin in 0..params.block_size() {
        for &hint in tables.preimages(bin)? {
            offsets[hint as usize] = bin as u32;
        }
    }
    Ok(offsets)
}

/// Bytes of offset tables Plinko builds at once (one block per thread, up to this much).
const PLINKO_TABLE_BYTES: u64 = 1 << 30;

/// Plinko: the subsets of every hint, then block by block, each entry of the block XORed into
/// the hints whose iPRF points at it (through the forward table built from `F^-1`).
///
/// The tables of several blocks are built at once, one block per thread: a single table over
/// a small domain is too little work to split over threads (measured on 16 threads, 8 blocks
/// of 2048 hints took 3x longer table by table than on one thread).
fn plinko(
    job: &Job<'_>,
    db: &Database<'_>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Hints, Error> {
    let params = *job.params();
    let select_key = job.key().select_key(Scheme::Plinko);
    let summaries = summaries(&params, &select_key);
    let mut hints = job.empty_hints();
    let table_bytes = params.total_hints() * 4;
    let at_once = (PLINKO_TABLE_BYTES / table_bytes).clamp(1, rayon::current_num_threads() as u64);
    let blocks: Vec<u64> = job.blocks().collect();
    for batch in blocks.chunks(at_once as usize) {
        let tables: Vec<Vec<u32>> = batch
            .par_iter()
            .map(|&a| plinko_offsets(&params, job.key(), a))
            .collect::<Result<_, _>>()?;
        for (&a, offsets) in batch.iter().zip(&tables) {
            for_each_hint(&mut hints, usize::MAX, &|_| {}, |slot| {
                let summary = summaries[slot.hint as usize];
                if !summary.valid {
                    return false;
                }
                let offset = u64::from(offsets[slot.hint as usize]);
                let selected = select_value_unchecked(&select_key, slot.hint, a) < summary.cutoff;
                match slot.second {
                    None if selected || a == summary.extra => {
                        xor_entry(slot.parity, db, params.block_size(), a, offset);
                    }
                    Some(_) if selected => {
                        xor_entry(slot.parity, db, params.block_size(), a, offset)
                    }
                    Some(second) => xor_entry(second, db, params.block_size(), a, offset),
                    None => {}
                }
                true
            });
            progress(1);
        }
    }
    Ok(hints)
}
