//! [`Evaluator`] on the GPU: kernels from `prp/cuda/prp.cu`.
//!
//! - Random-access batches run one ChaCha block per value per round, the stage list and the
//!   round keys (computed once per key, on the host) read through the read-only cache.
//! - Whole-domain tables are built as on the CPU (see `full_domain.rs`): per round, a pass of
//!   pair swaps over the table with the swap bits from a bit table built a batch of rounds at a
//!   time; the rounds over domains of at most [`SMALL_DOMAIN`] values (the last stages of a
//!   Sometimes-Recurse PRP, thousands of short rounds) run in one kernel in shared memory.
//! - Batches large enough to pay for it (a cost model, [`table_pays`]) build the table and
//!   look every value up.
//! - The sampler's tree is built level by level, the ChaCha blocks of each node's popcount
//!   spread over thread blocks.
//!
//! All work is queued on the GPU handle's one stream; buffers dropped here are freed in stream
//! order, after the kernels that use them.

use crate::source;
use kernels::{DeviceBuffer, DeviceRepr, Grid, Kernel};
use zeroize::{Zeroize, Zeroizing};

use super::Cuda;
use crate::Evaluator;
use crate::chacha::Rounds;
use crate::error::Error;
use crate::full_domain::{
    Direction, MAX_TABLE_DOMAIN, check_batch, check_table_domain, gather_order,
};
use crate::pmns::Pmns;
use crate::swap_or_not::{BITS_PER_BLOCK, Permutation, SwapOrNot};

/// Threads per block of the grid-wide kernels.
const THREADS: u32 = 256;

/// Cost model of [`table_pays`], fitted to an H100 (docs/journal/prp.md, 2026-11-21): seconds per
/// round of one warp in the random-access kernel (a ChaCha block per lane), ...
const DIRECT_ROUND_SECONDS: f64 = 1.8e-11;
/// ... per table entry and round of a whole-domain table, ...
const TABLE_ENTRY_ROUND_SECONDS: f64 = 2.5e-12;
/// ... per round over more than [`SMALL_DOMAIN`] values (two kernel launches), ...
const LARGE_ROUND_SECONDS: f64 = 3e-6;
/// ... and per round in the shared-memory kernel.
const SMALL_ROUND_SECONDS: f64 = 5e-7;

/// Whether `len` values are cheaper through a whole-domain table than one by one.
///
/// One by one, a warp runs every round of every stage that any of its 32 values reaches (a
/// value reaches stage `s` with probability `N_s / N`); the table costs a pass per round.
/// For SwapOrNot over `2^17` with 759 rounds the crossover is near `N` values (the table is
/// 759 short rounds, 2.5 ms); for Sometimes-Recurse over `2^25` near `N / 20` (170 ms).
fn table_pays<P: Permutation>(prp: &P, len: usize) -> bool {
    let domain = prp.domain();
    if domain > MAX_TABLE_DOMAIN {
        return false;
    }
    let (mut direct, mut table) = (0.0, 0.0);
    for stage in prp.stages() {
        let rounds = f64::from(stage.rounds());
        let share = stage.domain() as f64 / domain as f64;
        let warp_reaches = 1.0 - (1.0 - share).powi(32);
        direct += rounds * warp_reaches * DIRECT_ROUND_SECONDS;
        let per_round = if stage.domain() <= SMALL_DOMAIN {
            SMALL_ROUND_SECONDS
        } else {
            LARGE_ROUND_SECONDS
        };
        table += rounds * (stage.domain() as f64 * TABLE_ENTRY_ROUND_SECONDS + per_round);
    }
    table < direct * len as f64
}

/// Rounds over domains up to this size run in shared memory (`SMALL_DOMAIN` in prp.cu).
pub const SMALL_DOMAIN: u64 = 32768;
/// Threads of the shared-memory kernel (`SMALL_THREADS` in prp.cu).
const SMALL_THREADS: u32 = 1024;
/// Its dynamic shared memory: the table prefix and 16 rounds of swap bits.
const SMALL_SHARED_BYTES: u32 = (SMALL_DOMAIN * 4 + 16 * SMALL_DOMAIN / 8) as u32;

/// Pairs each thread of `swap_pairs` takes (`SWAP_PAIRS_PER_THREAD` in prp.cu).
const SWAP_PAIRS_PER_THREAD: u64 = 2;

/// Device memory for the swap-bit tables of one batch of rounds.
const BIT_TABLE_BYTES: u64 = 64 << 20;

/// Host batches of at least this many values move through page-locked staging chunks (the
/// first such batch allocates them); smaller ones through the driver's pageable copies.
const STAGED_VALUES: usize = 1 << 16;

/// Values per staging chunk: 16 MiB, as the keystream's.
const VALUE_CHUNK: usize = super::STAGING_BYTES / 8;

/// ChaCha blocks each thread of the sampler's kernel should take at a level.
const PMNS_BLOCKS_PER_THREAD: u64 = 8;

/// prp.cu's `Stage`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Stage {
    domain: u64,
    first_key: u64,
    rounds: u32,
    index: u32,
}

// SAFETY: `#[repr(C)]` u64, u64, u32, u32 (24 bytes, no padding), as `Stage` in prp.cu.
unsafe impl DeviceRepr for Stage {}
// SAFETY: all-zero bytes are a valid `Stage`.
unsafe impl kernels::ValidAsZeroBits for Stage {}

/// Appends the `SmallRound` of each `(stage, round)`, in order.
fn push_small_ops<'s, R: Rounds + 's>(
    rounds: impl Iterator<Item = (&'s SwapOrNot<R>, u32)>,
    ops: &mut Vec<SmallRound>,
) {
    ops.extend(rounds.map(|(stage, round)| SmallRound {
        domain: stage.domain() as u32,
        round_key: stage.round_keys()[round as usize] as u32,
        nonce1: (round << 8) | stage.stage_index(),
        unused: 0,
    }));
}

/// prp.cu's `SmallRound`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, Zeroize)]
struct SmallRound {
    domain: u32,
    round_key: u32,
    nonce1: u32,
    unused: u32,
}

// SAFETY: `#[repr(C)]` four u32, as `SmallRound` in prp.cu.
unsafe impl DeviceRepr for SmallRound {}
// SAFETY: all-zero bytes are a valid `SmallRound`.
unsafe impl kernels::ValidAsZeroBits for SmallRound {}

impl Cuda {
    fn prp_kernel<R: Rounds>(&self, name: &str) -> Result<Kernel, Error> {
        self.plain_kernel(&format!("{name}_{}", R::ROUNDS))
    }

    fn plain_kernel(&self, name: &str) -> Result<Kernel, Error> {
        Ok(self.gpu.kernel(&source::PRP, name)?)
    }

    /// `P` (or `P^-1`) of every value in device memory, one ChaCha block per value per round,
    /// whatever the batch size. Returns without waiting for the kernel. Values must be below
    /// `N`; others come out unspecified.
    pub fn batch_direct_device<P: Permutation>(
        &self,
        prp: &P,
        values: &mut DeviceBuffer<u64>,
        inverse: bool,
    ) -> Result<(), Error> {
        let stages = prp.stages();
        if values.is_empty() || stages.is_empty() {
            return Ok(());
        }
        let mut round_keys = Zeroizing::new(Vec::new());
        let descriptions: Vec<Stage> = stages
            .iter()
            .map(|stage| {
                let first_key = round_keys.len() as u64;
                round_keys.extend_from_slice(stage.round_keys());
                Stage {
                    domain: stage.domain(),
                    first_key,
                    rounds: stage.rounds(),
                    index: stage.stage_index(),
                }
            })
            .collect();
        let stage_buffer = self.gpu.upload(&descriptions)?;
        let key_buffer = self.gpu.upload(&round_keys)?;
        let name = if inverse {
            "prp_inverse"
        } else {
            "prp_forward"
        };
        let kernel = self.prp_kernel::<P::Rounds>(name)?;
        let key = stages[0].key();
        let stage_count = stages.len() as u32;
        let count = values.len() as u64;
        let launch = self
            .gpu
            .launch(&kernel, Grid::cover(count, THREADS))
            .value(key)
            .buffer(&stage_buffer)
            .value(&stage_count)
            .buffer(&key_buffer)
            .buffer_mut(values)
            .value(&count);
        // SAFETY: prp_{forward,inverse}_R(ChaChaKey, const Stage*, u32, const u64*, u64*, u64)
        // reads `stage_count` stages whose round keys lie in `key_buffer`, and `count` values.
        unsafe { launch.run() }?;
        Ok(())
    }

    /// `P^-1` of every element of `[0, N)` in device memory (the table Plinko needs per block).
    pub fn inverse_table_device<P: Permutation>(
        &self,
        prp: &P,
    ) -> Result<DeviceBuffer<u32>, Error> {
        self.table_device(prp, Direction::Inverse)
    }

    /// The inverse tables of several permutations of one domain `N` (such as Plinko's
    /// per-block iPRFs), in one buffer: `P_i^-1` of `[0, N)` at `[i N, (i + 1) N)`.
    ///
    /// Where every round runs over at most 32,768 values (the shared-memory kernel's domain),
    /// all tables are built at once, a thread block each (one table keeps a single block busy,
    /// so this is what makes many small tables fast); larger domains are built one after the
    /// other. Errors with
    /// [`Error::DomainMismatch`] when the permutations' domains differ, and as
    /// [`Self::inverse_table_device`] for the domain or the combined length.
    pub fn inverse_tables_device<P: Permutation>(
        &self,
        prps: &[&P],
    ) -> Result<DeviceBuffer<u32>, Error> {
        let Some(first) = prps.first() else {
            return Ok(self.gpu.alloc_zeroed::<u32>(0)?);
        };
        let domain = first.domain();
        check_table_domain(domain)?;
        if let Some(other) = prps.iter().find(|p| p.domain() != domain) {
            return Err(Error::DomainMismatch {
                expected: domain,
                found: other.domain(),
            });
        }
        let len = usize::try_from(domain)
            .ok()
            .and_then(|d| d.checked_mul(prps.len()))
            .ok_or(Error::TooLarge {
                what: "tables' combined length",
                value: u64::MAX,
                max: usize::MAX as u64,
            })?;
        let n = domain as usize;
        let mut tables = self.gpu.alloc_zeroed::<u32>(len)?;
        // Every stage of every permutation small: one block per permutation, if all have as
        // many rounds (the stages follow from the domain, so they do).
        let mut ops = Zeroizing::new(Vec::new());
        let mut keys = Zeroizing::new(Vec::with_capacity(prps.len() * 8));
        let count = first
            .stages()
            .iter()
            .map(|s| s.rounds() as usize)
            .sum::<usize>();
        let batched = domain <= SMALL_DOMAIN
            && u32::try_from(prps.len()).is_ok()
            && u32::try_from(count).is_ok()
            && prps.iter().all(|prp| {
                let stages = prp.stages();
                let order = gather_order(stages, Direction::Inverse);
                push_small_ops(order.iter().map(|&(t, r)| (&stages[t], r)), &mut ops);
                keys.extend_from_slice(stages[0].key().words());
                order.len() == count
            });
        if !batched {
            for (i, prp) in prps.iter().enumerate() {
                let table = self.inverse_table_device(*prp)?;
                tables.copy_from_device(i * n, &table, 0, n)?;
            }
            return Ok(tables);
        }
        let (op_buffer, key_buffer) = (self.gpu.upload(&ops)?, self.gpu.upload(&keys)?);
        let kernel = self.prp_kernel::<P::Rounds>("small_tables")?;
        kernel.allow_shared_bytes(SMALL_SHARED_BYTES)?;
        let (count, domain32) = (count as u32, domain as u32);
        let grid = Grid {
            blocks: prps.len() as u32,
            threads: SMALL_THREADS,
            shared_bytes: SMALL_SHARED_BYTES,
        };
        let launch = self
            .gpu
            .launch(&kernel, grid)
            .buffer(&key_buffer)
            .buffer(&op_buffer)
            .value(&count)
            .value(&domain32)
            .buffer_mut(&mut tables);
        // SAFETY: small_tables_R(const ChaChaKey*, const SmallRound*, u32 count, u32 domain,
        // u32*): block b reads key b (8 words of `keys`), ops [b count, (b + 1) count) of
        // `ops` (every permutation pushed `count`), and writes tables[b domain ..) up to its
        // largest op domain, at most `domain`; one block of SMALL_THREADS threads with
        // SMALL_SHARED_BYTES of shared memory per permutation, as the kernel expects.
        unsafe { launch.run() }?;
        Ok(tables)
    }

    /// `P` of every element of `[0, N)` in device memory.
    pub fn forward_table_device<P: Permutation>(
        &self,
        prp: &P,
    ) -> Result<DeviceBuffer<u32>, Error> {
        self.table_device(prp, Direction::Forward)
    }

    fn table_device<P: Permutation>(
        &self,
        prp: &P,
        direction: Direction,
    ) -> Result<DeviceBuffer<u32>, Error> {
        let domain = prp.domain();
        check_table_domain(domain)?;
        let mut table = self.gpu.alloc_zeroed::<u32>(domain as usize)?;
        let identity = self.plain_kernel("identity")?;
        let launch = self
            .gpu
            .launch(&identity, Grid::cover(domain, THREADS))
            .buffer_mut(&mut table)
            .value(&domain);
        // SAFETY: identity(u32* table, u64 n) writes table[0 .. n), and `table` holds n entries.
        unsafe { launch.run() }?;

        let stages = prp.stages();
        let order = gather_order(stages, direction);
        // Consecutive rounds of one large stage go together; so do consecutive small rounds.
        let mut rest = &order[..];
        while let Some(&(s, _)) = rest.first() {
            let small = stages[s].domain() <= SMALL_DOMAIN;
            let run = rest
                .iter()
                .take_while(|&&(t, _)| {
                    if small {
                        stages[t].domain() <= SMALL_DOMAIN
                    } else {
                        t == s
                    }
                })
                .count();
            let rounds: Vec<u32> = rest[..run].iter().map(|&(_, r)| r).collect();
            if small {
                let run_stages: Vec<&SwapOrNot<P::Rounds>> =
                    rest[..run].iter().map(|&(t, _)| &stages[t]).collect();
                self.small_rounds(&run_stages, &rounds, &mut table)?;
            } else {
                self.large_rounds(&stages[s], &rounds, &mut table)?;
            }
            rest = &rest[run..];
        }
        Ok(table)
    }

    /// Rounds `rounds` (in that order, a contiguous range ascending or descending) of one stage
    /// over more than [`SMALL_DOMAIN`] values.
    fn large_rounds<R: Rounds>(
        &self,
        stage: &SwapOrNot<R>,
        rounds: &[u32],
        table: &mut DeviceBuffer<u32>,
    ) -> Result<(), Error> {
        let domain = stage.domain();
        let blocks_per_round = domain.div_ceil(BITS_PER_BLOCK);
        let row_words = blocks_per_round * 16;
        let batch = (BIT_TABLE_BYTES / (row_words * 4)).clamp(1, 1024) as usize;
        let mut bits = self
            .gpu
            .alloc_zeroed::<u32>(batch.min(rounds.len()) * row_words as usize)?;
        let swap_bits = self.prp_kernel::<R>("swap_bits")?;
        let swap_pairs = self.plain_kernel("swap_pairs")?;
        let key = stage.key();
        let stage_index = stage.stage_index();
        let pairs = domain / 2;
        for group in rounds.chunks(batch) {
            let first = *group.iter().min().unwrap_or(&0);
            let count = group.len() as u32;
            let total_blocks = blocks_per_round * u64::from(count);
            let launch = self
                .gpu
                .launch(&swap_bits, Grid::cover(total_blocks, THREADS))
                .value(key)
                .value(&stage_index)
                .value(&first)
                .value(&count)
                .value(&blocks_per_round)
                .buffer_mut(&mut bits);
            // SAFETY: swap_bits_R(ChaChaKey, u32, u32, u32, u64, uint4*) writes
            // count * blocks_per_round blocks of 64 bytes, which `bits` holds.
            unsafe { launch.run() }?;
            for &round in group {
                let row = u64::from(round - first) * row_words;
                let k = stage.round_keys()[round as usize];
                let launch = self
                    .gpu
                    .launch(
                        &swap_pairs,
                        Grid::cover(pairs.div_ceil(SWAP_PAIRS_PER_THREAD), THREADS),
                    )
                    .buffer(&bits)
                    .value(&row)
                    .value(&k)
                    .value(&domain)
                    .buffer_mut(table);
                // SAFETY: swap_pairs(const u32*, u64 row, u64 k, u64 n, u32*) reads bits
                // [row, row + n / 32] of a row inside `bits` and swaps within table[0 .. n);
                // the table holds at least n entries and k < n.
                unsafe { launch.run() }?;
            }
        }
        Ok(())
    }

    /// Rounds over at most [`SMALL_DOMAIN`] values: `rounds[i]` of `stages[i]`, in order, in
    /// one thread block.
    fn small_rounds<R: Rounds>(
        &self,
        stages: &[&SwapOrNot<R>],
        rounds: &[u32],
        table: &mut DeviceBuffer<u32>,
    ) -> Result<(), Error> {
        let Some(first) = stages.first() else {
            return Ok(());
        };
        let mut ops = Zeroizing::new(Vec::with_capacity(rounds.len()));
        push_small_ops(stages.iter().copied().zip(rounds.iter().copied()), &mut ops);
        let op_buffer = self.gpu.upload(&ops)?;
        let kernel = self.prp_kernel::<R>("small_rounds")?;
        kernel.allow_shared_bytes(SMALL_SHARED_BYTES)?;
        let key = first.key();
        let count = ops.len() as u32;
        let grid = Grid {
            blocks: 1,
            threads: SMALL_THREADS,
            shared_bytes: SMALL_SHARED_BYTES,
        };
        let launch = self
            .gpu
            .launch(&kernel, grid)
            .value(key)
            .buffer(&op_buffer)
            .value(&count)
            .buffer_mut(table);
        // SAFETY: small_rounds_R(ChaChaKey, const SmallRound*, u32, u32*) reads `count` ops and
        // works on table[0 .. largest domain), within the table; one block of SMALL_THREADS
        // threads with SMALL_SHARED_BYTES of shared memory, as the kernel expects.
        unsafe { launch.run() }?;
        Ok(())
    }

    /// `P(x)` for every `x` in device memory, through a whole-domain table when the batch is
    /// large enough to pay for it (see the crate docs), else directly. Returns without waiting
    /// for the GPU.
    ///
    /// Values must be below `N` (as [`Evaluator::forward_batch`] checks); others come out
    /// unspecified, but nothing outside the buffers is touched.
    pub fn forward_batch_device<P: Permutation>(
        &self,
        prp: &P,
        values: &mut DeviceBuffer<u64>,
    ) -> Result<(), Error> {
        self.batch_device(prp, values, Direction::Forward)
    }

    /// `P^-1(y)` for every `y` in device memory, as [`Self::forward_batch_device`].
    pub fn inverse_batch_device<P: Permutation>(
        &self,
        prp: &P,
        values: &mut DeviceBuffer<u64>,
    ) -> Result<(), Error> {
        self.batch_device(prp, values, Direction::Inverse)
    }

    fn batch_device<P: Permutation>(
        &self,
        prp: &P,
        values: &mut DeviceBuffer<u64>,
        direction: Direction,
    ) -> Result<(), Error> {
        if !table_pays(prp, values.len()) {
            return self.batch_direct_device(prp, values, direction == Direction::Inverse);
        }
        let table = self.table_device(prp, direction)?;
        let kernel = self.plain_kernel("look_up")?;
        let count = values.len() as u64;
        let domain = prp.domain();
        let launch = self
            .gpu
            .launch(&kernel, Grid::cover(count, THREADS))
            .buffer(&table)
            .value(&domain)
            .buffer_mut(values)
            .value(&count);
        // SAFETY: look_up(const u32*, u64 n, u64*, u64 count) reads table entries below n, the
        // table's length, and `count` values, the buffer's length.
        unsafe { launch.run() }?;
        Ok(())
    }

    /// Host values through the device: checked, uploaded, evaluated, copied back.
    fn batch<P: Permutation>(
        &self,
        prp: &P,
        values: &mut [u64],
        direction: Direction,
    ) -> Result<(), Error> {
        check_batch(values, prp.domain())?;
        self.batch_in_domain(prp, values, direction)
    }

    /// As [`Self::batch`] for values already checked to lie in the domain.
    pub(super) fn batch_in_domain<P: Permutation>(
        &self,
        prp: &P,
        values: &mut [u64],
        direction: Direction,
    ) -> Result<(), Error> {
        if values.is_empty() {
            return Ok(());
        }
        if values.len() < STAGED_VALUES {
            let mut device = self.gpu.upload(values)?;
            self.batch_device(prp, &mut device, direction)?;
            device.copy_to_host(values)?;
            return Ok(());
        }
        let mut device = self.gpu.alloc_zeroed::<u64>(values.len())?;
        self.value_staging.with(VALUE_CHUNK, |staging| {
            staging.copy_to_buffer(values, VALUE_CHUNK, &mut device, 0)?;
            self.batch_device(prp, &mut device, direction)?;
            Ok(staging.copy_from_buffer(&device, 0, values, VALUE_CHUNK)?)
        })
    }
}

impl Evaluator for Cuda {
    fn forward_batch<P: Permutation>(&self, prp: &P, values: &mut [u64]) -> Result<(), Error> {
        self.batch(prp, values, Direction::Forward)
    }

    fn inverse_batch<P: Permutation>(&self, prp: &P, values: &mut [u64]) -> Result<(), Error> {
        self.batch(prp, values, Direction::Inverse)
    }

    fn forward_table<P: Permutation>(&self, prp: &P) -> Result<Vec<u32>, Error> {
        Ok(self.forward_table_device(prp)?.to_host()?)
    }

    fn inverse_table<P: Permutation>(&self, prp: &P) -> Result<Vec<u32>, Error> {
        Ok(self.inverse_table_device(prp)?.to_host()?)
    }

    fn bin_boundaries<R: Rounds>(&self, pmns: &Pmns<R>) -> Result<Vec<u64>, Error> {
        let split = self.prp_kernel::<R>("pmns_split")?;
        let children = self.plain_kernel("pmns_children")?;
        let key = pmns.key();
        let mut counts = self.gpu.upload(&[pmns.balls()])?;
        for level in 0..pmns.bins_log2() {
            let nodes = 1u64 << level;
            let mut left = self.gpu.alloc_zeroed::<u64>(nodes as usize)?;
            let blocks_per_node = (pmns.balls() / nodes).div_ceil(BITS_PER_BLOCK);
            let per_share = u64::from(THREADS) * PMNS_BLOCKS_PER_THREAD;
            let shares = blocks_per_node.div_ceil(per_share).clamp(1, 1 << 16) as u32;
            let items = nodes * u64::from(shares);
            let launch = self
                .gpu
                .launch(&split, Grid::cover(items * u64::from(THREADS), THREADS))
                .value(key)
                .value(&level)
                .value(&nodes)
                .value(&shares)
                .buffer(&counts)
                .buffer_mut(&mut left);
            // SAFETY: pmns_split_R(ChaChaKey, u32, u64 nodes, u32, const u64*, u64*) reads and
            // adds into `nodes` entries of each buffer; blocks of THREADS (<= 1024) threads.
            unsafe { launch.run() }?;
            let mut next = self.gpu.alloc_zeroed::<u64>(2 * nodes as usize)?;
            let launch = self
                .gpu
                .launch(&children, Grid::cover(nodes, THREADS))
                .buffer(&counts)
                .buffer(&left)
                .value(&nodes)
                .buffer_mut(&mut next);
            // SAFETY: pmns_children(const u64*, const u64*, u64 nodes, u64*) reads `nodes`
            // entries of each input and writes 2 * nodes children.
            unsafe { launch.run() }?;
            counts = next;
        }
        let counts = counts.to_host()?;
        let mut boundaries = Vec::with_capacity(counts.len() + 1);
        boundaries.push(0);
        let mut start = 0;
        for count in counts {
            start += count;
            boundaries.push(start);
        }
        Ok(boundaries)
    }
}
